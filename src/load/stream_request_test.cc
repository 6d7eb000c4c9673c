#include "load/stream_request.h"

#include <gtest/gtest.h>

namespace ib::load {
namespace {

// A vLLM chat stream with include_usage (the shape of vLLM 0.9-0.16, as in the transcripts of
// vllm-project/vllm issues #19662 and #35705), ids shortened.
const std::string kVllmChat =
    "data: "
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
    "\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
    "data: "
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
    "\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
    "data: "
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
    "\"content\":\" world!\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
    "data: "
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
    "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":\"stop\",\"stop_reason\":null}]}\n\n"
    "data: "
    "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_"
    "tokens\":12,\"total_tokens\":15,\"completion_tokens\":3}}\n\n"
    "data: [DONE]\n\n";

http::HttpOutcome complete_200() {
  http::HttpOutcome o;
  o.response_started = true;
  o.complete = true;
  o.status = 200;
  return o;
}

// Feeds `body` in two reads split at `cut`, at times 10 (first part) and 20 (second part).
metrics::RequestRecord run(const std::string& body, size_t cut, http::HttpOutcome outcome,
                           int status = 200) {
  metrics::RequestRecord rec;
  StreamingResponse resp;
  resp.reset(&rec);
  resp.on_headers(status, 5);
  resp.on_body(std::string_view(body).substr(0, cut), 10);
  resp.on_body(std::string_view(body).substr(cut), 20);
  rec.done_ns = 30;
  outcome.status = status;
  resp.finish(outcome);
  return rec;
}

TEST(StreamingResponse, RoleChunkIsNotTheFirstToken) {
  // Split right after the role chunk: the first content event arrives at t=20, not 10.
  size_t role_end = kVllmChat.find("\n\n") + 2;
  metrics::RequestRecord rec = run(kVllmChat, role_end, complete_200());
  ASSERT_TRUE(rec.ok()) << rec.error;
  ASSERT_EQ(rec.content_ns.size(), 2u);
  EXPECT_EQ(rec.content_ns[0], 20);
  EXPECT_EQ(rec.completion_tokens, 3);
  EXPECT_EQ(rec.prompt_tokens, 12);
  EXPECT_EQ(rec.finish_reason, "stop");
  EXPECT_EQ(rec.first_byte_ns, 5);
}

TEST(StreamingResponse, SameResultAtEverySplit) {
  for (size_t cut = 0; cut <= kVllmChat.size(); ++cut) {
    metrics::RequestRecord rec = run(kVllmChat, cut, complete_200());
    ASSERT_TRUE(rec.ok()) << "cut " << cut << ": " << rec.error;
    EXPECT_EQ(rec.content_ns.size(), 2u) << "cut " << cut;
    EXPECT_EQ(rec.completion_tokens, 3) << "cut " << cut;
  }
}

TEST(StreamingResponse, StreamWithoutDoneFails) {
  std::string cut_stream = kVllmChat.substr(0, kVllmChat.find("data: [DONE]"));
  metrics::RequestRecord rec = run(cut_stream, 10, complete_200());
  EXPECT_EQ(rec.failure, metrics::FailureCause::kNoDone);
}

TEST(StreamingResponse, ConnectionResetMidStreamFails) {
  http::HttpOutcome o = complete_200();
  o.complete = false;
  o.ec = boost::asio::error::connection_reset;
  metrics::RequestRecord rec = run(kVllmChat.substr(0, 200), 100, o);
  EXPECT_EQ(rec.failure, metrics::FailureCause::kConnectionReset);
  o.ec = boost::asio::error::eof;  // the server closed without finishing
  rec = run(kVllmChat.substr(0, 200), 100, o);
  EXPECT_EQ(rec.failure, metrics::FailureCause::kNoDone);
  EXPECT_NE(rec.error.find("without [DONE]"), std::string::npos);
}

TEST(StreamingResponse, ErrorEventThenDone) {
  const std::string s =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: {\"error\": {\"message\": \"Internal server error\", \"type\": "
      "\"InternalServerError\", \"param\": null, \"code\": 500}}\n\n"
      "data: [DONE]\n\n";
  metrics::RequestRecord rec = run(s, 7, complete_200());
  EXPECT_EQ(rec.failure, metrics::FailureCause::kStreamError);
  EXPECT_NE(rec.error.find("Internal server error"), std::string::npos);
}

TEST(StreamingResponse, LegacyLlamaCppErrorLine) {
  const std::string s =
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\nerror: {\"code\":500,\"message\":\"slot "
      "failed\"}\n\n";
  http::HttpOutcome o = complete_200();
  metrics::RequestRecord rec = run(s, 3, o);
  EXPECT_EQ(rec.failure, metrics::FailureCause::kStreamError);
  EXPECT_NE(rec.error.find("slot failed"), std::string::npos);
}

TEST(StreamingResponse, HttpErrorStatusKeepsTheServerMessage) {
  const std::string body =
      R"({"object":"error","message":"This model's maximum context length is 2048 tokens","type":"BadRequestError","param":null,"code":400})";
  http::HttpOutcome o = complete_200();
  metrics::RequestRecord rec = run(body, 5, o, 400);
  EXPECT_EQ(rec.failure, metrics::FailureCause::kHttpStatus);
  EXPECT_EQ(rec.http_status, 400);
  EXPECT_NE(rec.error.find("maximum context length"), std::string::npos);
  EXPECT_NE(rec.error.find("HTTP 400"), std::string::npos);
}

TEST(StreamingResponse, NoContentAtAllFails) {
  const std::string s =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: [DONE]\n\n";
  metrics::RequestRecord rec = run(s, 0, complete_200());
  EXPECT_EQ(rec.failure, metrics::FailureCause::kNoContent);
}

TEST(StreamingResponse, ConnectFailureAndTimeout) {
  http::HttpOutcome o;
  o.connect_failed = true;
  o.ec = boost::asio::error::connection_refused;
  metrics::RequestRecord rec;
  StreamingResponse resp;
  resp.reset(&rec);
  resp.finish(o);
  EXPECT_EQ(rec.failure, metrics::FailureCause::kConnect);

  http::HttpOutcome t;
  t.response_started = true;
  t.status = 200;
  t.timeout = http::TimeoutKind::kIdle;
  t.ec = boost::beast::error::timeout;
  metrics::RequestRecord rec2;
  resp.reset(&rec2);
  resp.on_headers(200, 1);
  resp.on_body("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 2);
  resp.finish(t);
  EXPECT_EQ(rec2.failure, metrics::FailureCause::kIdleTimeout);
}

TEST(StreamingResponse, MissingUsageLeavesCountsUnset) {
  const std::string s =
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: "
      "[DONE]\n\n";
  metrics::RequestRecord rec = run(s, 0, complete_200());
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec.completion_tokens, -1);
  EXPECT_EQ(rec.output_tokens(), 2);
}

}  // namespace
}  // namespace ib::load

namespace ib::load {
namespace {

// The idle timeout counts progress, not bytes: keep-alive comments (`: ping`) do not reset it.
TEST(StreamingResponse, ProgressIsDataEventsNotComments) {
  metrics::RequestRecord rec;
  StreamingResponse resp;
  resp.reset(&rec);
  EXPECT_FALSE(resp.progress_ns().has_value());  // no response yet: nothing to stream
  resp.on_headers(200, 10);
  ASSERT_TRUE(resp.progress_ns().has_value());
  EXPECT_EQ(*resp.progress_ns(), 10);
  resp.on_body(": ping\n\n: ping\n\n", 20);
  EXPECT_EQ(*resp.progress_ns(), 10);
  resp.on_body("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n", 30);
  EXPECT_EQ(*resp.progress_ns(), 30);
  resp.on_body(": ping\n\n", 40);
  EXPECT_EQ(*resp.progress_ns(), 30);

  // A non-streamed body (an error) progresses with every byte.
  metrics::RequestRecord rec2;
  resp.reset(&rec2);
  resp.on_headers(500, 50);
  EXPECT_FALSE(resp.progress_ns().has_value());
}

TEST(StreamingResponse, AnEventTooBigToKeepFailsTheRequest) {
  metrics::RequestRecord rec;
  StreamingResponse resp;
  resp.reset(&rec);
  resp.on_headers(200, 5);
  const std::string chunk(1 << 20, 'x');
  resp.on_body("data: ", 10);
  for (size_t sent = 0; sent <= http::SseParser::kDefaultMaxEventBytes; sent += chunk.size()) {
    resp.on_body(chunk, 20);
  }
  rec.done_ns = 30;
  resp.finish(complete_200());
  EXPECT_EQ(rec.failure, metrics::FailureCause::kMalformed);
  EXPECT_NE(rec.error.find("more than 8 MiB"), std::string::npos) << rec.error;
}

}  // namespace
}  // namespace ib::load
