// Disaggregated deployments on a multi-node Slurm cluster (scripts/slurm-up.sh starts three nodes
// on this machine): a 1P1D and a 2P1D topology from an InferenceX-shaped recipe, each role a job
// step on its own node, the router on the first decode worker's node; each role's environment
// reads traced where it ran; nothing left queued or running afterwards; Ctrl-C cancels the job.
#include <fmt/format.h>
#include <signal.h>

#include <fstream>
#include <set>

#include "core/command.h"
#include "core/files.h"
#include "core/gzip.h"
#include "e2e_util.h"
#include "slurm_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

// An InferenceX-shaped disaggregated recipe served by serve-sim roles (simple timing model).
std::string slurm_disagg_recipe(const std::string& key, const std::string& model,
                                const std::string& search_space) {
  return fmt::format(R"({0}:
  image: inferbench/serve-sim
  model: {1}
  model-prefix: sim
  precision: bf16
  framework: serve-sim
  runner: slurm
  router: {{ name: serve-sim-router, version: "0.1.0" }}
  kv-p2p-transfer: sim-tcp
  multinode: true
  disagg: true
  serve:
    prefill:
      command: [inferbench, serve-sim, --role, prefill, --timing-model, simple,
                --decode-base-ms, "1", --model, "{{served-model}}", --host, "{{host}}",
                --port, "{{port}}"]
      env: {{ VLLM_NIXL_ABORT_REQUEST_TIMEOUT: "60", UCX_TLS: "tcp" }}
    decode:
      command: [inferbench, serve-sim, --role, decode, --timing-model, simple,
                --decode-base-ms, "2", --model, "{{served-model}}", --host, "{{host}}",
                --port, "{{port}}"]
      env: {{ UCX_TLS: "tcp" }}
    router:
      command: [inferbench, serve-sim, --role, router, --model, "{{served-model}}",
                --prefill, "{{prefill-urls}}", --decode, "{{decode-urls}}",
                --host, "{{host}}", --port, "{{port}}"]
  workload: {{ prompts-per-conc: 3, min-prompts: 6, warmups-per-conc: 0 }}
  scenarios:
    fixed-seq-len:
    - isl: 256
      osl: 16
      search-space:
{2}
)",
                     key, model, search_space);
}

// Jobs in the queue whose name starts with `prefix` (the launcher names its jobs ib-<key>-...).
// The tests run at once under ctest: no test's key is a prefix of another's.
std::string queued_like(const std::string& prefix) {
  auto r = run_command({"squeue", "-h", "-o", "%i %j %T"});
  if (!r || !r->ok()) return "squeue failed";
  std::string out;
  size_t start = 0;
  while (start < r->out.size()) {
    size_t end = r->out.find('\n', start);
    if (end == std::string::npos) end = r->out.size();
    const std::string line = r->out.substr(start, end - start);
    const size_t space = line.find(' ');
    if (space != std::string::npos && line.compare(space + 1, prefix.size(), prefix) == 0) {
      out += line + "\n";
    }
    start = end + 1;
  }
  return out;
}

// The values of a series in stored scrapes (their text JSON-escaped): what follows each `needle`.
std::vector<double> series_values(const std::string& scrapes, const std::string& needle) {
  std::vector<double> out;
  for (size_t at = scrapes.find(needle); at != std::string::npos;
       at = scrapes.find(needle, at + 1)) {
    out.push_back(std::strtod(scrapes.c_str() + at + needle.size(), nullptr));
  }
  return out;
}

std::string node_of(const boost::json::object& roles, const char* label) {
  const auto* r = roles.if_contains(label);
  if (r == nullptr || !r->is_object() || !r->as_object().contains("node")) return "";
  return std::string(r->as_object().at("node").as_string());
}

TEST(SlurmDisagg, OnePrefillOneDecodeAndTwoPrefillOneDecodeOnThreeNodes) {
  REQUIRE_SLURM_OR_SKIP();
  TempDir dir;
  const fs::path bin = fake_nvidia_smi(dir.path(), "250.00");
  const std::string model = fmt::format("sim-slurm-disagg-{}", ::getpid());
  const fs::path recipe = dir.path() / "disagg.yaml";
  std::ofstream(recipe) << slurm_disagg_recipe(
      "slurm-disagg", model,
      R"(      - { spec-decoding: none, conc-list: [2], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 1 } }
      - { spec-decoding: none, conc-list: [2], prefill: { num-worker: 2, tp: 1 }, decode: { num-worker: 1, tp: 1 } })");
  auto plan =
      run_inferbench({"plan", recipe.string(), "--launcher", "slurm"}, dir.path() / "plan.log");
  ASSERT_EQ(plan.exit.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("one job of 3 nodes"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("srun --jobid=$JOB --nodes=1 --ntasks=1 --nodelist=node<3>"),
            std::string::npos)
      << plan.output;
  const fs::path runs = dir.path() / "runs";
  EXPECT_NE(plan.output.find("-- inferbench sample-power --gpu-power auto"), std::string::npos)
      << plan.output;
  auto r = run_inferbench({"sweep", recipe.string(), "--launcher", "slurm", "--runs-dir",
                           runs.string(), "--startup-timeout", "60", "--point-timeout", "60",
                           "--gpu-power", "nvidia-smi", "--require-power"},
                          dir.path() / "sweep.log", std::chrono::seconds(240), path_with(bin));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;

  auto db = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto listed = db->list_runs();
  ASSERT_TRUE(listed.ok() && listed->size() == 1u);
  EXPECT_EQ(listed->front().points.ok, 2);
  auto configs = db->server_configs(listed->front().run.id);
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 2u);
  for (const auto& c : *configs) {
    EXPECT_EQ(c.launcher, "slurm");
    const auto& roles = c.effective_config.at("roles").as_object();
    const bool two = roles.contains("prefill-1");
    // Each worker on a node of its own; the router on the first decode worker's (AMD's way).
    std::set<std::string> nodes = {node_of(roles, "prefill-0"), node_of(roles, "decode-0")};
    if (two) nodes.insert(node_of(roles, "prefill-1"));
    EXPECT_EQ(nodes.size(), two ? 3u : 2u) << boost::json::serialize(roles);
    EXPECT_FALSE(nodes.count(""));
    EXPECT_EQ(node_of(roles, "router"), node_of(roles, "decode-0"));
    // Each role's reads, traced where it ran: prefill reads the NIXL timeout, decode UCX_TLS.
    const auto& by_role = c.env_reads.at("by_role").as_object();
    EXPECT_EQ(by_role.at("prefill").at("read").at("VLLM_NIXL_ABORT_REQUEST_TIMEOUT"), true)
        << boost::json::serialize(by_role);
    EXPECT_EQ(by_role.at("prefill").at("read").at("UCX_TLS"), false);
    EXPECT_EQ(by_role.at("decode").at("read").at("UCX_TLS"), true);
    EXPECT_TRUE(by_role.at("decode").at("blind_spots").as_array().empty())
        << boost::json::serialize(by_role);
  }
  // Each role's log, from its node.
  for (const char* log : {"server.prefill-0.log", "server.prefill-1.log", "server.decode-0.log",
                          "server.router.log"}) {
    bool found = false;
    for (const auto& e : fs::recursive_directory_iterator(runs)) {
      found = found || e.path().filename() == log;
    }
    EXPECT_TRUE(found) << log;
  }
  // GPU power sampled inside the job, by each worker's step on its node: each role's energy over
  // its own GPUs (1 GPU a worker at 250 W).
  auto points = db->points(listed->front().run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 2u);
  for (const auto& p : *points) {
    const auto& e = p.result.at("energy").as_object();
    ASSERT_TRUE(e.at("power_valid").as_bool()) << boost::json::serialize(e);
    EXPECT_EQ(e.at("tool").as_string(), "nvidia-smi (Slurm job, each step's GPUs)");
    EXPECT_NEAR(e.at("avg_power_w").to_number<double>(), 250.0, 1e-6);
    EXPECT_NEAR(e.at("prefill_avg_power_w").to_number<double>(), 250.0, 1e-6)
        << boost::json::serialize(e);
    EXPECT_NEAR(e.at("decode_avg_power_w").to_number<double>(), 250.0, 1e-6);
    const auto& prefill = e.at("roles").at("prefill").as_object();
    const int64_t gpus = prefill.at("expected_gpu_count").to_number<int64_t>();
    EXPECT_TRUE(gpus == 1 || gpus == 2) << boost::json::serialize(prefill);
    // Each role's energy is its GPUs' power over the window.
    EXPECT_NEAR(e.at("prefill_gpu_energy_j").to_number<double>(),
                250.0 * static_cast<double>(gpus) * num(p.result, "duration"),
                e.at("prefill_gpu_energy_j").to_number<double>() * 0.05);
  }
  EXPECT_EQ(queued_like("ib-slurm-disagg"), "");
  EXPECT_EQ(processes_with(model), 0);
  EXPECT_EQ(processes_with(bin.string()), 0);  // no sampler outlived its step
}

// A row of InferenceX's shape as its master configs write it (no serve block: srt-slurm starts
// the engine), run with serve-sim standing in for the engine role by role on the cluster; its
// additional-settings reach its role's environment; the stored row says what it stood in for.
TEST(SlurmDisagg, AnInferenceXRowWithServeSimStandingIn) {
  REQUIRE_SLURM_OR_SKIP();
  TempDir dir;
  const std::string model = fmt::format("sim-ix-{}", ::getpid());
  const fs::path recipe = dir.path() / "ix.yaml";
  std::ofstream(recipe) << fmt::format(R"(ix-dynamo-trt:
  image: nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1
  model: {}
  model-prefix: dsr1
  runner: h200-multinode
  precision: fp8
  framework: dynamo-trt
  router: {{ name: dynamo-router, version: "0.8.1.post1" }}
  kv-p2p-transfer: nixl
  multinode: true
  disagg: true
  workload: {{ prompts-per-conc: 4, min-prompts: 4, warmups-per-conc: 0 }}
  scenarios:
    fixed-seq-len:
    - isl: 128
      osl: 8
      search-space:
      - spec-decoding: "mtp"
        conc-list: [1]
        prefill: {{ num-worker: 1, tp: 8, ep: 8, dp-attn: false,
                   additional-settings: ["CONFIG_FILE=recipes/trtllm/h200/c1.yaml"] }}
        decode: {{ num-worker: 1, tp: 8, ep: 8, dp-attn: false }}
)",
                                       model);
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", recipe.string(), "--launcher", "slurm", "--stand-in",
                           "serve-sim", "--runs-dir", runs.string(), "--startup-timeout", "60"},
                          dir.path() / "sweep.log", std::chrono::seconds(120));
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto db = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto run = db->list_runs()->front();
  EXPECT_EQ(run.points.ok, 1);
  auto configs = db->server_configs(run.run.id);
  ASSERT_TRUE(configs.ok() && configs->size() == 1u);
  const auto& c = configs->front();
  EXPECT_EQ(c.row.at("framework").as_string(), "serve-sim");
  EXPECT_EQ(c.row.at("stand-in-for").as_string(), "dynamo-trt");
  const auto& roles = c.effective_config.at("roles").as_object();
  EXPECT_NE(node_of(roles, "prefill-0"), node_of(roles, "decode-0"));
  EXPECT_EQ(queued_like("ib-ix-dynamo-trt"), "");
  EXPECT_EQ(processes_with(model), 0);
}

// A multi-node agentic row as InferenceX's master configs write it (AgentX replay on a
// disaggregated deployment), serve-sim standing in, with AgentX's extras for routed deployments:
// each request names its session to the router (Dynamo's header), and every worker's prefix
// cache is emptied before each concurrency point (POST /flush_cache, drain-retry).
TEST(SlurmDisagg, AMultiNodeAgenticRowWithSessionAffinityAndACacheFlushPerPoint) {
  REQUIRE_SLURM_OR_SKIP();
  TempDir dir;
  const std::string model = fmt::format("sim-ix-agentic-{}", ::getpid());
  const fs::path recipe = dir.path() / "ix-agentic.yaml";
  std::ofstream(recipe) << fmt::format(R"(ix-agentic-sglang:
  image: lmsysorg/sglang:v0.5.17
  model: {}
  model-prefix: dsv4
  runner: cluster:mi355x
  precision: fp4
  framework: sglang-disagg
  kv-p2p-transfer: mori
  multinode: true
  disagg: true
  workload:
    traces: {}/agentx-traces/trace_0460.json
    time-scale: 100
    duration: 300
    warmup-requests-per-lane: 1
    session-routing: dynamo-header
    flush-cache: true
    flush-timeout: 30
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: "none"
        conc-list: [ 1, 2 ]
        kv-offloading: none
        prefill: {{ num-worker: 1, tp: 8, ep: 1, dp-attn: false }}
        decode: {{ num-worker: 1, tp: 8, ep: 1, dp-attn: false }}
)",
                                       model, INFERBENCH_TEST_DATA);
  const fs::path runs = dir.path() / "runs";
  auto r = run_inferbench({"sweep", recipe.string(), "--launcher", "slurm", "--stand-in",
                           "serve-sim", "--runs-dir", runs.string(), "--startup-timeout", "60"},
                          dir.path() / "sweep.log", std::chrono::seconds(240));
  ASSERT_FALSE(r.timed_out) << r.output;
  // Time-scaled and shorter than AgentX's floor: measured, not submission-valid, exit 0.
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("emptying the prefix cache of 2 workers (POST /flush_cache)"),
            std::string::npos)
      << r.output;
  auto db = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto run = db->list_runs()->front();
  auto points = db->points(run.run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 2u);
  for (const auto& p : *points) {
    EXPECT_GT(num(p.result, "completed"), 0) << boost::json::serialize(p.result);
    // Each point started cold: both workers confirmed their prefix cache empty.
    const auto& flush = p.result.at("cache_flush").as_object();
    EXPECT_TRUE(flush.at("all_flushed").as_bool()) << boost::json::serialize(flush);
    std::set<std::string> flushed;
    for (const auto& w : flush.at("workers").as_array()) {
      if (w.at("flushed").as_bool()) flushed.insert(std::string(w.at("worker").as_string()));
    }
    EXPECT_EQ(flushed, (std::set<std::string>{"prefill-0", "decode-0"}));
    // The router bound each session on its first request and sent the rest where it went; no
    // request came without its session's name.
    const std::string scrapes = *gzip_decompress(
        *read_file(fs::path(p.artifacts_dir) /
                   fmt::format("server_metrics_conc_{}.jsonl.gz",
                               p.result.at("max_concurrency").to_number<int64_t>())));
    const auto hits = series_values(scrapes, R"(router_session_requests_total{result=\"hit\"} )");
    const auto unnamed =
        series_values(scrapes, R"(router_session_requests_total{result=\"unnamed\"} )");
    ASSERT_FALSE(hits.empty()) << "the router's session counters were not scraped";
    EXPECT_GT(hits.back(), 0);
    for (double u : unnamed) EXPECT_EQ(u, 0);
  }
  EXPECT_EQ(queued_like("ib-ix-agentic-sglang"), "");
  EXPECT_EQ(processes_with(model), 0);
}

// Ctrl-C during a multi-node point: the job is cancelled, the run is interrupted and keeps what
// it measured, nothing is left on any node.
TEST(SlurmDisagg, InterruptCancelsTheJobAndKeepsWhatWasMeasured) {
  REQUIRE_SLURM_OR_SKIP();
  TempDir dir;
  const std::string model = fmt::format("sim-slurm-disagg-int-{}", ::getpid());
  const fs::path recipe = dir.path() / "disagg.yaml";
  std::ofstream(recipe) << slurm_disagg_recipe(
      "slurm-interrupt", model,
      R"(      - { spec-decoding: none, conc-list: [1, 4], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 1 } })");
  const fs::path runs = dir.path() / "runs";
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN,
             "sweep",
             recipe.string(),
             "--launcher",
             "slurm",
             "--runs-dir",
             runs.string(),
             "--startup-timeout",
             "60",
             "--prompts-per-conc",
             "60"};
  so.log_path = dir.path() / "sweep.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok()) << child.error().message;
  ASSERT_TRUE(wait_for(
      [&] {
        if (!fs::exists(runs)) return false;
        for (const auto& e : fs::recursive_directory_iterator(runs)) {
          if (e.path().filename() == "conc_1.json") return true;
        }
        return false;
      },
      std::chrono::seconds(120)))
      << file_tail(so.log_path);
  // The second point (240 requests on 4 lanes, about 2 s) is running.
  ASSERT_FALSE(queued_like("ib-slurm-interrupt").empty());
  ::kill(child->pid(), SIGINT);
  ASSERT_TRUE(wait_for([&] { return child->poll().has_value(); }, std::chrono::seconds(60)))
      << file_tail(so.log_path);
  EXPECT_EQ(child->poll()->code, 130) << file_tail(so.log_path);
  EXPECT_EQ(queued_like("ib-slurm-interrupt"), "");
  EXPECT_EQ(processes_with(model), 0);
  auto db = store::Store::open_existing(runs / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto run = db->list_runs()->front();
  EXPECT_EQ(run.run.status, store::RunStatus::kInterrupted);
  EXPECT_EQ(run.points.ok, 1);
}

}  // namespace
}  // namespace ib::e2e
