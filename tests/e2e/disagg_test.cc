// Disaggregated prefill/decode on one machine (issue 32): serve-sim plays each role as its own
// process (--role prefill | decode | router), the KV crosses a real TCP connection at a link's
// pace, and bench measures the deployment through its router like any server.
#include <fmt/format.h>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

// A worker's counter or histogram field from its /metrics ("name{...} value"); NaN when absent.
double worker_metric(const SimServer& s, std::string_view name) {
  auto r = http::http_get(s.endpoint(), "/metrics", std::chrono::seconds(5));
  if (!r || r->status != 200) return std::nan("");
  std::string_view body = r->body;
  for (size_t pos = 0; pos < body.size();) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(pos, end - pos);
    pos = end + 1;
    if (line.starts_with(name) && line.size() > name.size() && line[name.size()] == '{') {
      return std::atof(std::string(line.substr(line.rfind(' ') + 1)).c_str());
    }
  }
  return std::nan("");
}

// A blocking POST of a JSON body with a 10 s limit.
Expected<http::SimpleResponse> post(const http::Endpoint& e, std::string_view path,
                                    std::string_view body, std::chrono::seconds limit) {
  http::ClientTimeouts t;
  t.total = limit;
  return http::http_post(e, path, body, t);
}

fs::path role_dir(const TempDir& dir, const std::string& name) {
  fs::path d = dir.path() / name;
  fs::create_directories(d);
  return d;
}

// 64 KiB of KV a token at 1 GB/s: a 512-token prompt's KV takes 33.6 ms on the link.
const std::vector<std::string> kWorker = {
    "--timing-model",       "simple", "--decode-base-ms",   "1",
    "--kv-bytes-per-token", "65536",  "--kv-bandwidth-gbs", "1"};

TEST(Disagg, OnePrefillOneDecodeBehindARouterServeABenchWithTheKvOnTheLink) {
  TempDir dir;
  std::vector<std::string> pre_args = kWorker, dec_args = kWorker;
  pre_args.insert(pre_args.end(), {"--role", "prefill"});
  dec_args.insert(dec_args.end(), {"--role", "decode"});
  SimServer prefill(role_dir(dir, "prefill"), pre_args);
  SimServer decode(role_dir(dir, "decode"), dec_args);
  ASSERT_TRUE(prefill.running() && decode.running());
  SimServer router(role_dir(dir, "router"),
                   {"--role", "router", "--prefill", prefill.url(), "--decode", decode.url()});
  ASSERT_TRUE(router.running()) << router.log();

  const fs::path out = dir.path() / "disagg.json";
  auto r = run_inferbench(
      {"bench", "--endpoint", router.url(), "--isl", "512", "--osl", "8", "--num-prompts", "6",
       "--concurrency", "2", "--warmups", "0", "--output", out.string()},
      dir.path() / "bench.log");
  ASSERT_EQ(r.exit.code, 0) << r.output << router.log() << decode.log();
  const auto j = read_json(out);
  EXPECT_EQ(j.at("completed").as_int64(), 6);
  // Every request's KV went prefill -> decode once, at the link's pace: 512 x 64 KiB at 1 GB/s.
  const double kv_s = 512.0 * 65536 / 1e9;
  EXPECT_EQ(worker_metric(decode, "vllm:nixl_xfer_time_seconds_count"), 6);
  EXPECT_EQ(worker_metric(prefill, "inferbench_sim:kv_served_total"), 6);
  EXPECT_EQ(worker_metric(decode, "vllm:nixl_bytes_transferred_sum"), 6 * 512.0 * 65536);
  EXPECT_GE(worker_metric(decode, "vllm:nixl_xfer_time_seconds_sum") / 6, kv_s);
  EXPECT_EQ(worker_metric(decode, "vllm:nixl_num_failed_transfers_total"), 0);
  EXPECT_EQ(worker_metric(prefill, "inferbench_sim:kv_held_requests"), 0);
  // The transfer is on every request's path to its first token.
  EXPECT_GE(num(j, "median_ttft_ms"), kv_s * 1000);
  // Each role prints its side of the KV connector (the effective configuration).
  EXPECT_NE(prefill.log().find("'kv_role': 'kv_producer'"), std::string::npos);
  EXPECT_NE(decode.log().find("'kv_role': 'kv_consumer'"), std::string::npos);
}

// The decode side refuses what it cannot use, naming the field; a pull of KV that is not held
// fails the request with the prefill instance's reason, and is counted.
TEST(Disagg, BadKvTransferParamsAndAMissingKvAreAnswersNotHangs) {
  TempDir dir;
  std::vector<std::string> pre_args = kWorker, dec_args = kWorker;
  pre_args.insert(pre_args.end(), {"--role", "prefill", "--kv-port", "0"});
  dec_args.insert(dec_args.end(), {"--role", "decode"});
  SimServer prefill(role_dir(dir, "prefill"), pre_args);
  SimServer decode(role_dir(dir, "decode"), dec_args);
  ASSERT_TRUE(prefill.running() && decode.running());
  auto half = post(decode.endpoint(), "/v1/completions",
                   R"({"prompt":"a b c","max_tokens":2,"kv_transfer_params":{"remote_port":1234}})",
                   std::chrono::seconds(10));
  ASSERT_TRUE(half.ok()) << half.error().message;
  EXPECT_EQ(half->status, 400);
  EXPECT_NE(half->body.find("remote_host, remote_port and remote_request_id"), std::string::npos)
      << half->body;
  // Ask the prefill instance for its side channel (a real prefill answer), then pull twice.
  auto pre =
      post(prefill.endpoint(), "/v1/completions",
           R"({"prompt":"a b c","max_tokens":1,"kv_transfer_params":{"do_remote_decode":true}})",
           std::chrono::seconds(10));
  ASSERT_TRUE(pre.ok()) << pre.error().message;
  ASSERT_EQ(pre->status, 200) << pre->body;
  auto params = boost::json::parse(pre->body).at("kv_transfer_params");
  const std::string body = boost::json::serialize(
      boost::json::object{{"prompt", "a b c"}, {"max_tokens", 2}, {"kv_transfer_params", params}});
  auto first = post(decode.endpoint(), "/v1/completions", body, std::chrono::seconds(10));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->status, 200) << first->body;
  auto again = post(decode.endpoint(), "/v1/completions", body, std::chrono::seconds(10));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 500);
  EXPECT_NE(again->body.find("already pulled"), std::string::npos) << again->body;
  EXPECT_EQ(worker_metric(decode, "vllm:nixl_num_failed_transfers_total"), 1);
  // A streamed request cannot ask a prefill instance to keep its KV.
  auto streamed =
      post(prefill.endpoint(), "/v1/completions",
           R"({"prompt":"a","stream":true,"kv_transfer_params":{"do_remote_decode":true}})",
           std::chrono::seconds(10));
  ASSERT_TRUE(streamed.ok());
  EXPECT_EQ(streamed->status, 400) << streamed->body;
}

// Two prefill workers behind a prefix-aware router: requests that share a long prompt prefix go
// to the worker that already holds it; its metrics say how many prompt blocks it found there.
TEST(Disagg, APrefixAwareRouterSendsASharedPrefixToOnePrefillWorker) {
  TempDir dir;
  std::vector<std::string> pre_args = kWorker, dec_args = kWorker;
  pre_args.insert(pre_args.end(), {"--role", "prefill"});
  dec_args.insert(dec_args.end(), {"--role", "decode"});
  SimServer p1(role_dir(dir, "p1"), pre_args);
  SimServer p2(role_dir(dir, "p2"), pre_args);
  SimServer decode(role_dir(dir, "decode"), dec_args);
  ASSERT_TRUE(p1.running() && p2.running() && decode.running());
  SimServer router(role_dir(dir, "router"),
                   {"--role", "router", "--routing", "prefix", "--prefill", p1.url(), "--prefill",
                    p2.url(), "--decode", decode.url()});
  ASSERT_TRUE(router.running()) << router.log();
  const std::string shared(600, 'x');
  for (int i = 0; i < 4; ++i) {
    const std::string body = boost::json::serialize(boost::json::object{
        {"prompt", shared + fmt::format(" question {}", i)}, {"max_tokens", 2}});
    auto r = post(router.endpoint(), "/v1/completions", body, std::chrono::seconds(10));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200) << r->body;
  }
  const double served1 = worker_metric(p1, "inferbench_sim:kv_served_total");
  const double served2 = worker_metric(p2, "inferbench_sim:kv_served_total");
  EXPECT_EQ(served1 + served2, 4);
  EXPECT_TRUE(served1 == 4 || served2 == 4) << served1 << " / " << served2;
  auto m = http::http_get(router.endpoint(), "/metrics", std::chrono::seconds(5));
  ASSERT_TRUE(m.ok());
  EXPECT_NE(
      m->body.find(R"(inferbench_sim:router_prefix_blocks_total{policy="prefix",result="hit"} 27)"),
      std::string::npos)
      << m->body;
}

}  // namespace
}  // namespace ib::e2e
