// Disaggregated prefill/decode on one machine (issue 32): serve-sim plays each role as its own
// process (--role prefill | decode | router), the KV crosses a real TCP connection at a link's
// pace, and bench measures the deployment through its router like any server.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

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

// A serve-sim worker of `role` (kWorker's settings and `more`), in a folder of its own.
std::unique_ptr<SimServer> worker(const TempDir& dir, const std::string& name,
                                  const std::string& role, std::vector<std::string> more = {}) {
  std::vector<std::string> args = kWorker;
  args.insert(args.end(), {"--role", role});
  args.insert(args.end(), more.begin(), more.end());
  return std::make_unique<SimServer>(role_dir(dir, name), args);
}

TEST(Disagg, OnePrefillOneDecodeBehindARouterServeABenchWithTheKvOnTheLink) {
  TempDir dir;
  auto pre = worker(dir, "prefill", "prefill");
  auto dec = worker(dir, "decode", "decode");
  SimServer& prefill = *pre;
  SimServer& decode = *dec;
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
  // Where TTFT went, request by request: every part is a sub-interval of the client's TTFT, so
  // what they leave (network and HTTP between the processes) is never negative; the KV part is
  // at least the link's time.
  const auto& att = j.at("ttft_attribution").as_object();
  EXPECT_EQ(att.at("requests").as_int64(), 6);
  for (const char* part : {"router", "prefill_queue", "prefill", "prefill_transport",
                           "decode_receive", "kv_transfer", "decode_queue", "first_decode"}) {
    EXPECT_GE(att.at("parts").at(part).at("median_ms").to_number<double>(), 0) << part;
  }
  EXPECT_GE(att.at("parts").at("kv_transfer").at("median_ms").to_number<double>(), kv_s * 1000);
  EXPECT_GE(att.at("unattributed").at("min_ms").to_number<double>(), -0.01);
  EXPECT_LT(att.at("unattributed").at("median_ms").to_number<double>(), num(j, "median_ttft_ms"));
  // Each role prints its side of the KV connector (the effective configuration).
  EXPECT_NE(prefill.log().find("'kv_role': 'kv_producer'"), std::string::npos);
  EXPECT_NE(decode.log().find("'kv_role': 'kv_consumer'"), std::string::npos);
}

// The decode side refuses what it cannot use, naming the field; a pull of KV that is not held
// fails the request with the prefill instance's reason, and is counted.
TEST(Disagg, BadKvTransferParamsAndAMissingKvAreAnswersNotHangs) {
  TempDir dir;
  auto p0 = worker(dir, "prefill", "prefill", {"--kv-port", "0"});
  auto d0 = worker(dir, "decode", "decode");
  SimServer& prefill = *p0;
  SimServer& decode = *d0;
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
  auto w1 = worker(dir, "p1", "prefill");
  auto w2 = worker(dir, "p2", "prefill");
  auto dec = worker(dir, "decode", "decode");
  SimServer &p1 = *w1, &p2 = *w2, &decode = *dec;
  ASSERT_TRUE(p1.running() && p2.running() && decode.running());
  // An option of another role is refused, not ignored.
  auto wrong = run_inferbench({"serve-sim", "--role", "decode", "--routing", "prefix"},
                              dir.path() / "wrong.log");
  EXPECT_EQ(wrong.exit.code, 2);
  EXPECT_NE(wrong.output.find("--routing applies with --role router, not --role decode"),
            std::string::npos)
      << wrong.output;
  auto engine = run_inferbench({"serve-sim", "--role", "router", "--prefill", p1.url(), "--decode",
                                decode.url(), "--enable-per-request-metrics"},
                               dir.path() / "engine.log");
  EXPECT_EQ(engine.exit.code, 2);
  EXPECT_NE(engine.output.find("--enable-per-request-metrics is an engine's option"),
            std::string::npos)
      << engine.output;
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

// The value of `series` (name and labels, exactly) in a /metrics text; NaN when absent.
double series_value(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");  // a sample line, not its # HELP
  return at == std::string::npos ? std::nan("") : std::atof(text.c_str() + at + series.size() + 2);
}

// The serve-sim router's count of requests by what session affinity did with them.
double session_requests(const std::string& metrics, const char* result) {
  return series_value(
      metrics,
      fmt::format(R"(inferbench_sim:router_session_requests_total{{result="{}"}})", result));
}

// The router's session affinity (as Dynamo's --router-session-affinity-ttl-secs): a request that
// names its session (X-Dynamo-Session-ID, or nvext.session_control) goes where the session's
// first went, until it closes; and a worker's /flush_cache empties its prefix cache only when it
// is idle (SGLang's 400 otherwise).
TEST(Disagg, SessionAffinityPinsASessionAndTheCacheFlushWaitsForIdle) {
  TempDir dir;
  auto p1 = worker(dir, "p1", "prefill");
  auto p2 = worker(dir, "p2", "prefill");
  auto dec = worker(dir, "decode", "decode");
  ASSERT_TRUE(p1->running() && p2->running() && dec->running());
  SimServer router(role_dir(dir, "router"),
                   {"--role", "router", "--router-session-affinity-ttl-secs", "60", "--prefill",
                    p1->url(), "--prefill", p2->url(), "--decode", dec->url()});
  ASSERT_TRUE(router.running()) << router.log();
  http::ClientTimeouts t;
  t.total = std::chrono::seconds(10);
  auto send = [&](const std::string& body, const std::string& headers) {
    auto r = http::http_post(router.endpoint(), "/v1/completions", body, t, headers);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200) << r->body;
  };
  // Session s1 by Dynamo's header: three requests, one prefill worker (round robin would
  // alternate).
  for (int i = 0; i < 3; ++i) {
    send(R"({"prompt":"a b c","max_tokens":2})", "X-Dynamo-Session-ID: s1\r\n");
  }
  EXPECT_EQ(worker_metric(*p1, "inferbench_sim:kv_served_total") +
                worker_metric(*p2, "inferbench_sim:kv_served_total"),
            3);
  EXPECT_TRUE(worker_metric(*p1, "inferbench_sim:kv_served_total") == 3 ||
              worker_metric(*p2, "inferbench_sim:kv_served_total") == 3);
  // Session s2 in the body, as AIPerf's conversation-aware routing: bind, bind, close.
  for (const char* action : {"bind", "bind", "close"}) {
    send(fmt::format(R"({{"prompt":"x y","max_tokens":2,"nvext":{{"session_control":)"
                     R"({{"session_id":"s2","action":"{}","timeout":60}}}}}})",
                     action),
         "");
  }
  send(R"({"prompt":"no session","max_tokens":2})", "");
  auto m = http::http_get(router.endpoint(), "/metrics", std::chrono::seconds(5));
  ASSERT_TRUE(m.ok());
  auto count = [&](const char* result) { return session_requests(m->body, result); };
  EXPECT_EQ(count("bind"), 2) << m->body;
  EXPECT_EQ(count("hit"), 4);  // s1 twice, s2 twice (its close went where it was bound)
  EXPECT_EQ(count("close"), 1);
  EXPECT_EQ(count("unnamed"), 1);
  EXPECT_EQ(series_value(m->body, "inferbench_sim:router_sessions"), 1);  // s1; s2 closed

  // /flush_cache: refused while the decode worker runs a request, done once it is idle.
  std::thread busy([&] {
    (void)http::http_post(dec->endpoint(), "/v1/completions",
                          R"({"prompt":"long","max_tokens":1000,"ignore_eos":true})", t);
  });
  std::optional<http::SimpleResponse> refused;
  for (int i = 0; i < 200 && !refused; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto r = http::http_post(dec->endpoint(), "/flush_cache", "", t);
    if (r.ok() && r->status == 400) refused = *r;
  }
  busy.join();
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->body.find("Cache not flushed"), std::string::npos) << refused->body;
  auto done = http::http_post(dec->endpoint(), "/flush_cache", "", t);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->status, 200);
  EXPECT_NE(done->body.find("Cache flushed"), std::string::npos);
}

// An AgentX replay behind the router with AIPerf's conversation-aware routing: every request's
// body carries nvext.session_control (bind on a session's turns, close on its last), so the
// router keeps each session on its workers; none arrives without its session.
TEST(Disagg, AgenticReplayNamesEverySessionToTheRouter) {
  TempDir dir;
  // The link as fast as loopback: the traces' prompts run to 100k tokens.
  const std::vector<std::string> args = {"--timing-model",  "simple", "--decode-base-ms", "1",
                                         "--max-model-len", "262144"};
  auto with_role = [&](const char* role) {
    auto a = args;
    a.insert(a.end(), {"--role", role});
    return std::make_unique<SimServer>(role_dir(dir, role), a);
  };
  auto pre = with_role("prefill");
  auto dec = with_role("decode");
  ASSERT_TRUE(pre->running() && dec->running());
  SimServer router(role_dir(dir, "router"),
                   {"--role", "router", "--router-session-affinity-ttl-secs", "60", "--prefill",
                    pre->url(), "--decode", dec->url()});
  ASSERT_TRUE(router.running()) << router.log();
  const fs::path out = dir.path() / "result.json";
  auto r = run_inferbench({"bench",
                           "--workload",
                           "agentic",
                           "--endpoint",
                           router.url(),
                           "--traces",
                           std::string(INFERBENCH_TEST_DATA) + "/agentx-traces/trace_0460.json",
                           "--concurrency",
                           "2",
                           "--time-scale",
                           "100",
                           "--duration",
                           "200",
                           "--warmup-requests-per-lane",
                           "1",
                           "--session-routing",
                           "dynamo-nvext",
                           "--session-timeout",
                           "90",
                           "--output",
                           out.string()},
                          dir.path() / "bench.log", std::chrono::seconds(120));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_GT(read_json(out).at("completed").as_int64(), 0);
  EXPECT_EQ(read_json(out).at("session_routing").as_string(), "dynamo-nvext");
  auto m = http::http_get(router.endpoint(), "/metrics", std::chrono::seconds(5));
  ASSERT_TRUE(m.ok());
  auto count = [&](const char* result) { return session_requests(m->body, result); };
  EXPECT_GT(count("bind"), 1) << m->body;  // a session a lane at least
  EXPECT_GT(count("hit"), 0);
  EXPECT_EQ(count("unnamed"), 0);
}

}  // namespace
}  // namespace ib::e2e

namespace ib::e2e {
namespace {

// A disaggregated recipe in InferenceX's multi-node shape with serve blocks by role, served by
// serve-sim processes (simple timing model: fast). `model` marks this test's processes; `decode`
// adds arguments to the decode workers' command.
std::string disagg_recipe(const std::string& model, const std::string& decode_extra,
                          const std::string& search_space) {
  return fmt::format(R"(disagg-sim:
  image: inferbench/serve-sim
  model: {0}
  model-prefix: sim
  precision: bf16
  framework: serve-sim
  runner: local
  router: {{ name: serve-sim-router, version: "0.1.0" }}
  kv-p2p-transfer: sim-tcp
  multinode: true
  disagg: true
  serve:
    prefill:
      command: [inferbench, serve-sim, --role, prefill, --timing-model, simple,
                --decode-base-ms, "1", --model, "{{served-model}}", --host, "{{host}}",
                --port, "{{port}}"]
      env: {{ VLLM_NIXL_ABORT_REQUEST_TIMEOUT: "60" }}
    decode:
      command: [inferbench, serve-sim, --role, decode, --timing-model, simple{1},
                --model, "{{served-model}}", --host, "{{host}}", --port, "{{port}}"]
    router:
      command: [inferbench, serve-sim, --role, router, --model, "{{served-model}}",
                --prefill, "{{prefill-urls}}", --decode, "{{decode-urls}}",
                --host, "{{host}}", --port, "{{port}}"]
  expect:
    prefill: {{ env-read: [VLLM_NIXL_ABORT_REQUEST_TIMEOUT],
               settings: {{ kv_transfer_config.kv_role: kv_producer }} }}
    decode: {{ env-not-read: [VLLM_NIXL_ABORT_REQUEST_TIMEOUT],
              settings: {{ kv_transfer_config.kv_role: kv_consumer }} }}
  workload: {{ prompts-per-conc: 2, min-prompts: 6, warmups-per-conc: 0 }}
  scenarios:
    fixed-seq-len:
    - isl: 256
      osl: 16
      search-space:
{2}
)",
                     model, decode_extra, search_space);
}

// Processes of this test's deployment (their command line names `model`) in `role`.
std::vector<pid_t> role_pids(const std::string& model, const std::string& role) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmd = read_file(e.path() / "cmdline");
    if (!cmd) continue;
    std::replace(cmd->begin(), cmd->end(), '\0', ' ');
    if (cmd->find(model) != std::string::npos && cmd->find("--role " + role) != std::string::npos) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

fs::path result_file(const fs::path& runs, const std::string& config_prefix,
                     const std::string& name) {
  for (const auto& e : fs::recursive_directory_iterator(runs)) {
    if (e.path().filename() == name &&
        e.path().parent_path().filename().string().starts_with(config_prefix)) {
      return e.path();
    }
  }
  return {};
}

TEST(DisaggSweep, OnePrefillOneDecodeAndTwoPrefillOneDecodeFromAnInferenceXShapedRecipe) {
  TempDir dir;
  const std::string model = fmt::format("sim-disagg-{}", ::getpid());
  const fs::path recipe = dir.path() / "disagg.yaml";
  std::ofstream(recipe) << disagg_recipe(
      model, "",
      R"(      - { spec-decoding: none, conc-list: [2], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 2 } }
      - { spec-decoding: none, conc-list: [2], prefill: { num-worker: 2, tp: 1 }, decode: { num-worker: 1, tp: 2 } })");
  auto plan = run_inferbench({"plan", recipe.string()}, dir.path() / "plan.log");
  ASSERT_EQ(plan.exit.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("P2x1 D1x2"), std::string::npos) << plan.output;
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", recipe.string(), "--runs-dir", runs.string(),
                           "--startup-timeout", "30", "--point-timeout", "60"},
                          dir.path() / "sweep.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  for (const auto& [prefix, prefill_gpus] : {std::pair{"01-", 1}, std::pair{"02-", 2}}) {
    const fs::path file = result_file(runs, prefix, "conc_2.json");
    ASSERT_FALSE(file.empty()) << prefix;
    const auto j = read_json(file);
    EXPECT_EQ(j.at("status").as_string(), "ok") << boost::json::serialize(j.at("validity"));
    EXPECT_EQ(j.at("completed").as_int64(), 6);
    // InferenceX's denominators for disaggregated rows.
    EXPECT_EQ(j.at("num_prefill_gpu").as_int64(), prefill_gpus);
    EXPECT_EQ(j.at("num_decode_gpu").as_int64(), 2);
    EXPECT_EQ(j.at("num_gpus").as_int64(), prefill_gpus + 2);
    const double total = num(j, "total_token_throughput"), out = num(j, "output_throughput");
    EXPECT_NEAR(num(j, "tput_per_gpu"), total / (prefill_gpus + 2), 1e-6 * total);
    EXPECT_NEAR(num(j, "output_tput_per_gpu"), out / 2, 1e-6 * out);
    EXPECT_NEAR(num(j, "input_tput_per_gpu"), (total - out) / prefill_gpus, 1e-6 * total);
    // Every role's /metrics was read, the workers' too: the decode worker's KV pulls are there.
    const auto& names = j.at("telemetry").at("server").at("metric_names").as_array();
    EXPECT_NE(std::find(names.begin(), names.end(), boost::json::value("vllm:prompt_tokens_total")),
              names.end());
    // And each role's alone: a prefill worker's figures are not lost in the deployment's sum.
    const auto& roles = j.at("telemetry").at("roles").as_object();
    ASSERT_TRUE(roles.contains("prefill-0") && roles.contains("decode-0"))
        << boost::json::serialize(roles);
    EXPECT_GT(roles.at("prefill-0").at("prompt_tokens").to_number<double>(), 0);
    // By role (the workers of a role together), and which side requests waited for.
    const auto& by_role = j.at("telemetry").at("by_role").as_object();
    EXPECT_EQ(by_role.at("prefill").at("workers").as_array().size(),
              static_cast<size_t>(prefill_gpus));
    EXPECT_EQ(by_role.at("decode").at("gpus").as_int64(), 2);
    EXPECT_TRUE(by_role.contains("router"));
    const auto& rm = j.at("telemetry").at("rate_match").as_object();
    EXPECT_EQ(rm.at("basis").as_string(), "ttft attribution") << boost::json::serialize(rm);
    EXPECT_EQ(rm.at("prefill").at("workers").as_int64(), prefill_gpus);
    EXPECT_NEAR(num(rm.at("decode").as_object(), "output_tokens_per_s_per_gpu"), out / 2,
                1e-6 * out);
    const std::string bound(rm.at("bound").as_string());
    EXPECT_TRUE(bound == "prefill" || bound == "decode" || bound == "balanced") << bound;
    // Each role's effective configuration and log, beside the deployment's.
    EXPECT_TRUE(fs::exists(file.parent_path() / "effective_config.decode-0.json"));
    EXPECT_TRUE(fs::exists(file.parent_path() / "server.router.log"));
  }
  EXPECT_TRUE(fs::exists(result_file(runs, "02-", "effective_config.prefill-1.json")));
  // expect by role: checked on every process of the role, each result named by it.
  auto expect_file = read_file(result_file(runs, "02-", "expect.json"));
  ASSERT_TRUE(expect_file.ok());
  const std::string checked = *expect_file;
  for (const char* a : {"prefill-1: env-read VLLM_NIXL_ABORT_REQUEST_TIMEOUT",
                        "decode-0: env-not-read VLLM_NIXL_ABORT_REQUEST_TIMEOUT",
                        "prefill-0: settings.kv_transfer_config.kv_role"}) {
    EXPECT_NE(checked.find(a), std::string::npos) << a << "\n" << checked;
  }
  EXPECT_EQ(checked.find("\"passed\":false"), std::string::npos) << checked;
  EXPECT_TRUE(role_pids(model, "prefill").empty() && role_pids(model, "decode").empty() &&
              role_pids(model, "router").empty());
}

// The seed case, disaggregated: in the prefill role's environment, a variable the prefill code
// path reads is effective, one only the decode role's code path reads is "set on prefill, read only
// by decode", and one no role reads is never read.
TEST(DisaggSweep, VerifyJudgesEachVariableOnTheRoleItWasSetFor) {
  TempDir dir;
  const std::string model = fmt::format("sim-disagg-verify-{}", ::getpid());
  const std::string space =
      R"(      - { spec-decoding: none, conc-list: [1], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 1 } })";
  const std::string base = disagg_recipe(model, "", space);
  std::string head = base;
  const std::string from = R"(env: { VLLM_NIXL_ABORT_REQUEST_TIMEOUT: "60" })";
  ASSERT_NE(head.find(from), std::string::npos);
  head.replace(
      head.find(from), from.size(),
      R"(env: { VLLM_NIXL_ABORT_REQUEST_TIMEOUT: "90", UCX_TLS: "tcp", SIM_UNUSED_KNOB: "1" })");
  std::ofstream(dir.path() / "base.yaml") << base;
  std::ofstream(dir.path() / "head.yaml") << head;
  auto r = run_inferbench(
      {"verify", (dir.path() / "base.yaml").string(), (dir.path() / "head.yaml").string(), "--json",
       "--work-dir", (dir.path() / "verify").string(), "--startup-timeout", "30"},
      dir.path() / "verify.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto v = boost::json::parse(r.output.substr(r.output.find('{')));
  std::map<std::string, std::string> verdicts, evidence;
  for (const auto& f : v.at("keys").at(0).at("fields").as_array()) {
    const std::string field(f.at("field").as_string());
    verdicts[field] = std::string(f.at("verdict").as_string());
    evidence[field] = std::string(f.at("evidence").as_string());
  }
  EXPECT_EQ(verdicts["serve.prefill.env.VLLM_NIXL_ABORT_REQUEST_TIMEOUT"], "effective");
  EXPECT_NE(evidence["serve.prefill.env.VLLM_NIXL_ABORT_REQUEST_TIMEOUT"].find(
                "prefill-0.kv_transfer_config.lease_s: 60 -> 90"),
            std::string::npos)
      << evidence["serve.prefill.env.VLLM_NIXL_ABORT_REQUEST_TIMEOUT"];
  EXPECT_EQ(verdicts["serve.prefill.env.UCX_TLS"], "other role");
  EXPECT_NE(evidence["serve.prefill.env.UCX_TLS"].find("set on prefill, read only by decode"),
            std::string::npos);
  EXPECT_EQ(verdicts["serve.prefill.env.SIM_UNUSED_KNOB"], "never read");
}

// tune on a disaggregated recipe: P:D is a knob, and a role's variable is judged on its role in
// stage 1 (set on decode, read only by prefill: a no-op dropped before any measurement). The
// objective's concurrency is the row's own (a multi-node row carries its conc list).
TEST(DisaggTune, PdIsAKnobAndARoleVariableIsJudgedOnItsRole) {
  TempDir dir;
  const std::string model = fmt::format("sim-disagg-tune-{}", ::getpid());
  std::ofstream(dir.path() / "d.yaml") << disagg_recipe(
      model, "",
      R"(      - { spec-decoding: none, conc-list: [3], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 1 } })");
  auto r = run_inferbench(
      {"tune", (dir.path() / "d.yaml").string(), "--knob", "field:pd=2:1", "--knob",
       "env:decode.VLLM_NIXL_ABORT_REQUEST_TIMEOUT=30", "--stop-after", "verify", "--runs-dir",
       (dir.path() / "runs").string(), "--startup-timeout", "30", "--json"},
      dir.path() / "tune.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  const auto j = boost::json::parse(r.output.substr(r.output.find('{'))).as_object();
  EXPECT_EQ(j.at("objective").at("conc").as_int64(), 3);
  std::map<std::string, std::string> outcome;
  for (const auto& c : j.at("candidates").as_array()) {
    outcome[std::string(c.at("change").as_string())] =
        std::string(c.at("verify").at("outcome").as_string());
  }
  EXPECT_EQ(outcome["field pd=2:1"], "survives") << r.output;
  EXPECT_EQ(outcome["env decode.VLLM_NIXL_ABORT_REQUEST_TIMEOUT=30"], "no-op") << r.output;
  EXPECT_TRUE(role_pids(model, "prefill").empty() && role_pids(model, "router").empty());
}

// A decode worker killed mid-point: the point fails naming it, the other roles are stopped, and
// nothing of the deployment is left running.
TEST(DisaggSweep, AKilledDecodeWorkerFailsThePointAndStopsTheOtherRoles) {
  TempDir dir;
  const std::string model = fmt::format("sim-disagg-kill-{}", ::getpid());
  const fs::path recipe = dir.path() / "disagg.yaml";
  std::ofstream(recipe) << disagg_recipe(
      model, R"(, --decode-base-ms, "40")",
      R"(      - { spec-decoding: none, conc-list: [2, 4], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 1 } })");
  const fs::path runs = dir.path() / "runs";
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN,      "sweep", recipe.string(),   "--runs-dir", runs.string(),
             "--startup-timeout", "30",    "--point-timeout", "60"};
  so.log_path = dir.path() / "sweep.log";
  auto sweep = ChildProcess::spawn(so);
  ASSERT_TRUE(sweep.ok()) << sweep.error().message;
  // Once the point runs (the router started last, so the deployment is up), kill the decode
  // worker: each request takes 16 x 40 ms, the point about 1.3 s.
  ASSERT_TRUE(
      wait_for([&] { return !role_pids(model, "router").empty(); }, std::chrono::seconds(30)))
      << file_tail(so.log_path);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto decode = role_pids(model, "decode");
  ASSERT_EQ(decode.size(), 1u);
  ASSERT_EQ(::kill(decode.front(), SIGKILL), 0);
  ASSERT_TRUE(wait_for([&] { return sweep->poll().has_value(); }, std::chrono::seconds(60)));
  EXPECT_NE(sweep->poll()->code, 0);
  const std::string log = file_tail(so.log_path, 1 << 20);
  EXPECT_NE(log.find("decode worker exited (decode-0: signal 9"), std::string::npos) << log;
  EXPECT_TRUE(wait_for(
      [&] { return role_pids(model, "prefill").empty() && role_pids(model, "router").empty(); },
      std::chrono::seconds(10)));
}

}  // namespace
}  // namespace ib::e2e
