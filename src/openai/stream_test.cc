#include "openai/stream.h"

#include <gtest/gtest.h>

#include "openai/request.h"

namespace ib::openai {
namespace {

using Kind = StreamChunk::Kind;

TEST(StreamDecoder, VllmRoleChunkIsNotContent) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})");
  EXPECT_EQ(c.kind, Kind::kNoContent);
  EXPECT_FALSE(c.usage);
}

TEST(StreamDecoder, ChatContentChunk) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"id":"x","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]})");
  EXPECT_EQ(c.kind, Kind::kContent);
  EXPECT_EQ(c.content_bytes, 5u);
}

TEST(StreamDecoder, CompletionsTextAndFinishReason) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"id":"cmpl","object":"text_completion","choices":[{"index":0,"text":" the capital","logprobs":null,"finish_reason":"length","stop_reason":null}]})");
  EXPECT_EQ(c.kind, Kind::kContent);
  EXPECT_EQ(c.finish_reason, "length");
}

TEST(StreamDecoder, UsageChunkWithEmptyChoices) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"id":"x","choices":[],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}})");
  EXPECT_EQ(c.kind, Kind::kNoContent);
  ASSERT_TRUE(c.usage);
  EXPECT_EQ(c.usage->prompt_tokens, 12);
  EXPECT_EQ(c.usage->completion_tokens, 3);
}

// A negative count is a broken server: the event is malformed (the request fails with it),
// never read as "no count given" (issue 30).
TEST(StreamDecoder, NegativeUsageIsMalformed) {
  StreamDecoder d;
  auto c = d.decode(R"({"choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":3}})");
  EXPECT_EQ(c.kind, StreamChunk::Kind::kMalformed);
  EXPECT_NE(c.error_message.find("usage.prompt_tokens is negative (-5)"), std::string::npos)
      << c.error_message;
}

// vLLM's per-request speculative decoding rides on the final usage chunk; an impossible one is
// a broken server, never a figure.
TEST(StreamDecoder, PerRequestSpecDecodeMetrics) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":40},"metrics":)"
      R"({"speculative_decoding":{"mean_acceptance_length":2.4375,"acceptance_histogram":[0,9,7,0],)"
      R"("num_spec_steps":16,"num_accepted_draft_tokens":23,"num_draft_tokens":48,"num_spec_tokens":3},)"
      R"("other":{"x":[1,2]}},"id":"after"})");
  EXPECT_EQ(c.kind, Kind::kNoContent);
  ASSERT_TRUE(c.spec);
  EXPECT_EQ(c.spec->steps, 16);
  EXPECT_EQ(c.spec->accepted, 23);
  EXPECT_EQ(c.spec->draft_tokens, 48);
  ASSERT_TRUE(c.usage);
  EXPECT_EQ(c.usage->completion_tokens, 40);
  EXPECT_FALSE(d.decode(R"({"choices":[],"metrics":{"speculative_decoding":{}}})").spec);
  auto broken = d.decode(R"({"choices":[],"metrics":{"speculative_decoding":{"num_spec_steps":4,)"
                         R"("num_accepted_draft_tokens":13,"num_draft_tokens":12}}})");
  EXPECT_EQ(broken.kind, Kind::kMalformed);
  EXPECT_NE(broken.error_message.find("13 draft tokens accepted of 12"), std::string::npos)
      << broken.error_message;
}

// vLLM's --enable-per-request-metrics: the timing fields on the final usage chunk, each a duration
// of at most a day; a null or negative one claims nothing.
TEST(StreamDecoder, PerRequestTimingMetrics) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":10},"metrics":)"
      R"({"time_to_first_token_ms":500.0,"generation_time_ms":1000.0,"queue_time_ms":500.0,)"
      R"("mean_itl_ms":111.1,"tokens_per_second":6.67}})");
  ASSERT_TRUE(c.timing);
  EXPECT_DOUBLE_EQ(c.timing->queue_ms, 500);
  EXPECT_DOUBLE_EQ(c.timing->ttft_ms, 500);
  EXPECT_DOUBLE_EQ(c.timing->generation_ms, 1000);
  EXPECT_DOUBLE_EQ(c.timing->mean_itl_ms, 111.1);
  // All null (the guard on, no engine stats): nothing.
  EXPECT_FALSE(d.decode(R"({"choices":[],"metrics":{"time_to_first_token_ms":null,)"
                        R"("queue_time_ms":null}})")
                   .timing);
  auto partial = d.decode(R"({"choices":[],"metrics":{"queue_time_ms":-3,"mean_itl_ms":2}})");
  ASSERT_TRUE(partial.timing);
  EXPECT_LT(partial.timing->queue_ms, 0);  // absent, not -3
  EXPECT_DOUBLE_EQ(partial.timing->mean_itl_ms, 2);
}

// serve-sim's TTFT parts: all eight, each a duration of at most a day, or none at all.
TEST(StreamDecoder, DisaggregatedTtftParts) {
  StreamDecoder d;
  const std::string parts =
      R"("router_ms":0.2,"prefill_queue_ms":0.4,"prefill_ms":2.2,"prefill_transport_ms":1.9,)"
      R"("decode_receive_ms":0.1,"kv_transfer_ms":0.8,"decode_queue_ms":0.03,)";
  auto c = d.decode(R"({"choices":[],"metrics":{"disagg":{)" + parts + R"("first_decode_ms":2}}})");
  ASSERT_TRUE(c.ttft_parts);
  EXPECT_DOUBLE_EQ((*c.ttft_parts)[5], 0.8);
  EXPECT_DOUBLE_EQ((*c.ttft_parts)[7], 2.0);
  EXPECT_FALSE(
      d.decode(R"({"choices":[],"metrics":{"disagg":{)" + parts + R"("first_decode_ms":1e300}}})")
          .ttft_parts);
  EXPECT_FALSE(d.decode(R"({"choices":[],"metrics":{"disagg":{"router_ms":1}}})").ttft_parts);
}

TEST(StreamDecoder, NullUsageAndNullContent) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":null,"tool_calls":null},"finish_reason":null}],"usage":null})");
  EXPECT_EQ(c.kind, Kind::kNoContent);
  EXPECT_FALSE(c.usage);
}

TEST(StreamDecoder, KeyOrderDoesNotMatter) {
  // llama.cpp puts choices first and usage/timings later.
  StreamDecoder d;
  auto c = d.decode(
      R"({"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"})");
  EXPECT_EQ(c.kind, Kind::kContent);
}

TEST(StreamDecoder, ReasoningContentCounts) {
  StreamDecoder d;
  auto c =
      d.decode(R"({"choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":null}}]})");
  EXPECT_EQ(c.kind, Kind::kContent);
  auto c2 = d.decode(R"({"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]})");
  EXPECT_EQ(c2.kind, Kind::kContent);
}

TEST(StreamDecoder, ToolCallDeltaCounts) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]})");
  EXPECT_EQ(c.kind, Kind::kContent);
  auto empty = d.decode(R"({"choices":[{"index":0,"delta":{"tool_calls":[]}}]})");
  EXPECT_EQ(empty.kind, Kind::kNoContent);
}

TEST(StreamDecoder, TrtLlmTrailingSpaceIsAccepted) {
  StreamDecoder d;
  auto c = d.decode(R"({"id":"chatcmpl-7","choices":[{"index":0,"delta":{"role":"assistant"}}]} )");
  EXPECT_EQ(c.kind, Kind::kNoContent);
}

TEST(StreamDecoder, Done) {
  StreamDecoder d;
  EXPECT_EQ(d.decode("[DONE]").kind, Kind::kDone);
  EXPECT_EQ(d.decode(" [DONE] ").kind, Kind::kDone);
}

TEST(StreamDecoder, VllmAndSglangErrorEvents) {
  StreamDecoder d;
  auto v = d.decode(
      R"({"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}})");
  EXPECT_EQ(v.kind, Kind::kError);
  EXPECT_NE(v.error_message.find("Internal server error"), std::string::npos);
  EXPECT_NE(v.error_message.find("500"), std::string::npos);
  auto s = d.decode(
      R"({"error": {"object": "error", "message": "Request timed out.", "type": "SERVICE_UNAVAILABLE", "param": null, "code": 503}})");
  EXPECT_EQ(s.kind, Kind::kError);
  EXPECT_NE(s.error_message.find("timed out"), std::string::npos);
}

TEST(StreamDecoder, FlatErrorObject) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"object":"error","message":"bad things","type":"BadRequestError","param":null,"code":400})");
  EXPECT_EQ(c.kind, Kind::kError);
  EXPECT_EQ(c.error_message, "bad things");
}

TEST(StreamDecoder, MalformedJson) {
  StreamDecoder d;
  EXPECT_EQ(d.decode("{\"choices\": [").kind, Kind::kMalformed);
  EXPECT_EQ(d.decode("not json").kind, Kind::kMalformed);
  EXPECT_EQ(d.decode("").kind, Kind::kMalformed);
  EXPECT_EQ(d.decode("[1,2]").kind, Kind::kMalformed);
  // The decoder is reusable after a failure.
  EXPECT_EQ(d.decode(R"({"choices":[{"text":"x"}]})").kind, Kind::kContent);
}

TEST(StreamDecoder, ContinuousUsageOnEveryChunk) {
  StreamDecoder d;
  auto c = d.decode(
      R"({"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":12,"total_tokens":13,"completion_tokens":1}})");
  EXPECT_EQ(c.kind, Kind::kContent);
  ASSERT_TRUE(c.usage);
  EXPECT_EQ(c.usage->completion_tokens, 1);
}

TEST(ErrorMessageFromBody, KnownShapesAndPlainText) {
  EXPECT_EQ(error_message_from_body(
                R"({"error":{"code":400,"message":"too long","type":"invalid_request_error"}})"),
            "too long (invalid_request_error 400)");
  EXPECT_EQ(error_message_from_body("Internal Server Error"), "Internal Server Error");
}

TEST(RequestBody, CompletionsWithTokenIds) {
  RequestKnobs k;
  k.model = "m";
  std::vector<int32_t> ids = {5, 6, 7};
  std::string body = completions_body(k, ids, 10);
  EXPECT_NE(body.find(R"("prompt":[5,6,7])"), std::string::npos);
  EXPECT_NE(body.find(R"("max_tokens":10)"), std::string::npos);
  EXPECT_NE(body.find(R"("ignore_eos":true)"), std::string::npos);
  EXPECT_NE(body.find(R"("stream_options":{"include_usage":true})"), std::string::npos);
}

TEST(RequestBody, ChatEscapesText) {
  RequestKnobs k;
  k.model = "m";
  std::string body = chat_body(k, "say \"hi\"\n", 3);
  EXPECT_NE(body.find(R"("content":"say \"hi\"\n")"), std::string::npos);
  EXPECT_NE(body.find(R"("max_completion_tokens":3)"), std::string::npos);
}

TEST(ApiNames, RoundTrip) {
  EXPECT_EQ(parse_api("chat"), Api::kChat);
  EXPECT_EQ(parse_api("completions"), Api::kCompletions);
  EXPECT_FALSE(parse_api("embeddings"));
  EXPECT_EQ(api_path(Api::kChat), "/v1/chat/completions");
}

}  // namespace
}  // namespace ib::openai
