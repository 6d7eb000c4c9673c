// A team's results store on a real PostgreSQL server (scripts/pg-up.sh; docs/store.md): sweeps
// started at once write into one database without losing or duplicating a point (and the same
// holds for one SQLite file on one machine); a sweep killed with SIGKILL resumes into the server
// with every point exactly once; the URL's password is never printed.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include "e2e_util.h"
#include "store/pg.h"
#include "store/pg_test_server.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

// A database of its own on the test server, dropped at the end.
class TeamStore : public ::testing::Test {
 protected:
  TempDir dir;
  std::string url;
  std::string name;
  std::optional<store::PgConnection> admin;

  void SetUp() override {
    REQUIRE_POSTGRES(server);
    auto c = store::PgConnection::connect(*server);
    ASSERT_TRUE(c.ok()) << c.error().message;
    admin.emplace(std::move(*c));
    name = fmt::format("e2e_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->line());
    (void)admin->exec(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", name));
    ASSERT_TRUE(admin->exec("CREATE DATABASE " + name).ok());
    // The same server and user, this test's database, and a password the server does not need
    // (trust) that must never be printed.
    url = *server;
    url.replace(url.rfind('/') + 1, std::string::npos, name);
    if (const size_t at = url.find('@'); at != std::string::npos) url.insert(at, ":team-s3cret-pw");
  }
  void TearDown() override {
    if (admin) (void)admin->exec(fmt::format("DROP DATABASE IF EXISTS {} WITH (FORCE)", name));
  }

  fs::path recipe(const std::string& decode_ms, const std::string& concs) {
    const fs::path file = dir.path() / "recipe.yaml";
    std::ofstream(file) << "team-key:\n  image: inferbench/serve-sim\n  model: team-model\n"
                           "  model-prefix: team\n  precision: bf16\n  framework: serve-sim\n"
                           "  runner: local\n  multinode: false\n"
                           "  serve:\n"
                           "    command: [inferbench, serve-sim, --decode-base-ms, \""
                        << decode_ms
                        << "\", --model, \"{served-model}\", --host, \"{host}\", --port, "
                           "\"{port}\"]\n"
                           "  workload: { prompts-per-conc: 2, min-prompts: 4, warmups-per-conc: "
                           "0 }\n"
                           "  scenarios:\n    fixed-seq-len:\n"
                           "    - { isl: 32, osl: 16, search-space: [{ tp: 1, conc-list: ["
                        << concs << "] }] }\n";
    return file;
  }
};

// Every stored point of every run, by (run, concurrency): how many ok points each has.
std::map<std::pair<int64_t, int64_t>, int> ok_points(store::Store& st, size_t* runs) {
  std::map<std::pair<int64_t, int64_t>, int> out;
  auto list = st.list_runs();
  EXPECT_TRUE(list.ok());
  if (!list) return out;
  *runs = list->size();
  for (const auto& r : *list) {
    auto points = st.points(r.run.id);
    EXPECT_TRUE(points.ok());
    for (const auto& p : *points) {
      if (p.status == metrics::PointStatus::kOk) ++out[{r.run.id, p.concurrency}];
    }
  }
  return out;
}

void three_sweeps_at_once(const TempDir& dir, const fs::path& recipe, const std::string& db) {
  std::vector<std::vector<std::string>> commands;
  std::vector<fs::path> logs;
  for (int i = 0; i < 3; ++i) {
    commands.push_back({"sweep", recipe.string(), "--runs-dir",
                        (dir.path() / fmt::format("runs-{}", i)).string(), "--db", db});
    logs.push_back(dir.path() / fmt::format("sweep-{}.log", i));
  }
  const auto results = run_inferbench_all(commands, logs, std::chrono::seconds(120), 3);
  for (const auto& r : results) {
    EXPECT_EQ(r.exit.code, 0) << r.output;
    EXPECT_EQ(r.output.find("team-s3cret-pw"), std::string::npos) << r.output;
  }
  auto st = store::Store::open_read_only(db);
  ASSERT_TRUE(st.ok()) << st.error().message;
  size_t runs = 0;
  const auto points = ok_points(*st, &runs);
  EXPECT_EQ(runs, 3u);
  std::set<int64_t> run_ids;
  for (const auto& [k, n] : points) {
    EXPECT_EQ(n, 1) << "run " << k.first << " conc " << k.second;
    run_ids.insert(k.first);
  }
  EXPECT_EQ(points.size(), 6u);  // three runs, two concurrencies each
  EXPECT_EQ(run_ids.size(), 3u);
  auto table = run_inferbench({"runs", "--db", db}, dir.path() / "runs.log");
  EXPECT_EQ(table.exit.code, 0) << table.output;
  EXPECT_EQ(table.output.find("team-s3cret-pw"), std::string::npos) << table.output;
}

TEST_F(TeamStore, ThreeSweepsAtOnceStoreEveryPointOnceOnPostgresAndOnSqlite) {
  const fs::path r = recipe("2", "1, 2");
  three_sweeps_at_once(dir, r, url);
  three_sweeps_at_once(dir, r, (dir.path() / "one.db").string());
}

TEST_F(TeamStore, ASweepKilledMidRunResumesIntoThePostgresStoreWithEveryPointOnce) {
  const fs::path r = recipe("12", "1, 2, 4");
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "sweep", r.string(), "--runs-dir", (dir.path() / "runs").string(),
             "--db",         url};
  so.log_path = dir.path() / "killed.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  // Killed once its first point is stored.
  auto points_stored = [&] {
    auto c = store::PgConnection::connect(url);
    if (!c) return false;
    auto n = c->query("SELECT count(*) FROM points");
    return n && n->integer(0, 0).value_or(0) >= 1;
  };
  ASSERT_TRUE(wait_for(points_stored, std::chrono::seconds(60))) << file_tail(so.log_path);
  ::kill(child->pid(), SIGKILL);
  (void)child->stop(std::chrono::milliseconds(5000));
  std::string run_name;
  {
    auto st = store::Store::open_read_only(url);
    ASSERT_TRUE(st.ok()) << st.error().message;
    auto runs = st->list_runs();
    ASSERT_TRUE(runs.ok() && runs->size() == 1u);
    EXPECT_EQ(runs->front().run.status, store::RunStatus::kInterrupted);
    EXPECT_EQ(runs->front().run.owner_state, "gone");
    run_name = runs->front().run.name;
  }
  auto resumed = run_inferbench({"sweep", r.string(), "--runs-dir", (dir.path() / "runs").string(),
                                 "--db", url, "--resume", run_name},
                                dir.path() / "resume.log");
  ASSERT_EQ(resumed.exit.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed"), std::string::npos) << resumed.output;
  EXPECT_EQ(resumed.output.find("team-s3cret-pw"), std::string::npos) << resumed.output;
  auto st = store::Store::open_read_only(url);
  ASSERT_TRUE(st.ok());
  size_t runs = 0;
  const auto points = ok_points(*st, &runs);
  EXPECT_EQ(runs, 1u);
  EXPECT_EQ(points.size(), 3u);
  for (const auto& [k, n] : points) EXPECT_EQ(n, 1) << "conc " << k.second;
}

// push and pull (docs/store.md): two local runs pushed twice are in the team's store once, compare
// and report read a pushed run beside one written there directly, and pull brings one back.
TEST_F(TeamStore, PushingTwoRunsTwiceKeepsThemOnceAndCompareAndReportReadAcrossThem) {
  const fs::path r = recipe("2", "1, 2");
  const std::string local = (dir.path() / "local.db").string();
  for (const char* tag : {"a", "b"}) {
    auto s = run_inferbench(
        {"sweep", r.string(), "--runs-dir", (dir.path() / "runs").string(), "--db", local},
        dir.path() / fmt::format("local-{}.log", tag));
    ASSERT_EQ(s.exit.code, 0) << s.output;
  }
  auto direct = run_inferbench(
      {"sweep", r.string(), "--runs-dir", (dir.path() / "runs").string(), "--db", url},
      dir.path() / "direct.log");
  ASSERT_EQ(direct.exit.code, 0) << direct.output;
  for (int round = 0; round < 2; ++round) {
    auto p = run_inferbench({"push", "1", "2", "--to", url, "--db", local, "--json"},
                            dir.path() / fmt::format("push-{}.log", round));
    ASSERT_EQ(p.exit.code, 0) << p.output;
    EXPECT_EQ(p.output.find("team-s3cret-pw"), std::string::npos) << p.output;
    const auto v = boost::json::parse(p.output).as_array();
    ASSERT_EQ(v.size(), 2u);
    for (const auto& run : v) {
      EXPECT_EQ(run.at("existed").as_bool(), round == 1) << p.output;
      if (round == 0) {
        EXPECT_EQ(run.at("points").as_int64(), 2) << p.output;
      }
    }
  }
  auto st = store::Store::open_read_only(url);
  ASSERT_TRUE(st.ok()) << st.error().message;
  size_t runs = 0;
  const auto points = ok_points(*st, &runs);
  EXPECT_EQ(runs, 3u);  // the direct run and the two pushed once
  EXPECT_EQ(points.size(), 6u);
  for (const auto& [k, n] : points) EXPECT_EQ(n, 1);
  auto list = st->list_runs();
  ASSERT_TRUE(list.ok());
  // Newest first: a pushed run, and (oldest) the one the sweep wrote there directly.
  const std::string pushed = list->front().run.name, written = list->back().run.name;
  auto cmp = run_inferbench({"compare", written, pushed, "--db", url}, dir.path() / "cmp.log");
  EXPECT_EQ(cmp.exit.code, 0) << cmp.output;
  auto rep = run_inferbench(
      {"report", written, pushed, "--db", url, "-o", (dir.path() / "team.html").string()},
      dir.path() / "report.log");
  EXPECT_EQ(rep.exit.code, 0) << rep.output;
  auto html = read_file(dir.path() / "team.html");
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->find("team-s3cret-pw"), std::string::npos);
  // pull: the run written there directly into a new local file, twice.
  const std::string back = (dir.path() / "back.db").string();
  for (int round = 0; round < 2; ++round) {
    auto p = run_inferbench({"pull", written, "--from", url, "--db", back},
                            dir.path() / fmt::format("pull-{}.log", round));
    ASSERT_EQ(p.exit.code, 0) << p.output;
    EXPECT_NE(p.output.find(round == 0 ? "2 points" : "nothing copied"), std::string::npos)
        << p.output;
  }
  // A pushed run pulled back into the file it was measured in is the run already there.
  auto home =
      run_inferbench({"pull", pushed, "--from", url, "--db", local}, dir.path() / "home.log");
  ASSERT_EQ(home.exit.code, 0) << home.output;
  EXPECT_NE(home.output.find("nothing copied"), std::string::npos) << home.output;
  auto show = run_inferbench({"show", "1", "--db", back}, dir.path() / "show.log");
  EXPECT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find("points 2 ok"), std::string::npos) << show.output;
}

}  // namespace
}  // namespace ib::e2e
