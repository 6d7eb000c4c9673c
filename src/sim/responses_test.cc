#include "sim/responses.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>

namespace ib::sim {
namespace {

namespace json = boost::json;

// Checks the SSE framing and returns the event's JSON.
json::object event_json(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n") << event;
  std::string payload = event.substr(6, event.size() - 8);
  EXPECT_EQ(payload.find('\n'), std::string::npos) << "one line per event";
  return json::parse(payload).as_object();
}

void expect_header(const json::object& o, const char* id, const char* object) {
  EXPECT_EQ(o.at("id").as_string(), id);
  EXPECT_EQ(o.at("object").as_string(), object);
  EXPECT_EQ(o.at("created").as_int64(), 1750000000);
  EXPECT_EQ(o.at("model").as_string(), "m\"odel");
}

void expect_usage(const json::value& u, int prompt, int completion) {
  EXPECT_EQ(u.at("prompt_tokens").as_int64(), prompt);
  EXPECT_EQ(u.at("completion_tokens").as_int64(), completion);
  EXPECT_EQ(u.at("total_tokens").as_int64(), prompt + completion);
}

TEST(SseEvent, Framing) {
  EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(CompletionChunks, ShapeMatchesVllm) {
  ResponseFormatter f(Api::kCompletions, "cmpl-1", 1750000000, "m\"odel");
  json::object mid = event_json(f.token_event(" lorem", std::nullopt, nullptr));
  expect_header(mid, "cmpl-1", "text_completion");
  const auto& choices = mid.at("choices").as_array();
  ASSERT_EQ(choices.size(), 1u);
  const auto& c = choices[0].as_object();
  EXPECT_EQ(c.at("index").as_int64(), 0);
  EXPECT_EQ(c.at("text").as_string(), " lorem");
  EXPECT_TRUE(c.at("logprobs").is_null());
  EXPECT_TRUE(c.at("finish_reason").is_null());
  EXPECT_TRUE(c.at("stop_reason").is_null());
  EXPECT_FALSE(mid.contains("usage"));

  Usage so_far{5, 3};
  json::object last = event_json(f.token_event(" ipsum", FinishReason::kLength, &so_far));
  EXPECT_EQ(last.at("choices").at(0).at("finish_reason").as_string(), "length");
  EXPECT_EQ(last.at("choices").at(0).at("text").as_string(), " ipsum");
  expect_usage(last.at("usage"), 5, 3);

  json::object usage = event_json(f.usage_event(Usage{5, 3}));
  expect_header(usage, "cmpl-1", "text_completion");
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  expect_usage(usage.at("usage"), 5, 3);
}

TEST(CompletionChunks, ExactBytesOfAPlainChunk) {
  ResponseFormatter f(Api::kCompletions, "cmpl-x", 7, "m");
  EXPECT_EQ(f.token_event(" a", std::nullopt, nullptr),
            "data: {\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"created\":7,\"model\":\"m\","
            "\"choices\":[{\"index\":0,\"text\":\" a\",\"logprobs\":null,\"finish_reason\":null,"
            "\"stop_reason\":null}]}\n\n");
}

TEST(ChatChunks, ShapeMatchesVllm) {
  ResponseFormatter f(Api::kChat, "chatcmpl-1", 1750000000, "m\"odel");
  json::object role = event_json(f.role_event(nullptr));
  expect_header(role, "chatcmpl-1", "chat.completion.chunk");
  const auto& delta = role.at("choices").at(0).at("delta").as_object();
  EXPECT_EQ(delta.at("role").as_string(), "assistant");
  EXPECT_EQ(delta.at("content").as_string(), "");
  EXPECT_TRUE(role.at("choices").at(0).at("finish_reason").is_null());
  EXPECT_FALSE(role.contains("usage"));

  Usage zero{12, 0};
  json::object role_usage = event_json(f.role_event(&zero));
  expect_usage(role_usage.at("usage"), 12, 0);

  json::object content = event_json(f.token_event(" Hello", std::nullopt, nullptr));
  const auto& c = content.at("choices").at(0).as_object();
  EXPECT_EQ(c.at("delta").as_object().size(), 1u) << "content only, no role";
  EXPECT_EQ(c.at("delta").at("content").as_string(), " Hello");
  EXPECT_TRUE(c.at("finish_reason").is_null());
  EXPECT_FALSE(c.contains("stop_reason")) << "vLLM puts stop_reason on the finish chunk only";

  json::object finish = event_json(f.token_event("", FinishReason::kStop, nullptr));
  const auto& fc = finish.at("choices").at(0).as_object();
  EXPECT_EQ(fc.at("delta").at("content").as_string(), "");
  EXPECT_EQ(fc.at("finish_reason").as_string(), "stop");
  EXPECT_TRUE(fc.at("stop_reason").is_null());

  json::object usage = event_json(f.usage_event(Usage{12, 3}));
  expect_header(usage, "chatcmpl-1", "chat.completion.chunk");
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  expect_usage(usage.at("usage"), 12, 3);
}

TEST(FullResponses, CompletionObject) {
  ResponseFormatter f(Api::kCompletions, "cmpl-9", 1750000000, "m\"odel");
  json::object o =
      json::parse(f.full_response(" a b", FinishReason::kLength, Usage{4, 2})).as_object();
  expect_header(o, "cmpl-9", "text_completion");
  const auto& c = o.at("choices").at(0).as_object();
  EXPECT_EQ(c.at("index").as_int64(), 0);
  EXPECT_EQ(c.at("text").as_string(), " a b");
  EXPECT_TRUE(c.at("logprobs").is_null());
  EXPECT_EQ(c.at("finish_reason").as_string(), "length");
  EXPECT_TRUE(c.at("stop_reason").is_null());
  expect_usage(o.at("usage"), 4, 2);
}

TEST(FullResponses, ChatObject) {
  ResponseFormatter f(Api::kChat, "chatcmpl-9", 1750000000, "m\"odel");
  json::object o =
      json::parse(f.full_response(" hi", FinishReason::kStop, Usage{10, 2})).as_object();
  expect_header(o, "chatcmpl-9", "chat.completion");
  const auto& c = o.at("choices").at(0).as_object();
  EXPECT_EQ(c.at("message").at("role").as_string(), "assistant");
  EXPECT_EQ(c.at("message").at("content").as_string(), " hi");
  EXPECT_EQ(c.at("finish_reason").as_string(), "stop");
  expect_usage(o.at("usage"), 10, 2);
}

TEST(UsageJson, VllmKeyOrder) {
  EXPECT_EQ(usage_json(Usage{12, 3}),
            R"({"prompt_tokens":12,"total_tokens":15,"completion_tokens":3})");
}

TEST(JsonQuote, Escapes) {
  EXPECT_EQ(json_quote("a\"b\\c\n"), R"("a\"b\\c\n")");
}

}  // namespace
}  // namespace ib::sim
