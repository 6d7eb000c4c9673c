// Loopback tests of the simulated server: a real SimServer on 127.0.0.1 (ephemeral port) on its
// own thread, and a small blocking Beast client.
#include "sim/sim_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "http/test_client.h"
#include "http/test_server_thread.h"
#include "sim/config.h"
#include "sim/tokens.h"

namespace ib::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

// Bound on one client step; reached only when the server is broken.

using testing::TestClient;
using Response = testing::TestResponse;

// Splits an SSE body into the data of its events.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> events;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event at " << pos;
    if (end == std::string::npos) break;
    std::string event = body.substr(pos, end - pos);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    events.push_back(event.substr(6));
    pos = end + 2;
  }
  return events;
}

SimArgs fast_args() {
  SimArgs args;
  args.port = 0;
  args.max_model_len = 4096;
  args.timing.prefill_tok_s = 1e6;
  args.timing.prefill_overhead_ms = 0.0;
  args.timing.decode_base_ms = 0.2;
  args.timing.decode_per_running_ms = 0.0;
  args.seed = 7;
  return args;
}

// Runs a SimServer on its own thread for one test.
class SimServerThread : public testing::ServerOnThread<SimServer> {
 public:
  explicit SimServerThread(SimArgs args)
      : ServerOnThread([](SimServer& s) { return s.listen(); }, std::move(args)) {}
};

SimArgs with_threads(SimArgs args, int threads) {
  args.threads = threads;
  return args;
}

// Every case runs with the engine and the connections on one thread, and with three I/O threads.
class SimServerTest : public ::testing::TestWithParam<int> {
 protected:
  SimServerThread sim_{with_threads(fast_args(), GetParam())};
  uint16_t port() const { return sim_.port(); }
};

INSTANTIATE_TEST_SUITE_P(Threads, SimServerTest, ::testing::Values(1, 3));

TEST_P(SimServerTest, ListensOnAnEphemeralPort) {
  EXPECT_NE(port(), 0);
  EXPECT_EQ(sim_.server().args().port, port());
}

TEST_P(SimServerTest, Health) {
  TestClient client(port());
  Response r = client.request(http::verb::get, "/health");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
}

TEST_P(SimServerTest, Models) {
  TestClient client(port());
  Response r = client.request(http::verb::get, "/v1/models");
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers[http::field::content_type], "application/json");
  json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("object").as_string(), "list");
  const auto& card = v.at("data").at(0).as_object();
  EXPECT_EQ(card.at("id").as_string(), "sim-model");
  EXPECT_EQ(card.at("object").as_string(), "model");
  EXPECT_EQ(card.at("owned_by").as_string(), "inferbench-sim");
  EXPECT_EQ(card.at("max_model_len").as_int64(), 4096);
  EXPECT_GT(card.at("created").as_int64(), 0);
}

TEST_P(SimServerTest, NonStreamingCompletionWithIgnoreEos) {
  TestClient client(port());
  Response r = client.post(
      "/v1/completions",
      R"({"model":"sim-model","prompt":"one two three","max_tokens":5,"ignore_eos":true})");
  ASSERT_FALSE(r.ec);
  ASSERT_EQ(r.status, 200) << r.body;
  json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("object").as_string(), "text_completion");
  EXPECT_EQ(std::string(v.at("id").as_string()).rfind("cmpl-", 0), 0u);
  EXPECT_EQ(v.at("model").as_string(), "sim-model");
  const auto& choice = v.at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  EXPECT_EQ(count_words(std::string(choice.at("text").as_string())), 5);
  EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 5);
  EXPECT_EQ(v.at("usage").at("prompt_tokens").as_int64(), 3);
  EXPECT_EQ(v.at("usage").at("total_tokens").as_int64(), 8);
}

TEST_P(SimServerTest, NaturalStopIsConsistentAndDeterministic) {
  // Over a few prompts, both endings occur and usage always matches the text.
  int stops = 0;
  TestClient client(port());
  for (int i = 0; i < 12; ++i) {
    std::string body = R"({"prompt":"prompt number )" + std::to_string(i) + R"(","max_tokens":6})";
    Response r = client.post("/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    json::value v = json::parse(r.body);
    int64_t tokens = v.at("usage").at("completion_tokens").as_int64();
    int words = count_words(std::string(v.at("choices").at(0).at("text").as_string()));
    EXPECT_GE(tokens, 1);
    EXPECT_LE(tokens, 6);
    if (v.at("choices").at(0).at("finish_reason").as_string() == "stop") {
      ++stops;
      EXPECT_EQ(words, tokens - 1) << "the EOS token has no text";
    } else {
      EXPECT_EQ(tokens, 6);
      EXPECT_EQ(words, 6);
    }
    // Same prompt, same seed: same answer text.
    Response again = client.post("/v1/completions", body);
    EXPECT_EQ(json::parse(again.body).at("choices"), v.at("choices"));
  }
  EXPECT_GT(stops, 0);
}

TEST_P(SimServerTest, StreamingChatEventSequence) {
  TestClient client(port());
  Response r = client.post(
      "/v1/chat/completions",
      R"({"model":"sim-model","messages":[{"role":"user","content":"hi there"}],"max_tokens":4,)"
      R"("ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_FALSE(r.ec) << r.ec.message();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers[http::field::content_type], "text/event-stream");
  EXPECT_EQ(r.headers[http::field::cache_control], "no-cache");
  EXPECT_EQ(r.headers[http::field::transfer_encoding], "chunked");

  std::vector<std::string> events = sse_data(r.body);
  ASSERT_EQ(events.size(), 1u + 4u + 1u + 1u);  // role, 4 tokens, usage, [DONE]
  EXPECT_EQ(events.back(), "[DONE]");

  json::value role = json::parse(events[0]);
  EXPECT_EQ(role.at("object").as_string(), "chat.completion.chunk");
  const auto& role_delta = role.at("choices").at(0).at("delta").as_object();
  EXPECT_EQ(role_delta.at("role").as_string(), "assistant");
  EXPECT_EQ(role_delta.at("content").as_string(), "");
  std::string id(role.at("id").as_string());
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);

  for (int i = 1; i <= 4; ++i) {
    json::value chunk = json::parse(events[i]);
    EXPECT_EQ(chunk.at("id").as_string(), id) << "one id per response";
    const auto& choice = chunk.at("choices").at(0).as_object();
    EXPECT_FALSE(choice.at("delta").as_object().contains("role"));
    EXPECT_FALSE(choice.at("delta").at("content").as_string().empty());
    if (i < 4) {
      EXPECT_TRUE(choice.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
    }
    EXPECT_FALSE(chunk.as_object().contains("usage"));
  }

  json::value usage = json::parse(events[5]);
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 4);
  EXPECT_EQ(usage.at("usage").at("prompt_tokens").as_int64(),
            2 + kChatTokensPerMessage + kChatTokensPerRequest);
}

TEST_P(SimServerTest, StreamingCompletionWithContinuousUsage) {
  TestClient client(port());
  Response r =
      client.post("/v1/completions",
                  R"({"prompt":[1,2,3],"max_tokens":3,"min_tokens":3,"stream":true,)"
                  R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> events = sse_data(r.body);
  ASSERT_EQ(events.size(), 3u + 1u + 1u);
  for (int i = 0; i < 3; ++i) {
    json::value chunk = json::parse(events[i]);
    EXPECT_EQ(chunk.at("object").as_string(), "text_completion");
    EXPECT_EQ(chunk.at("usage").at("completion_tokens").as_int64(), i + 1);
    EXPECT_EQ(chunk.at("usage").at("prompt_tokens").as_int64(), 3);
  }
  EXPECT_EQ(json::parse(events[2]).at("choices").at(0).at("finish_reason").as_string(), "length");
  EXPECT_EQ(json::parse(events[3]).at("usage").at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(events[4], "[DONE]");
}

// --stream-interval 4 (issue 31): the first token alone, then four to an event, the rest with the
// last; the text is the same as one token an event, and continuous usage counts every token.
TEST(SimServerStreamInterval, TokensGoOutNToAnEvent) {
  SimArgs args = fast_args();
  args.stream_interval = 4;
  SimServerThread batched(args);
  SimServerThread single(fast_args());
  const std::string body =
      R"({"prompt":[1,2,3],"max_tokens":10,"min_tokens":10,"stream":true,)"
      R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})";
  Response r = TestClient(batched.port()).post("/v1/completions", body);
  Response one = TestClient(single.port()).post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(one.status, 200) << one.body;
  const std::vector<std::string> events = sse_data(r.body), ones = sse_data(one.body);
  ASSERT_EQ(events.size(), 4u + 1u + 1u);  // 1, 4, 4, 1 tokens; usage; [DONE]
  ASSERT_EQ(ones.size(), 10u + 1u + 1u);
  std::string text, text_one;
  const int64_t counts[] = {1, 5, 9, 10};
  for (size_t i = 0; i < 4; ++i) {
    const json::value chunk = json::parse(events[i]);
    text += chunk.at("choices").at(0).at("text").as_string();
    EXPECT_EQ(chunk.at("usage").at("completion_tokens").as_int64(), counts[i]);
  }
  for (size_t i = 0; i < 10; ++i) {
    text_one += json::parse(ones[i]).at("choices").at(0).at("text").as_string();
  }
  EXPECT_EQ(text, text_one);
  EXPECT_EQ(json::parse(events[3]).at("choices").at(0).at("finish_reason").as_string(), "length");
  EXPECT_EQ(events[5], "[DONE]");
  SimArgs bad = fast_args();
  bad.stream_interval = 0;
  ASSERT_FALSE(validate(bad).ok());
  EXPECT_NE(validate(bad).error().message.find("stream_interval"), std::string::npos);
}

TEST_P(SimServerTest, StreamingWithoutUsageEndsWithDone) {
  TestClient client(port());
  Response r = client.post("/v1/completions",
                           R"({"prompt":"x","max_tokens":2,"ignore_eos":true,"stream":true})");
  ASSERT_EQ(r.status, 200);
  std::vector<std::string> events = sse_data(r.body);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2], "[DONE]");
}

TEST_P(SimServerTest, MalformedJsonIs400AndServingContinues) {
  {
    TestClient client(port());
    Response r = client.post("/v1/completions", R"({"prompt": "a",)");
    ASSERT_FALSE(r.ec);
    EXPECT_EQ(r.status, 400);
    json::value v = json::parse(r.body);
    EXPECT_EQ(v.at("error").at("type").as_string(), "BadRequestError");
    EXPECT_EQ(v.at("error").at("code").as_int64(), 400);
    // The connection itself stays usable.
    Response after = client.post("/v1/completions", R"({"prompt":"a","max_tokens":1})");
    EXPECT_EQ(after.status, 200) << after.body;
  }
  TestClient fresh(port());
  Response r = fresh.post("/v1/completions", R"({"prompt":"a","max_tokens":2,"ignore_eos":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body).at("usage").at("completion_tokens").as_int64(), 2);
}

TEST_P(SimServerTest, BadFieldIs400NamingIt) {
  TestClient client(port());
  Response r = client.post("/v1/chat/completions",
                           R"({"messages":[{"role":"user","content":"a"}],"max_tokens":0})");
  EXPECT_EQ(r.status, 400);
  json::value v = json::parse(r.body);
  EXPECT_EQ(v.at("error").at("param").as_string(), "max_tokens");
  EXPECT_NE(std::string(v.at("error").at("message").as_string()).find("max_tokens"),
            std::string::npos);
}

TEST_P(SimServerTest, ContextOverflowIs400) {
  TestClient client(port());
  Response r = client.post("/v1/completions", R"({"prompt":"a b","max_tokens":4095})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body).at("error").at("param").as_string(), "max_tokens");
}

TEST_P(SimServerTest, UnknownModelIs404) {
  TestClient client(port());
  Response r = client.post("/v1/completions", R"({"model":"other","prompt":"a"})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body).at("error").at("type").as_string(), "NotFoundError");
}

TEST_P(SimServerTest, RoutingErrors) {
  TestClient client(port());
  EXPECT_EQ(client.request(http::verb::get, "/v1/completions").status, 405);
  EXPECT_EQ(client.request(http::verb::get, "/v2/nothing").status, 404);
}

TEST_P(SimServerTest, KeepAliveTwoRequestsOnOneConnection) {
  TestClient client(port());
  Response first = client.post("/v1/completions", R"({"prompt":"a","max_tokens":1})");
  ASSERT_FALSE(first.ec);
  EXPECT_EQ(first.status, 200);
  Response second =
      client.post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"b"}],"max_tokens":2,"stream":true})");
  ASSERT_FALSE(second.ec) << second.ec.message();
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(sse_data(second.body).back(), "[DONE]");
}

class SimServerThreads : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Threads, SimServerThreads, ::testing::Values(1, 3));

TEST_P(SimServerThreads, InFlightStreamIsCancelledAndRunReturns) {
  SimArgs args = with_threads(fast_args(), GetParam());
  args.timing.decode_base_ms = 50.0;  // long enough that the stream is still running at stop()
  SimServerThread sim(args);
  TestClient client(sim.port());
  ASSERT_FALSE(client.send(http::verb::post, "/v1/completions",
                           R"({"prompt":"a","max_tokens":1000,"ignore_eos":true,"stream":true})"));
  Response header = client.read_header();
  ASSERT_FALSE(header.ec) << header.ec.message();
  EXPECT_EQ(header.status, 200);
  EXPECT_TRUE(sim.shut_down()) << "io_context::run() did not return after stop()";
  EXPECT_EQ(sim.server().engine().running(), 0);
  error_code closed = client.wait_closed();  // the connection was closed under the stream
  EXPECT_TRUE(closed == asio::error::eof || closed == asio::error::connection_reset)
      << closed.message();
}

TEST_P(SimServerThreads, ClientDisconnectFreesTheSlot) {
  SimArgs args = with_threads(fast_args(), GetParam());
  args.max_running = 1;
  args.timing.decode_base_ms = 20.0;
  SimServerThread sim(args);
  {
    // Occupies the only slot, then goes away mid-stream.
    TestClient hog(sim.port());
    ASSERT_FALSE(hog.send(http::verb::post, "/v1/completions",
                          R"({"prompt":"a","max_tokens":100000,"ignore_eos":true,"stream":true})"));
    ASSERT_FALSE(hog.read_header().ec);
    hog.close();
  }
  TestClient next(sim.port());
  Response r = next.post("/v1/completions", R"({"prompt":"b","max_tokens":2,"ignore_eos":true})");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
}

TEST(SimArgsTest, ValidateNamesTheSetting) {
  EXPECT_TRUE(validate(SimArgs{}).ok());
  SimArgs a;
  a.max_running = 0;
  ASSERT_FALSE(validate(a).ok());
  EXPECT_NE(validate(a).error().message.find("max_running"), std::string::npos);
  SimArgs b;
  b.timing.prefill_tok_s = -5;
  ASSERT_FALSE(validate(b).ok());
  EXPECT_NE(validate(b).error().message.find("prefill_tok_s"), std::string::npos);
  SimArgs c;
  c.model = "";
  EXPECT_FALSE(validate(c).ok());
  SimArgs d;
  d.threads = 0;
  ASSERT_FALSE(validate(d).ok());
  EXPECT_NE(validate(d).error().message.find("threads"), std::string::npos);
  d.threads = kMaxIoThreads + 1;
  EXPECT_FALSE(validate(d).ok());
  d.threads = 3;
  EXPECT_TRUE(validate(d).ok());
  EXPECT_GE(default_io_threads(), 1);
  EXPECT_LE(default_io_threads(), 4);
}

TEST(SimArgsTest, FormatListsEverySettingPythonStyle) {
  SimArgs args;
  std::string s = format_sim_args(args);
  EXPECT_EQ(s.rfind("SimArgs(", 0), 0u) << s;
  EXPECT_EQ(s.back(), ')');
  for (const char* part :
       {"host='127.0.0.1'", "port=8000", "model='sim-model'", "max_model_len=32768",
        "prefill_tok_s=20000.0", "prefill_overhead_ms=2.0", "decode_base_ms=5.0",
        "decode_per_running_ms=0.1", "max_running=256", "seed=0", "keep_alive_timeout_s=5.0",
        "threads=1", "gsm8k_correct=None", "stream_interval=1"}) {
    EXPECT_NE(s.find(part), std::string::npos) << part << " missing in " << s;
  }
  args.gsm8k = Gsm8kAnswerOptions{0.5, 0.25};
  EXPECT_NE(format_sim_args(args).find("gsm8k_correct=0.5, gsm8k_flexible_only=0.25"),
            std::string::npos);
  args.model = "it's";
  EXPECT_NE(format_sim_args(args).find(R"(model='it\'s')"), std::string::npos);
}

// The value of an unlabelled-beyond-model series, e.g. metric(body, "vllm:num_requests_running").
double metric(const std::string& body, const std::string& name, const std::string& extra = "") {
  const std::string prefix = name + "{model_name=\"sim-model\",engine=\"0\"" + extra + "} ";
  const std::size_t at = body.find("\n" + prefix);
  if (at == std::string::npos) {
    ADD_FAILURE() << prefix << " not in\n" << body;
    return -1;
  }
  return std::stod(body.substr(at + 1 + prefix.size()));
}

SimArgs roofline_args() {
  SimArgs args;
  args.port = 0;
  args.max_model_len = 4096;
  args.seed = 3;
  args.timing_model = TimingModelKind::kRoofline;
  args.time_scale = 5.0;
  auto config = resolve_engine_config(EngineFlags{}, args.max_model_len);
  if (!config) throw std::runtime_error(config.error().message);
  args.engine = std::move(*config);
  return args;
}

// Speculative decoding (issue 31): a stream's events carry 1..K+1 tokens, and /metrics counts
// drafts in vLLM's names so that AL = 1 + accepted / drafts.
TEST(SimServerSpecDecode, EventsCarrySeveralTokensAndMetricsCountTheDrafts) {
  SimArgs args = fast_args();
  args.spec.num_speculative_tokens = 3;
  args.spec.acceptance = acceptance_for_length(2.5, 3);
  SimServerThread sim(args);
  TestClient client(sim.port());
  Response r =
      client.post("/v1/completions",
                  R"({"prompt":[1,2,3],"max_tokens":60,"min_tokens":60,"stream":true,)"
                  R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> events = sse_data(r.body);
  ASSERT_GE(events.size(), 3u);
  int64_t before = 0;
  size_t content = 0;
  for (const auto& e : events) {
    if (e == "[DONE]") break;
    const json::value chunk = json::parse(e);
    if (chunk.at("choices").as_array().empty()) continue;  // the final usage event
    const int64_t now = chunk.at("usage").at("completion_tokens").as_int64();
    EXPECT_GE(now - before, 1);
    EXPECT_LE(now - before, content == 0 ? 1 : 4);  // the prefill's token comes alone
    before = now;
    ++content;
  }
  EXPECT_EQ(before, 60);
  EXPECT_LT(content, 40u);
  Response m = client.request(http::verb::get, "/metrics");
  ASSERT_EQ(m.status, 200);
  const double drafts = metric(m.body, "vllm:spec_decode_num_drafts_total");
  const double accepted = metric(m.body, "vllm:spec_decode_num_accepted_tokens_total");
  EXPECT_EQ(drafts, static_cast<double>(content - 1));
  EXPECT_EQ(metric(m.body, "vllm:spec_decode_num_draft_tokens_total"), 3 * drafts);
  EXPECT_EQ(accepted, 60 - 1 - drafts);
  // Position j is accepted only after j-1: the per-position counts fall and add up.
  double per_pos[3];
  for (int j = 0; j < 3; ++j) {
    per_pos[j] = metric(m.body, "vllm:spec_decode_num_accepted_tokens_per_pos_total",
                        fmt::format(",position=\"{}\"", j));
  }
  EXPECT_GE(per_pos[0], per_pos[1]);
  EXPECT_GE(per_pos[1], per_pos[2]);
  EXPECT_EQ(per_pos[0] + per_pos[1] + per_pos[2], accepted);
  EXPECT_NE(format_sim_args(args).find("speculative_config={'num_speculative_tokens': 3"),
            std::string::npos);
}

TEST(SimServerRoofline, StreamsEveryTokenAndMetricsCountThem) {
  SimServerThread sim(roofline_args());
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<TestClient>(sim.port()));
    const std::string body = R"({"prompt":"request )" + std::to_string(i) +
                             R"( says hello","max_tokens":20,"ignore_eos":true,"stream":true,)"
                             R"("stream_options":{"include_usage":true}})";
    ASSERT_FALSE(clients.back()->send(http::verb::post, "/v1/completions", body));
  }
  for (auto& c : clients) {
    Response r = c->read();
    ASSERT_FALSE(r.ec) << r.ec.message();
    ASSERT_EQ(r.status, 200);
    std::vector<std::string> events = sse_data(r.body);
    ASSERT_EQ(events.size(), 22u);  // 20 tokens, usage, [DONE]
    EXPECT_EQ(events.back(), "[DONE]");
    EXPECT_EQ(json::parse(events[20]).at("usage").at("completion_tokens").as_int64(), 20);
  }
  TestClient probe(sim.port());
  Response m = probe.request(http::verb::get, "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.headers[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metric(m.body, "vllm:generation_tokens_total"), 80);
  EXPECT_EQ(metric(m.body, "vllm:prompt_tokens_total"), 16);
  EXPECT_EQ(metric(m.body, "vllm:request_success_total", ",finished_reason=\"length\""), 4);
  EXPECT_EQ(metric(m.body, "vllm:num_requests_running"), 0);
  EXPECT_EQ(metric(m.body, "vllm:num_requests_waiting"), 0);
  EXPECT_EQ(metric(m.body, "vllm:time_to_first_token_seconds_count"), 4);
  EXPECT_EQ(metric(m.body, "vllm:prefix_cache_queries_total"), 16);
  EXPECT_GE(metric(m.body, "vllm:kv_cache_usage_perc"), 0);
  EXPECT_NE(m.body.find("vllm:cache_config_info{"), std::string::npos);
  EXPECT_NE(m.body.find("# TYPE vllm:time_to_first_token_seconds histogram"), std::string::npos);
  // Continuous batching: the four streams shared engine steps.
  EXPECT_LT(metric(m.body, "vllm:iteration_total"), 4 * 20);
}

// The roofline model speculates too: each decode step verifies the last token and K drafts (K + 1
// tokens of compute and KV), so a stream takes fewer steps than tokens, its events carry 1..K+1
// tokens, and the counters give the pinned acceptance length.
TEST(SimServerRoofline, DecodeStepsVerifyDraftsAndYieldSeveralTokens) {
  SimArgs args = roofline_args();
  args.spec.num_speculative_tokens = 3;
  args.spec.pinned_length = 2.5;
  args.spec.acceptance = acceptance_for_length(2.5, 3);
  SimServerThread sim(args);
  TestClient client(sim.port());
  const std::string body =
      R"({"prompt":"speculate","max_tokens":200,"ignore_eos":true,"stream":true,)"
      R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})";
  Response r = client.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200);
  const std::vector<std::string> events = sse_data(r.body);
  // Fewer content events than tokens: about 200 / 2.5, plus the prefill's and the usage chunk.
  EXPECT_LT(events.size(), 120u);
  EXPECT_GT(events.size(), 60u);
  int64_t last = 0;
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    const json::value v = json::parse(e);
    if (const auto* u = v.as_object().if_contains("usage"); u && u->is_object()) {
      last = u->as_object().at("completion_tokens").as_int64();
    }
  }
  EXPECT_EQ(last, 200);
  Response m = client.request(http::verb::get, "/metrics");
  const double drafts = metric(m.body, "vllm:spec_decode_num_drafts_total");
  const double accepted = metric(m.body, "vllm:spec_decode_num_accepted_tokens_total");
  ASSERT_GT(drafts, 0);
  EXPECT_NEAR(1 + accepted / drafts, 2.5, 0.15);
  EXPECT_EQ(metric(m.body, "vllm:generation_tokens_total"), 200);
  EXPECT_LT(metric(m.body, "vllm:iteration_total"), 100);
}

TEST(SimServerRoofline, RepeatedPromptHitsThePrefixCache) {
  SimServerThread sim(roofline_args());
  TestClient client(sim.port());
  std::string prompt;
  for (int i = 0; i < 300; ++i) prompt += "word" + std::to_string(i) + " ";
  const std::string body = R"({"prompt":")" + prompt + R"(","max_tokens":2,"ignore_eos":true})";
  ASSERT_EQ(client.post("/v1/completions", body).status, 200);
  ASSERT_EQ(client.post("/v1/completions", body).status, 200);
  Response m = client.request(http::verb::get, "/metrics");
  EXPECT_EQ(metric(m.body, "vllm:prefix_cache_queries_total"), 600);
  EXPECT_EQ(metric(m.body, "vllm:prefix_cache_hits_total"), 288);  // 18 full blocks of 16
}

// `n` distinct words starting with `tag` ("tag0 tag1 ..."), so prompts share no words by accident.
std::string words(const std::string& tag, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? " " : "") + tag + std::to_string(i);
  return out;
}

std::string message(const std::string& role, const std::string& content) {
  return R"({"role":")" + role + R"(","content":")" + content + R"("})";
}

TEST(SimServerRoofline, MultiTurnChatHitsThePrefixCacheForTheWholePreviousPrompt) {
  // Agentic replay resends the whole history each turn, with the recorded (pre-canned) reply
  // rather than what the server generated. The previous prompt, chat template included, is then
  // a prefix of the next one: its blocks must all be found.
  SimServerThread sim(roofline_args());
  TestClient client(sim.port());
  const std::string system = message("system", words("sys", 100));
  const std::string user1 = message("user", words("first", 49));
  const std::string turn1 =
      R"({"messages":[)" + system + "," + user1 + R"(],"max_tokens":4,"ignore_eos":true})";
  Response r1 = client.post("/v1/chat/completions", turn1);
  ASSERT_EQ(r1.status, 200) << r1.body;
  // 3 (reply header) + 2 x 4 (role markers, end of turn) + 149 words = 160 = 10 full blocks.
  const int64_t p1 = json::parse(r1.body).at("usage").at("prompt_tokens").as_int64();
  ASSERT_EQ(p1, 160);
  Response m1 = client.request(http::verb::get, "/metrics");
  EXPECT_EQ(metric(m1.body, "vllm:prefix_cache_queries_total"), 160);
  EXPECT_EQ(metric(m1.body, "vllm:prefix_cache_hits_total"), 0);

  const std::string turn2 = R"({"messages":[)" + system + "," + user1 + "," +
                            message("assistant", words("recorded", 30)) + "," +
                            message("user", words("second", 20)) +
                            R"(],"max_tokens":4,"ignore_eos":true})";
  Response r2 = client.post("/v1/chat/completions", turn2);
  ASSERT_EQ(r2.status, 200) << r2.body;
  const int64_t p2 = json::parse(r2.body).at("usage").at("prompt_tokens").as_int64();
  EXPECT_EQ(p2, 160 + 2 * 4 + 30 + 20);
  Response m2 = client.request(http::verb::get, "/metrics");
  EXPECT_EQ(metric(m2.body, "vllm:prefix_cache_queries_total"), p1 + p2);
  EXPECT_EQ(metric(m2.body, "vllm:prefix_cache_hits_total"), p1) << "the whole first prompt";

  // A third turn extends the second: its 218 tokens are 13 full blocks (208) plus a partial one
  // that is recomputed.
  const std::string turn3 = R"({"messages":[)" + system + "," + user1 + "," +
                            message("assistant", words("recorded", 30)) + "," +
                            message("user", words("second", 20)) + "," +
                            message("assistant", words("again", 5)) + R"(],"max_tokens":2})";
  Response r3 = client.post("/v1/chat/completions", turn3);
  ASSERT_EQ(r3.status, 200) << r3.body;
  Response m3 = client.request(http::verb::get, "/metrics");
  EXPECT_EQ(metric(m3.body, "vllm:prefix_cache_hits_total"), p1 + 208);
}

TEST(SimServerRoofline, KvPressureEvictsCachedBlocksAndPreempts) {
  SimArgs args;
  args.port = 0;
  args.max_model_len = 1024;
  args.timing_model = TimingModelKind::kRoofline;
  args.time_scale = 20.0;
  EngineFlags flags;
  flags.num_gpu_blocks_override = 64;  // 1024 tokens
  auto config = resolve_engine_config(flags, args.max_model_len);
  ASSERT_TRUE(config.ok()) << config.error().message;
  args.engine = std::move(*config);
  SimServerThread sim(std::move(args));

  // Four concurrent requests of 200 + 300 tokens (32 blocks each) need twice the cache.
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<TestClient>(sim.port()));
    const std::string body = R"({"prompt":")" + words("p" + std::to_string(i) + "w", 200) +
                             R"(","max_tokens":300,"ignore_eos":true,"stream":true})";
    ASSERT_FALSE(clients.back()->send(http::verb::post, "/v1/completions", body));
  }
  for (auto& c : clients) {
    Response r = c->read();
    ASSERT_FALSE(r.ec) << r.ec.message();
    ASSERT_EQ(r.status, 200);
  }
  TestClient probe(sim.port());
  Response m = probe.request(http::verb::get, "/metrics");
  EXPECT_GT(metric(m.body, "vllm:num_preemptions_total"), 0);
  EXPECT_GT(metric(m.body, "inferbench_sim:kv_cache_evicted_blocks_total"), 0);
  EXPECT_EQ(metric(m.body, "vllm:kv_cache_usage_perc"), 0) << "nothing runs any more";
  EXPECT_NE(m.body.find("# TYPE inferbench_sim:kv_cache_evicted_blocks_total counter"),
            std::string::npos);
}

TEST(SimServerLargeBody, AOneMegabyteChatPromptParses) {
  // An agentic turn carries ~100k-token histories: 150k words are about 1 MB of JSON, well below
  // the 64 MiB body limit.
  SimArgs args = fast_args();
  args.max_model_len = 200000;
  SimServerThread sim(std::move(args));
  TestClient client(sim.port());
  std::string content;
  content.reserve(150000 * 7);
  for (int i = 0; i < 150000; ++i) content += "w" + std::to_string(i % 100000) + " ";
  const std::string body =
      R"({"messages":[)" + message("user", content) + R"(],"max_tokens":1,"ignore_eos":true})";
  ASSERT_GT(body.size(), 1000000u);
  Response r = client.post("/v1/chat/completions", body);
  ASSERT_FALSE(r.ec) << r.ec.message();
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  EXPECT_EQ(json::parse(r.body).at("usage").at("prompt_tokens").as_int64(), 150000 + 4 + 3);
}

TEST(SimServerTruthLog, OneLinePerRequestWithEveryTokenSendTime) {
  char path_template[] = "/tmp/ib_truth_XXXXXX";
  const int fd = ::mkstemp(path_template);
  ASSERT_GE(fd, 0);
  ::close(fd);
  SimArgs args = roofline_args();
  args.truth_log = path_template;
  const int64_t before = mono_ns();
  std::string id;
  {
    SimServerThread sim(args);
    TestClient client(sim.port());
    Response r = client.request(
        http::verb::post, "/v1/chat/completions",
        R"({"messages":[{"role":"user","content":"hi there"}],"max_tokens":7,"ignore_eos":true,)"
        R"("stream":true})",
        {{"X-Request-Id", "req-42"}});
    ASSERT_EQ(r.status, 200);
    id = std::string(json::parse(sse_data(r.body).front()).at("id").as_string());
  }
  const int64_t after = mono_ns();
  std::vector<std::string> lines;
  {
    std::ifstream in(path_template);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ::unlink(path_template);
  ASSERT_EQ(lines.size(), 1u) << "one line per request";
  const json::object rec = json::parse(lines[0]).as_object();
  EXPECT_EQ(rec.at("request_id").as_string(), "req-42");
  EXPECT_EQ(rec.at("id").as_string(), id);
  EXPECT_EQ(rec.at("api").as_string(), "chat");
  EXPECT_TRUE(rec.at("stream").as_bool());
  EXPECT_EQ(rec.at("prompt_tokens").as_int64(), 2 + 4 + 3);
  EXPECT_EQ(rec.at("completion_tokens").as_int64(), 7);
  EXPECT_EQ(rec.at("finish_reason").as_string(), "length");
  const auto& sent = rec.at("token_ns").as_array();
  const auto& due = rec.at("due_ns").as_array();
  ASSERT_EQ(sent.size(), 7u);
  ASSERT_EQ(due.size(), 7u);
  const int64_t arrival = rec.at("arrival_ns").as_int64();
  EXPECT_GE(arrival, before);  // the client's clock: the same steady clock
  EXPECT_LE(arrival, due[0].as_int64());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_LE(due[i].as_int64(), sent[i].as_int64()) << "a token is sent after it exists";
    if (i > 0) {
      EXPECT_GT(due[i].as_int64(), due[i - 1].as_int64());
    }
    if (i > 0) {
      EXPECT_GE(sent[i].as_int64(), sent[i - 1].as_int64());
    }
  }
  EXPECT_LE(sent.back().as_int64(), after);
}

// Many concurrent streams over three I/O threads (the engine on a fourth): every response is
// complete and the same as the non-streamed answer to the same prompt, the truth log has one
// well-formed line per request with its tokens' send times in order, and /metrics adds up the
// counts of all threads.
TEST(SimServerIoThreads, ManyConcurrentStreamsAreCompleteCorrectAndLogged) {
  char path_template[] = "/tmp/ib_truth_XXXXXX";
  const int fd = ::mkstemp(path_template);
  ASSERT_GE(fd, 0);
  ::close(fd);
  SimArgs args = roofline_args();
  args.threads = 3;
  args.truth_log = path_template;
  constexpr int kStreams = 90;
  auto tokens_of = [](int i) { return 8 + i % 9; };
  auto is_chat = [](int i) { return i % 3 == 0; };
  auto body = [&](int i, bool stream) {
    const std::string tail = R"("max_tokens":)" + std::to_string(tokens_of(i)) +
                             R"(,"ignore_eos":true,"stream":)" + (stream ? "true" : "false") +
                             (stream && i % 2 == 0 ? R"(,"stream_options":{"include_usage":true})"
                                                   : "") +
                             "}";
    const std::string text = "stream number " + std::to_string(i) + " of many";
    return is_chat(i) ? R"({"messages":[{"role":"user","content":")" + text + R"("}],)" + tail
                      : R"({"prompt":")" + text + R"(",)" + tail;
  };
  auto path = [&](int i) { return is_chat(i) ? "/v1/chat/completions" : "/v1/completions"; };
  int64_t total_tokens = 0;
  {
    SimServerThread sim(args);
    std::vector<std::unique_ptr<TestClient>> clients;
    for (int i = 0; i < kStreams; ++i) {
      clients.push_back(std::make_unique<TestClient>(sim.port()));
      ASSERT_FALSE(clients.back()->send(http::verb::post, path(i), body(i, true),
                                        {{"X-Request-Id", "s" + std::to_string(i)}}));
    }
    TestClient reference(sim.port());
    for (int i = 0; i < kStreams; ++i) {
      Response r = clients[static_cast<size_t>(i)]->read();
      ASSERT_FALSE(r.ec) << i << ": " << r.ec.message();
      ASSERT_EQ(r.status, 200) << i;
      std::vector<std::string> events = sse_data(r.body);
      ASSERT_FALSE(events.empty());
      EXPECT_EQ(events.back(), "[DONE]") << i;
      std::string text;
      int content_events = 0;
      for (size_t e = 0; e + 1 < events.size(); ++e) {
        const json::object ev = json::parse(events[e]).as_object();
        const auto& choices = ev.at("choices").as_array();
        if (choices.empty()) {  // the usage event
          EXPECT_EQ(ev.at("usage").at("completion_tokens").as_int64(), tokens_of(i));
          continue;
        }
        const json::object& c = choices[0].as_object();
        if (is_chat(i)) {
          const json::object& delta = c.at("delta").as_object();
          if (delta.contains("role")) continue;  // the role event
          text += delta.at("content").as_string();
        } else {
          text += c.at("text").as_string();
        }
        ++content_events;
      }
      EXPECT_EQ(content_events, tokens_of(i)) << i;
      total_tokens += tokens_of(i);
      // The same prompt and seed give the same text, streamed or not.
      Response full = reference.post(path(i), body(i, false));
      ASSERT_EQ(full.status, 200) << full.body;
      const json::value full_json = json::parse(full.body);
      const json::object& choice = full_json.at("choices").at(0).as_object();
      const std::string want(is_chat(i) ? choice.at("message").at("content").as_string()
                                        : choice.at("text").as_string());
      EXPECT_EQ(text, want) << i;
      total_tokens += tokens_of(i);
    }
    Response m = reference.request(http::verb::get, "/metrics");
    ASSERT_EQ(m.status, 200);
    EXPECT_EQ(metric(m.body, "vllm:generation_tokens_total"), total_tokens);
    // At least one write per request (the non-streamed ones: exactly one), at most one a token.
    EXPECT_GE(metric(m.body, "inferbench_sim:token_writes_total"), 2 * kStreams);
    EXPECT_LE(metric(m.body, "inferbench_sim:token_writes_total"), total_tokens);
    EXPECT_EQ(metric(m.body, "vllm:request_success_total", ",finished_reason=\"length\""),
              2 * kStreams);
    EXPECT_EQ(metric(m.body, "vllm:request_success_total", ",finished_reason=\"abort\""), 0);
    EXPECT_EQ(metric(m.body, "vllm:time_to_first_token_seconds_count"), 2 * kStreams);
    EXPECT_EQ(metric(m.body, "vllm:num_requests_running"), 0);
    EXPECT_TRUE(sim.shut_down()) << "run() did not return after stop()";
  }
  std::vector<std::string> lines;
  {
    std::ifstream in(path_template);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ::unlink(path_template);
  ASSERT_EQ(lines.size(), static_cast<size_t>(2 * kStreams)) << "one line per request";
  int streamed = 0;
  for (const std::string& line : lines) {
    const json::object rec = json::parse(line).as_object();  // one whole record per line
    EXPECT_EQ(rec.at("finish_reason").as_string(), "length");
    const auto& sent = rec.at("token_ns").as_array();
    const auto& due = rec.at("due_ns").as_array();
    EXPECT_EQ(static_cast<int64_t>(sent.size()), rec.at("completion_tokens").as_int64());
    ASSERT_EQ(due.size(), sent.size());
    if (!rec.at("stream").as_bool()) continue;
    ++streamed;
    const std::string request_id(rec.at("request_id").as_string());
    EXPECT_EQ(static_cast<int64_t>(sent.size()), tokens_of(std::stoi(request_id.substr(1))));
    for (size_t t = 0; t < sent.size(); ++t) {
      EXPECT_LE(due[t].as_int64(), sent[t].as_int64()) << "a token is sent after it exists";
      if (t == 0) continue;
      EXPECT_GT(due[t].as_int64(), due[t - 1].as_int64());
      EXPECT_GE(sent[t].as_int64(), sent[t - 1].as_int64());
    }
  }
  EXPECT_EQ(streamed, kStreams);
}

// A client that goes away mid-stream on one I/O thread cancels its request in the engine (on
// another thread): the abort is counted and logged, and the other streams go on.
TEST(SimServerIoThreads, DisconnectMidStreamCancelsTheRequest) {
  char path_template[] = "/tmp/ib_truth_XXXXXX";
  const int fd = ::mkstemp(path_template);
  ASSERT_GE(fd, 0);
  ::close(fd);
  SimArgs args = roofline_args();
  args.threads = 2;
  args.time_scale = 1.0;  // 4000 tokens take seconds: both streams outlast the test's steps
  args.truth_log = path_template;
  {
    SimServerThread sim(args);
    TestClient leaver(sim.port());
    TestClient stayer(sim.port());
    for (TestClient* c : {&leaver, &stayer}) {
      ASSERT_FALSE(c->send(http::verb::post, "/v1/completions",
                           R"({"prompt":"a long one","max_tokens":4000,"ignore_eos":true,)"
                           R"("stream":true})"));
      ASSERT_FALSE(c->read_header().ec);
    }
    ASSERT_FALSE(leaver.read_some().empty());  // tokens are flowing
    leaver.close();
    ASSERT_FALSE(stayer.read_some().empty());
    TestClient probe(sim.port());
    double aborted = 0;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (aborted < 1 && std::chrono::steady_clock::now() < deadline) {
      Response m = probe.request(http::verb::get, "/metrics");
      aborted = metric(m.body, "vllm:request_success_total", ",finished_reason=\"abort\"");
      if (aborted < 1) std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(aborted, 1);
    Response m = probe.request(http::verb::get, "/metrics");
    EXPECT_EQ(metric(m.body, "vllm:num_requests_running"), 1);  // the stayer's
    EXPECT_FALSE(stayer.read_some().empty());
    EXPECT_TRUE(sim.shut_down());
    EXPECT_EQ(sim.server().engine().running(), 0);
  }
  std::vector<std::string> lines;
  {
    std::ifstream in(path_template);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ::unlink(path_template);
  ASSERT_EQ(lines.size(), 2u);  // the leaver's, then the stayer's (cut by the shutdown)
  for (const std::string& line : lines) {
    EXPECT_EQ(json::parse(line).at("finish_reason").as_string(), "abort") << line;
  }
}

// stop() with streams in flight on every I/O thread: every connection is closed and run()
// returns (the I/O threads are joined by the server's destructor).
TEST(SimServerIoThreads, StopClosesEveryThreadsStreamsAndRunReturns) {
  SimArgs args = fast_args();
  args.threads = 3;
  args.timing.decode_base_ms = 20.0;
  SimServerThread sim(args);
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<TestClient>(sim.port()));
    ASSERT_FALSE(clients.back()->send(
        http::verb::post, "/v1/completions",
        R"({"prompt":"a","max_tokens":1000,"ignore_eos":true,"stream":true})"));
    ASSERT_EQ(clients.back()->read_header().status, 200);
  }
  EXPECT_TRUE(sim.shut_down()) << "io_context::run() did not return after stop()";
  EXPECT_EQ(sim.server().engine().running(), 0);
  for (auto& c : clients) {
    const error_code closed = c->wait_closed();
    EXPECT_TRUE(closed == asio::error::eof || closed == asio::error::connection_reset)
        << closed.message();
  }
}

}  // namespace
}  // namespace ib::sim
