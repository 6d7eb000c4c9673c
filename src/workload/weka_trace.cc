#include "workload/weka_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/files.h"
#include "core/json_strict.h"
#include "core/json_text.h"

namespace ib::workload {

namespace json = boost::json;
namespace fs = std::filesystem;

double TraceSubagent::end() const {
  if (duration_ms) {
    const double d = std::isfinite(*duration_ms) && *duration_ms > 0 ? *duration_ms : 0.0;
    return t + d / 1000.0;
  }
  double latest = t;
  bool any = false;
  for (const auto& e : entries) {
    if (!e.request) continue;
    latest = any ? std::max(latest, e.request->t + e.request->api_time)
                 : e.request->t + e.request->api_time;
    any = true;
  }
  return any ? std::max(latest, t) : t;
}

TraceStats trace_stats(const WekaTrace& trace) {
  TraceStats s;
  s.id = trace.id;
  std::vector<const TraceRequest*> all;
  // Depth first in file order, so that ties in start time keep the order of the file.
  std::function<void(const std::vector<TraceEntry>&, bool)> walk =
      [&](const std::vector<TraceEntry>& list, bool top) {
        for (const auto& e : list) {
          if (e.request) {
            all.push_back(&*e.request);
            ++s.requests;
            ++(e.request->streaming ? s.streaming : s.normal);
            ++(top ? s.top_level_requests : s.subagent_requests);
            s.input_tokens += e.request->in;
            s.output_tokens += e.request->out;
          } else if (e.subagent) {
            ++s.subagents;
            walk(e.subagent->entries, false);
          }
        }
      };
  walk(trace.entries, true);
  std::stable_sort(all.begin(), all.end(),
                   [](const TraceRequest* a, const TraceRequest* b) { return a->t < b->t; });
  std::unordered_set<int64_t> seen;
  for (const TraceRequest* r : all) {
    size_t hit = 0;
    while (hit < r->hash_ids.size() && seen.contains(r->hash_ids[hit])) ++hit;
    s.hit_blocks += static_cast<int64_t>(hit);
    s.total_blocks += static_cast<int64_t>(r->hash_ids.size());
    seen.insert(r->hash_ids.begin(), r->hash_ids.end());
  }
  if (s.total_blocks > 0) {
    s.theoretical_prefix_hit_pct =
        100.0 * static_cast<double>(s.hit_blocks) / static_cast<double>(s.total_blocks);
  }
  return s;
}

namespace {

// Parses with the error naming source, path and field; the first problem ends the parse.
class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  std::optional<Error> error;

  void fail(const std::string& path, const std::string& what) {
    if (!error) error = Error{fmt::format("{}: {}: {}", source_, path, what)};
  }

  const json::value* field(const json::object& o, const std::string& path, std::string_view key,
                           bool required) {
    const auto* v = o.if_contains(key);
    if (!v && required) fail(fmt::format("{}.{}", path, key), "required field is missing");
    return v;
  }

  std::optional<double> number(const json::object& o, const std::string& path, std::string_view key,
                               bool required, double min) {
    const auto* v = field(o, path, key, required);
    if (!v) return std::nullopt;
    const std::string p = fmt::format("{}.{}", path, key);
    if (!v->is_number()) {
      fail(p, fmt::format("expected a number, got {}", json_text(*v)));
      return std::nullopt;
    }
    const double d = v->to_number<double>();
    if (!std::isfinite(d) || d < min) {
      fail(p, fmt::format("expected a finite number >= {}, got {}", min, json_text(*v)));
      return std::nullopt;
    }
    return d;
  }

  std::optional<int64_t> integer(const json::object& o, const std::string& path,
                                 std::string_view key, bool required, int64_t min) {
    const auto* v = field(o, path, key, required);
    if (!v) return std::nullopt;
    const std::string p = fmt::format("{}.{}", path, key);
    if (!v->is_int64() && !v->is_uint64()) {
      fail(p, fmt::format("expected an integer, got {}", json_text(*v)));
      return std::nullopt;
    }
    const int64_t i = v->is_int64() ? v->as_int64() : static_cast<int64_t>(v->as_uint64());
    if (i < min) {
      fail(p, fmt::format("expected an integer >= {}, got {}", min, i));
      return std::nullopt;
    }
    return i;
  }

  std::optional<std::string> string(const json::object& o, const std::string& path,
                                    std::string_view key, bool required) {
    const auto* v = field(o, path, key, required);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      fail(fmt::format("{}.{}", path, key),
           fmt::format("expected a string, got {}", json_text(*v)));
      return std::nullopt;
    }
    return std::string(v->as_string());
  }

  std::vector<std::string> strings(const json::object& o, const std::string& path,
                                   std::string_view key) {
    std::vector<std::string> out;
    const auto* v = field(o, path, key, false);
    if (!v) return out;
    const std::string p = fmt::format("{}.{}", path, key);
    if (!v->is_array()) {
      fail(p, "expected a list of strings");
      return out;
    }
    for (size_t i = 0; i < v->as_array().size(); ++i) {
      const auto& s = v->as_array()[i];
      if (!s.is_string()) {
        fail(fmt::format("{}[{}]", p, i), "expected a string");
        return out;
      }
      out.emplace_back(s.as_string());
    }
    return out;
  }

  std::optional<TraceRequest> request(const json::object& o, const std::string& path,
                                      bool streaming) {
    static const std::set<std::string_view> kKeys = {
        "type",         "t",    "model",    "in",         "out", "hash_ids", "input_types",
        "output_types", "stop", "api_time", "think_time", "ttft"};
    for (const auto& kv : o) {
      if (!kKeys.contains(kv.key()) || (kv.key() == "ttft" && !streaming)) {
        fail(fmt::format("{}.{}", path, std::string_view(kv.key())), "unknown field");
        return std::nullopt;
      }
    }
    TraceRequest r;
    r.streaming = streaming;
    r.t = number(o, path, "t", true, 0).value_or(0);
    r.model = string(o, path, "model", false).value_or("");
    r.in = integer(o, path, "in", true, 0).value_or(0);
    r.out = integer(o, path, "out", true, 0).value_or(0);
    if (const auto* h = field(o, path, "hash_ids", true)) {
      if (!h->is_array()) {
        fail(path + ".hash_ids", "expected a list of integers");
      } else {
        r.hash_ids.reserve(h->as_array().size());
        for (size_t i = 0; i < h->as_array().size() && !error; ++i) {
          const auto& id = h->as_array()[i];
          if (id.is_int64() && id.as_int64() >= 0) {
            r.hash_ids.push_back(id.as_int64());
          } else if (id.is_uint64()) {
            r.hash_ids.push_back(static_cast<int64_t>(id.as_uint64()));
          } else {
            fail(fmt::format("{}.hash_ids[{}]", path, i),
                 fmt::format("expected an integer >= 0, got {}", json_text(id)));
          }
        }
      }
    }
    // Each hash id is one block of block_size prompt tokens: more blocks than the prompt has
    // tokens for is a trace that contradicts itself (issue 30).
    // (Without r.in + block_size - 1, which overflows for a huge `in`.)
    const int64_t blocks =
        block_size_ > 0 ? r.in / block_size_ + (r.in % block_size_ != 0 ? 1 : 0) : 0;
    if (!error && static_cast<int64_t>(r.hash_ids.size()) > blocks) {
      fail(path + ".hash_ids",
           fmt::format("{} hash blocks for a prompt of {} tokens (\"in\"): at most {} blocks of "
                       "{} tokens",
                       r.hash_ids.size(), r.in, blocks, block_size_));
    }
    r.input_types = strings(o, path, "input_types");
    r.output_types = strings(o, path, "output_types");
    r.stop = string(o, path, "stop", false).value_or("");
    if (r.stop != "" && r.stop != "tool_use" && r.stop != "end_turn") {
      fail(path + ".stop",
           fmt::format("expected \"\", \"tool_use\" or \"end_turn\", got \"{}\"", r.stop));
    }
    r.api_time = number(o, path, "api_time", false, 0).value_or(0);
    r.think_time = number(o, path, "think_time", false, 0).value_or(0);
    if (streaming) r.ttft = number(o, path, "ttft", false, 0);
    if (error) return std::nullopt;
    return r;
  }

  std::vector<TraceEntry> entries(const json::value& v, const std::string& path,
                                  const TraceSubagent* parent) {
    std::vector<TraceEntry> out;
    if (!v.is_array()) {
      fail(path, "expected a list of requests");
      return out;
    }
    const auto& a = v.as_array();
    out.reserve(a.size());
    for (size_t i = 0; i < a.size() && !error; ++i) {
      const std::string p = fmt::format("{}[{}]", path, i);
      if (!a[i].is_object()) {
        fail(p, "expected a request object");
        break;
      }
      const auto& o = a[i].as_object();
      auto type = string(o, p, "type", true);
      if (!type) break;
      TraceEntry e;
      if (*type == "n" || *type == "s") {
        e.request = request(o, p, *type == "s");
        // Older captures time a subagent's requests from its spawn.
        if (e.request && parent && e.request->t + 1e-6 < parent->t) {
          e.request->t += parent->t;
          relative_ = true;
        }
      } else if (*type == "subagent") {
        e.subagent = subagent(o, p);
      } else {
        fail(p + ".type", fmt::format("expected \"n\", \"s\" or \"subagent\", got \"{}\"", *type));
      }
      if (error) break;
      out.push_back(std::move(e));
    }
    return out;
  }

  std::shared_ptr<TraceSubagent> subagent(const json::object& o, const std::string& path) {
    auto s = std::make_shared<TraceSubagent>();
    s->t = number(o, path, "t", true, 0).value_or(0);
    s->agent_id = string(o, path, "agent_id", true).value_or("");
    if (!error && !agent_ids_.insert(s->agent_id).second) {
      fail(path + ".agent_id", fmt::format("\"{}\" is not unique in the trace", s->agent_id));
    }
    s->subagent_type = string(o, path, "subagent_type", false).value_or("");
    s->status = string(o, path, "status", false).value_or("");
    if (const auto* d = o.if_contains("duration_ms"); d && !d->is_null()) {
      if (!d->is_number()) {
        fail(path + ".duration_ms", "expected a number or null");
      } else {
        s->duration_ms = d->to_number<double>();
      }
    }
    s->tool_tokens = integer(o, path, "tool_tokens", false, 0).value_or(0);
    s->system_tokens = integer(o, path, "system_tokens", false, 0).value_or(0);
    if (const auto* r = field(o, path, "requests", true); r && !error) {
      const bool outer = relative_;
      relative_ = false;
      s->entries = entries(*r, path + ".requests", s.get());
      s->relative_times = relative_;
      relative_ = outer;
    }
    return s;
  }

  std::optional<WekaTrace> trace(const json::value& v) {
    if (!v.is_object()) {
      fail("(top level)", "expected a trace object");
      return std::nullopt;
    }
    const auto& o = v.as_object();
    WekaTrace t;
    t.source = source_;
    t.id = string(o, "trace", "id", true).value_or("");
    t.block_size = integer(o, "trace", "block_size", false, 1).value_or(64);
    block_size_ = t.block_size;
    t.hash_id_scope = string(o, "trace", "hash_id_scope", false).value_or("local");
    if (!error && t.hash_id_scope != "local" && t.hash_id_scope != "global") {
      fail("trace.hash_id_scope",
           fmt::format("expected \"local\" or \"global\", got \"{}\"", t.hash_id_scope));
    }
    t.tool_tokens = integer(o, "trace", "tool_tokens", false, 0).value_or(0);
    t.system_tokens = integer(o, "trace", "system_tokens", false, 0).value_or(0);
    if (const auto* r = field(o, "trace", "requests", true); r && !error) {
      t.entries = entries(*r, "requests", nullptr);
    }
    if (error) return std::nullopt;
    return t;
  }

 private:
  std::string source_;
  int64_t block_size_ = 64;
  std::set<std::string> agent_ids_;
  bool relative_ = false;
};

}  // namespace

Expected<WekaTrace> parse_weka_trace(std::string_view text, const std::string& source) {
  auto v = parse_json_strict(text, source);
  if (!v) return v.error();
  Parser p(source);
  auto t = p.trace(*v);
  if (!t) return *p.error;
  return std::move(*t);
}

Expected<std::vector<WekaTrace>> load_weka_traces(const std::vector<fs::path>& paths) {
  std::vector<fs::path> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> inside;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        const auto ext = e.path().extension();
        if (ext == ".json" || ext == ".jsonl") inside.push_back(e.path());
      }
      if (ec) return Error{fmt::format("{}: cannot list: {}", p.string(), ec.message())};
      std::sort(inside.begin(), inside.end());
      if (inside.empty())
        return Error{fmt::format("{}: no .json or .jsonl trace files", p.string())};
      files.insert(files.end(), inside.begin(), inside.end());
    } else {
      files.push_back(p);
    }
  }
  std::vector<WekaTrace> out;
  std::set<std::string> ids;
  auto add = [&](WekaTrace t) -> Status {
    if (!ids.insert(t.id).second) {
      return Error{
          fmt::format("{}: trace.id \"{}\" appears twice in the traces loaded", t.source, t.id)};
    }
    out.push_back(std::move(t));
    return Status::Ok();
  };
  for (const auto& f : files) {
    auto text = read_file(f);
    if (!text) return text.error();
    if (f.extension() == ".jsonl") {
      std::istringstream in(*text);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto t = parse_weka_trace(line, fmt::format("{}:{}", f.string(), n));
        if (!t) return t.error();
        if (auto s = add(std::move(*t)); !s) return s.error();
      }
    } else {
      auto t = parse_weka_trace(*text, f.string());
      if (!t) return t.error();
      if (auto s = add(std::move(*t)); !s) return s.error();
    }
  }
  return out;
}

}  // namespace ib::workload
