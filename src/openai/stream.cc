#include "openai/stream.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>

#include "core/strings.h"

namespace ib::openai {
namespace {

namespace od = simdjson::ondemand;

// Length of a string value, 0 for null or non-strings; the text is appended to `text` when given
// (StreamDecoder::keep_text).
size_t string_len(od::value v, std::string* text) {
  if (v.type() != od::json_type::string) return 0;
  std::string_view s = v.get_string();
  if (text != nullptr) text->append(s);
  return s.size();
}

// Bytes of tool-call deltas: the function name and argument fragments. A tool call whose delta
// carries only an id or index still counts as one byte: the server produced tokens for it.
size_t tool_calls_len(od::value v, std::string* text) {
  if (v.type() != od::json_type::array) return 0;
  size_t total = 0;
  for (auto call : v.get_array()) {
    od::value cv = call.value();
    total += 1;
    if (cv.type() != od::json_type::object) continue;
    for (auto field : cv.get_object()) {
      std::string_view key = field.unescaped_key();
      if (key == "function") {
        od::value fv = field.value();
        if (fv.type() != od::json_type::object) continue;
        for (auto ff : fv.get_object()) {
          std::string_view fk = ff.unescaped_key();
          if (fk == "name" || fk == "arguments") total += string_len(ff.value(), text);
        }
      }
    }
  }
  return total;
}

// Content of a chat `delta` or `message` object.
size_t message_content_len(od::value v, std::string* text) {
  if (v.type() != od::json_type::object) return 0;
  size_t total = 0;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    if (key == "content" || key == "reasoning_content" || key == "reasoning") {
      total += string_len(field.value(), text);
    } else if (key == "tool_calls") {
      total += tool_calls_len(field.value(), text);
    }
  }
  return total;
}

void read_choice(od::value choice, StreamChunk& out, bool keep_text) {
  std::string* text = keep_text ? &out.text : nullptr;
  if (choice.type() != od::json_type::object) return;
  for (auto field : choice.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "text") {
      out.content_bytes += string_len(v, text);
    } else if (key == "delta" || key == "message") {
      out.content_bytes += message_content_len(v, text);
    } else if (key == "finish_reason") {
      if (v.type() == od::json_type::string)
        out.finish_reason = std::string(v.get_string().value());
    }
  }
}

// A count below zero is a broken server, said (`bad`), never taken as "not given".
Usage read_usage(od::value v, std::string& bad) {
  Usage u;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value fv = field.value();
    if (fv.type() != od::json_type::number) continue;
    if (key != "prompt_tokens" && key != "completion_tokens") continue;
    const int64_t n = fv.get_int64();
    if (n < 0 && bad.empty()) bad = fmt::format("usage.{} is negative ({})", key, n);
    (key == "prompt_tokens" ? u.prompt_tokens : u.completion_tokens) = n < 0 ? -1 : n;
  }
  return u;
}

// vLLM's per-request speculative decoding: {"speculative_decoding":{"num_spec_steps":...,
// "num_accepted_draft_tokens":...,"num_draft_tokens":...}} (other keys and metrics ignored).
// Counts below zero, or more accepted than drafted, are a broken server (`bad`).
std::optional<SpecDecodeFigures> read_spec_decoding(od::value sd, std::string& bad) {
  SpecDecodeFigures f;
  int seen = 0;
  for (auto item : sd.get_object()) {
    std::string_view key = item.unescaped_key();
    int64_t* slot = key == "num_spec_steps"              ? &f.steps
                    : key == "num_accepted_draft_tokens" ? &f.accepted
                    : key == "num_draft_tokens"          ? &f.draft_tokens
                                                         : nullptr;
    if (slot == nullptr) continue;
    od::value n = item.value();
    if (n.type() != od::json_type::number) continue;
    *slot = n.get_int64();
    if (*slot < 0 && bad.empty()) {
      bad = fmt::format("metrics.speculative_decoding.{} is negative ({})", key, *slot);
    }
    ++seen;
  }
  if (seen < 3) return std::nullopt;  // not the shape we know: nothing claimed
  if (f.accepted > f.draft_tokens && bad.empty()) {
    bad = fmt::format("metrics.speculative_decoding: {} draft tokens accepted of {} drafted",
                      f.accepted, f.draft_tokens);
  }
  return f;
}

// serve-sim's disaggregated timing, metrics.disagg: every part a finite duration (ms, at least
// 0); anything else claims nothing.
std::optional<std::array<double, kTtftParts>> read_ttft_parts(od::value v) {
  std::array<double, kTtftParts> parts{};
  std::array<bool, kTtftParts> seen{};
  for (auto item : v.get_object()) {
    std::string_view key = item.unescaped_key();
    od::value n = item.value();
    for (size_t i = 0; i < kTtftParts; ++i) {
      if (key != kTtftPartNames[i] || n.type() != od::json_type::number) continue;
      const double d = n.get_double();
      // At most a day: a part is kept as a float, and no server's answer may overflow one.
      if (!(d >= 0) || !(d <= 86'400'000.0)) return std::nullopt;
      parts[i] = d;
      seen[i] = true;
    }
  }
  for (bool s : seen) {
    if (!s) return std::nullopt;
  }
  return parts;
}

// One of vLLM's per-request timing fields: a finite duration in ms, at least 0 and at most a day;
// anything else (null, a string, a negative time) claims nothing.
double* timing_slot(ServerTiming& t, std::string_view key) {
  return key == "queue_time_ms"            ? &t.queue_ms
         : key == "time_to_first_token_ms" ? &t.ttft_ms
         : key == "generation_time_ms"     ? &t.generation_ms
         : key == "mean_itl_ms"            ? &t.mean_itl_ms
                                           : nullptr;
}

// vLLM's per-request metrics: {"speculative_decoding":{"num_spec_steps":...,
// "num_accepted_draft_tokens":...,"num_draft_tokens":...}} (--per-request-spec-decode-metrics)
// and the timing fields of --enable-per-request-metrics; serve-sim's disaggregated "disagg".
// Other keys are ignored. Counts below zero, or more accepted than drafted, are a broken server
// (`bad`).
void read_metrics(od::value v, StreamChunk& out, std::string& bad) {
  if (v.type() != od::json_type::object) return;
  ServerTiming timing;
  bool timed = false;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value sd = field.value();
    if (key == "speculative_decoding" && sd.type() == od::json_type::object) {
      out.spec = read_spec_decoding(sd, bad);
    } else if (key == "disagg" && sd.type() == od::json_type::object) {
      out.ttft_parts = read_ttft_parts(sd);
    } else if (double* slot = timing_slot(timing, key);
               slot != nullptr && sd.type() == od::json_type::number) {
      const double d = sd.get_double();
      if (d >= 0 && d <= 86'400'000.0) {
        *slot = d;
        timed = true;
      }
    }
  }
  if (timed) out.timing = timing;
}

std::string read_error_object(od::value v) {
  if (v.type() == od::json_type::string) return std::string(v.get_string().value());
  if (v.type() != od::json_type::object) return "error";
  std::string message, type;
  int64_t code = 0;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value fv = field.value();
    if (key == "message" && fv.type() == od::json_type::string) {
      message = std::string(fv.get_string().value());
    } else if (key == "type" && fv.type() == od::json_type::string) {
      type = std::string(fv.get_string().value());
    } else if (key == "code" && fv.type() == od::json_type::number) {
      code = fv.get_int64();
    }
  }
  std::string out = message.empty() ? "error" : message;
  if (!type.empty() || code != 0)
    out += fmt::format(" ({}{}{})", type, type.empty() ? "" : " ",
                       code != 0 ? std::to_string(code) : "");
  return out;
}

}  // namespace

StreamChunk StreamDecoder::decode(std::string_view data) {
  StreamChunk out;
  data = trim(data);
  if (data == "[DONE]") {
    out.kind = StreamChunk::Kind::kDone;
    return out;
  }
  if (data.empty()) {
    out.error_message = "empty event data";
    return out;
  }
  buffer_.assign(data);
  buffer_.resize(data.size() + simdjson::SIMDJSON_PADDING);
  try {
    od::document doc = parser_.iterate(buffer_.data(), data.size(), buffer_.size());
    od::object obj = doc.get_object();
    bool is_error_object = false;
    std::string flat_error_message;
    std::string bad_usage;
    for (auto field : obj) {
      std::string_view key = field.unescaped_key();
      od::value v = field.value();
      if (key == "choices") {
        if (v.type() != od::json_type::array) continue;
        bool first = true;
        for (auto choice : v.get_array()) {
          // Benchmarks request n=1; only the first choice is measured.
          if (first) read_choice(choice.value(), out, keep_text_);
          first = false;
        }
      } else if (key == "usage") {
        if (v.type() == od::json_type::object) out.usage = read_usage(v, bad_usage);
      } else if (key == "metrics") {
        read_metrics(v, out, bad_usage);
      } else if (key == "error") {
        if (v.type() != od::json_type::null) {
          out.kind = StreamChunk::Kind::kError;
          out.error_message = read_error_object(v);
        }
      } else if (key == "object") {
        if (v.type() == od::json_type::string && v.get_string().value() == "error") {
          is_error_object = true;
        }
      } else if (key == "message") {
        if (v.type() == od::json_type::string) {
          flat_error_message = std::string(v.get_string().value());
        }
      }
    }
    if (out.kind == StreamChunk::Kind::kError) return out;
    if (!bad_usage.empty()) {
      out = StreamChunk{};
      out.kind = StreamChunk::Kind::kMalformed;
      out.error_message = bad_usage;
      return out;
    }
    if (is_error_object) {
      out.kind = StreamChunk::Kind::kError;
      out.error_message = flat_error_message.empty() ? "error" : flat_error_message;
      return out;
    }
    out.kind = out.content_bytes > 0 ? StreamChunk::Kind::kContent : StreamChunk::Kind::kNoContent;
  } catch (const simdjson::simdjson_error& e) {
    out = StreamChunk{};
    out.kind = StreamChunk::Kind::kMalformed;
    constexpr size_t kShown = 80;
    out.error_message = fmt::format("invalid JSON in event ({}): {}{}", e.what(),
                                    data.substr(0, kShown), data.size() > kShown ? "..." : "");
  }
  return out;
}

std::string error_message_from_body(std::string_view body) {
  StreamDecoder decoder;
  StreamChunk c = decoder.decode(body);
  if (c.kind == StreamChunk::Kind::kError) return c.error_message;
  // Other shapes with a top-level message, e.g. old llama.cpp `error:` lines
  // ({"code":500,"message":"...","type":"server_error"}) or FastAPI's {"detail": "..."}.
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (!ec && v.is_object()) {
    for (const char* key : {"message", "detail"}) {
      if (const auto* m = v.as_object().if_contains(key); m && m->is_string()) {
        return std::string(m->as_string());
      }
    }
  }
  std::string_view t = trim(body);
  if (t.size() > 300) return std::string(t.substr(0, 300)) + "...";
  return std::string(t);
}

}  // namespace ib::openai
