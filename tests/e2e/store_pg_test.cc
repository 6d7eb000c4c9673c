// A team's results store on a real PostgreSQL server (scripts/pg-up.sh; docs/store.md): sweeps
// started at once write into one database without losing or duplicating a point (and the same
// holds for one SQLite file on one machine); a sweep killed with SIGKILL resumes into the server
// with every point exactly once; a database that goes away mid-sweep loses no point (held, stored
// when it is back, or kept in the run folder for --resume); the URL's password is never printed.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "e2e_util.h"
#include "store/pg.h"
#include "store/pg_test_server.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

// A loopback TCP relay to the test server that can be cut (every connection closed, new ones
// closed as soon as they are accepted: the database has gone away) and restored.
class CuttableProxy {
 public:
  explicit CuttableProxy(int target_port) : target_(target_port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd_, 16) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "proxy: cannot listen";
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~CuttableProxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (auto [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }
  void cut() { cut_ = true; }
  void restore() { cut_ = false; }

 private:
  int dial() const {
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(target_));
    if (c >= 0 && ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return c;
    if (c >= 0) ::close(c);
    return -1;
  }
  void loop() {
    while (!stop_) {
      if (cut_) {
        for (auto [a, b] : pairs_) {
          ::close(a);
          ::close(b);
        }
        pairs_.clear();
      }
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (auto [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int c = ::accept(fd_, nullptr, nullptr);
        const int up = c >= 0 && !cut_ ? dial() : -1;
        if (up >= 0) {
          pairs_.emplace_back(c, up);
        } else if (c >= 0) {
          ::close(c);
        }
      }
      std::vector<size_t> dead;
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const size_t pair = (i - 1) / 2;
        const auto [a, b] = pairs_[pair];
        const int from = (i % 2 == 1) ? a : b, to = (i % 2 == 1) ? b : a;
        char buf[16384];
        const ssize_t n = ::recv(from, buf, sizeof buf, 0);
        if (n <= 0 || ::send(to, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) {
          dead.push_back(pair);
        }
      }
      std::sort(dead.begin(), dead.end());
      dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
      for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
        ::close(pairs_[*it].first);
        ::close(pairs_[*it].second);
        pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(*it));
      }
    }
  }
  int fd_ = -1, port_ = 0, target_ = 0;
  std::atomic<bool> stop_{false}, cut_{false};
  std::vector<std::pair<int, int>> pairs_;
  std::thread thread_;
};

// The port of a postgresql://...@host:PORT/... URL.
int url_port(const std::string& url) {
  const size_t at = url.rfind('@');
  const size_t colon = url.find(':', at == std::string::npos ? 13 : at);
  return colon == std::string::npos ? 5432 : std::atoi(url.c_str() + colon + 1);
}

// `url` through `proxy`: the same server, user and database, reached at the proxy's port.
std::string via(const std::string& url, const CuttableProxy& proxy) {
  const size_t at = url.rfind('@');
  const size_t colon = url.find(':', at);
  const size_t slash = url.find('/', colon);
  return url.substr(0, colon + 1) + std::to_string(proxy.port()) + url.substr(slash);
}

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
  // As if it had been measured on another runner that died a quarter of an hour ago: its
  // heartbeat tells this host that its sweep is gone, and this host may resume it.
  auto c = store::PgConnection::connect(url);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->exec(fmt::format("UPDATE runs SET owner_host = 'runner-7', heartbeat_at = {}",
                                  std::time(nullptr) - 900))
                  .ok());
  auto listed = run_inferbench({"runs", "--db", url}, dir.path() / "runs.log");
  EXPECT_EQ(listed.exit.code, 0) << listed.output;
  EXPECT_NE(listed.output.find("interrupted"), std::string::npos) << listed.output;
  auto shown = run_inferbench({"show", run_name, "--db", url}, dir.path() / "show.log");
  EXPECT_NE(shown.output.find("on runner-7) has not been heard from for 15 min"), std::string::npos)
      << shown.output;
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

int64_t stored_points(const std::string& url, const char* table = "points") {
  auto c = store::PgConnection::connect(url);
  if (!c) return -1;
  auto n = c->query(fmt::format("SELECT count(*) FROM {}", table));
  return n ? n->integer(0, 0).value_or(-1) : -1;
}

// The database goes away after the first point and comes back a few points later: the sweep
// measures on, holds the writes, stores them when it is back, and the run is whole and ok.
TEST_F(TeamStore, ADatabaseThatGoesAwayMidSweepAndComesBackLosesNoPoint) {
  const fs::path r = recipe("12", "1, 2, 4, 8");
  CuttableProxy proxy(url_port(url));
  const std::string through = via(url, proxy);
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "sweep", r.string(), "--runs-dir", (dir.path() / "runs").string(),
             "--db",         through};
  so.log_path = dir.path() / "away.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(wait_for([&] { return stored_points(url) >= 1; }, std::chrono::seconds(60)))
      << file_tail(so.log_path);
  proxy.cut();
  // Away until the sweep has held a write and measured one more point.
  auto said = [&](const std::string& what) {
    auto log = read_file(so.log_path);
    return log && log->find(what) != std::string::npos;
  };
  ASSERT_TRUE(wait_for([&] { return said("went away"); }, std::chrono::seconds(60)))
      << file_tail(so.log_path);
  const int64_t while_away = stored_points(url);
  proxy.restore();
  std::optional<ExitInfo> exit;
  ASSERT_TRUE(
      wait_for([&] { return (exit = child->poll()).has_value(); }, std::chrono::seconds(120)))
      << file_tail(so.log_path);
  const std::string out = file_tail(so.log_path, 1 << 20);
  EXPECT_EQ(exit->code, 0) << out;
  EXPECT_NE(out.find("is back"), std::string::npos) << out;
  EXPECT_EQ(out.find("team-s3cret-pw"), std::string::npos) << out;
  EXPECT_LT(while_away, 4) << out;
  auto st = store::Store::open_read_only(url);
  ASSERT_TRUE(st.ok()) << st.error().message;
  size_t runs = 0;
  const auto points = ok_points(*st, &runs);
  EXPECT_EQ(runs, 1u);
  EXPECT_EQ(points.size(), 4u) << out;
  for (const auto& [k, n] : points) EXPECT_EQ(n, 1) << "conc " << k.second;
  auto list = st->list_runs();
  ASSERT_TRUE(list.ok() && list->size() == 1u);
  EXPECT_EQ(list->front().run.status, store::RunStatus::kOk);
  EXPECT_FALSE(fs::exists(dir.path() / "runs" / list->front().run.name / "unstored.json"));
  EXPECT_EQ(stored_points(url, "point_files"), 4);  // each point's records, held ones too
}

// The database is still away when the sweep ends: it waits --db-wait, says where the results are
// kept (unstored.json), exits 1; --resume, with the database back, stores them without measuring
// any point again.
TEST_F(TeamStore, ADatabaseAwayAtTheEndKeepsTheResultsForResume) {
  const fs::path r = recipe("12", "1, 2, 4");
  CuttableProxy proxy(url_port(url));
  const std::string through = via(url, proxy);
  const std::string runs_dir = (dir.path() / "runs").string();
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "sweep", r.string(),  "--runs-dir", runs_dir,
             "--db",         through, "--db-wait", "0.5"};
  so.log_path = dir.path() / "gone.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(wait_for([&] { return stored_points(url) >= 1; }, std::chrono::seconds(60)))
      << file_tail(so.log_path);
  proxy.cut();
  std::optional<ExitInfo> exit;
  ASSERT_TRUE(
      wait_for([&] { return (exit = child->poll()).has_value(); }, std::chrono::seconds(120)))
      << file_tail(so.log_path);
  const std::string out = file_tail(so.log_path, 1 << 20);
  EXPECT_EQ(exit->code, 1) << out;
  EXPECT_NE(out.find("unstored.json"), std::string::npos) << out;
  EXPECT_NE(out.find("--resume"), std::string::npos) << out;
  EXPECT_EQ(out.find("team-s3cret-pw"), std::string::npos) << out;
  const int64_t before = stored_points(url);
  EXPECT_GE(before, 1);
  EXPECT_LT(before, 3);
  std::string run_name;
  {
    auto st = store::Store::open_read_only(url);
    ASSERT_TRUE(st.ok()) << st.error().message;
    auto runs = st->list_runs();
    ASSERT_TRUE(runs.ok() && runs->size() == 1u);
    EXPECT_EQ(runs->front().run.status, store::RunStatus::kInterrupted);
    run_name = runs->front().run.name;
  }
  const fs::path kept = fs::path(runs_dir) / run_name / "unstored.json";
  ASSERT_TRUE(fs::exists(kept)) << out;
  auto text = read_file(kept);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("team-s3cret-pw"), std::string::npos);
  proxy.restore();
  auto resumed = run_inferbench(
      {"sweep", r.string(), "--runs-dir", runs_dir, "--db", through, "--resume", run_name},
      dir.path() / "resume.log");
  ASSERT_EQ(resumed.exit.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("already complete"), std::string::npos) << resumed.output;
  EXPECT_FALSE(fs::exists(kept));
  auto st = store::Store::open_read_only(url);
  ASSERT_TRUE(st.ok());
  size_t runs = 0;
  const auto points = ok_points(*st, &runs);
  EXPECT_EQ(runs, 1u);
  EXPECT_EQ(points.size(), 3u) << resumed.output;
  for (const auto& [k, n] : points) EXPECT_EQ(n, 1) << "conc " << k.second;
  EXPECT_EQ(stored_points(url, "point_files"), 3);  // records read from the run folder
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
        EXPECT_EQ(run.at("files").as_int64(), 2) << p.output;  // each point's records
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
  // Read as on another machine (no run folder here): the records kept in the store resample
  // compare's intervals, for the pushed run and the one written there directly.
  fs::rename(dir.path() / "runs", dir.path() / "runs-elsewhere");
  auto cmp =
      run_inferbench({"compare", written, pushed, "--db", url, "--json"}, dir.path() / "cmp.log");
  EXPECT_EQ(cmp.exit.code, 0) << cmp.output;
  {
    const auto v = boost::json::parse(cmp.output.substr(cmp.output.find('{')));
    const auto& pairs = v.at("pairs").as_array();
    ASSERT_EQ(pairs.size(), 2u) << cmp.output;
    for (const auto& pr : pairs) EXPECT_TRUE(pr.at("records").as_bool()) << cmp.output;
  }
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
