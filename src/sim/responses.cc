#include "sim/responses.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>

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
  return boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

std::string usage_json(const Usage& usage) {
  return fmt::format(R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{}}})",
                     usage.prompt_tokens, usage.prompt_tokens + usage.completion_tokens,
                     usage.completion_tokens);
}

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
}

std::string ResponseFormatter::role_event(const Usage* usage) const {
  std::string json = chunk_prefix_;
  json += R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
          R"("logprobs":null,"finish_reason":null}])";
  if (usage != nullptr) json += R"(,"usage":)" + usage_json(*usage);
  json += '}';
  return sse_event(json);
}

std::string ResponseFormatter::token_event(std::string_view text,
                                           std::optional<FinishReason> finish,
                                           const Usage* usage) const {
  std::string json = chunk_prefix_;
  if (api_ == Api::kChat) {
    json += R"("choices":[{"index":0,"delta":{"content":)";
    json += json_quote(text);
    json += R"(},"logprobs":null,"finish_reason":)";
  } else {
    json += R"("choices":[{"index":0,"text":)";
    json += json_quote(text);
    json += R"(,"logprobs":null,"finish_reason":)";
  }
  if (finish) {
    json += fmt::format(R"("{}","stop_reason":null}}])", to_string(*finish));
  } else if (api_ == Api::kChat) {
    json += R"(null}])";
  } else {
    json += R"(null,"stop_reason":null}])";  // completions chunks always carry stop_reason
  }
  if (usage != nullptr) json += R"(,"usage":)" + usage_json(*usage);
  json += '}';
  return sse_event(json);
}

std::string ResponseFormatter::usage_event(const Usage& usage) const {
  return sse_event(chunk_prefix_ + R"("choices":[],"usage":)" + usage_json(usage) + "}");
}

std::string ResponseFormatter::full_response(std::string_view text, FinishReason finish,
                                             const Usage& usage) const {
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
  json += fmt::format(R"("logprobs":null,"finish_reason":"{}","stop_reason":null}}],"usage":{}}})",
                      to_string(finish), usage_json(usage));
  return json;
}

}  // namespace ib::sim
