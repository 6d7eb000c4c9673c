#include "sim/responses.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <iterator>

#include "core/json_text.h"

namespace ib::sim {

std::string sse_event(std::string_view json) {
  std::string event;
  event.reserve(json.size() + 8);
  event.append("data: ");
  event.append(json);
  event.append("\n\n");
  return event;
}

std::string json_quote(std::string_view text) {
  return json_text(boost::json::string_view(text.data(), text.size()));
}

void append_usage_json(std::string& out, const Usage& usage) {
  fmt::format_to(
      std::back_inserter(out), R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{}}})",
      usage.prompt_tokens, usage.prompt_tokens + usage.completion_tokens, usage.completion_tokens);
}

std::string usage_json(const Usage& usage) {
  std::string out;
  append_usage_json(out, usage);
  return out;
}

namespace {

// True when `text` can go into a JSON string as it is.
bool json_safe(std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) return false;
  }
  return true;
}

}  // namespace

ResponseFormatter::ResponseFormatter(Api api, std::string_view id, int64_t created,
                                     std::string_view model)
    : api_(api) {
  std::string head = fmt::format(R"({{"id":{},"object":)", json_quote(id));
  std::string tail = fmt::format(R"(,"created":{},"model":{},)", created, json_quote(model));
  if (api == Api::kChat) {
    chunk_prefix_ = head + R"("chat.completion.chunk")" + tail;
    body_prefix_ = head + R"("chat.completion")" + tail;
  } else {
    chunk_prefix_ = head + R"("text_completion")" + tail;
    body_prefix_ = chunk_prefix_;
  }
  event_head_ = "data: " + chunk_prefix_;
  if (api == Api::kChat) {
    event_head_ += R"("choices":[{"index":0,"delta":{"content":)";
    plain_tail_ = R"(},"logprobs":null,"finish_reason":null}]})";
  } else {
    event_head_ += R"("choices":[{"index":0,"text":)";
    plain_tail_ = R"(,"logprobs":null,"finish_reason":null,"stop_reason":null}]})";
  }
  plain_tail_ += "\n\n";
}

std::string ResponseFormatter::role_event(const Usage* usage) const {
  std::string event;
  append_role_event(event, usage);
  return event;
}

void ResponseFormatter::append_role_event(std::string& out, const Usage* usage) const {
  out += "data: ";
  out += chunk_prefix_;
  out += R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
         R"("logprobs":null,"finish_reason":null}])";
  if (usage != nullptr) {
    out += R"(,"usage":)";
    append_usage_json(out, *usage);
  }
  out += "}\n\n";
}

std::string ResponseFormatter::token_event(std::string_view text,
                                           std::optional<FinishReason> finish,
                                           const Usage* usage) const {
  std::string event;
  append_token_event(event, text, finish, usage);
  return event;
}

void ResponseFormatter::append_token_event(std::string& out, std::string_view text,
                                           std::optional<FinishReason> finish,
                                           const Usage* usage) const {
  out += event_head_;
  if (json_safe(text)) {
    out += '"';
    out += text;
    out += '"';
  } else {
    out += json_quote(text);
  }
  if (!finish && usage == nullptr) {
    out += plain_tail_;
    return;
  }
  out += api_ == Api::kChat ? R"(},"logprobs":null,"finish_reason":)"
                            : R"(,"logprobs":null,"finish_reason":)";
  if (finish) {
    out += '"';
    out += to_string(*finish);
    out += R"(","stop_reason":null}])";
  } else if (api_ == Api::kChat) {
    out += R"(null}])";
  } else {
    out += R"(null,"stop_reason":null}])";  // completions chunks always carry stop_reason
  }
  if (usage != nullptr) {
    out += R"(,"usage":)";
    append_usage_json(out, *usage);
  }
  out += "}\n\n";
}

std::string ResponseFormatter::usage_event(const Usage& usage, std::string_view metrics) const {
  std::string event;
  append_usage_event(event, usage, metrics);
  return event;
}

void ResponseFormatter::append_usage_event(std::string& out, const Usage& usage,
                                           std::string_view metrics) const {
  out += "data: ";
  out += chunk_prefix_;
  out += R"("choices":[],"usage":)";
  append_usage_json(out, usage);
  if (!metrics.empty()) {
    out += R"(,"metrics":)";
    out += metrics;
  }
  out += "}\n\n";
}

std::string ResponseFormatter::full_response(std::string_view text, FinishReason finish,
                                             const Usage& usage, std::string_view metrics,
                                             std::string_view kv_transfer_params) const {
  std::string json = body_prefix_;
  if (api_ == Api::kChat) {
    json += R"("choices":[{"index":0,"message":{"role":"assistant","content":)";
    json += json_quote(text);
    json += "},";
  } else {
    json += R"("choices":[{"index":0,"text":)";
    json += json_quote(text);
    json += ',';
  }
  json += fmt::format(R"("logprobs":null,"finish_reason":"{}","stop_reason":null}}],"usage":{})",
                      to_string(finish), usage_json(usage));
  if (!metrics.empty()) {
    json += R"(,"metrics":)";
    json += metrics;
  }
  if (!kv_transfer_params.empty()) {
    json += R"(,"kv_transfer_params":)";
    json += kv_transfer_params;
  }
  json += '}';
  return json;
}

}  // namespace ib::sim
