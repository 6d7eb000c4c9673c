#include "openai/request.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "core/json_text.h"

namespace ib::openai {

std::string_view api_name(Api api) {
  return api == Api::kChat ? "chat" : "completions";
}

std::optional<Api> parse_api(std::string_view name) {
  if (name == "completions") return Api::kCompletions;
  if (name == "chat") return Api::kChat;
  return std::nullopt;
}

std::string_view api_path(Api api) {
  return api == Api::kChat ? "/v1/chat/completions" : "/v1/completions";
}

namespace {

void add_common(boost::json::object& o, const RequestKnobs& knobs, int max_tokens, bool chat) {
  o["model"] = knobs.model;
  o[chat ? "max_completion_tokens" : "max_tokens"] = max_tokens;
  if (chat) o["max_tokens"] = max_tokens;  // older servers only know the deprecated name
  if (knobs.ignore_eos) o["ignore_eos"] = true;
  if (knobs.send_min_tokens) o["min_tokens"] = max_tokens;
  o["temperature"] = knobs.temperature;
  o["stream"] = knobs.stream;
  if (knobs.stream && knobs.include_usage) {
    boost::json::object so{{"include_usage", true}};
    if (knobs.continuous_usage) so["continuous_usage_stats"] = true;
    o["stream_options"] = std::move(so);
  }
}

}  // namespace

std::string completions_body(const RequestKnobs& knobs, std::span<const int32_t> token_ids,
                             int max_tokens) {
  boost::json::object o;
  boost::json::array ids;
  ids.reserve(token_ids.size());
  for (int32_t id : token_ids) ids.emplace_back(id);
  o["prompt"] = std::move(ids);
  add_common(o, knobs, max_tokens, false);
  return json_text(o);
}

std::string completions_body(const RequestKnobs& knobs, std::string_view text, int max_tokens) {
  boost::json::object o;
  o["prompt"] = text;
  add_common(o, knobs, max_tokens, false);
  return json_text(o);
}

std::string chat_body(const RequestKnobs& knobs, std::string_view text, int max_tokens) {
  boost::json::object o;
  o["messages"] = boost::json::array{boost::json::object{{"role", "user"}, {"content", text}}};
  add_common(o, knobs, max_tokens, true);
  return json_text(o);
}

}  // namespace ib::openai
