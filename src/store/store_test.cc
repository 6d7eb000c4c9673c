#include "store/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/process.h"
#include "core/temp_dir.h"

namespace ib::store {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    file_ = dir_ / "runs" / "inferbench.db";
  }

  Store open() {
    auto s = Store::open(file_);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) std::abort();
    return std::move(*s);
  }

  TempDir tmp_{"ib-store-test"};
  fs::path dir_, file_;
};

template <class T>
T must(Expected<T> e) {
  EXPECT_TRUE(e.ok()) << e.error().message;
  if (!e) std::abort();
  return std::move(*e);
}

void must(const Status& s) {
  ASSERT_TRUE(s.ok()) << s.error().message;
}

RunRecord make_run(const std::string& name, const std::string& tool_version = "0.1.0",
                   int64_t started_at = 1000) {
  RunRecord r;
  r.name = name;
  r.tool_version = tool_version;
  r.git_revision = "abc123";
  r.host = "node-1";
  r.command_line = "inferbench sweep x.yaml";
  r.labels = {"nightly", "h200"};
  r.options = {{"resume", false}};
  r.started_at = started_at;
  return r;
}

PointRecord make_point(int64_t run_id, const std::string& fp, int64_t conc,
                       const std::string& status = "ok", const std::string& workload = "1k1k") {
  PointRecord p;
  p.run_id = run_id;
  p.fingerprint = fp;
  p.workload_key = workload;
  p.concurrency = conc;
  p.status = metrics::parse_status(status).value_or(
      metrics::PointStatus::kSkipped);  // unknown: a status never stored
  p.result = {{"concurrency", conc}, {"request_throughput", 1.5 * static_cast<double>(conc)}};
  set_headline_from_result(p);
  return p;
}

std::string pragma_text(const fs::path& file, const std::string& sql) {
  auto db = Database::open(file);
  EXPECT_TRUE(db.ok()) << db.error().message;
  if (!db) return {};
  auto stmt = db->prepare(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.error().message;
  if (!stmt) return {};
  auto row = stmt->step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->column_text(0);
}

// --- migrations ---------------------------------------------------------------------------------

// The headline columns of `points` are the one metric table's keys (metrics/keys.h), in order:
// a key added there without a migration fails here.
TEST_F(StoreTest, PointColumnsAreTheMetricTable) {
  auto store = open();
  auto db = Database::open(file_);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto stmt = db->prepare("SELECT name FROM pragma_table_info('points') ORDER BY cid");
  ASSERT_TRUE(stmt.ok()) << stmt.error().message;
  std::vector<std::string> columns;
  for (auto row = stmt->step(); row.ok() && *row; row = stmt->step()) {
    columns.push_back(stmt->column_text(0));
  }
  // The first schema's 14 in order, then those that migrations added at the end.
  const auto first = std::find(columns.begin(), columns.end(), "request_throughput");
  ASSERT_NE(first, columns.end());
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    EXPECT_NE(std::find(columns.begin(), columns.end(), metrics::kHeadlineMetrics[i].key),
              columns.end())
        << metrics::kHeadlineMetrics[i].key;
  }
  EXPECT_EQ(columns.back(), "mean_tokens_per_event");
  EXPECT_NE(std::find(columns.begin(), columns.end(), "validity"), columns.end());
}

TEST_F(StoreTest, ValidityIsStoredWithThePoint) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  auto p = make_point(run, "fp", 1, "invalid");
  p.validity.add(metrics::InvalidKind::kExpectUnobservable, "expect unverified (endpoint launcher)",
                 "--no-expect");
  must(store.add_point(p));
  auto got = must(store.points(run));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, metrics::PointStatus::kInvalid);
  ASSERT_EQ(got[0].validity.reasons.size(), 1u);
  EXPECT_EQ(got[0].validity.reasons[0].kind, metrics::InvalidKind::kExpectUnobservable);
  EXPECT_EQ(got[0].validity.reasons[0].advice, "--no-expect");
  EXPECT_EQ(to_json(got[0]).at("validity").as_array().size(), 1u);
}

TEST_F(StoreTest, TimeslicesAreStoredPerPointAndSource) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  const int64_t pt = must(store.add_point(make_point(run, "fp", 8, "ok")));
  TimesliceRecord a;
  a.source = "server";
  a.slice = 0;
  a.start_s = 0;
  a.end_s = 1;
  a.running = 8;
  a.kv_usage = 0.42;
  a.data = {{"running", 8}, {"metric_names", boost::json::array{"vllm:num_requests_running"}}};
  TimesliceRecord b = a;
  b.slice = 1;
  b.start_s = 1;
  b.end_s = 2;
  b.prefix_hit_rate = 0.9;
  TimesliceRecord c;
  c.source = "client";
  c.slice = 0;
  c.end_s = 1;
  c.started = 8;
  c.finished = 2;
  c.output_tokens = 640;
  c.mean_ttft_ms = 12.5;
  must(store.add_timeslices(pt, {c, b, a}));
  auto all = must(store.timeslices(pt));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].source, "server");  // server first, by slice
  EXPECT_EQ(all[0].slice, 0);
  EXPECT_DOUBLE_EQ(*all[0].kv_usage, 0.42);
  EXPECT_FALSE(all[0].prefix_hit_rate.has_value());  // NULL stays unset
  EXPECT_DOUBLE_EQ(*all[1].prefix_hit_rate, 0.9);
  EXPECT_EQ(all[2].source, "client");
  EXPECT_EQ(*all[2].output_tokens, 640);
  EXPECT_FALSE(all[2].running.has_value());
  EXPECT_EQ(all[0].data.at("metric_names").as_array().size(), 1u);
  EXPECT_EQ(must(store.timeslices(pt, "client")).size(), 1u);
  TimesliceRecord bad = a;
  bad.source = "gpu";
  EXPECT_FALSE(store.add_timeslices(pt, {bad}).ok());
}

TEST_F(StoreTest, FreshDatabaseGetsTheLatestSchemaVersion) {
  auto store = open();
  EXPECT_TRUE(fs::exists(file_));  // parent folder created too
  EXPECT_EQ(pragma_text(file_, "PRAGMA user_version"), std::to_string(kMigrations.size()));
  EXPECT_EQ(pragma_text(file_,
                        "SELECT group_concat(name) FROM (SELECT name FROM sqlite_schema "
                        "WHERE type = 'table' ORDER BY name)"),
            "failures,point_files,points,runs,server_configs,timeslices");
}

TEST_F(StoreTest, ReopeningIsIdempotentAndKeepsData) {
  int64_t id = 0;
  {
    auto store = open();
    id = must(store.begin_run(make_run("r1")));
  }
  for (int i = 0; i < 3; ++i) {
    auto store = open();
    auto runs = must(store.list_runs());
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].run.id, id);
  }
  EXPECT_EQ(pragma_text(file_, "PRAGMA user_version"), std::to_string(kMigrations.size()));
}

TEST_F(StoreTest, DatabaseFromANewerToolIsRefusedClearly) {
  { auto store = open(); }
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("PRAGMA user_version = 99").ok());
  }
  auto store = Store::open(file_);
  ASSERT_FALSE(store.ok());
  const std::string& m = store.error().message;
  EXPECT_NE(m.find("inferbench.db"), std::string::npos) << m;
  EXPECT_NE(m.find("schema version 99 is newer"), std::string::npos) << m;
  EXPECT_NE(m.find("(" + std::to_string(kMigrations.size()) + ")"), std::string::npos) << m;
}

// A status this version does not know (a newer tool's, or an edited file) is an error naming the
// row, never read as some other status.
TEST_F(StoreTest, UnknownRunOrConfigStatusIsAnErrorNamingTheRow) {
  int64_t id = 0;
  {
    auto store = open();
    id = must(store.begin_run(make_run("r1")));
    ServerConfigRecord c;
    c.run_id = id;
    c.config_key = "k";
    must(store.add_server_config(c));
  }
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("UPDATE server_configs SET status = 'paused'").ok());
  }
  auto store = open();
  auto configs = store.server_configs(id);
  ASSERT_FALSE(configs.ok());
  EXPECT_NE(configs.error().message.find("server_configs row 1: unknown status 'paused'"),
            std::string::npos)
      << configs.error().message;
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("UPDATE runs SET status = 'done'").ok());
  }
  auto run = store.run(id);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("unknown run status 'done'"), std::string::npos)
      << run.error().message;
}

TEST_F(StoreTest, OlderDatabaseMigratesOneScriptAtATime) {
  const std::array<std::string_view, 2> scripts = {
      "CREATE TABLE t (a INTEGER NOT NULL);",
      "ALTER TABLE t ADD COLUMN b TEXT NOT NULL DEFAULT 'two'; CREATE INDEX t_a ON t(a);"};
  auto db = Database::open(file_);
  ASSERT_TRUE(db.ok());
  must(migrate(*db, std::span(scripts).first(1)));  // a "version 1" database
  EXPECT_EQ(*db->user_version(), 1);
  ASSERT_TRUE(db->exec("INSERT INTO t (a) VALUES (7)").ok());
  must(migrate(*db, scripts));
  EXPECT_EQ(*db->user_version(), 2);
  auto sel = db->prepare("SELECT a, b FROM t");
  ASSERT_TRUE(sel.ok());
  ASSERT_TRUE(*sel->step());
  EXPECT_EQ(sel->column_int(0), 7);
  EXPECT_EQ(sel->column_text(1), "two");
  must(migrate(*db, scripts));  // nothing left to do
  EXPECT_EQ(*db->user_version(), 2);
}

TEST_F(StoreTest, FailedMigrationIsRolledBackAndNamesTheVersion) {
  const std::array<std::string_view, 2> scripts = {
      "CREATE TABLE t (a INTEGER);", "CREATE TABLE u (b INTEGER); INSERT INTO nowhere VALUES (1);"};
  auto db = Database::open(file_);
  ASSERT_TRUE(db.ok());
  auto st = migrate(*db, scripts);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("schema version 2"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("no such table: nowhere"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(*db->user_version(), 1);  // version 1 was committed, version 2 not at all
  auto u = db->prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'u'");
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(*u->step());
  EXPECT_EQ(u->column_int(0), 0);
}

TEST_F(StoreTest, ConcurrentFirstOpensMigrateOnce) {
  std::vector<std::thread> threads;
  std::array<std::string, 4> errors;
  for (size_t i = 0; i < errors.size(); ++i) {
    threads.emplace_back([&, i] {
      auto s = Store::open(file_);
      if (!s) {
        errors[i] = s.error().message;
        return;
      }
      auto id = s->begin_run(make_run("run-" + std::to_string(i)));
      if (!id) errors[i] = id.error().message;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  auto store = open();
  EXPECT_EQ(must(store.list_runs()).size(), 4u);
}

TEST_F(StoreTest, OpenExistingRefusesAMissingFile) {
  auto s = Store::open_existing(file_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("inferbench.db"), std::string::npos);
  EXPECT_FALSE(fs::exists(file_));
}

// --- round trips --------------------------------------------------------------------------------

TEST_F(StoreTest, RunRoundTripsWithLabelsOptionsAndStatusChanges) {
  auto store = open();
  RunRecord r = make_run("20261130-104500");
  r.labels = {"a b", "\xC3\xA9t\xC3\xA9", ""};
  r.options = {{"reuse", true}, {"keys", {"x*", "y"}}, {"nested", {{"n", 1.25}}}};
  r.status = RunStatus::kOk;  // ignored: a new run is running
  const int64_t id = must(store.begin_run(r));
  auto got = must(store.run(id));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->name, r.name);
  EXPECT_EQ(got->tool_version, r.tool_version);
  EXPECT_EQ(got->git_revision, r.git_revision);
  EXPECT_EQ(got->host, r.host);
  EXPECT_EQ(got->command_line, r.command_line);
  EXPECT_EQ(got->labels, r.labels);
  EXPECT_EQ(got->options, r.options);
  EXPECT_EQ(got->started_at, 1000);
  EXPECT_EQ(got->ended_at, 0);
  EXPECT_EQ(got->status, RunStatus::kRunning);

  must(store.finish_run(id, RunStatus::kInterrupted));
  got = must(store.run(id));
  EXPECT_EQ(got->status, RunStatus::kInterrupted);
  EXPECT_GT(got->ended_at, 1000);
  must(store.set_run_status(id, RunStatus::kRunning));  // --resume
  got = must(store.run(id));
  EXPECT_EQ(got->status, RunStatus::kRunning);
  EXPECT_EQ(got->ended_at, 0);
  must(store.finish_run(id, RunStatus::kOk));
  EXPECT_EQ(must(store.run(id))->status, RunStatus::kOk);

  // Statuses are enums (no misspelt one can be stored); their names are what the store holds.
  EXPECT_EQ(parse_run_status("done"), std::nullopt);
  EXPECT_EQ(parse_run_status(status_name(RunStatus::kInterrupted)), RunStatus::kInterrupted);
  EXPECT_EQ(parse_config_status(status_name(ConfigStatus::kSkipped)), ConfigStatus::kSkipped);
  EXPECT_FALSE(store.finish_run(id, RunStatus::kRunning).ok());
  auto missing = store.finish_run(id + 100, RunStatus::kOk);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no run with id"), std::string::npos);

  RunRecord unstamped = make_run("later", "0.1.0", 0);
  auto later = must(store.run(must(store.begin_run(unstamped))));
  EXPECT_GT(later->started_at, 1700000000);  // now, not 0
}

TEST_F(StoreTest, RunNamesAreRequiredAndUnique) {
  auto store = open();
  const int64_t id = must(store.begin_run(make_run("n1")));
  auto dup = store.begin_run(make_run("n1"));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("'n1' already exists (run " + std::to_string(id) + ")"),
            std::string::npos)
      << dup.error().message;
  EXPECT_FALSE(store.begin_run(make_run("")).ok());
  EXPECT_EQ(must(store.list_runs()).size(), 1u);
}

TEST_F(StoreTest, ServerConfigRoundTripsAndUpdates) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  ServerConfigRecord c;
  c.run_id = run;
  c.config_key = "llama70b-fp8-h200-vllm";
  c.fingerprint = std::string(64, 'f');
  c.launcher = "local";
  c.row = {{"tp", 8}, {"conc", {4, 8}}, {"image", "vllm/vllm-openai:v0.11"}};
  const int64_t id = must(store.add_server_config(c));
  auto all = must(store.server_configs(run));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, id);
  EXPECT_EQ(all[0].run_id, run);
  EXPECT_EQ(all[0].config_key, c.config_key);
  EXPECT_EQ(all[0].fingerprint, c.fingerprint);
  EXPECT_EQ(all[0].launcher, "local");
  EXPECT_EQ(all[0].row, c.row);
  EXPECT_TRUE(all[0].effective_config.empty());
  EXPECT_EQ(all[0].status, ConfigStatus::kPending);

  c = all[0];
  c.effective_config = {{"max_num_seqs", 256}, {"kv_cache_dtype", "fp8"}};
  c.env_reads = {{"VLLM_USE_V1", "1"}};
  c.log_path = "/tmp/x/server.log";
  c.status = ConfigStatus::kFailed;
  c.error = "exited with code 1";
  c.config_key = "ignored";  // not mutable
  must(store.update_server_config(c));
  auto got = must(store.server_configs(run))[0];
  EXPECT_EQ(got.effective_config, c.effective_config);
  EXPECT_EQ(got.env_reads, c.env_reads);
  EXPECT_EQ(got.log_path, c.log_path);
  EXPECT_EQ(got.status, ConfigStatus::kFailed);
  EXPECT_EQ(got.error, c.error);
  EXPECT_EQ(got.config_key, "llama70b-fp8-h200-vllm");

  c.status = ConfigStatus::kOk;
  c.id = 999;
  EXPECT_FALSE(store.update_server_config(c).ok());
  ServerConfigRecord orphan = c;
  orphan.run_id = 12345;  // foreign key
  auto fk = store.add_server_config(orphan);
  ASSERT_FALSE(fk.ok());
  EXPECT_NE(fk.error().message.find("FOREIGN KEY"), std::string::npos) << fk.error().message;
}

TEST_F(StoreTest, PointRoundTripsEveryColumnAndTheFullResult) {
  auto store = open();
  const int64_t src = must(store.begin_run(make_run("src")));
  const int64_t run = must(store.begin_run(make_run("r")));
  ServerConfigRecord c;
  c.run_id = run;
  c.config_key = "k";
  c.fingerprint = "fp";
  const int64_t cfg = must(store.add_server_config(c));

  PointRecord p;
  p.run_id = run;
  p.server_config_id = cfg;
  p.fingerprint = "fp";
  p.workload_key = "isl=1024,osl=1024,seed=0";
  p.concurrency = 64;
  p.status = metrics::PointStatus::kReused;
  p.reused_from_run = src;
  p.result = {{"request_throughput", 12.345678901234567},
              {"output_throughput", 9876.5},
              {"total_token_throughput", 20000.25},
              {"median_ttft_ms", 123.4},
              {"p99_ttft_ms", 456.7},
              {"median_tpot_ms", 20.0},
              {"p99_tpot_ms", 33.3},
              {"median_itl_ms", 19.5},
              {"median_e2el_ms", 20000},
              {"median_intvty", 50.0},
              {"tput_per_gpu", 2500.03125},
              {"output_tput_per_gpu", 1234.5},
              {"completed", 640},
              {"failed", 2},
              {"big", 9007199254740993},
              {"tiny", 1e-300},
              {"text", "tab\there \"quoted\" \xE2\x9C\x93"},
              {"records", {1, 2, {{"x", nullptr}}}}};
  set_headline_from_result(p);
  p.artifacts_dir = "runs/r/k/c64";
  p.created_at = 1234;
  const int64_t id = must(store.add_point(p));

  auto all = must(store.points(run));
  ASSERT_EQ(all.size(), 1u);
  const PointRecord& g = all[0];
  EXPECT_EQ(g.id, id);
  EXPECT_EQ(g.run_id, run);
  EXPECT_EQ(g.server_config_id, cfg);
  EXPECT_EQ(g.fingerprint, "fp");
  EXPECT_EQ(g.workload_key, p.workload_key);
  EXPECT_EQ(g.concurrency, 64);
  EXPECT_EQ(g.status, metrics::PointStatus::kReused);
  EXPECT_EQ(g.reused_from_run, src);
  EXPECT_EQ(g.headline.get("request_throughput"), 12.345678901234567);
  EXPECT_EQ(g.headline.get("output_throughput"), 9876.5);
  EXPECT_EQ(g.headline.get("total_token_throughput"), 20000.25);
  EXPECT_EQ(g.headline.get("median_ttft_ms"), 123.4);
  EXPECT_EQ(g.headline.get("p99_ttft_ms"), 456.7);
  EXPECT_EQ(g.headline.get("median_tpot_ms"), 20.0);
  EXPECT_EQ(g.headline.get("p99_tpot_ms"), 33.3);
  EXPECT_EQ(g.headline.get("median_itl_ms"), 19.5);
  EXPECT_EQ(g.headline.get("median_e2el_ms"), 20000.0);  // an integer in the result JSON
  EXPECT_EQ(g.headline.get("median_intvty"), 50.0);
  EXPECT_EQ(g.headline.get("tput_per_gpu"), 2500.03125);
  EXPECT_EQ(g.headline.get("output_tput_per_gpu"), 1234.5);
  EXPECT_EQ(g.headline.get("completed"), 640);
  EXPECT_EQ(g.headline.get("failed"), 2);
  EXPECT_EQ(g.result, p.result);  // exact, doubles and 64-bit integers included
  EXPECT_EQ(g.artifacts_dir, p.artifacts_dir);
  EXPECT_EQ(g.created_at, 1234);

  // A failed point: no metrics (NULL columns, NaN fields), no config, no source run.
  PointRecord f;
  f.run_id = run;
  f.fingerprint = "fp2";
  f.workload_key.assign(1, 'w');  // not = "w": GCC 12 -Wrestrict false positive at -O3 (bug 105329)
  f.concurrency = 4;
  f.status = metrics::PointStatus::kFailed;
  f.error = "server exited during warmup";
  must(store.add_point(f));
  auto both = must(store.points(run));
  ASSERT_EQ(both.size(), 2u);
  const PointRecord& gf = both[1];
  EXPECT_EQ(gf.server_config_id, 0);
  EXPECT_EQ(gf.reused_from_run, std::nullopt);
  EXPECT_TRUE(std::isnan(gf.headline.get("request_throughput")));
  EXPECT_TRUE(std::isnan(gf.headline.get("tput_per_gpu")));
  EXPECT_EQ(gf.error, f.error);
  EXPECT_TRUE(gf.result.empty());
  EXPECT_GT(gf.created_at, 1700000000);
}

TEST_F(StoreTest, PointValidationNamesTheProblem) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  auto p = make_point(run, "fp", 1, "skipped");
  auto bad = store.add_point(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.error().message.find("point status 'skipped' is not one of ok|failed|reused|invalid"),
      std::string::npos)
      << bad.error().message;
  p.status = metrics::PointStatus::kReused;
  bad = store.add_point(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("reused_from_run"), std::string::npos);
  p = make_point(run + 7, "fp", 1);
  EXPECT_FALSE(store.add_point(p).ok());  // no such run (foreign key)
  EXPECT_TRUE(must(store.points(run)).empty());
}

TEST_F(StoreTest, FailureRoundTripsWithAndWithoutOptionalIds) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  ServerConfigRecord c;
  c.run_id = run;
  c.config_key = "k";
  c.fingerprint = "fp";
  const int64_t cfg = must(store.add_server_config(c));
  const int64_t pt = must(store.add_point(make_point(run, "fp", 8, "failed")));

  FailureRecord a;
  a.run_id = run;
  a.server_config_id = cfg;
  a.point_id = pt;
  a.kind = "point";
  a.message = "12 of 80 requests failed (connection reset)";
  a.log_tail = "line 1\nline 2\n";
  a.at = 4242;
  FailureRecord b;
  b.run_id = run;
  b.kind = "interrupted";
  b.message = "SIGINT";
  const int64_t ida = must(store.add_failure(a));
  const int64_t idb = must(store.add_failure(b));
  auto all = must(store.failures(run));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, ida);
  EXPECT_EQ(all[0].run_id, run);
  EXPECT_EQ(all[0].server_config_id, cfg);
  EXPECT_EQ(all[0].point_id, pt);
  EXPECT_EQ(all[0].kind, "point");
  EXPECT_EQ(all[0].message, a.message);
  EXPECT_EQ(all[0].log_tail, a.log_tail);
  EXPECT_EQ(all[0].at, 4242);
  EXPECT_EQ(all[1].id, idb);
  EXPECT_EQ(all[1].server_config_id, std::nullopt);
  EXPECT_EQ(all[1].point_id, std::nullopt);
  EXPECT_GT(all[1].at, 1700000000);
  FailureRecord no_kind;
  no_kind.run_id = run;
  EXPECT_FALSE(store.add_failure(no_kind).ok());
}

// --- listing ------------------------------------------------------------------------------------

TEST_F(StoreTest, ListRunsNewestFirstWithPointCountsAndLimit) {
  auto store = open();
  const int64_t r1 = must(store.begin_run(make_run("first")));
  const int64_t r2 = must(store.begin_run(make_run("second")));
  const int64_t r3 = must(store.begin_run(make_run("third")));
  must(store.add_point(make_point(r2, "a", 1, "ok")));
  must(store.add_point(make_point(r2, "a", 2, "ok")));
  must(store.add_point(make_point(r2, "a", 4, "failed")));
  auto reused = make_point(r2, "a", 8, "reused");
  reused.reused_from_run = r1;
  must(store.add_point(reused));
  must(store.add_point(make_point(r2, "a", 16, "invalid")));
  must(store.add_point(make_point(r3, "a", 1, "ok")));

  auto runs = must(store.list_runs());
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].run.name, "third");
  EXPECT_EQ(runs[1].run.name, "second");
  EXPECT_EQ(runs[2].run.name, "first");
  EXPECT_EQ(runs[1].points.ok, 2);
  EXPECT_EQ(runs[1].points.failed, 1);
  EXPECT_EQ(runs[1].points.reused, 1);
  EXPECT_EQ(runs[1].points.invalid, 1);
  EXPECT_EQ(runs[1].points.total(), 5);
  EXPECT_EQ(runs[2].points.total(), 0);
  EXPECT_EQ(runs[1].run.labels, (std::vector<std::string>{"nightly", "h200"}));

  auto two = must(store.list_runs(2));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].run.id, r2);
  auto counts = must(store.point_counts(r2));
  EXPECT_EQ(counts.ok, 2);
  EXPECT_EQ(counts.failed, 1);
  EXPECT_EQ(counts.reused, 1);
  EXPECT_EQ(counts.invalid, 1);
}

TEST_F(StoreTest, FindRunByIdOrName) {
  auto store = open();
  const int64_t a = must(store.begin_run(make_run("20261130-104500")));
  const int64_t b = must(store.begin_run(make_run("77")));  // a name made of digits
  EXPECT_EQ(must(store.find_run(std::to_string(a)))->name, "20261130-104500");
  EXPECT_EQ(must(store.find_run("20261130-104500"))->id, a);
  EXPECT_EQ(must(store.find_run("77"))->id, b);  // no run 77: the name
  EXPECT_EQ(must(store.find_run(std::to_string(b)))->id, b);
  EXPECT_FALSE(must(store.find_run("nope")).has_value());
  EXPECT_FALSE(must(store.find_run("99999999999999999999999")).has_value());
  EXPECT_FALSE(must(store.run(12345)).has_value());
}

// The one read of a whole run that `show` and `report` share: every part comes back, in
// insertion order, and timeslices only when asked for.
TEST_F(StoreTest, RunDetailsReadsTheWholeRunBack) {
  auto store = open();
  const int64_t other = must(store.begin_run(make_run("other")));
  must(store.add_point(make_point(other, "fp", 1, "ok")));
  const int64_t run = must(store.begin_run(make_run("r")));
  ServerConfigRecord c;
  c.run_id = run;
  c.config_key = "llama70b-fp8-h200-vllm";
  c.fingerprint = "fp";
  c.launcher = "local";
  c.row = {{"tp", 8}};
  const int64_t cfg = must(store.add_server_config(c));
  auto p1 = make_point(run, "fp", 4, "ok");
  p1.server_config_id = cfg;
  auto p2 = make_point(run, "fp", 8, "failed");
  p2.server_config_id = cfg;
  p2.error = "12 of 80 requests failed";
  const int64_t pt1 = must(store.add_point(p1));
  const int64_t pt2 = must(store.add_point(p2));
  FailureRecord f;
  f.run_id = run;
  f.server_config_id = cfg;
  f.point_id = pt2;
  f.kind = "point";
  f.message = p2.error;
  must(store.add_failure(f));
  TimesliceRecord slice;
  slice.source = "server";
  slice.end_s = 1;
  slice.running = 4;
  must(store.add_timeslices(pt1, {slice}));

  auto found = must(store.find_run("r"));
  ASSERT_TRUE(found.has_value());
  auto d = must(store.run_details(*found));
  EXPECT_EQ(d.run.id, run);
  EXPECT_EQ(d.run.name, "r");
  EXPECT_EQ(d.counts.ok, 1);
  EXPECT_EQ(d.counts.failed, 1);
  EXPECT_EQ(d.counts.total(), 2);
  ASSERT_EQ(d.configs.size(), 1u);
  EXPECT_EQ(d.configs[0].id, cfg);
  EXPECT_EQ(d.configs[0].config_key, c.config_key);
  EXPECT_EQ(d.configs[0].row, c.row);
  ASSERT_EQ(d.points.size(), 2u);
  EXPECT_EQ(d.points[0].id, pt1);
  EXPECT_EQ(d.points[0].concurrency, 4);
  EXPECT_EQ(d.points[0].server_config_id, cfg);
  EXPECT_EQ(d.points[1].id, pt2);
  EXPECT_EQ(d.points[1].status, metrics::PointStatus::kFailed);
  EXPECT_EQ(d.points[1].error, p2.error);
  ASSERT_EQ(d.failures.size(), 1u);
  EXPECT_EQ(d.failures[0].point_id, pt2);
  EXPECT_EQ(d.failures[0].message, f.message);
  EXPECT_TRUE(d.timeslices.empty());  // not asked for

  auto with = must(store.run_details(*found, WithTimeslices::kYes));
  EXPECT_EQ(with.points.size(), 2u);
  ASSERT_EQ(with.timeslices.size(), 1u);  // points without timeslices are absent
  ASSERT_EQ(with.timeslices.at(pt1).size(), 1u);
  EXPECT_EQ(*with.timeslices.at(pt1)[0].running, 4);
}

// --- --resume and --reuse -----------------------------------------------------------------------

TEST_F(StoreTest, CompletedPointMatchesOnlyThisRunsOkOrReusedPoints) {
  auto store = open();
  const int64_t other = must(store.begin_run(make_run("other")));
  const int64_t run = must(store.begin_run(make_run("run")));
  must(store.add_point(make_point(other, "fp", 8, "ok")));  // another run: not ours
  EXPECT_FALSE(must(store.completed_point(run, "fp", 8, "1k1k")).has_value());

  must(store.add_point(make_point(run, "fp", 8, "failed")));
  must(store.add_point(make_point(run, "fp", 8, "invalid")));
  EXPECT_FALSE(must(store.completed_point(run, "fp", 8, "1k1k")).has_value());  // must re-run

  const int64_t ok = must(store.add_point(make_point(run, "fp", 8, "ok")));
  auto got = must(store.completed_point(run, "fp", 8, "1k1k"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, ok);
  EXPECT_EQ(got->headline.get("request_throughput"), 12.0);
  EXPECT_FALSE(must(store.completed_point(run, "fp", 16, "1k1k")).has_value());
  EXPECT_FALSE(must(store.completed_point(run, "fp", 8, "8k1k")).has_value());
  EXPECT_FALSE(must(store.completed_point(run, "fp-other", 8, "1k1k")).has_value());

  auto reused = make_point(run, "fp", 32, "reused");
  reused.reused_from_run = other;
  const int64_t rid = must(store.add_point(reused));
  EXPECT_EQ(must(store.completed_point(run, "fp", 32, "1k1k"))->id, rid);
}

TEST_F(StoreTest, ReusablePointComesFromTheNewestSuccessfulRunOfTheSameToolVersion) {
  auto store = open();
  // Older successful run.
  const int64_t old_ok = must(store.begin_run(make_run("old-ok", "0.1.0", 100)));
  const int64_t p_old = must(store.add_point(make_point(old_ok, "fp", 8, "ok")));
  must(store.add_point(make_point(old_ok, "fp", 16, "failed")));
  must(store.finish_run(old_ok, RunStatus::kOk));
  // Newer, but the run failed: never a source.
  const int64_t failed_run = must(store.begin_run(make_run("failed", "0.1.0", 200)));
  must(store.add_point(make_point(failed_run, "fp", 8, "ok")));
  must(store.finish_run(failed_run, RunStatus::kFailed));
  // Newer, interrupted: never a source.
  const int64_t cut = must(store.begin_run(make_run("cut", "0.1.0", 250)));
  must(store.add_point(make_point(cut, "fp", 8, "ok")));
  must(store.finish_run(cut, RunStatus::kInterrupted));
  // Newer, successful, another tool version.
  const int64_t v2 = must(store.begin_run(make_run("v2", "0.2.0", 300)));
  const int64_t p_v2 = must(store.add_point(make_point(v2, "fp", 8, "ok")));
  must(store.finish_run(v2, RunStatus::kOk));
  // The run in progress: not finished, so not a source for itself.
  const int64_t current = must(store.begin_run(make_run("current", "0.1.0", 400)));
  must(store.add_point(make_point(current, "fp", 8, "ok")));

  auto got = must(store.reusable_point("fp", 8, "1k1k", "0.1.0"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, p_old);
  EXPECT_EQ(got->run_id, old_ok);
  EXPECT_EQ(must(store.reusable_point("fp", 8, "1k1k", "0.2.0"))->id, p_v2);
  // Failed points are never reused; nor are other workloads, concurrencies or fingerprints.
  EXPECT_FALSE(must(store.reusable_point("fp", 16, "1k1k", "0.1.0")).has_value());
  EXPECT_FALSE(must(store.reusable_point("fp", 8, "8k1k", "0.1.0")).has_value());
  EXPECT_FALSE(must(store.reusable_point("fp", 4, "1k1k", "0.1.0")).has_value());
  EXPECT_FALSE(must(store.reusable_point("fp2", 8, "1k1k", "0.1.0")).has_value());
  EXPECT_FALSE(must(store.reusable_point("fp", 8, "1k1k", "0.3.0")).has_value());

  // A reused point is not itself a source: the source run stays the one that measured it.
  auto r = make_point(current, "fp", 64, "reused");
  r.reused_from_run = old_ok;
  must(store.add_point(r));
  must(store.finish_run(current, RunStatus::kOk));
  EXPECT_FALSE(must(store.reusable_point("fp", 64, "1k1k", "0.1.0")).has_value());

  // Now `current` ended ok and is the newest 0.1.0 run: its point wins.
  got = must(store.reusable_point("fp", 8, "1k1k", "0.1.0"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->run_id, current);
}

// --- JSON forms ---------------------------------------------------------------------------------

TEST_F(StoreTest, JsonFormsUseNullForUnsetMetricsAndIds) {
  PointRecord p;
  p.id = 3;
  p.run_id = 1;
  p.status = metrics::PointStatus::kFailed;
  p.headline.set("median_ttft_ms", 12.5);
  p.result = {{"k", 1}};
  auto j = to_json(p);
  EXPECT_TRUE(j.at("request_throughput").is_null());
  EXPECT_EQ(j.at("median_ttft_ms").as_double(), 12.5);
  EXPECT_TRUE(j.at("server_config_id").is_null());
  EXPECT_TRUE(j.at("reused_from_run").is_null());
  EXPECT_EQ(j.at("result").as_object().at("k").as_int64(), 1);
  // Serializable (no NaN leaks into the text).
  EXPECT_EQ(boost::json::serialize(j).find("NaN"), std::string::npos);

  FailureRecord f;
  f.point_id = 9;
  auto fj = to_json(f);
  EXPECT_TRUE(fj.at("server_config_id").is_null());
  EXPECT_EQ(fj.at("point_id").as_int64(), 9);

  RunSummary s{make_run("x"), {}};
  s.points.reused = 2;
  auto sj = to_json(s);
  EXPECT_EQ(sj.at("name").as_string(), "x");
  EXPECT_EQ(sj.at("labels").as_array().size(), 2u);
  EXPECT_EQ(sj.at("points").as_object().at("reused").as_int64(), 2);

  ServerConfigRecord c;
  c.row = {{"tp", 4}};
  EXPECT_EQ(to_json(c).at("row").as_object().at("tp").as_int64(), 4);
}

TEST_F(StoreTest, HeadlineFromResultTakesNumbersAndLeavesTheRest) {
  PointRecord p;
  p.result = {{"request_throughput", 3}, {"median_tpot_ms", "n/a"}, {"completed", 10}};
  p.headline.set("median_tpot_ms", 7);
  set_headline_from_result(p);
  EXPECT_EQ(p.headline.get("request_throughput"), 3.0);
  EXPECT_EQ(p.headline.get("median_tpot_ms"), 7.0);  // not a number: unchanged
  EXPECT_TRUE(std::isnan(p.headline.get("tput_per_gpu")));
  EXPECT_EQ(p.headline.get("completed"), 10);
  EXPECT_TRUE(std::isnan(p.headline.get("failed")));  // absent: unchanged (not measured)
}

TEST_F(StoreTest, CorruptJsonColumnIsReportedWithTableRowAndColumn) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("UPDATE runs SET options = '{broken' WHERE id = 1").ok());
  }
  auto got = store.run(run);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("runs row 1 column options: invalid JSON"), std::string::npos)
      << got.error().message;
}

// --- concurrency and crashes --------------------------------------------------------------------

TEST_F(StoreTest, ThreadsWriteConcurrentlyThroughOneStore) {
  auto store = open();
  const int64_t run = must(store.begin_run(make_run("r")));
  constexpr int kThreads = 4, kEach = 40;
  std::vector<std::thread> threads;
  std::array<int, kThreads> failures{};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!store.add_point(make_point(run, "fp" + std::to_string(t), i + 1))) ++failures[t];
        if (!store.completed_point(run, "fp" + std::to_string(t), i + 1, "1k1k")) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
  EXPECT_EQ(must(store.point_counts(run)).ok, kThreads * kEach);
}

// The result JSON of point `seq` in the crash tests: large enough to span several pages, with
// content derived from seq so a torn row cannot pass for a whole one.
boost::json::object crash_result(int seq) {
  boost::json::array payload;
  for (int i = 0; i < 600; ++i) payload.emplace_back(seq * 1000 + i);
  return {
      {"seq", seq}, {"payload", std::move(payload)}, {"tail", std::string(3000, 'a' + seq % 26)}};
}

void check_crash_point(const PointRecord& p) {
  const int64_t seq = p.concurrency;
  ASSERT_TRUE(p.result.contains("seq")) << "point " << p.id;
  EXPECT_EQ(p.result.at("seq").as_int64(), seq);
  EXPECT_EQ(p.headline.get("request_throughput"), static_cast<double>(seq));
  EXPECT_EQ(p.result, crash_result(static_cast<int>(seq))) << "point " << p.id;
}

// Child process body: write points as fast as possible, acknowledging each committed one on
// `ack_fd`; then wait to be killed. Never returns.
[[noreturn]] void crash_child(const fs::path& file, const std::string& run_name, int ack_fd) {
  auto store = Store::open(file);
  if (!store) _exit(3);
  auto run = store->begin_run(make_run(run_name));
  if (!run) _exit(4);
  for (int seq = 0; seq < 300; ++seq) {
    PointRecord p;
    p.run_id = *run;
    p.fingerprint = "fp";
    p.workload_key.assign(1, 'w');
    p.concurrency = seq;
    p.headline.set("request_throughput", seq);
    p.result = crash_result(seq);
    if (!store->add_point(p)) _exit(5);
    if (write(ack_fd, &seq, sizeof seq) != static_cast<ssize_t>(sizeof seq)) _exit(6);
  }
  for (;;) pause();
}

TEST_F(StoreTest, SigkillMidSweepLeavesAConsistentDatabase) {
  // Three sweeps into one file, each killed after a different number of committed points.
  const std::array<int, 3> kill_after = {5, 40, 120};
  for (size_t round = 0; round < kill_after.size(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string name = "crash-" + std::to_string(round);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    // No Store is open in this process across fork (SQLite connections must not cross it).
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      crash_child(file_, name, fds[1]);
    }
    close(fds[1]);
    int acked = 0, seq = 0;
    while (acked < kill_after[round] && read(fds[0], &seq, sizeof seq) == sizeof seq) ++acked;
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
    while (read(fds[0], &seq, sizeof seq) == sizeof seq) ++acked;  // acks sent before the kill
    close(fds[0]);
    ASSERT_GE(acked, kill_after[round]);

    EXPECT_EQ(pragma_text(file_, "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(pragma_text(file_, "SELECT count(*) FROM pragma_foreign_key_check"), "0");
    auto store = open();
    auto run = must(store.find_run(name));
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->status, RunStatus::kRunning);  // killed: never finished
    auto points = must(store.points(run->id));
    // Every acknowledged point is there, at most one more (committed, not yet acknowledged),
    // each one whole, in order.
    EXPECT_GE(static_cast<int>(points.size()), acked);
    EXPECT_LE(static_cast<int>(points.size()), acked + 1);
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(points[i].concurrency, static_cast<int64_t>(i));
      check_crash_point(points[i]);
    }
    // The database is writable again (no lock left behind).
    must(store.finish_run(run->id, RunStatus::kInterrupted));
  }
}

TEST_F(StoreTest, UncommittedTransactionOfAKilledWriterIsRolledBack) {
  { auto store = open(); }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto store = Store::open(file_);
    if (!store) _exit(3);
    auto run = store->begin_run(make_run("half"));
    if (!run) _exit(4);
    // Open a transaction on a second connection and stop with half a sweep step written.
    auto db = Database::open(file_);
    if (!db) _exit(5);
    auto txn = Transaction::begin(*db);
    if (!txn) _exit(6);
    const std::string big(200000, 'x');
    std::string sql =
        "INSERT INTO points (run_id, fingerprint, workload_key, concurrency, status, result, "
        "created_at) VALUES (" +
        std::to_string(*run) + ", 'fp', 'w', 1, 'ok', '{\"big\":\"" + big + "\"}', 1)";
    if (!db->exec(sql)) _exit(7);
    if (!db->exec("UPDATE runs SET status = 'ok'")) _exit(8);
    char c = 'x';
    if (write(fds[1], &c, 1) != 1) _exit(9);
    for (;;) pause();
  }
  close(fds[1]);
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  close(fds[0]);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);

  EXPECT_EQ(pragma_text(file_, "PRAGMA integrity_check"), "ok");
  auto store = open();
  auto run = must(store.find_run("half"));
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::kRunning);  // the uncommitted UPDATE is gone
  EXPECT_TRUE(must(store.points(run->id)).empty());
  must(store.add_point(make_point(run->id, "fp", 1)));  // and the write lock with it
}

// --- owners of running runs ---------------------------------------------------------------------

// A child process that waits until killed; its identity as a sweep would record it.
struct Sleeper {
  pid_t pid = ::fork();
  Sleeper() {
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~Sleeper() { end(); }
  void end() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    pid = -1;
  }
};

TEST(ResumeCommand, ATuneBlockIsContinuedByResumingTheTuning) {
  RunRecord r;
  r.name = "20261203-0700";
  r.options = {{"recipes", boost::json::array{"r.yaml"}},
               {"tune", {{"id", "tune-1"}, {"dir", "runs/tune-1"}, {"block", "screen-r0-p0"}}}};
  EXPECT_EQ(resume_command(r), "inferbench tune --resume runs/tune-1");
  r.options.erase("tune");
  EXPECT_EQ(resume_command(r), "inferbench sweep r.yaml --resume 20261203-0700");
}

TEST_F(StoreTest, RunningRunOfAGoneOwnerReadsInterruptedWithHowToResume) {
  auto store = open();
  Sleeper child;
  ASSERT_GT(child.pid, 0);
  RunRecord r = make_run("killed");
  r.options = {{"recipes", boost::json::array{"examples/recipes/serve-sim.yaml"}}};
  r.owner = identity_of(child.pid);
  const int64_t id = must(store.begin_run(r));
  auto alive = must(store.run(id));
  EXPECT_EQ(alive->status, RunStatus::kRunning);
  EXPECT_EQ(alive->owner_state, "alive");
  EXPECT_EQ(alive->owner.pid, child.pid);
  child.end();  // SIGKILL: the run is never finished
  for (auto read : {must(store.run(id)), must(store.find_run("killed")),
                    std::optional(must(store.list_runs()).front().run)}) {
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->status, RunStatus::kInterrupted);
    EXPECT_EQ(read->owner_state, "gone");
    EXPECT_NE(
        read->status_note.find(
            "continue with `inferbench sweep examples/recipes/serve-sim.yaml --resume killed`"),
        std::string::npos)
        << read->status_note;
  }
  auto json = to_json(*must(store.run(id)));
  EXPECT_EQ(json.at("status").as_string(), "interrupted");
  EXPECT_EQ(json.at("owner").at("state").as_string(), "gone");
  EXPECT_EQ(json.at("owner").at("pid").as_int64(), r.owner.pid);
  // Stored as it was: only readers see it as interrupted.
  EXPECT_EQ(pragma_text(file_, "SELECT status FROM runs"), "running");
}

TEST_F(StoreTest, RecycledPidOtherHostAndUnrecordedOwnerAreToldApart) {
  auto store = open();
  RunRecord recycled = make_run("recycled");
  recycled.owner = self_identity();
  recycled.owner.start_ticks -= 1;  // our pid, but an earlier process had it
  const int64_t a = must(store.begin_run(recycled));
  RunRecord elsewhere = make_run("elsewhere");
  elsewhere.owner = self_identity();
  elsewhere.owner.host = "gpu-node-9";
  const int64_t b = must(store.begin_run(elsewhere));
  const int64_t c = must(store.begin_run(make_run("old")));  // no owner: an older inferbench
  const int64_t d = must(store.begin_run(make_run("done")));
  must(store.finish_run(d, RunStatus::kOk));

  EXPECT_EQ(must(store.run(a))->status, RunStatus::kInterrupted);
  // Another host's sweep, heard from at its start (begin_run's heartbeat): at it.
  auto heard = *must(store.run(b));
  EXPECT_EQ(heard.status, RunStatus::kRunning);
  EXPECT_EQ(heard.owner_state, "alive");
  EXPECT_NE(heard.status_note.find("on gpu-node-9 (heard from "), std::string::npos)
      << heard.status_note;
  // Without a heartbeat (an older inferbench on that host), nothing tells.
  auto beats = Database::open(file_, DatabaseOptions{});
  ASSERT_TRUE(beats.ok());
  ASSERT_TRUE(beats->exec(fmt::format("UPDATE runs SET heartbeat_at = 0 WHERE id = {}", b)).ok());
  auto other = *must(store.run(b));
  EXPECT_EQ(other.status, RunStatus::kRunning);
  EXPECT_EQ(other.owner_state, "unknown");
  EXPECT_NE(other.status_note.find("on gpu-node-9, which cannot be checked from here"),
            std::string::npos)
      << other.status_note;
  auto old = *must(store.run(c));
  EXPECT_EQ(old.status, RunStatus::kRunning);
  EXPECT_EQ(old.owner_state, "unknown");
  EXPECT_NE(old.status_note.find("no owner recorded"), std::string::npos) << old.status_note;
  auto done = *must(store.run(d));
  EXPECT_EQ(done.status, RunStatus::kOk);
  EXPECT_TRUE(done.owner_state.empty());
  EXPECT_TRUE(done.status_note.empty());
}

TEST_F(StoreTest, ClaimTakesOverADeadOwnersRunAndRefusesALiveOrUncheckableOne) {
  auto store = open();
  Sleeper child;
  RunRecord r = make_run("r");
  r.owner = identity_of(child.pid);
  const int64_t id = must(store.begin_run(r));
  auto refused = store.claim_run(id, self_identity());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find(
                fmt::format("still being measured by pid {} on {}", child.pid, r.owner.host)),
            std::string::npos)
      << refused.error().message;
  child.end();
  must(store.finish_run(id, RunStatus::kInterrupted));
  must(store.claim_run(id, self_identity()));
  auto claimed = *must(store.run(id));
  EXPECT_EQ(claimed.status, RunStatus::kRunning);
  EXPECT_EQ(claimed.ended_at, 0);
  EXPECT_EQ(claimed.owner.pid, ::getpid());
  EXPECT_EQ(claimed.owner_state, "alive");

  RunRecord far = make_run("far");
  far.owner = self_identity();
  far.owner.host = "gpu-node-9";
  const int64_t far_id = must(store.begin_run(far));
  // Another host's sweep: its heartbeat (begin_run's, just now) says it is at it.
  auto heard = store.claim_run(far_id, self_identity());
  ASSERT_FALSE(heard.ok());
  EXPECT_NE(
      heard.error().message.find("still being measured by pid " + std::to_string(far.owner.pid) +
                                 " on gpu-node-9 (heard "
                                 "from "),
      std::string::npos)
      << heard.error().message;
  auto beats = Database::open(file_, DatabaseOptions{});
  ASSERT_TRUE(beats.ok());
  // No heartbeat (an older inferbench's run): nothing tells, and it is not taken.
  ASSERT_TRUE(
      beats->exec(fmt::format("UPDATE runs SET heartbeat_at = 0 WHERE id = {}", far_id)).ok());
  auto uncheckable = store.claim_run(far_id, self_identity());
  ASSERT_FALSE(uncheckable.ok());
  EXPECT_NE(uncheckable.error().message.find("resume it there"), std::string::npos)
      << uncheckable.error().message;
  // Unheard for longer than kHeartbeatStaleSeconds: its sweep is gone, and the run is taken.
  ASSERT_TRUE(beats
                  ->exec(fmt::format("UPDATE runs SET heartbeat_at = {} WHERE id = {}",
                                     std::time(nullptr) - kHeartbeatStaleSeconds - 300, far_id))
                  .ok());
  auto unheard = *must(store.run(far_id));
  EXPECT_EQ(unheard.owner_state, "gone");
  EXPECT_EQ(unheard.status, RunStatus::kInterrupted);
  EXPECT_NE(unheard.status_note.find("has not been heard from for 15 min"), std::string::npos)
      << unheard.status_note;
  must(store.claim_run(far_id, self_identity()));
  // The heartbeat is the owner's: the sweep that took it over beats, the one it replaced not.
  EXPECT_TRUE(must(store.heartbeat(far_id, self_identity())));
  EXPECT_FALSE(must(store.heartbeat(far_id, far.owner)));
  EXPECT_EQ(must(store.run(far_id))->owner_state, "alive");
  const int64_t old = must(store.begin_run(make_run("old")));  // no owner recorded: resumable
  must(store.claim_run(old, self_identity()));
}

TEST_F(StoreTest, ALiveOwnerHoldingTheWriteLockIsNamedWithoutWaitingForIt) {
  auto store = open();
  Sleeper child;
  RunRecord r = make_run("r");
  r.owner = identity_of(child.pid);
  const int64_t id = must(store.begin_run(r));
  // The owner stopped mid-commit: its write lock is held for as long as it stays stopped.
  DatabaseOptions patient;
  auto holder = Database::open(file_, patient);
  ASSERT_TRUE(holder.ok()) << holder.error().message;
  ASSERT_TRUE(holder->exec("BEGIN IMMEDIATE").ok());
  auto refused = store.claim_run(id, self_identity());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find(fmt::format("still being measured by pid {}", child.pid)),
            std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(holder->exec("ROLLBACK").ok());
}

TEST_F(StoreTest, OwnerMigrationKeepsOlderRunsWithoutAnOwner) {
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    must(migrate(*db, kMigrations.first(3)));
    ASSERT_TRUE(db->exec("INSERT INTO runs (name, tool_version, started_at, status) "
                         "VALUES ('v3', '0.1.0', 1000, 'running')")
                    .ok());
  }
  auto store = open();
  EXPECT_EQ(pragma_text(file_, "PRAGMA user_version"), std::to_string(kMigrations.size()));
  auto r = *must(store.find_run("v3"));
  EXPECT_EQ(r.owner.pid, 0);
  EXPECT_EQ(r.status, RunStatus::kRunning);
  EXPECT_EQ(r.owner_state, "unknown");
}

// --- read-only opens ----------------------------------------------------------------------------

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(StoreTest, ReadOnlyOpenReadsWithoutChangingTheFile) {
  {
    auto store = open();
    must(store.add_point(make_point(must(store.begin_run(make_run("r"))), "fp", 1)));
  }
  const std::string before = bytes_of(file_);
  const auto mtime = fs::last_write_time(file_);
  {
    auto ro = Store::open_read_only(file_);
    ASSERT_TRUE(ro.ok()) << ro.error().message;
    auto runs = must(ro->list_runs());
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].points.ok, 1);
    EXPECT_EQ(must(ro->points(runs[0].run.id)).size(), 1u);
    EXPECT_FALSE(ro->begin_run(make_run("w")).ok());  // writes are refused
    EXPECT_FALSE(ro->finish_run(runs[0].run.id, RunStatus::kOk).ok());
  }
  EXPECT_EQ(bytes_of(file_), before);
  EXPECT_EQ(fs::last_write_time(file_), mtime);
}

// A results database in a folder its reader cannot write (issue 30): a WAL database's reader needs
// the -shm file beside it, which SQLite cannot create there. A folder where the -shm name is taken
// by a folder stands in for the read-only folder here (root is not refused by permissions;
// tests/e2e/runs_cli_test.cc runs the commands as another user). With no -wal file the database
// file holds every row, and is read as it is.
TEST_F(StoreTest, ReadOnlyOpenReadsADatabaseItCannotWriteBeside) {
  {
    auto store = open();
    must(store.add_point(make_point(must(store.begin_run(make_run("r"))), "fp", 1)));
  }
  ASSERT_FALSE(fs::exists(file_.string() + "-wal"));  // the last writer folded it in
  fs::create_directories(file_.string() + "-shm");
  const std::string before = bytes_of(file_);
  auto ro = Store::open_read_only(file_);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  auto runs = must(ro->list_runs());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(must(ro->points(runs[0].run.id)).size(), 1u);
  EXPECT_FALSE(ro->begin_run(make_run("w")).ok());
  EXPECT_EQ(bytes_of(file_), before);
}

TEST_F(StoreTest, ReadOnlyOpenOfAnOlderSchemaReadsAMigratedCopyAndLeavesTheFile) {
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    must(migrate(*db, kMigrations.first(1)));
    ASSERT_TRUE(db->exec("INSERT INTO runs (name, tool_version, started_at, status) "
                         "VALUES ('v1', '0.1.0', 1000, 'ok')")
                    .ok());
    ASSERT_TRUE(db->exec("INSERT INTO points (run_id, fingerprint, workload_key, concurrency, "
                         "status, created_at) VALUES (1, 'fp', 'w', 4, 'ok', 1000)")
                    .ok());
  }
  const std::string before = bytes_of(file_);
  auto ro = Store::open_read_only(file_);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  auto runs = must(ro->list_runs());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.name, "v1");
  auto points = must(ro->points(runs[0].run.id));
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].concurrency, 4);
  EXPECT_EQ(ro->file(), file_);
  EXPECT_EQ(bytes_of(file_), before);
  EXPECT_EQ(pragma_text(file_, "PRAGMA user_version"), "1");
}

TEST_F(StoreTest, ReadOnlyOpenRefusesWhatIsNotAResultsDatabaseNamingTheFile) {
  fs::create_directories(dir_);
  auto error_of = [](const fs::path& p) {
    auto s = Store::open_read_only(p);
    EXPECT_FALSE(s.ok()) << p;
    return s.ok() ? std::string() : s.error().message;
  };
  const fs::path missing = dir_ / "missing.db";
  EXPECT_NE(error_of(missing).find("missing.db: no such database file"), std::string::npos);
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_NE(error_of(dir_).find("a folder, not a database file"), std::string::npos);
  const fs::path empty = dir_ / "empty.db";
  std::ofstream(empty).close();
  EXPECT_NE(error_of(empty).find("empty.db: an empty file, not a database"), std::string::npos);
  EXPECT_EQ(fs::file_size(empty), 0u);  // no schema written into it
  const fs::path text = dir_ / "notes.txt";
  std::ofstream(text) << std::string(4096, 'x');
  EXPECT_NE(error_of(text).find("notes.txt: not an SQLite database"), std::string::npos)
      << error_of(text);
  const fs::path other = dir_ / "other.db";
  {
    auto db = Database::open(other);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("CREATE TABLE t (a)").ok());
  }
  EXPECT_NE(error_of(other).find("other.db: not an inferbench results database"), std::string::npos)
      << error_of(other);
  { auto store = open(); }
  {
    auto db = Database::open(file_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("PRAGMA user_version = 99").ok());
  }
  EXPECT_NE(error_of(file_).find("schema version 99 is newer"), std::string::npos);
}

}  // namespace
}  // namespace ib::store

namespace ib::store {
namespace {

// import_run (push, pull): a reused point's source run must have been copied first; found by
// its origin, the copy's reused point names the copy of its source.
TEST_F(StoreTest, ImportedReusedPointsNameTheCopyOfTheirSourceRun) {
  Store from = open();
  const int64_t a = must(from.begin_run(make_run("a")));
  must(from.add_point(make_point(a, "fp", 1)));
  must(from.finish_run(a, RunStatus::kOk));
  const int64_t b = must(from.begin_run(make_run("b", "0.1.0", 2000)));
  auto reused = make_point(b, "fp", 1, "reused");
  reused.reused_from_run = a;
  must(from.add_point(reused));
  must(from.finish_run(b, RunStatus::kOk));
  auto to = must(Store::open(dir_ / "team.db"));
  auto origin = [&](int64_t id) {
    return boost::json::object{{"db", "/x/local.db"}, {"run_id", id}};
  };
  auto details = [&](int64_t id) { return must(from.run_details(*must(from.run(id)))); };
  // b before a: refused, and nothing of b is kept.
  auto early = to.import_run(details(b), origin(b));
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().message.find("copy that run first"), std::string::npos);
  EXPECT_TRUE(must(to.list_runs()).empty());
  const auto ca = must(to.import_run(details(a), origin(a)));
  const auto cb = must(to.import_run(details(b), origin(b)));
  auto points = must(to.points(cb.id));
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].reused_from_run, ca.id);
  EXPECT_TRUE(must(to.import_run(details(b), origin(b))).existed);
}

}  // namespace
}  // namespace ib::store
