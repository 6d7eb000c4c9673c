// Hostile command-line input to every command: numbers that overflow, are not numbers or are out of
// range, bad URLs, output paths that collide, missing files and relative paths under -C. Each is
// a usage error (exit code 2) naming the option, and nothing is run or written.
#include <fstream>
#include <set>

#include "core/command.h"
#include "e2e_util.h"

namespace ib::e2e {
namespace {

// Files under `dir`, recursively (what a refused command must not have written).
std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    out.insert(fs::relative(e.path(), dir).string());
  }
  return out;
}

struct BadOption {
  std::vector<std::string> command;  // the command and the options that put outputs in WORK
  std::string option;
  std::vector<std::string> values;
};

// WORK in a command line is replaced by the folder whose emptiness the test checks.
std::vector<BadOption> bad_options() {
  const std::vector<std::string> bench = {"bench", "--endpoint", "http://127.0.0.1:1", "--output",
                                          "WORK/out.json", "--details", "WORK/rec.jsonl"};
  const std::vector<std::string> sweep = {"sweep", "--runs-dir", "WORK/runs"};
  const std::vector<std::string> sim = {"serve-sim", "--port", "0", "--port-file", "WORK/port"};
  const std::vector<std::string> sim_simple = {"serve-sim", "--port", "0", "--port-file",
                                               "WORK/port", "--timing-model", "simple"};
  const std::vector<std::string> compare = {"compare", "WORK", "WORK", "--markdown",
                                            "WORK/c.md", "--db", "WORK/x.db"};
  const std::vector<std::string> common = {"0x10", "12abc", "nan", "inf", "", "1e400", " 1"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {
      // bench: counts, rates, durations, timeouts, lengths, seeds.
      {bench, "--concurrency", with({"0", "-1", "3000000000", "1.5", "100001"}, common)},
      {bench, "--request-rate", with({"0", "-1", "1000001"}, common)},
      {bench, "--duration", with({"0", "-5"}, common)},
      {bench, "--num-prompts", with({"0", "3000000000", "10000001", "1e6"}, common)},
      {bench, "--isl", {"0", "-1", "99999999999", "16777217", "0x10", "nan"}},
      {bench, "--osl", {"0", "16777217", "12abc"}},
      {bench, "--warmups", {"-1", "3000000000", "nan"}},
      // One seed range in every command: 0 to 2^63 - 1.
      {bench, "--seed", {"-1", "9223372036854775808", "0x10", "1.5", "nan"}},
      {bench, "--range-ratio", {"0", "1.5", "-0.5", "nan", "inf"}},
      {bench, "--burstiness", {"0", "-1", "nan", "inf"}},
      {bench, "--vocab-size", {"100", "3000000000", "0x10"}},
      {bench, "--num-gpus", {"0", "-1", "nan"}},
      {bench, "--percentiles", {"nan", "100", "0", "0x10", "90,,99", "", "99,inf"}},
      {bench, "--goodput", {"ttft:nan", "ttft:0", "ttft:-1", "tpot:0x10", "e2el:inf"}},
      {bench, "--connect-timeout", {"0", "-1", "nan", "inf", "1e400"}},
      {bench, "--first-byte-timeout", {"-1", "nan"}},
      {bench, "--idle-timeout", {"-1", "inf"}},
      {bench, "--request-timeout", {"-1", "nan", "1000001"}},
      {bench, "--max-retries", {"-1", "101", "nan"}},
      {bench, "--threads", {"-1", "1025", "0x10"}},
      {bench, "--source-addresses", {"-1", "255"}},
      {bench, "--slice-duration", {"0", "nan", "-1"}},
      {bench, "--max-traces", {"0", "-1", "1e3"}},
      {bench, "--warmup-requests-per-lane", {"-1", "10001"}},
      {bench, "--time-scale", {"0", "nan", "inf"}},
      {bench, "--trace-idle-cap", {"-1", "nan"}},
      {bench, "--t-star-min", {"-0.1", "1.1", "nan"}},
      {bench, "--t-star-max", {"nan", "2"}},
      {bench, "--grace", {"-1", "inf"}},
      {bench,
       "--endpoint",
       {"http://127.0.0.1:99999", "http://127.0.0.1:0", "http://:8000", "https://127.0.0.1:8000",
        "ftp://127.0.0.1", "127.0.0.1:8000", "", "http://u:p@127.0.0.1:8000"}},
      // sweep.
      {sweep,
       "--concurrency",
       {"3000000000", "0", "-4", "1,0x10", "1,nan", "4,", "1,,4", ",", "", "100001"}},
      {sweep, "--prompts-per-conc", {"0", "3000000000", "nan", "1e3"}},
      {sweep, "--min-prompts", {"0", "-1"}},
      {sweep, "--warmups-per-conc", {"-1", "3000000000"}},
      {sweep, "--range-ratio", {"0", "2", "nan"}},
      {sweep, "--seed", {"-1", "9223372036854775808", "0x10"}},
      {sweep, "--max-traces", {"0"}},
      {sweep, "--warmup-requests-per-lane", {"-1"}},
      {sweep, "--agentic-duration", {"0", "nan"}},
      {sweep, "--time-scale", {"0", "inf"}},
      {sweep, "--slice-duration", {"0"}},
      {sweep, "--point-timeout", {"0", "nan", "-1", "1e400"}},
      {sweep, "--startup-timeout", {"0", "inf"}},
      {sweep, "--repeat", {"0", "1001", "0x10", "2.5"}},
      {sweep, "--endpoint", {"http://127.0.0.1:70000", "https://h", "http://"}},
      // serve-sim (accepted, it would listen until killed).
      {sim, "--port", {"65536", "-1", "0x50", "nan"}},
      {sim, "--threads", {"0", "65", "0x2", "-1", "nan", ""}},
      {sim, "--time-scale", {"0", "nan", "inf", "-1"}},
      {sim, "--seed", {"-1", "9223372036854775808"}},
      {sim, "--keep-alive-timeout-s", {"-1", "nan"}},
      {sim, "--max-model-len", {"1", "3000000000"}},
      {sim, "--max-num-seqs", {"0", "3000000000"}},
      {sim, "--tensor-parallel-size", {"0", "65"}},
      {sim, "--max-num-batched-tokens", {"0", "16777217"}},
      {sim, "--block-size", {"0", "1025"}},
      {sim, "--num-gpu-blocks-override", {"0", "3000000000", "99999999"}},
      {sim, "--gpu-memory-utilization", {"0", "1.5", "nan"}},
      {sim, "--compute-efficiency", {"0", "inf"}},
      {sim, "--memory-efficiency", {"-1", "2"}},
      {sim, "--step-overhead-us", {"-1", "nan"}},
      {sim_simple, "--prefill-tok-s", {"0", "nan"}},
      {sim_simple, "--prefill-overhead-ms", {"-1"}},
      {sim_simple, "--decode-base-ms", {"nan", "-1"}},
      {sim_simple, "--decode-per-running-ms", {"inf"}},
      // compare, runs, show, verify.
      {compare, "--resamples", {"99", "100001", "0x100", "nan"}},
      {compare, "--seed", {"-1", "1.5", "9223372036854775808"}},
      {compare, "--confidence", {"nan", "100", "0", "0x10", "-5", "inf%"}},
      {compare, "--min-effect", {"-1", "inf", "nan", "1001"}},
      {{"runs", "--db", "WORK/x.db"}, "--limit", {"-1", "0x10", "3000000000"}},
      // A URL of a store this build does not have is not silently a file under "sqlite:/"
      // (issue 30); postgresql:// is a team's store (docs/store.md).
      {{"runs"}, "--db", {"sqlite:///x.db", "mysql://u@127.0.0.1/results"}},
      {sweep, "--db", {"mysql://127.0.0.1/results"}},
      {{"show", "1", "--db", "WORK/x.db"}, "--timeslices", {"0", "-1", "nan"}},
      {{"verify", "a", "b", "--work-dir", "WORK/v", "--db", "WORK/x.db"},
       "--startup-timeout",
       {"0", "nan", "-1"}},
  };
}

// Table-driven: every option × bad value is a usage error that names the option, and the
// command ran nothing (no output file, database, run folder or port file appeared).
// Over 200 command lines, each a process of its own with its own empty folder, run four at a time
// (under the sanitizers each process's start and leak check is most of the cost).
TEST(CliInput, EveryBadNumberOrUrlIsAUsageErrorNamingTheOption) {
  TempDir dir;
  std::vector<std::vector<std::string>> commands;
  std::vector<fs::path> logs, works;
  std::vector<std::string> whats;
  for (const BadOption& b : bad_options()) {
    for (const std::string& value : b.values) {
      const fs::path work = dir.path() / ("work" + std::to_string(commands.size()));
      fs::create_directories(work);
      std::vector<std::string> args;
      for (const auto& a : b.command) {
        args.push_back(a.rfind("WORK", 0) == 0 ? work.string() + a.substr(4) : a);
      }
      args.push_back(b.option + "=" + value);
      whats.push_back(b.command.front() + " " + b.option + "=" + value);
      logs.push_back(dir.path() / ("case" + std::to_string(commands.size()) + ".log"));
      works.push_back(work);
      commands.push_back(std::move(args));
    }
  }
  ASSERT_GT(commands.size(), 200u);
  const auto results = run_inferbench_all(commands, logs, std::chrono::seconds(30));
  size_t i = 0;
  for (const BadOption& b : bad_options()) {
    for (size_t v = 0; v < b.values.size(); ++v, ++i) {
      const auto& r = results[i];
      const std::string& what = whats[i];
      EXPECT_FALSE(r.timed_out) << what;
      EXPECT_EQ(r.exit.code, 2) << what << "\n" << r.output;
      EXPECT_NE(r.output.find(b.option), std::string::npos) << what << "\n" << r.output;
      EXPECT_EQ(r.output.find("internal error"), std::string::npos) << what << "\n" << r.output;
      // One short line, not a dump: no 300-digit bound, the value capped.
      EXPECT_LT(r.output.size(), 600u) << what << "\n" << r.output;
      EXPECT_EQ(files_under(works[i]), std::set<std::string>{}) << what;
    }
  }
  EXPECT_EQ(i, results.size());
}

// A rate whose schedule cannot be run is refused, not run as "everything at once" under the
// rate's name (issue 30).
TEST(CliInput, ARequestRateWhoseScheduleCannotBeRunIsRefused) {
  TempDir dir;
  auto r = run_inferbench({"bench", "--endpoint", "http://127.0.0.1:9", "--request-rate", "1e-10",
                           "--output", (dir.path() / "r.json").string()},
                          dir.path() / "bench.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--request-rate 1e-10: 100 requests at that rate would take 1e+12 s"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "r.json"));
}

TEST(CliInput, SweepConcurrencyBeyondIntIsNotWrapped) {
  TempDir dir;
  auto r = run_inferbench({"sweep", "--runs-dir", (dir.path() / "runs").string(), "--concurrency",
                           "3000000000"},
                          dir.path() / "sweep.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--concurrency: must be an integer from 1 to 100000"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("got '3000000000'"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("-1294967296"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "runs"));
}

TEST(CliInput, PromptsPerConcZeroPrintsAHumanBound) {
  TempDir dir;
  auto r = run_inferbench({"sweep", "--runs-dir", (dir.path() / "runs").string(),
                           "--prompts-per-conc", "0"},
                          dir.path() / "sweep.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--prompts-per-conc: must be an integer from 1 to 10000000, got '0'"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("179769313486231570"), std::string::npos) << r.output;  // DBL_MAX
}

// Memory-sized inputs are refused before anything is allocated or started, with the limit.
TEST(CliInput, HugeRequestCountsAreRefusedBeforeAllocating) {
  TempDir dir;
  // Each within its own range, together far too many prompt tokens.
  auto b = run_inferbench({"bench", "--endpoint", "http://127.0.0.1:1", "--num-prompts",
                           "10000000", "--isl", "16777216", "--output",
                           (dir.path() / "out.json").string()},
                          dir.path() / "bench.log", std::chrono::seconds(30));
  EXPECT_EQ(b.exit.code, 2) << b.output;
  EXPECT_NE(b.output.find("prompt tokens"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("--num-prompts"), std::string::npos) << b.output;
  EXPECT_EQ(b.output.find("bad_alloc"), std::string::npos) << b.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out.json"));
  // A sweep: prompts-per-conc × conc is checked for every point before any server starts.
  const fs::path runs = dir.path() / "runs";
  auto s = run_inferbench({"sweep", "--runs-dir", runs.string(), "--prompts-per-conc", "10000000",
                           "--concurrency", "100000"},
                          dir.path() / "sweep.log", std::chrono::seconds(60));
  EXPECT_EQ(s.exit.code, 2) << s.output;
  EXPECT_NE(s.output.find("at most 10000000"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("bad_alloc"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("starting"), std::string::npos) << s.output;
}

TEST(CliInput, BenchZeroConcurrencyRateAndDurationDoNotRun) {
  TempDir dir;
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  for (const auto& [opt, value] : std::vector<std::pair<std::string, std::string>>{
           {"--concurrency", "0"}, {"--request-rate", "0"}, {"--duration", "0"}}) {
    const fs::path out = dir.path() / "out.json";
    auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--num-prompts", "2", "--isl", "8",
                             "--osl", "2", opt, value, "--output", out.string()},
                            dir.path() / "bench.log", std::chrono::seconds(30));
    EXPECT_EQ(r.exit.code, 2) << opt << "\n" << r.output;
    EXPECT_NE(r.output.find(opt + ": must be"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out)) << opt;
  }
}

TEST(CliInput, RequestRateNanBlamesRequestRate) {
  TempDir dir;
  auto r = run_inferbench({"bench", "--endpoint", "http://127.0.0.1:1", "--request-rate", "nan"},
                          dir.path() / "bench.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--request-rate: must be a number above 0"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("--concurrency"), std::string::npos) << r.output;
}

TEST(CliInput, OutputAndDetailsNamingOneFileAreRefusedBeforeRunning) {
  TempDir dir;
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  const fs::path x = dir.path() / "x.json";
  { std::ofstream(x) << "keep"; }
  fs::create_symlink(x, dir.path() / "link.json");
  for (const std::string& second :
       {x.string(), (dir.path() / "." / "x.json").string(),
        (dir.path() / "sub" / ".." / "x.json").string(), (dir.path() / "link.json").string()}) {
    fs::create_directories(dir.path() / "sub");
    auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--num-prompts", "2", "--isl", "8",
                             "--osl", "2", "--output", x.string(), "--details", second},
                            dir.path() / "bench.log", std::chrono::seconds(30));
    EXPECT_EQ(r.exit.code, 2) << second << "\n" << r.output;
    EXPECT_NE(r.output.find("--output and --details name the same file"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("TTFT"), std::string::npos) << "it ran:\n" << r.output;
    EXPECT_EQ(*read_file(x), "keep");
  }
  // Different files are fine, and both are written.
  auto ok = run_inferbench({"bench", "--endpoint", sim.url(), "--num-prompts", "2", "--isl", "8",
                            "--osl", "2", "--output", (dir.path() / "a.json").string(),
                            "--details", (dir.path() / "a.jsonl").string()},
                           dir.path() / "ok.log", std::chrono::seconds(60));
  EXPECT_EQ(ok.exit.code, 0) << ok.output;
  EXPECT_TRUE(fs::exists(dir.path() / "a.json"));
  EXPECT_TRUE(fs::exists(dir.path() / "a.jsonl"));
}

TEST(CliInput, OutputThatIsAFolderOrInAMissingFolderIsAUsageError) {
  TempDir dir;
  for (const auto& [opt, path] : std::vector<std::pair<std::string, std::string>>{
           {"--output", dir.path().string()},
           {"--details", (dir.path() / "missing" / "r.jsonl").string()}}) {
    auto r = run_inferbench({"bench", "--endpoint", "http://127.0.0.1:1", opt, path},
                            dir.path() / "bench.log", std::chrono::seconds(30));
    EXPECT_EQ(r.exit.code, 2) << r.output;
    EXPECT_NE(r.output.find(opt + ":"), std::string::npos) << r.output;
  }
}

// The base URL with or without /v1 and a trailing slash: the same server, and /v1/models (not
// /v1/v1/models) is asked for the model name (a wrong path would be a 404 and exit 2).
TEST(CliInput, EndpointWithOrWithoutV1AndTrailingSlashReachesTheServer) {
  TempDir dir;
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  int n = 0;
  for (const std::string suffix : {"", "/", "/v1", "/v1/"}) {
    const fs::path out = dir.path() / ("out" + std::to_string(++n) + ".json");
    auto r = run_inferbench({"bench", "--endpoint", sim.url() + suffix, "--num-prompts", "2",
                             "--isl", "8", "--osl", "2", "--output", out.string()},
                            dir.path() / "bench.log", std::chrono::seconds(60));
    EXPECT_EQ(r.exit.code, 0) << suffix << "\n" << r.output;
    EXPECT_EQ(r.output.find("/v1/v1"), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(out)) << suffix;
  }
}

TEST(CliInput, VerifyMissingRecipeFileSaysTheFileDoesNotExist) {
  TempDir dir;
  const std::string ex = std::string(INFERBENCH_SOURCE_DIR) + "/examples/noop-change/";
  const std::string missing = (dir.path() / "missing.yaml").string();
  auto r = run_inferbench({"verify", missing, ex + "head.yaml", "--db",
                           (dir.path() / "x.db").string()},
                          dir.path() / "verify.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("missing.yaml: no such recipe file"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("database"), std::string::npos) << r.output;
  // A folder named like a recipe, and a recipe file beside a run name.
  fs::create_directories(dir.path() / "dir.yaml");
  auto d = run_inferbench({"verify", (dir.path() / "dir.yaml").string(), ex + "head.yaml"},
                          dir.path() / "verify2.log", std::chrono::seconds(30));
  EXPECT_EQ(d.exit.code, 2) << d.output;
  EXPECT_NE(d.output.find("a folder, not a recipe file"), std::string::npos) << d.output;
  auto m = run_inferbench({"verify", ex + "base.yaml", "run-1"}, dir.path() / "verify3.log",
                          std::chrono::seconds(30));
  EXPECT_EQ(m.exit.code, 2) << m.output;
  EXPECT_NE(m.output.find("is a recipe file but run-1 is not"), std::string::npos) << m.output;
}

TEST(CliInput, ChangedAndVerifyTakeRelativePathsFromTheRepository) {
  TempDir repo;
  auto git = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", repo.path().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->ok()) << r->err;
  };
  git({"init", "-q", "-b", "main"});
  fs::create_directories(repo.path() / "recipes");
  const std::string body = sim_key_header("k1-bf16-h200-servesim", "m") +
                           "  scenarios:\n    fixed-seq-len:\n    - isl: 8\n      osl: 2\n"
                           "      search-space:\n      - { tp: 1, conc-list: [1] }\n";
  std::ofstream(repo.path() / "recipes" / "a.yaml") << body;
  git({"add", "-A"});
  git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"});
  std::ofstream(repo.path() / "recipes" / "a.yaml")
      << sim_key_header("k1-bf16-h200-servesim", "m2") +
             "  scenarios:\n    fixed-seq-len:\n    - isl: 8\n      osl: 2\n"
             "      search-space:\n      - { tp: 1, conc-list: [1] }\n";
  // The test runs in another directory: recipes/a.yaml exists only under the repository.
  ASSERT_FALSE(fs::exists("recipes/a.yaml"));
  TempDir logs;
  auto r = run_inferbench({"changed", "-C", repo.path().string(), "--base", "main",
                           "recipes/a.yaml", "--json"},
                          logs.path() / "changed.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("k1-bf16-h200-servesim"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("modified"), std::string::npos) << r.output;
}

TEST(CliInput, CompareMissingFolderAndMarkdownOverTheDatabase) {
  TempDir dir;
  auto r = run_inferbench({"compare", (dir.path() / "no" / "base").string(),
                           (dir.path() / "no" / "head").string()},
                          dir.path() / "compare.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no such folder"), std::string::npos) << r.output;
  const fs::path db = dir.path() / "x.db";
  { std::ofstream(db) << "not a database, but must stay as it is"; }
  auto m = run_inferbench({"compare", dir.path().string(), dir.path().string(), "--db",
                           db.string(), "--markdown", (dir.path() / "." / "x.db").string()},
                          dir.path() / "compare2.log", std::chrono::seconds(30));
  EXPECT_EQ(m.exit.code, 2) << m.output;
  EXPECT_NE(m.output.find("--db and --markdown name the same file"), std::string::npos)
      << m.output;
  EXPECT_EQ(*read_file(db), "not a database, but must stay as it is");
}

TEST(CliInput, ReportOutputOverTheDatabaseIsRefused) {
  TempDir dir;
  const fs::path db = dir.path() / "inferbench.db";
  { std::ofstream(db) << "keep"; }
  auto r = run_inferbench({"report", "1", "--db", db.string(), "-o", db.string()},
                          dir.path() / "report.log", std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("name the same file"), std::string::npos) << r.output;
  EXPECT_EQ(*read_file(db), "keep");
}

TEST(CliInput, MissingInputFilesAreNamedAsMissing) {
  TempDir dir;
  const std::string missing = (dir.path() / "missing.yaml").string();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"plan", missing},
           {"sweep", "--runs-dir", (dir.path() / "runs").string(), missing},
           {"trace", "stats", missing},
           {"bench", "--workload", "agentic", "--traces", missing}}) {
    auto r = run_inferbench(args, dir.path() / "in.log", std::chrono::seconds(30));
    EXPECT_EQ(r.exit.code, 2) << args.front() << "\n" << r.output;
    EXPECT_NE(r.output.find("missing.yaml': no such file or folder"), std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "runs"));
}

TEST(CliInput, SweepRunsDirThatIsAFileAndMissingRunnersFile) {
  TempDir dir;
  const fs::path file = dir.path() / "afile";
  { std::ofstream(file) << "x"; }
  auto r = run_inferbench({"sweep", "--runs-dir", file.string()}, dir.path() / "s1.log",
                          std::chrono::seconds(30));
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("--runs-dir"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is a file, not a folder"), std::string::npos) << r.output;
  auto p = run_inferbench({"plan", "--runners", (dir.path() / "runners.yaml").string()},
                          dir.path() / "p.log", std::chrono::seconds(30));
  EXPECT_EQ(p.exit.code, 2) << p.output;
  EXPECT_NE(p.output.find("--runners"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("no such file"), std::string::npos) << p.output;
}

}  // namespace
}  // namespace ib::e2e
