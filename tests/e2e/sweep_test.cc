// `inferbench sweep`: recipes → servers → points → database, end to end with serve-sim children.
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/gzip.h"
#include "e2e_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

// Two simulator configurations (different decode speeds) × three concurrencies, on the simple
// timing model so a point takes a fraction of a second. `extra` is spliced into the first key.
// A model name only this test process uses, so that looking for its servers among all processes
// (tests run in parallel) finds only this test's.
std::string sweep_own_model() {
  return "sim-model-" + std::to_string(::getpid()) + "-e2e";
}

std::string two_config_recipe(const std::string& first_args = "\"2\"",
                              const std::string& extra = "") {
  auto key = [&](const std::string& name, const std::string& decode_ms, const std::string& more) {
    return name +
           ":\n"
           "  image: inferbench/serve-sim\n"
           "  model: " +
           sweep_own_model() +
           "\n"
           "  model-prefix: sim\n"
           "  precision: bf16\n"
           "  framework: serve-sim\n"
           "  runner: local\n"
           "  multinode: false\n" +
           more +
           "  serve:\n"
           "    command: [inferbench, serve-sim, --timing-model, simple, --decode-base-ms, " +
           decode_ms +
           ",\n"
           "              --model, \"{served-model}\", --host, \"{host}\", --port, \"{port}\"]\n"
           "    env: { SIM_UNUSED_KNOB: \"1\" }\n"
           "  scenarios:\n"
           "    fixed-seq-len:\n"
           "    - isl: 32\n"
           "      osl: 8\n"
           "      search-space:\n"
           "      - { tp: 1, conc-list: [1, 2, 4] }\n";
  };
  return key("sim-fast", first_args, extra) + key("sim-slow", "\"4\"", "");
}

fs::path write_sweep_recipe(const TempDir& dir, const std::string& text) {
  fs::path p = dir.path() / "recipe.yaml";
  std::ofstream(p) << text;
  return p;
}

store::Store open_db(const fs::path& file) {
  auto s = store::Store::open_existing(file);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(*s);
}

std::vector<std::string> sweep_args(const TempDir& dir, const fs::path& recipe,
                                    std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "sweep", recipe.string(), "--runs-dir", (dir.path() / "runs").string(), "--startup-timeout",
      "30"};
  if (std::find(more.begin(), more.end(), "--point-timeout") == more.end()) {
    a.insert(a.end(), {"--point-timeout", "60"});
  }
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// Processes whose command line contains `needle` (the servers a sweep started).
std::vector<pid_t> pids_with(const std::string& needle) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmd = read_file(e.path() / "cmdline");
    if (!cmd) continue;
    std::replace(cmd->begin(), cmd->end(), '\0', ' ');
    if (cmd->find(needle) != std::string::npos && cmd->find("serve-sim") != std::string::npos) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

// A sweep running in the background, for tests that interrupt or kill it mid-way.
struct BackgroundSweep {
  fs::path log;
  std::optional<ChildProcess> child;
  BackgroundSweep(const TempDir& dir, const fs::path& recipe, std::vector<std::string> more) {
    log = dir.path() / "sweep.log";
    SpawnOptions so;
    so.argv = {INFERBENCH_BIN};
    auto args = sweep_args(dir, recipe, std::move(more));
    so.argv.insert(so.argv.end(), args.begin(), args.end());
    so.log_path = log;
    auto c = ChildProcess::spawn(so);
    EXPECT_TRUE(c.ok());
    if (c.ok()) child.emplace(std::move(*c));
  }
  // Waits until some point's result file `name` (e.g. conc_1.json) exists under `runs`.
  bool wait_for_result(const fs::path& runs, const std::string& name) {
    return wait_for([&] {
      if (!fs::exists(runs)) return false;
      for (const auto& e : fs::recursive_directory_iterator(runs)) {
        if (e.path().filename() == name) return true;
      }
      return false;
    });
  }
  bool wait_exit(std::chrono::seconds limit) {
    return child && wait_for([&] { return child->poll().has_value(); }, limit);
  }
  int exit_code() { return child && child->poll() ? child->poll()->code : -1; }
};

TEST(Sweep, TwoConfigurationsTimesThreeConcurrenciesAreStored) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe());
  auto r = run_inferbench(sweep_args(dir, recipe, {"--json"}), dir.path() / "sweep.log",
                          std::chrono::seconds(120), {{"INFERBENCH_PROGRESS_INTERVAL", "0.1"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit.code, 0) << r.output;
  // Its stderr is a file, not a terminal: progress comes as plain lines (issue 30), never as a
  // live line's escape codes.
  EXPECT_NE(r.output.find("starting "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" requests, "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\033[K"), std::string::npos) << r.output;

  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto runs = db.list_runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  const auto& run = runs->front().run;
  EXPECT_EQ(run.status, store::RunStatus::kOk);
  EXPECT_EQ(run.tool_version, INFERBENCH_VERSION);
  EXPECT_NE(run.command_line.find("sweep"), std::string::npos);
  auto configs = db.server_configs(run.id);
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 2u);
  for (const auto& c : *configs) {
    EXPECT_EQ(c.status, store::ConfigStatus::kOk);
    EXPECT_EQ(c.launcher, "local");
    EXPECT_EQ(c.effective_config.at("engine").as_string(), "serve-sim");
    EXPECT_TRUE(fs::exists(c.log_path));
    // The recipe sets SIM_UNUSED_KNOB; serve-sim never reads it.
    const auto& never = c.env_reads.at("never_read").as_array();
    ASSERT_EQ(never.size(), 1u) << boost::json::serialize(c.env_reads);
    EXPECT_EQ(never[0].as_string(), "SIM_UNUSED_KNOB");
    // Writes into the engine's files were looked for (the key is there), and serve-sim made none.
    ASSERT_TRUE(c.env_reads.contains("engine_writes")) << boost::json::serialize(c.env_reads);
    EXPECT_TRUE(c.env_reads.at("engine_writes").as_array().empty());
  }
  EXPECT_NE((*configs)[0].fingerprint, (*configs)[1].fingerprint);
  auto points = db.points(run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 6u);
  std::set<std::pair<std::string, int64_t>> seen;
  for (const auto& p : *points) {
    EXPECT_EQ(p.status, metrics::PointStatus::kOk) << p.error;
    EXPECT_TRUE(seen.insert({p.fingerprint, p.concurrency}).second);
    EXPECT_GT(p.headline.get("output_throughput"), 0);
    EXPECT_EQ(p.result.at("max_concurrency").as_int64(), p.concurrency);
    const fs::path agg = fs::path(p.artifacts_dir) / fmt::format("agg_conc_{}.json", p.concurrency);
    auto a = read_json(agg);
    EXPECT_EQ(a.at("conc").as_int64(), p.concurrency);
    EXPECT_EQ(a.at("hw").as_string(), "local");
    EXPECT_GT(num(a, "tput_per_gpu"), 0);
    EXPECT_NEAR(num(a, "median_intvty"), 1000.0 / num(a, "median_tpot_ms"), 1e-6);
    EXPECT_NEAR(num(a, "median_ttft"), num(a, "median_ttft_ms") / 1000.0, 1e-9);
    EXPECT_TRUE(fs::exists(fs::path(p.artifacts_dir) /
                           fmt::format("records_conc_{}.jsonl", p.concurrency)));
    // The server's metrics during the point: raw scrapes, gzip JSONL, the first and the last
    // at least, each with the exposition text.
    auto gz = read_file(fs::path(p.artifacts_dir) /
                        fmt::format("server_metrics_conc_{}.jsonl.gz", p.concurrency));
    ASSERT_TRUE(gz.ok());
    auto text = gzip_decompress(*gz);
    ASSERT_TRUE(text.ok()) << text.error().message;
    std::istringstream lines(*text);
    std::string line;
    int scrapes = 0;
    while (std::getline(lines, line)) {
      auto s = boost::json::parse(line).as_object();
      EXPECT_EQ(s.at("status").as_int64(), 200);
      EXPECT_NE(s.at("text").as_string().find("vllm:num_requests_running"), std::string::npos);
      ++scrapes;
    }
    EXPECT_GE(scrapes, 2);
    EXPECT_EQ(p.result.at("client").at("server_metrics_scrape").at("scrapes").as_int64(), scrapes);
    // ... and as timeslices in the database: the server's (vLLM names, serve-sim) and the
    // client's, with the telemetry summary in the result.
    auto slices = db.timeslices(p.id);
    ASSERT_TRUE(slices.ok()) << slices.error().message;
    int server = 0, client = 0;
    int64_t finished = 0;
    for (const auto& t : *slices) {
      if (t.source == "server") {
        ++server;
        EXPECT_TRUE(t.running.has_value());
        EXPECT_EQ(t.data.at("engine").as_string(), "serve-sim");
      } else {
        ++client;
        finished += t.finished.value_or(0);
      }
    }
    EXPECT_GE(server, 1);
    EXPECT_GE(client, 1);
    EXPECT_EQ(finished, p.headline.get("completed"));  // every request ends in one slice
    const auto& tel = p.result.at("telemetry").as_object();
    EXPECT_EQ(tel.at("server").at("engine").as_string(), "serve-sim");
    EXPECT_GT(tel.at("server").at("generation_tokens").to_number<double>(), 0);
  }
  // The series on the command line: a telemetry section in `show`, CSV and JSON per point.
  const std::string db_path = (dir.path() / "runs" / "inferbench.db").string();
  auto shown = run_inferbench({"show", run.name, "--db", db_path}, dir.path() / "show.log");
  EXPECT_NE(shown.output.find("TELEMETRY"), std::string::npos) << shown.output;
  const std::string point = std::to_string(points->front().id);
  auto csv =
      run_inferbench({"show", run.name, "--db", db_path, "--timeslices", point, "--format", "csv"},
                     dir.path() / "csv.log");
  ASSERT_EQ(csv.exit.code, 0) << csv.output;
  EXPECT_NE(csv.output.find("# server\nindex,start_s,end_s,scrapes,engine,running,"),
            std::string::npos)
      << csv.output;
  EXPECT_NE(csv.output.find("# client\nindex,start_s,end_s,started,finished"), std::string::npos)
      << csv.output;
  EXPECT_EQ(csv.output.find("E0"), std::string::npos)
      << "numbers in their short form: " << csv.output;
  auto stray =
      run_inferbench({"show", run.name, "--db", db_path, "--format", "csv"}, dir.path() / "f.log");
  EXPECT_EQ(stray.exit.code, 2) << stray.output;
  auto js =
      run_inferbench({"show", run.name, "--db", db_path, "--timeslices", point, "--format", "json"},
                     dir.path() / "js.log");
  ASSERT_EQ(js.exit.code, 0) << js.output;
  auto series = boost::json::parse(js.output).as_object();
  EXPECT_FALSE(series.at("server").as_array().empty());
  EXPECT_FALSE(series.at("client").as_array().empty());
  auto missing = run_inferbench({"show", run.name, "--db", db_path, "--timeslices", "999999"},
                                dir.path() / "m.log");
  EXPECT_EQ(missing.exit.code, 2);
  EXPECT_NE(missing.output.find("no point 999999"), std::string::npos) << missing.output;
  // The slower decode shows in the numbers: a real measurement, not a copy.
  double fast = 0, slow = 0;
  for (const auto& p : *points) {
    if (p.concurrency != 1) continue;
    (p.fingerprint == (*configs)[0].fingerprint ? fast : slow) = p.headline.get("median_tpot_ms");
  }
  EXPECT_LT(fast, slow);
  // --json: the outcome on stdout.
  EXPECT_NE(r.output.find("\"status\":\"ok\""), std::string::npos);
  // No server is left behind.
  EXPECT_TRUE(pids_with(sweep_own_model()).empty());
}

TEST(Sweep, SecondSweepWithReuseRunsNothing) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe());
  auto first = run_inferbench(sweep_args(dir, recipe), dir.path() / "first.log");
  ASSERT_EQ(first.exit.code, 0) << first.output;
  auto second = run_inferbench(sweep_args(dir, recipe, {"--reuse"}), dir.path() / "second.log");
  ASSERT_EQ(second.exit.code, 0) << second.output;
  EXPECT_NE(second.output.find("points: 6 reused\n"), std::string::npos) << second.output;

  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto runs = db.list_runs();
  ASSERT_EQ(runs->size(), 2u);
  const auto& newest = runs->front();
  EXPECT_EQ(newest.points.reused, 6);
  EXPECT_EQ(newest.points.ok, 0);
  auto configs = db.server_configs(newest.run.id);
  for (const auto& c : *configs)
    EXPECT_EQ(c.status, store::ConfigStatus::kSkipped);  // never launched
  auto reused_points = db.points(newest.run.id);
  ASSERT_TRUE(reused_points.ok());
  for (const auto& p : *reused_points) {
    ASSERT_TRUE(p.reused_from_run.has_value());
    EXPECT_EQ(*p.reused_from_run, runs->back().run.id);
  }
  // A changed server argument is a different configuration: nothing to reuse.
  auto third = run_inferbench(
      sweep_args(dir, recipe,
                 {"--reuse", "--server-arg=--prefill-tok-s=500000", "--concurrency", "1"}),
      dir.path() / "third.log");
  ASSERT_EQ(third.exit.code, 0) << third.output;
  EXPECT_NE(third.output.find("points: 2 ok\n"), std::string::npos) << third.output;
}

TEST(Sweep, ServerKilledMidRunFailsItsPointsWithTheReasonAndOthersGoOn) {
  TempDir dir;
  // Long points for the first key so the kill lands while it is being measured.
  std::string text = two_config_recipe("\"20\"");
  fs::path recipe = write_sweep_recipe(dir, text);
  BackgroundSweep sweep(dir, recipe, {"--min-prompts", "40"});
  // The fast key's server: kill it once its first point is stored.
  fs::path runs = dir.path() / "runs";
  ASSERT_TRUE(sweep.wait_for_result(runs, "conc_1.json")) << file_tail(sweep.log);
  auto servers = pids_with("--decode-base-ms 20");
  ASSERT_EQ(servers.size(), 1u);
  ::kill(servers[0], SIGKILL);
  ASSERT_TRUE(sweep.wait_exit(std::chrono::seconds(120)));
  EXPECT_EQ(sweep.exit_code(), 1) << file_tail(sweep.log);

  store::Store db = open_db(runs / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.run.status, store::RunStatus::kFailed);
  auto stored = db.points(run.run.id);
  ASSERT_TRUE(stored.ok());
  const auto& points = *stored;
  ASSERT_EQ(points.size(), 6u);
  int failed_with_reason = 0;
  int ok = 0;
  for (const auto& p : points) {
    if (p.status == metrics::PointStatus::kOk) ++ok;
    if (p.status == metrics::PointStatus::kFailed &&
        p.error.find("server exited (signal 9") != std::string::npos) {
      ++failed_with_reason;
    }
  }
  EXPECT_GE(failed_with_reason, 1);
  EXPECT_EQ(ok + failed_with_reason, 6);
  EXPECT_GE(ok, 4);  // the first point of the killed server and all of the other key
  auto failures_or = db.failures(run.run.id);
  ASSERT_TRUE(failures_or.ok());
  const auto& failures = *failures_or;
  ASSERT_FALSE(failures.empty());
  bool server_exit = false;
  for (const auto& f : failures) server_exit |= f.kind == "server-exit";
  EXPECT_TRUE(server_exit);
}

TEST(Sweep, SigkilledSweepResumesWithEveryPointExactlyOnce) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe());
  fs::path runs = dir.path() / "runs";
  BackgroundSweep sweep(dir, recipe, {"--min-prompts", "24"});
  ASSERT_TRUE(sweep.wait_for_result(runs, "conc_2.json")) << file_tail(sweep.log);
  // Stopped (not ended) while the checks below run: alive to the kernel, so its run stays
  // "running", however long the checks take on a loaded machine; SIGKILL ends it stopped.
  ASSERT_EQ(::kill(sweep.child->pid(), SIGSTOP), 0);
  const std::string db_file = (runs / "inferbench.db").string();
  {
    // While it runs, its run cannot be resumed by another sweep.
    auto listed = run_inferbench({"runs", "--db", db_file, "--json"}, dir.path() / "alive.json");
    ASSERT_EQ(listed.exit.code, 0) << listed.output;
    auto v = boost::json::parse(listed.output);
    const auto& run = v.as_array().at(0).as_object();
    EXPECT_EQ(run.at("status").as_string(), "running");
    EXPECT_EQ(run.at("owner").at("state").as_string(), "alive");
    EXPECT_EQ(run.at("owner").at("pid").as_int64(), sweep.child->pid());
    auto second = run_inferbench(
        sweep_args(dir, recipe, {"--min-prompts", "24", "--resume", std::string(run.at("name").as_string())}),
        dir.path() / "second.log");
    EXPECT_EQ(second.exit.code, 2) << second.output;
    EXPECT_NE(second.output.find(fmt::format("still being measured by pid {}", sweep.child->pid())),
              std::string::npos)
        << second.output;
  }
  const pid_t owner = sweep.child->pid();
  ::kill(owner, SIGKILL);
  ASSERT_TRUE(sweep.wait_exit(std::chrono::seconds(60)));
  // Its server dies with it (PR_SET_PDEATHSIG): nothing is orphaned.
  EXPECT_TRUE(wait_for([&] { return pids_with(sweep_own_model()).empty(); }, std::chrono::seconds(10)));

  std::string name;
  int64_t before = 0;
  {
    store::Store db = open_db(runs / "inferbench.db");
    auto run = db.list_runs()->front();
    // Killed, so never finished: its dead owner makes it read as interrupted.
    EXPECT_EQ(run.run.status, store::RunStatus::kInterrupted);
    EXPECT_EQ(run.run.owner_state, "gone");
    name = run.run.name;
    before = run.points.ok;
    EXPECT_GE(before, 1);  // conc 1 is committed before conc 2 starts
  }
  auto table = run_inferbench({"runs", "--db", db_file}, dir.path() / "runs.log");
  ASSERT_EQ(table.exit.code, 0) << table.output;
  EXPECT_NE(table.output.find(fmt::format("run 1 interrupted: its sweep (pid {} on ", owner)),
            std::string::npos)
      << table.output;
  EXPECT_NE(table.output.find(fmt::format("--resume {}`", name)), std::string::npos)
      << table.output;
  // The hint is the run's own command: following it measures what the run measured (issue 30).
  EXPECT_NE(table.output.find("--min-prompts 24 --resume"), std::string::npos) << table.output;
  // Other options are refused, naming the difference and the command that would continue it.
  auto other = run_inferbench(sweep_args(dir, recipe, {"--min-prompts", "12", "--resume", name}),
                              dir.path() / "other.log");
  EXPECT_EQ(other.exit.code, 2) << other.output;
  EXPECT_NE(other.output.find("min_prompts: 24 (the run) vs 12 (now)"), std::string::npos)
      << other.output;
  EXPECT_NE(other.output.find("Continue it with its own command"), std::string::npos)
      << other.output;
  auto json = run_inferbench({"runs", "--db", db_file, "--json"}, dir.path() / "runs.json");
  ASSERT_EQ(json.exit.code, 0) << json.output;
  {
    auto v = boost::json::parse(json.output);
    const auto& run = v.as_array().at(0).as_object();
    EXPECT_EQ(run.at("status").as_string(), "interrupted");
    EXPECT_EQ(run.at("owner").at("state").as_string(), "gone");
    EXPECT_EQ(run.at("owner").at("pid").as_int64(), owner);
  }
  auto show = run_inferbench({"show", name, "--db", db_file}, dir.path() / "show.log");
  ASSERT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find(fmt::format("run 1  {}  interrupted\n  its sweep (pid {}", name, owner)),
            std::string::npos)
      << show.output;
  auto resumed = run_inferbench(sweep_args(dir, recipe, {"--min-prompts", "24", "--resume", name}),
                                dir.path() / "resume.log");
  ASSERT_EQ(resumed.exit.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find(fmt::format("{} resumed", before)), std::string::npos)
      << resumed.output;

  store::Store db = open_db(runs / "inferbench.db");
  auto all = *db.list_runs();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].run.status, store::RunStatus::kOk);
  std::map<std::pair<std::string, int64_t>, int> ok_points;
  auto stored = db.points(all[0].run.id);
  ASSERT_TRUE(stored.ok());
  for (const auto& p : *stored) {
    if (p.status == metrics::PointStatus::kOk) ++ok_points[{p.fingerprint, p.concurrency}];
  }
  EXPECT_EQ(ok_points.size(), 6u);
  for (const auto& [k, n] : ok_points) EXPECT_EQ(n, 1) << k.first << " conc " << k.second;
  auto raw = store::Database::open(runs / "inferbench.db");
  ASSERT_TRUE(raw.ok());
  auto check = raw->prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok());
  ASSERT_TRUE(check->step().ok());
  EXPECT_EQ(check->column_text(0), "ok");

  // Resuming the complete run has nothing left to do: fine, and it says so.
  auto again = run_inferbench(sweep_args(dir, recipe, {"--min-prompts", "24", "--resume", name}),
                              dir.path() / "again.log");
  EXPECT_EQ(again.exit.code, 0) << again.output;
  EXPECT_NE(again.output.find("points: 6 resumed"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find(fmt::format("run {} was already complete: nothing left to measure",
                                          name)),
            std::string::npos)
      << again.output;
}

// Every terminating signal that can be caught stops a sweep as Ctrl-C does: finished points
// kept, servers stopped, the run marked interrupted, exit status 128 + the signal.
class SweepSignal : public ::testing::TestWithParam<int> {};

TEST_P(SweepSignal, StopsCleanlyMarksTheRunInterruptedAndExitsWith128PlusTheSignal) {
  const int sig = GetParam();
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe("\"10\""));
  fs::path runs = dir.path() / "runs";
  BackgroundSweep sweep(dir, recipe, {"--min-prompts", "40"});
  ASSERT_TRUE(sweep.wait_for_result(runs, "conc_1.json")) << file_tail(sweep.log);
  ::kill(sweep.child->pid(), sig);
  ASSERT_TRUE(sweep.wait_exit(std::chrono::seconds(30)));
  ASSERT_FALSE(sweep.child->poll()->signaled) << file_tail(sweep.log);
  EXPECT_EQ(sweep.exit_code(), 128 + sig) << file_tail(sweep.log);
  EXPECT_TRUE(pids_with(sweep_own_model()).empty());
  store::Store db = open_db(runs / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.run.status, store::RunStatus::kInterrupted);
  EXPECT_TRUE(run.run.owner_state.empty());  // stored so: the sweep itself finished the run
  EXPECT_GE(run.points.ok, 1);
  EXPECT_NE(read_file(sweep.log)->find("--resume"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(CaughtSignals, SweepSignal,
                         ::testing::Values(SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
                                           SIGXCPU),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(sigabbrev_np(p.param));
                         });

TEST(Sweep, ARunThatMeasuresNothingFails) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe());
  // evals-only: the recipe has no eval rows, so the plan has no points at all.
  auto r = run_inferbench(sweep_args(dir, recipe, {"--labels", "evals-only"}),
                          dir.path() / "sweep.log");
  // Found before anything starts: an input error (2), and no run is recorded.
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("select no points; nothing would be measured"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(": ok;"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "runs" / "inferbench.db"));
}

TEST(Sweep, InterruptKeepsFinishedPointsAndMarksTheRunInterrupted) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe("\"10\""));
  fs::path runs = dir.path() / "runs";
  BackgroundSweep sweep(dir, recipe, {"--min-prompts", "40"});
  ASSERT_TRUE(sweep.wait_for_result(runs, "conc_1.json")) << file_tail(sweep.log);
  ::kill(sweep.child->pid(), SIGINT);
  ASSERT_TRUE(sweep.wait_exit(std::chrono::seconds(30)));
  EXPECT_EQ(sweep.exit_code(), 130) << file_tail(sweep.log);
  EXPECT_TRUE(pids_with(sweep_own_model()).empty());
  store::Store db = open_db(runs / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.run.status, store::RunStatus::kInterrupted);
  EXPECT_GE(run.points.ok, 1);
  EXPECT_NE(read_file(sweep.log)->find("--resume"), std::string::npos);
}

TEST(Sweep, ServerThatCannotStartIsReportedWithItsLogAndFailFastSkipsTheRest) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe("\"-5\""));
  auto r = run_inferbench(sweep_args(dir, recipe, {"--fail-fast"}), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("server exited during startup"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("server.log (tail)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("skipped: fail-fast"), std::string::npos) << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.run.status, store::RunStatus::kFailed);
  auto failures_or = db.failures(run.run.id);
  ASSERT_TRUE(failures_or.ok());
  const auto& failures = *failures_or;
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].kind, "server-start");
  EXPECT_FALSE(failures[0].log_tail.empty());
}

TEST(Sweep, FailedExpectationMarksPointsInvalidWithEvidence) {
  TempDir dir;
  std::string expect =
      "  expect:\n"
      "    settings: { model: other-model }\n"
      "    log-absent: ['Uvicorn running']\n";
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe("\"2\"", expect));
  auto r =
      run_inferbench(sweep_args(dir, recipe, {"--keys", "sim-fast"}), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("expect failed: settings.model == other-model (sim-model"),
            std::string::npos)
      << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.points.invalid, 3);
  EXPECT_EQ(run.points.ok, 0);
}

TEST(Sweep, ExpectedServerMetricsThatAreMissingMakePointsInvalid) {
  TempDir dir;
  // serve-sim exports vLLM's names, so "vllm:" is there and "sglang:" is not.
  fs::path recipe = write_sweep_recipe(
      dir, two_config_recipe("\"2\"", "  expect:\n    server-metrics: ['vllm:', 'sglang:']\n"));
  auto r =
      run_inferbench(sweep_args(dir, recipe, {"--keys", "sim-fast"}), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("expect server-metrics: no series starting with \"sglang:\""),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("starting with \"vllm:\""), std::string::npos) << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  EXPECT_EQ(db.list_runs()->front().points.invalid, 3);
}

TEST(Sweep, InvalidExpectBlockIsRejectedBeforeAnythingStarts) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, two_config_recipe("\"2\"", "  expect:\n    setings: {}\n"));
  auto r = run_inferbench(sweep_args(dir, recipe), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("recipe.yaml:1: sim-fast.expect.setings: unknown field"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "runs"));
}

std::string one_k_key(const std::string& name, const std::string& decode_ms,
                      const std::string& concs) {
  return name +
         ":\n"
         "  image: inferbench/serve-sim\n"
         "  model: sim-model\n"
         "  model-prefix: sim\n"
         "  precision: bf16\n"
         "  framework: serve-sim\n"
         "  runner: local\n"
         "  multinode: false\n"
         "  serve:\n"
         "    command: [inferbench, serve-sim, --timing-model, simple, --decode-base-ms, \"" +
         decode_ms +
         "\",\n"
         "              --prefill-tok-s, \"10000000\", --model, \"{served-model}\", --host, "
         "\"{host}\", --port, \"{port}\"]\n"
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 1024\n"
         "      osl: 1024\n"
         "      search-space:\n"
         "      - { tp: 1, conc-list: [" +
         concs + "] }\n";
}

TEST(Sweep, CanaryRunsFirstAndItsFailureStopsEverything) {
  TempDir dir;
  // The failing key comes first, so its conc-1 row is the canary.
  fs::path recipe =
      write_sweep_recipe(dir, one_k_key("broken", "-1", "1, 2") + one_k_key("fine", "0.01", "1, 2"));
  auto r = run_inferbench(sweep_args(dir, recipe, {"--labels", "full-sweep-fail-fast"}),
                          dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("canary: broken at conc 1 runs first"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("skipped: the canary failed"), std::string::npos) << r.output;
  // Only the canary's server was ever started.
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.run.labels, (std::vector<std::string>{"full-sweep-fail-fast"}));
  auto configs = db.server_configs(run.run.id);
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 1u);
  EXPECT_EQ((*configs)[0].config_key, "broken");
}

TEST(Sweep, CanaryPointIsMeasuredOnceEvenWithAConcurrencyOverride) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, one_k_key("fine", "0.01", "1, 2, 4"));
  auto r = run_inferbench(
      sweep_args(dir, recipe, {"--labels", "full-sweep-enabled", "--concurrency", "2,4"}),
      dir.path() / "sweep.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  auto stored = db.points(run.run.id);
  ASSERT_TRUE(stored.ok());
  std::vector<int64_t> concs;
  for (const auto& p : *stored) concs.push_back(p.concurrency);
  EXPECT_EQ(concs, (std::vector<int64_t>{2, 4}));  // canary at 2, then the family's 4
}

TEST(Sweep, PointTimeoutCutsAPointAndKeepsWhatItMeasured) {
  TempDir dir;
  // 50 ms per token × 1,024 tokens: each request takes about a minute.
  fs::path recipe = write_sweep_recipe(dir, one_k_key("slow", "50", "1"));
  auto r = run_inferbench(
      sweep_args(dir, recipe,
                 {"--point-timeout", "1", "--min-prompts", "1", "--warmups-per-conc", "0"}),
      dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("point timeout after 1 s (partial result kept)"), std::string::npos)
      << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  auto stored = db.points(run.run.id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].status, metrics::PointStatus::kFailed);
  EXPECT_TRUE((*stored)[0].result.at("timed_out").as_bool());
  EXPECT_TRUE((*stored)[0].result.at("partial").as_bool());
}

TEST(Sweep, SweepEnabledLabelMeasuresOnlyTheLowestConcurrency) {
  TempDir dir;
  fs::path recipe = write_sweep_recipe(dir, one_k_key("fine", "0.01", "1, 2, 4"));
  auto r = run_inferbench(sweep_args(dir, recipe, {"--labels", "sweep-enabled"}),
                          dir.path() / "sweep.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  auto stored = db.points(run.run.id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].concurrency, 1);
  EXPECT_EQ((*stored)[0].status, metrics::PointStatus::kOk);
  // The row's 1k/1k workload (lengths drawn in [0.8, 1] x OSL, as InferenceX's random ratio).
  const double mean_out =
      static_cast<double>((*stored)[0].result.at("total_output_tokens").as_int64()) /
      (*stored)[0].headline.get("completed");
  EXPECT_GE(mean_out, 0.8 * 1024);
  EXPECT_LE(mean_out, 1024);
}

TEST(Sweep, RowsTheSweepCannotRunYetFailBeforeAnyServerStarts) {
  TempDir dir;
  std::string text = two_config_recipe();
  // The second key becomes an agentic one.
  auto pos = text.find("sim-slow:");
  std::string slow = text.substr(pos);
  slow.replace(slow.find("    fixed-seq-len:"), std::string::npos,
               "    agentic-coding:\n"
               "    - dram-utilization: 0.5\n"
               "      search-space:\n"
               "      - { tp: 1, kv-offloading: none, conc-list: [1, 2] }\n");
  slow.replace(slow.find("runner: local"), 13,
               "runner: cluster:local");  // agentic runners are clusters
  fs::path recipe = write_sweep_recipe(dir, text.substr(0, pos) + slow);
  auto r =
      run_inferbench(sweep_args(dir, recipe, {"--keys", "sim-slow"}), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("agentic-coding rows need traces to replay"), std::string::npos)
      << r.output;
  store::Store db = open_db(dir.path() / "runs" / "inferbench.db");
  auto run = db.list_runs()->front();
  EXPECT_EQ(run.points.failed, 2);
  auto configs = db.server_configs(run.run.id);
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 1u);
  EXPECT_EQ((*configs)[0].status, store::ConfigStatus::kFailed);
  EXPECT_TRUE((*configs)[0].log_path.empty());  // never launched
}

// A serve command that patches the engine's installed files before starting it (gate check 7):
// the local launcher's tracer sees the write, the stored server configuration keeps it and `show`
// names it.
TEST(Sweep, AServeScriptsWriteIntoSitePackagesIsStoredAndShown) {
  TempDir dir;
  const fs::path engine = fs::canonical(dir.path()) / "venv/lib/site-packages/eng";
  fs::create_directories(engine);
  std::string text = two_config_recipe();
  text = text.substr(0, text.find("sim-slow:"));
  const std::string script = "echo patched >> " + (engine / "m.py").string() +
                             " && exec \"$0\" serve-sim --timing-model simple --decode-base-ms 2"
                             " --model \"$1\" --host \"$2\" --port \"$3\"";
  const size_t from = text.find("    command: [inferbench");
  const size_t to = text.find("    env:");
  text.replace(from, to - from,
               fmt::format("    command: [sh, -c, '{}', '{}', \"{{served-model}}\", \"{{host}}\","
                           " \"{{port}}\"]\n",
                           script, INFERBENCH_BIN));
  text.replace(text.find("[1, 2, 4]"), 9, "[1]");
  const fs::path recipe = write_sweep_recipe(dir, text);
  auto r = run_inferbench(sweep_args(dir, recipe), dir.path() / "sweep.log");
  ASSERT_EQ(r.exit.code, 0) << r.output << "\n" << text;
  const fs::path db_path = dir.path() / "runs" / "inferbench.db";
  store::Store db = open_db(db_path);
  auto run = db.list_runs()->front();
  auto configs = db.server_configs(run.run.id);
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 1u);
  const auto& writes = (*configs)[0].env_reads.at("engine_writes").as_array();
  ASSERT_EQ(writes.size(), 1u) << boost::json::serialize((*configs)[0].env_reads);
  EXPECT_EQ(writes[0].at("path").as_string(), (engine / "m.py").string());
  auto show = run_inferbench({"show", std::to_string(run.run.id), "--db", db_path.string()},
                             dir.path() / "show.log");
  ASSERT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find("ENGINE FILES WRITTEN AT RUN TIME"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("sim-fast: " + (engine / "m.py").string() + " (pid "),
            std::string::npos)
      << show.output;
}

TEST(Sweep, BundledRecipeRunsByDefault) {
  TempDir dir;
  auto r = run_inferbench({"sweep", "--runs-dir", (dir.path() / "runs").string(), "--concurrency",
                           "2", "--min-prompts", "4", "--prompts-per-conc", "1"},
                          dir.path() / "sweep.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("llama8b-bf16-h200-servesim"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("p50 TPOT ms"), std::string::npos) << r.output;
  // Its serve-sim runs with --power-model: the point has a valid energy figure from the
  // dcgm-exporter series in the server metrics, within the H200's idle..TDP range.
  auto db = store::Store::open_existing(dir.path() / "runs" / "inferbench.db");
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto listed = db->list_runs();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  auto points = db->points(listed->front().run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 1u);
  const auto& e = (*points)[0].result.at("energy").as_object();
  ASSERT_TRUE(e.at("power_valid").as_bool()) << boost::json::serialize(e);
  EXPECT_EQ(e.at("tool").as_string(), "dcgm-exporter (server metrics)");
  EXPECT_EQ(e.at("power_column").as_string(), "DCGM_FI_DEV_POWER_USAGE");
  const double watts = e.at("avg_power_w").to_number<double>();
  EXPECT_GT(watts, 0.15 * 700 - 1e-6);
  EXPECT_LT(watts, 700 + 1e-6);
  EXPECT_GT(e.at("joules_per_output_token").to_number<double>(), 0);
  // The modelled energy counter is exported too, so the cross-check runs (a point this short,
  // sampled once a second, may well miss it: that is what the check is for).
  EXPECT_TRUE(e.at("accumulator_check").at("available").as_bool()) << boost::json::serialize(e);
  EXPECT_GT(e.at("accumulator_check").at("accumulator_delta_j").to_number<double>(), 0);
  auto show = run_inferbench({"show", std::to_string(listed->front().run.id), "--db",
                              (dir.path() / "runs" / "inferbench.db").string()},
                             dir.path() / "show.log");
  ASSERT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find("J/OUT TOK"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find(" valid"), std::string::npos) << show.output;
}

}  // namespace
}  // namespace ib::e2e
