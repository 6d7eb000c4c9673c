// `inferbench plan`: the command line over the recipe library, on real InferenceX configs and on
// bad input.
#include <sys/resource.h>

#include <fstream>
#include <map>
#include <set>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

const std::string kData = INFERBENCH_TEST_DATA "/inferencex";
const std::string kFixtures = std::string(INFERBENCH_SOURCE_DIR) + "/tests/fixtures/recipes";

TEST(Plan, RealConfigsAsJsonWithKeyGlob) {
  TempDir dir;
  const fs::path log = dir.path() / "plan.log";
  auto r = run_inferbench(
      {"plan", kData + "/amd-master.yaml", kData + "/nvidia-master.yaml", "--runners",
       kData + "/runners.yaml", "--keys", "dsr1-fp4-mi355x-*", "--json"},
      log);
  ASSERT_EQ(r.exit.code, 0) << r.output.substr(0, 2000);
  boost::system::error_code ec;
  auto v = boost::json::parse(r.output, ec);
  ASSERT_FALSE(ec) << r.output.substr(0, 500);
  const boost::json::array* rows = v.is_array() ? &v.as_array() : nullptr;
  if (rows == nullptr && v.is_object() && v.as_object().contains("rows")) {
    rows = &v.as_object().at("rows").as_array();
  }
  ASSERT_NE(rows, nullptr);
  ASSERT_FALSE(rows->empty());
  for (const auto& row : *rows) {
    const auto& o = row.as_object();
    const std::string key(o.at("config-key").as_string());
    EXPECT_EQ(key.rfind("dsr1-fp4-mi355x-", 0), 0u) << key;
    EXPECT_EQ(std::string(o.at("recipe-fingerprint").as_string()).size(), 64u);
  }
}

TEST(Plan, BadRecipeExitsTwoNamingFileLineAndField) {
  TempDir dir;
  auto r = run_inferbench({"plan", kFixtures + "/bad/topology.yaml"}, dir.path() / "bad.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("topology.yaml:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("search-space["), std::string::npos) << r.output;
}

TEST(Plan, BundledExampleRecipesAreValidAndExpandAsDocumented) {
  TempDir dir;
  const std::string ex = std::string(INFERBENCH_SOURCE_DIR) + "/examples/recipes/";
  auto r = run_inferbench(
      {"plan", ex + "serve-sim.yaml", ex + "vllm-h200-llama70b.yaml", ex + "sglang-h200-dsr1.yaml",
       ex + "sglang-mi355x-minimax-tp4.yaml", ex + "serve-sim-mtp.yaml", "--json"},
      dir.path() / "plan.log");
  ASSERT_EQ(r.exit.code, 0) << r.output.substr(0, 2000);
  auto v = boost::json::parse(r.output);
  const boost::json::array& rows =
      v.is_array() ? v.as_array() : v.as_object().at("rows").as_array();
  std::map<std::string, int> per_key;
  for (const auto& row : rows) ++per_key[std::string(row.as_object().at("config-key").as_string())];
  // Concurrency doubling with the end clamped and included (4..64 → 5 points, 64..512 → 4, ...).
  EXPECT_EQ(per_key["llama8b-bf16-h200-servesim"], 4);
  EXPECT_EQ(per_key["llama8b-bf16-servesim-mtp"], 2 + 2);  // spec-decoding none and mtp
  EXPECT_EQ(per_key["llama70b-fp8-h200-vllm"], 6 + 7 + 5);
  EXPECT_EQ(per_key["dsr1-fp8-h200-sglang"], 5 + 4 + 4);
  EXPECT_EQ(per_key["minimaxm3-fp4-mi355x-sglang"], 5 + 5);
  // The serve block travels with each row, so an environment change changes the fingerprint.
  for (const auto& row : rows) EXPECT_TRUE(row.as_object().contains("serve"));
}

TEST(Plan, NoFilesIsAUsageError) {
  TempDir dir;
  auto r = run_inferbench({"plan"}, dir.path() / "none.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Runs `inferbench ARGS...` with its memory bounded, so that a regression that expands a document
// fails here instead of exhausting the machine: under an address-space limit (RLIMIT_AS, through
// the shell's ulimit) of `limit_mib`. AddressSanitizer reserves terabytes of shadow address space
// and cannot start under such a limit, so in a sanitizer build the run is unlimited and its peak
// resident memory (the children's rusage) is checked against four times the limit instead.
CommandResult run_inferbench_bounded(const std::vector<std::string>& args, const fs::path& log,
                                     size_t limit_mib) {
  // Only a guard against a hang, far above the few milliseconds this takes.
  const auto timeout = std::chrono::seconds(60);
  if (!kAddressSanitizer) {
    return run_inferbench(
        args, log, timeout, {},
        {"/bin/sh", "-c", "ulimit -v " + std::to_string(limit_mib * 1024) + " && exec \"$@\"",
         "sh"});
  }
  auto r = run_inferbench(args, log, timeout);
  struct rusage usage {};
  EXPECT_EQ(getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(static_cast<size_t>(usage.ru_maxrss), 4 * limit_mib * 1024)
      << "peak resident KiB of " << args.back();
  return r;
}

TEST(Plan, AliasBombFailsFastWithBoundedMemory) {
  // Nine levels of nine aliases: 387 million nodes after expansion, in 342 bytes.
  std::string bomb = "a: &a [\"lol\"";
  for (int i = 1; i < 9; ++i) bomb += ",\"lol\"";
  bomb += "]\n";
  std::string prev = "a";
  for (char name = 'b'; name <= 'i'; ++name) {
    bomb += std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 9; ++i) bomb += (i ? ",*" : "*") + prev;
    bomb += "]\n";
    prev = std::string(1, name);
  }
  ASSERT_EQ(bomb.size(), 342u);
  TempDir dir;
  const fs::path file = dir.path() / "bomb.yaml";
  std::ofstream(file) << bomb;
  // 256 MiB of address space: inferbench needs a few tens; the expansion would need gigabytes.
  auto r = run_inferbench_bounded({"plan", file.string()}, dir.path() / "bomb.log", 256);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.exit.signaled) << r.exit.describe() << "\n" << r.output;
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find(file.string() +
                          ":7:8: too many nodes after alias expansion (limit 1000000): each alias "
                          "counts every node of what it repeats"),
            std::string::npos)
      << r.output;
  // The same for a depth bomb: 100000 '[' is caught on the bytes, before yaml-cpp buffers it.
  std::ofstream(dir.path() / "deep.yaml") << "k: " << std::string(100000, '[') << "\n";
  r = run_inferbench_bounded({"plan", (dir.path() / "deep.yaml").string()}, dir.path() / "deep.log",
                             256);
  EXPECT_EQ(r.exit.code, 2) << r.exit.describe() << "\n" << r.output;
  EXPECT_NE(r.output.find("deep.yaml:1:104: flow collections ('[' or '{') nested more than 100 "
                          "levels deep"),
            std::string::npos)
      << r.output;
}

TEST(Plan, EmptyFilesDirectoriesAndControlCharacters) {
  TempDir dir;
  // An empty or comment-only recipe is an error naming the file, not an empty table.
  const fs::path empty = dir.path() / "empty.yaml";
  std::ofstream(empty) << "# only a comment\n";
  auto r = run_inferbench({"plan", empty.string()}, dir.path() / "empty.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no config keys in " + empty.string()), std::string::npos) << r.output;

  // A directory stands for its YAML files, and plan says which it read.
  const fs::path recipes = dir.path() / "recipes";
  fs::create_directories(recipes);
  fs::copy_file(std::string(INFERBENCH_SOURCE_DIR) + "/examples/recipes/serve-sim.yaml",
                recipes / "serve-sim.yaml");
  r = run_inferbench({"plan", recipes.string() + "/"}, dir.path() / "dir.log");
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find(": a directory; reading its 1 YAML file: serve-sim.yaml"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("llama8b-bf16-h200-servesim"), std::string::npos) << r.output;
  const fs::path bare = dir.path() / "bare";
  fs::create_directories(bare);
  r = run_inferbench({"plan", bare.string()}, dir.path() / "bare.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("a directory without *.yaml or *.yml files"), std::string::npos)
      << r.output;

  // A config key with an escape sequence: escaped in the table, exact (JSON-escaped) in --json.
  auto text = read_file(recipes / "serve-sim.yaml");
  ASSERT_TRUE(text);
  const std::string key = "llama8b-bf16-h200-servesim:";
  ASSERT_NE(text->find(key), std::string::npos);
  std::string hostile = *text;
  hostile.replace(hostile.find(key), key.size(), "\"k\\e[2J\":");
  std::ofstream(dir.path() / "ctrl.yaml") << hostile;
  r = run_inferbench({"plan", (dir.path() / "ctrl.yaml").string()}, dir.path() / "ctrl.log");
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("k\\x1b[2J"), std::string::npos) << r.output;
  r = run_inferbench({"plan", "--json", (dir.path() / "ctrl.yaml").string()},
                     dir.path() / "ctrl-json.log");
  EXPECT_EQ(r.exit.code, 0) << r.output;
  boost::system::error_code ec;
  auto rows = boost::json::parse(r.output, ec);
  ASSERT_FALSE(ec) << r.output;
  EXPECT_EQ(rows.as_array().at(0).at("config-key").as_string(), "k\x1b[2J");
}

TEST(Plan, LabelsPrintTheSweepPlan) {
  TempDir dir;
  auto r = run_inferbench({"plan", kData + "/amd-master.yaml", kData + "/nvidia-master.yaml",
                           "--labels", "full-sweep-fail-fast,all-evals", "--json"},
                          dir.path() / "plan.log");
  ASSERT_EQ(r.exit.code, 0) << r.output.substr(0, 2000);
  auto plan = boost::json::parse(r.output).as_object();
  EXPECT_EQ(plan.at("labels"), (boost::json::array{"full-sweep-fail-fast", "all-evals"}));
  ASSERT_TRUE(plan.at("canary").is_object());
  EXPECT_EQ(plan.at("canary").at("isl").as_int64(),
            8192);  // the snapshot has no 1k1k single-node row
  EXPECT_EQ(num(plan, "throughput-rows"), 1820);
  EXPECT_GT(num(plan, "eval-rows"), 0);
  for (const auto& g : plan.at("groups").as_array()) EXPECT_TRUE(g.at("fail-fast").as_bool());

  auto trimmed = run_inferbench({"plan", kData + "/amd-master.yaml", "--labels", "sweep-enabled"},
                                dir.path() / "trim.log");
  ASSERT_EQ(trimmed.exit.code, 0);
  EXPECT_NE(trimmed.output.find("concurrency trimmed to the lowest point per configuration"),
            std::string::npos);

  auto bad = run_inferbench(
      {"plan", kData + "/amd-master.yaml", "--labels", "sweep-enabled,full-sweep-enabled"},
      dir.path() / "bad.log");
  EXPECT_EQ(bad.exit.code, 2);
  EXPECT_NE(bad.output.find("exactly one primary label is allowed"), std::string::npos)
      << bad.output;
}

// InferenceX's multi-node rows plan into topologies (issue 33): with serve-sim standing in for
// every engine, each disaggregated row of the bundled master configs is a set of roles, placed
// on Slurm nodes with one srun line a step; none is refused.
TEST(Plan, TheMasterConfigsMultiNodeRowsPlanIntoSlurmTopologies) {
  TempDir dir;
  auto r = run_inferbench({"plan", kData + "/amd-master.yaml", kData + "/nvidia-master.yaml",
                           "--stand-in", "serve-sim", "--launcher", "slurm"},
                          dir.path() / "plan.log");
  ASSERT_EQ(r.exit.code, 0) << r.output.substr(0, 2000);
  std::set<std::string> keys;
  for (size_t at = r.output.find("\ntopology of "); at != std::string::npos;
       at = r.output.find("\ntopology of ", at + 1)) {
    const size_t start = at + 13;
    keys.insert(r.output.substr(start, r.output.find(' ', start) - start));
  }
  EXPECT_EQ(keys.size(), 94u);  // every multi-node key with prefill and decode workers
  EXPECT_EQ(r.output.find("cannot"), std::string::npos);
  EXPECT_NE(r.output.find("slurm: one job of 8 nodes"), std::string::npos);
  EXPECT_NE(r.output.find("--nodelist=node<8>"), std::string::npos);
  // The simulator's fingerprint, not the engine's: a stand-in is never the engine's result.
  auto engine = run_inferbench(
      {"plan", kData + "/nvidia-master.yaml", "--keys", "dsr1-fp8-h200-dynamo-trt", "--json"},
      dir.path() / "engine.log");
  auto sim = run_inferbench({"plan", kData + "/nvidia-master.yaml", "--keys",
                             "dsr1-fp8-h200-dynamo-trt", "--stand-in", "serve-sim", "--json"},
                            dir.path() / "sim.log");
  ASSERT_EQ(engine.exit.code, 0);
  ASSERT_EQ(sim.exit.code, 0);
  const auto e = boost::json::parse(engine.output).as_array().at(0).as_object();
  const auto s = boost::json::parse(sim.output).as_array().at(0).as_object();
  EXPECT_NE(e.at("recipe-fingerprint"), s.at("recipe-fingerprint"));
  EXPECT_EQ(s.at("framework").as_string(), "serve-sim");
  EXPECT_EQ(s.at("stand-in-for").as_string(), "dynamo-trt");

  // A worker of more GPUs than a node has spans nodes (a step a node, its rank in {node-rank});
  // the router's block may give it a node of its own.
  const fs::path recipe = dir.path() / "mn.yaml";
  std::ofstream(recipe) << R"(k1:
  image: img:1
  model: org/m
  model-prefix: m
  precision: fp8
  framework: sglang
  runner: h200
  multinode: true
  disagg: true
  kv-p2p-transfer: nixl
  serve:
    prefill: { command: [srv, --node-rank, "{node-rank}", --nnodes, "{nnodes}", --port, "{port}"] }
    decode: { command: [srv, --port, "{port}"] }
    router: { node: own, command: [rt, --p, "{prefill-urls}", --d, "{decode-urls}"] }
  scenarios:
    fixed-seq-len:
    - { isl: 1024, osl: 1024, search-space: [{ conc-list: [4], prefill: { num-worker: 1, tp: 16 }, decode: { num-worker: 1, tp: 8 } }] }
)";
  auto mn = run_inferbench({"plan", recipe.string(), "--launcher", "slurm"}, dir.path() / "mn.log");
  ASSERT_EQ(mn.exit.code, 0) << mn.output;
  EXPECT_NE(mn.output.find("one job of 4 nodes"), std::string::npos) << mn.output;
  EXPECT_NE(mn.output.find("prefill-0.r1  node<2>"), std::string::npos) << mn.output;
  EXPECT_NE(mn.output.find("router        node<4>"), std::string::npos) << mn.output;
}

TEST(Changed, ListsAffectedKeysWithReasonsAsTextAndJson) {
  TempDir dir;
  const fs::path repo = dir.path() / "repo";
  fs::create_directories(repo / "recipes");
  fs::copy_file(INFERBENCH_SOURCE_DIR "/examples/recipes/sglang-h200-dsr1.yaml",
                repo / "recipes" / "dsr1.yaml");
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(),
                {"git", "-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@t"});
    SpawnOptions so;
    so.argv = args;
    so.log_path = dir.path() / "git.log";
    auto child = ChildProcess::spawn(so);
    ASSERT_TRUE(child.ok());
    while (!child->poll()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(child->poll()->code, 0) << file_tail(so.log_path);
  };
  git({"init", "-q", "-b", "main"});
  git({"add", "-A"});
  git({"commit", "-qm", "base"});
  auto text = read_file(repo / "recipes" / "dsr1.yaml");
  ASSERT_TRUE(text.ok());
  std::string head = *text;
  auto pos = head.find("image: ");
  ASSERT_NE(pos, std::string::npos);
  head.replace(pos, head.find('\n', pos) - pos, "image: lmsysorg/sglang:v9.9.9");
  std::ofstream(repo / "recipes" / "dsr1.yaml") << head;

  auto r = run_inferbench(
      {"changed", "--base", "HEAD", "-C", repo.string(), (repo / "recipes").string()},
      dir.path() / "changed.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("1 config key affected:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("image changed from"), std::string::npos) << r.output;
  auto j = run_inferbench({"changed", "--base", "HEAD", "-C", repo.string(),
                           (repo / "recipes").string(), "--json", "--exit-code"},
                          dir.path() / "changed-json.log");
  EXPECT_EQ(j.exit.code, 1);  // --exit-code: keys are affected
  auto report = boost::json::parse(j.output).as_object();
  EXPECT_EQ(report.at("affected").as_int64(), 1);
  const auto& key = report.at("keys").as_array()[0].as_object();
  EXPECT_EQ(key.at("config-key").as_string(), "dsr1-fp8-h200-sglang");
  EXPECT_EQ(key.at("reasons").as_array()[0].at("field").as_string(), "image");
  EXPECT_EQ(key.at("reasons").as_array()[0].at("head").as_string(), "lmsysorg/sglang:v9.9.9");

  auto bad = run_inferbench({"changed", "--base", "no-such-rev", "-C", repo.string()},
                            dir.path() / "bad.log");
  EXPECT_EQ(bad.exit.code, 2);
  EXPECT_NE(bad.output.find("unknown git revision 'no-such-rev'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace ib::e2e
