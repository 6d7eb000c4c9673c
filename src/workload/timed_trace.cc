#include "workload/timed_trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "core/files.h"
#include "core/sha256.h"
#include "core/strings.h"

namespace ib::workload {

namespace json = boost::json;

std::optional<TraceFormat> parse_trace_format(std::string_view text) {
  if (text == "mooncake") return TraceFormat::kMooncake;
  if (text == "bailian") return TraceFormat::kBailian;
  if (text == "burstgpt") return TraceFormat::kBurstGpt;
  if (text == "azure") return TraceFormat::kAzure;
  return std::nullopt;
}

std::string_view trace_format_name(TraceFormat f) {
  switch (f) {
    case TraceFormat::kMooncake:
      return "mooncake";
    case TraceFormat::kBailian:
      return "bailian";
    case TraceFormat::kBurstGpt:
      return "burstgpt";
    case TraceFormat::kAzure:
      return "azure";
  }
  return "mooncake";
}

int64_t default_block_size(TraceFormat f) {
  switch (f) {
    case TraceFormat::kMooncake:
      return 512;
    case TraceFormat::kBailian:
      return 16;
    default:
      return 0;
  }
}

namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 30;  // a request's length, sanity bound

// The lines of `text`, each with its 1-based number (a trailing \r dropped).
template <typename F>
Status for_each_line(std::string_view text, F&& f) {
  int64_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    if (auto st = f(line, number); !st) return st;
    pos = end + 1;
  }
  return Status::Ok();
}

struct Where {
  const std::string& source;
  int64_t line;
  Error operator()(std::string_view field, const std::string& what) const {
    return Error{fmt::format("{}:{}: {}{}{}", source, line, field, field.empty() ? "" : ": ", what),
                 ErrorKind::kInput};
  }
};

Expected<int64_t> whole(const json::object& o, const char* key, const Where& at, int64_t min) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return at(key, "missing");
  int64_t n = 0;
  if (v->is_int64()) {
    n = v->as_int64();
  } else if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(kMaxTokens)) {
    n = static_cast<int64_t>(v->as_uint64());
  } else if (v->is_double() && std::isfinite(v->as_double()) &&
             v->as_double() == std::floor(v->as_double()) && std::abs(v->as_double()) < 1e15) {
    n = static_cast<int64_t>(v->as_double());
  } else {
    return at(key,
              fmt::format("expected a whole number, got {}", printable(json::serialize(*v), 40)));
  }
  if (n < min || n > kMaxTokens) {
    return at(key, fmt::format("expected {} to {}, got {}", min, kMaxTokens, n));
  }
  return n;
}

Expected<double> seconds_field(const json::object& o, const char* key, const Where& at,
                               double unit_s) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return at(key, "missing");
  double t = 0;
  if (v->is_number()) {
    t = v->to_number<double>();
  } else if (v->is_string()) {  // some exports quote their (nanosecond) timestamps
    const std::string s(v->as_string());
    char* end = nullptr;
    t = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) {
      return at(key, fmt::format("expected a number, got '{}'", printable(s, 40)));
    }
  } else {
    return at(key, fmt::format("expected a number, got {}", printable(json::serialize(*v), 40)));
  }
  if (!std::isfinite(t) || t < 0) return at(key, fmt::format("expected a time >= 0, got {}", t));
  return t * unit_s;
}

Status check_ids(const TimedRequest& r, int64_t block, const Where& at) {
  const int64_t want = (r.input_len + block - 1) / block;
  if (static_cast<int64_t>(r.hash_ids.size()) != want) {
    return at("hash_ids",
              fmt::format("{} ids for input_length {}: {}-token blocks need "
                          "ceil({} / {}) = {}",
                          r.hash_ids.size(), r.input_len, block, r.input_len, block, want));
  }
  return Status::Ok();
}

// One JSONL request (Mooncake, Bailian).
Expected<TimedRequest> jsonl_request(std::string_view line, TraceFormat format, int64_t block,
                                     const Where& at) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) {
    return at("", ec ? fmt::format("not JSON: {}", ec.message()) : "expected a JSON object");
  }
  const json::object& o = v.as_object();
  TimedRequest r;
  r.line = at.line;
  auto t = seconds_field(o, "timestamp", at, format == TraceFormat::kMooncake ? 1e-3 : 1.0);
  if (!t) return t.error();
  r.t_s = *t;
  auto in = whole(o, "input_length", at, 1);
  if (!in) return in.error();
  r.input_len = *in;
  auto out = whole(o, "output_length", at, 1);
  if (!out) return out.error();
  r.output_len = *out;
  const json::value* ids = o.if_contains("hash_ids");
  if (ids == nullptr) return at("hash_ids", "missing");
  if (!ids->is_array()) return at("hash_ids", "expected an array of whole numbers");
  for (const json::value& id : ids->as_array()) {
    if (id.is_uint64()) {
      r.hash_ids.push_back(id.as_uint64());
    } else if (id.is_int64() && id.as_int64() >= 0) {
      r.hash_ids.push_back(static_cast<uint64_t>(id.as_int64()));
    } else {
      return at("hash_ids", fmt::format("expected whole numbers >= 0, got {}",
                                        printable(json::serialize(id), 40)));
    }
  }
  if (auto st = check_ids(r, block, at); !st) return st.error();
  return r;
}

// A CSV row's fields (RFC 4180: quoted fields may hold commas and doubled quotes).
Expected<std::vector<std::string>> csv_fields(std::string_view line, const Where& at) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  if (quoted) return at("", "a quoted field is not closed");
  for (auto& f : out) f = std::string(trim(f));
  return out;
}

Expected<int64_t> csv_whole(const std::string& text, const char* column, const Where& at) {
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (text.empty() || ec != std::errc() || ptr != end || n < 0 || n > kMaxTokens) {
    return at(column, fmt::format("expected a whole number from 0 to {}, got '{}'", kMaxTokens,
                                  printable(text, 40)));
  }
  return n;
}

// "2023-11-16 18:15:46.6805900" (or with 'T') as seconds since 1970 (the zone is the trace's:
// only differences are used).
Expected<double> azure_time(const std::string& text, const Where& at) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  int used = 0;
  char sep = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%n", &y, &mo, &d, &sep, &h, &mi, &used) < 6 ||
      (sep != ' ' && sep != 'T') || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59) {
    return at("TIMESTAMP", fmt::format("expected YYYY-MM-DD HH:MM:SS[.fraction], got '{}'",
                                       printable(text, 40)));
  }
  const std::string rest = text.substr(static_cast<size_t>(used));
  char* end = nullptr;
  const double s = std::strtod(rest.c_str(), &end);
  if (rest.empty() || !std::isfinite(s) || s < 0 || s >= 61) {
    return at("TIMESTAMP",
              fmt::format("expected seconds after HH:MM:, got '{}'", printable(text, 40)));
  }
  std::string zone(end);
  if (!zone.empty() && zone != "Z" && zone != "+00:00") {
    return at("TIMESTAMP",
              fmt::format("unexpected text after the time: '{}'", printable(zone, 20)));
  }
  // Days from the civil date (Howard Hinnant's algorithm).
  const int yy = y - (mo <= 2 ? 1 : 0);
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return static_cast<double>(days) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

// The CSV formats: the header names the columns (any order); BurstGPT's rows with 0 tokens
// (failed requests) are left out and counted.
Status parse_csv(std::string_view text, TimedTrace& out) {
  const bool burst = out.format == TraceFormat::kBurstGpt;
  const std::vector<std::string> need =
      burst ? std::vector<std::string>{"Timestamp", "Request tokens", "Response tokens"}
            : std::vector<std::string>{"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
  std::map<std::string, size_t> column;
  int64_t zero_rows = 0;
  auto st = for_each_line(text, [&](std::string_view line, int64_t number) -> Status {
    const Where at{out.source, number};
    if (trim(line).empty()) return Status::Ok();
    auto fields = csv_fields(line, at);
    if (!fields) return fields.error();
    if (column.empty()) {
      for (size_t i = 0; i < fields->size(); ++i) column[(*fields)[i]] = i;
      for (const auto& n : need) {
        if (!column.count(n)) {
          return at("", fmt::format("the header has no '{}' column (a {} trace's header: {})", n,
                                    trace_format_name(out.format), fmt::join(need, ", ")));
        }
      }
      return Status::Ok();
    }
    auto field = [&](size_t k) -> const std::string& {
      static const std::string kEmpty;
      const size_t i = column.at(need[k]);
      return i < fields->size() ? (*fields)[i] : kEmpty;
    };
    TimedRequest r;
    r.line = number;
    if (burst) {
      char* end = nullptr;
      const std::string& ts = field(0);
      r.t_s = std::strtod(ts.c_str(), &end);
      if (ts.empty() || end != ts.c_str() + ts.size() || !std::isfinite(r.t_s) || r.t_s < 0) {
        return at("Timestamp", fmt::format("expected seconds >= 0, got '{}'", printable(ts, 40)));
      }
    } else {
      auto t = azure_time(field(0), at);
      if (!t) return t.error();
      r.t_s = *t;
    }
    auto in = csv_whole(field(1), need[1].c_str(), at);
    if (!in) return in.error();
    auto outl = csv_whole(field(2), need[2].c_str(), at);
    if (!outl) return outl.error();
    if (*in == 0 || *outl == 0) {
      ++zero_rows;
      return Status::Ok();
    }
    r.input_len = *in;
    r.output_len = *outl;
    out.requests.push_back(std::move(r));
    return Status::Ok();
  });
  if (!st) return st;
  if (column.empty())
    return Error{fmt::format("{}: empty (no header row)", out.source), ErrorKind::kInput};
  if (zero_rows > 0) {
    out.notes.push_back(fmt::format(
        "{} row{} with 0 {} or 0 {} left out (a request of no tokens cannot be replayed{})",
        zero_rows, zero_rows == 1 ? "" : "s", need[1], need[2],
        burst ? "; BurstGPT logs failed requests with 0 response tokens" : ""));
  }
  return Status::Ok();
}

}  // namespace

Expected<TimedTrace> parse_timed_trace(std::string_view text, TraceFormat format,
                                       const std::string& source, int64_t block_size) {
  TimedTrace out;
  out.format = format;
  out.source = source;
  out.digest = sha256_hex(text);
  out.block_size = block_size > 0 ? block_size : default_block_size(format);
  if (block_size > 0 && default_block_size(format) == 0) {
    return Error{fmt::format("{}: a {} trace has no hash ids: a block size does not apply", source,
                             trace_format_name(format)),
                 ErrorKind::kUsage};
  }
  if (format == TraceFormat::kMooncake || format == TraceFormat::kBailian) {
    auto st = for_each_line(text, [&](std::string_view line, int64_t number) -> Status {
      if (trim(line).empty()) return Status::Ok();
      auto r = jsonl_request(line, format, out.block_size, Where{source, number});
      if (!r) return r.error();
      out.requests.push_back(std::move(*r));
      return Status::Ok();
    });
    if (!st) return st.error();
  } else if (auto st = parse_csv(text, out); !st) {
    return st.error();
  }
  if (out.requests.empty()) {
    return Error{fmt::format("{}: no request in the trace", source), ErrorKind::kInput};
  }
  if (!std::is_sorted(out.requests.begin(), out.requests.end(),
                      [](const auto& a, const auto& b) { return a.t_s < b.t_s; })) {
    std::stable_sort(out.requests.begin(), out.requests.end(),
                     [](const auto& a, const auto& b) { return a.t_s < b.t_s; });
    out.notes.push_back("the file's times were not in order: requests sorted by time");
  }
  const double first = out.requests.front().t_s;
  for (auto& r : out.requests) r.t_s -= first;
  return out;
}

Expected<TimedTrace> load_timed_trace(const std::filesystem::path& path, TraceFormat format,
                                      int64_t block_size) {
  auto text = read_file(path);
  if (!text)
    return Error{fmt::format("{}: {}", path.string(), text.error().message), ErrorKind::kInput};
  return parse_timed_trace(*text, format, path.string(), block_size);
}

Expected<TraceWindow> parse_trace_window(std::string_view text) {
  const size_t colon = text.find(':');
  auto bad = [&] {
    return Error{fmt::format("--window must be START:END in seconds of the trace (either may be "
                             "empty: ':600', '300:'), got '{}'",
                             printable(text, 40)),
                 ErrorKind::kUsage};
  };
  if (colon == std::string_view::npos) return bad();
  auto number = [](std::string_view s, double fallback) -> std::optional<double> {
    s = trim(s);
    if (s.empty()) return fallback;
    const std::string t(s);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !std::isfinite(v) || v < 0) return std::nullopt;
    return v;
  };
  auto start = number(text.substr(0, colon), 0);
  auto end = number(text.substr(colon + 1), 0);
  if (!start || !end) return bad();
  if (*end > 0 && *end <= *start) return bad();
  return TraceWindow{*start, *end};
}

TimedTrace cut_window(const TimedTrace& trace, const TraceWindow& window) {
  TimedTrace out = trace;
  out.requests.clear();
  for (const auto& r : trace.requests) {
    if (r.t_s < window.start_s) continue;
    if (window.end_s > 0 && r.t_s >= window.end_s) continue;
    out.requests.push_back(r);
  }
  if (!out.requests.empty()) {
    const double first = out.requests.front().t_s;
    for (auto& r : out.requests) r.t_s -= first;
  }
  return out;
}

std::vector<int64_t> theoretical_hits(const TimedTrace& trace) {
  std::vector<int64_t> out;
  out.reserve(trace.requests.size());
  std::unordered_set<uint64_t> seen;
  for (const auto& r : trace.requests) {
    int64_t run = 0;
    while (run < static_cast<int64_t>(r.hash_ids.size()) &&
           seen.count(r.hash_ids[static_cast<size_t>(run)])) {
      ++run;
    }
    out.push_back(std::min(run * trace.block_size, r.input_len));
    seen.insert(r.hash_ids.begin(), r.hash_ids.end());
  }
  return out;
}

namespace {

TimedTraceStats::Lengths lengths(std::vector<int64_t> v) {
  TimedTraceStats::Lengths l;
  if (v.empty()) return l;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[static_cast<size_t>(std::min<double>(static_cast<double>(v.size() - 1),
                                                  std::floor(q * static_cast<double>(v.size()))))];
  };
  l.min = v.front();
  l.max = v.back();
  l.p50 = at(0.5);
  l.p90 = at(0.9);
  l.p99 = at(0.99);
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  l.mean = sum / static_cast<double>(v.size());
  return l;
}

}  // namespace

TimedTraceStats timed_trace_stats(const TimedTrace& trace, double bucket_s) {
  TimedTraceStats s;
  s.requests = static_cast<int64_t>(trace.requests.size());
  if (trace.requests.empty()) return s;
  s.span_s = trace.requests.back().t_s - trace.requests.front().t_s;
  s.mean_rate = s.span_s > 0 ? static_cast<double>(s.requests) / s.span_s : 0;
  std::vector<int64_t> in, out;
  size_t j = 0;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const auto& r = trace.requests[i];
    in.push_back(r.input_len);
    out.push_back(r.output_len);
    s.input_tokens += r.input_len;
    s.output_tokens += r.output_len;
    while (trace.requests[j].t_s < r.t_s - 1.0) ++j;
    s.peak_rate_1s = std::max(s.peak_rate_1s, static_cast<double>(i - j + 1));
  }
  s.input = lengths(std::move(in));
  s.output = lengths(std::move(out));
  s.bucket_s = bucket_s > 0 ? bucket_s : std::max(1.0, std::ceil(s.span_s / 60.0));
  s.arrivals_per_bucket.assign(static_cast<size_t>(std::floor(s.span_s / s.bucket_s)) + 1, 0);
  for (const auto& r : trace.requests) {
    ++s.arrivals_per_bucket[static_cast<size_t>(std::floor(r.t_s / s.bucket_s))];
  }
  if (trace.has_prefix()) {
    std::map<uint64_t, int64_t> uses;
    for (const auto& r : trace.requests) {
      for (uint64_t id : r.hash_ids) ++uses[id];
      s.total_blocks += static_cast<int64_t>(r.hash_ids.size());
    }
    s.distinct_blocks = static_cast<int64_t>(uses.size());
    for (const auto& [id, n] : uses) s.reused_blocks += n > 1 ? 1 : 0;
    for (int64_t h : theoretical_hits(trace)) s.hit_tokens += h;
    s.theoretical_hit_pct = s.input_tokens > 0 ? 100.0 * static_cast<double>(s.hit_tokens) /
                                                     static_cast<double>(s.input_tokens)
                                               : 0;
  }
  return s;
}

}  // namespace ib::workload
