// The results store on a real PostgreSQL server (scripts/pg-up.sh; docs/store.md): the same Store
// API and records as on SQLite, migrations, and several writers at once.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "store/pg.h"
#include "store/pg_test_server.h"
#include "store/store.h"

namespace ib::store {
namespace {

// Each test in a schema of its own: the URL sets the session's search_path.
class StorePgTest : public ::testing::Test {
 protected:
  std::string schema, url;
  std::optional<PgConnection> admin;

  void SetUp() override {
    REQUIRE_POSTGRES(server);
    schema = fmt::format("s_{}_{}", ::getpid(),
                         ::testing::UnitTest::GetInstance()->current_test_info()->line());
    auto c = PgConnection::connect(*server);
    ASSERT_TRUE(c.ok()) << c.error().message;
    admin.emplace(std::move(*c));
    ASSERT_TRUE(
        admin->exec(fmt::format("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}", schema))
            .ok());
    url = *server + (server->find('?') == std::string::npos ? "?" : "&") +
          "options=-csearch_path%3D" + schema;
  }
  void TearDown() override {
    if (admin) (void)admin->exec(fmt::format("DROP SCHEMA IF EXISTS {} CASCADE", schema));
  }
  Store open() {
    auto s = Store::open(url);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) std::abort();
    return std::move(*s);
  }
};

template <class T>
T ok(Expected<T> e) {
  EXPECT_TRUE(e.ok()) << e.error().message;
  if (!e) std::abort();
  return std::move(*e);
}

RunRecord pg_run(const std::string& name) {
  RunRecord r;
  r.name = name;
  r.tool_version = "0.1.0";
  r.git_revision = "abc123";
  r.labels = {"nightly"};
  r.options = {{"api", "chat"}};
  r.started_at = 1'700'000'000;
  return r;
}

PointRecord pg_point(int64_t run, int64_t config, int64_t conc) {
  PointRecord p;
  p.run_id = run;
  p.server_config_id = config;
  p.fingerprint = "fp";
  p.workload_key = "fixed-seq-len:{\"isl\":64}";
  p.concurrency = conc;
  p.result = {{"request_throughput", 1.25 * static_cast<double>(conc)},
              {"median_tpot_ms", 8.2},
              {"note", "r\xc3\xa9sum\xc3\xa9 \"quoted\""}};
  set_headline_from_result(p);
  return p;
}

TEST_F(StorePgTest, RecordsRoundTripAsOnSqlite) {
  Store st = open();
  EXPECT_NE(st.file().string().find("postgresql://"), std::string::npos);
  const int64_t run = ok(st.begin_run(pg_run("r1")));
  EXPECT_GT(run, 0);
  ServerConfigRecord c;
  c.run_id = run;
  c.config_key = "k";
  c.fingerprint = "fp";
  c.launcher = "local";
  c.row = {{"image", "img:1"}, {"tp", 8}};
  c.id = ok(st.add_server_config(c));
  c.effective_config = {{"settings", {{"max_num_seqs", 256}}}};
  c.status = ConfigStatus::kOk;
  ASSERT_TRUE(st.update_server_config(c).ok());
  const int64_t p1 = ok(st.add_point(pg_point(run, c.id, 4)));
  auto p2 = pg_point(run, c.id, 8);
  p2.headline.set("median_ttft_ms", std::nan(""));  // not measured: NULL
  ok(st.add_point(p2));
  FailureRecord f;
  f.run_id = run;
  f.point_id = p1;
  f.kind = "point";
  f.message = "x";
  ok(st.add_failure(f));
  TimesliceRecord t;
  t.source = "client";
  t.slice = 0;
  t.start_s = 0;
  t.end_s = 1.5;
  t.data = {{"n", 1}};
  ASSERT_TRUE(st.add_timeslices(p1, {t}).ok());
  ASSERT_TRUE(st.finish_run(run, RunStatus::kOk).ok());

  auto found = ok(st.find_run("r1"));
  ASSERT_TRUE(found.has_value());
  auto d = ok(st.run_details(*found, WithTimeslices::kYes));
  EXPECT_EQ(d.run.status, RunStatus::kOk);
  EXPECT_EQ(d.run.labels, std::vector<std::string>{"nightly"});
  EXPECT_EQ(d.run.options.at("api").as_string(), "chat");
  ASSERT_EQ(d.configs.size(), 1u);
  EXPECT_EQ(d.configs[0].row.at("tp").as_int64(), 8);
  EXPECT_EQ(d.configs[0].effective_config.at("settings").at("max_num_seqs").as_int64(), 256);
  ASSERT_EQ(d.points.size(), 2u);
  EXPECT_DOUBLE_EQ(d.points[0].headline.get("request_throughput"), 5.0);
  EXPECT_DOUBLE_EQ(d.points[0].headline.get("median_tpot_ms"), 8.2);
  EXPECT_TRUE(std::isnan(d.points[1].headline.get("median_ttft_ms")));
  EXPECT_EQ(d.points[0].result.at("note").as_string(), "r\xc3\xa9sum\xc3\xa9 \"quoted\"");
  ASSERT_EQ(d.failures.size(), 1u);
  EXPECT_EQ(d.failures[0].point_id, p1);
  ASSERT_EQ(d.timeslices.at(p1).size(), 1u);
  EXPECT_DOUBLE_EQ(d.timeslices.at(p1)[0].end_s, 1.5);
  EXPECT_EQ(d.counts.ok, 2);
  // The queries resume and reuse make.
  auto done = ok(st.completed_point(run, "fp", 4, "fixed-seq-len:{\"isl\":64}"));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->id, p1);
  auto reuse = ok(st.reusable_point("fp", 8, "fixed-seq-len:{\"isl\":64}", "0.1.0"));
  EXPECT_TRUE(reuse.has_value());
  // A second run of the same name is refused, as on SQLite.
  EXPECT_FALSE(st.begin_run(pg_run("r1")).ok());
  auto runs = ok(st.list_runs());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].points.ok, 2);
}

// The sweep's write of a point: with its timeslices (more than one INSERT's worth: 150 rows in
// statements of 64) and failure in one transaction; nothing of it when a part fails; and a write
// whose outcome was unknown is recognised as stored (point_stored).
TEST_F(StorePgTest, APointIsStoredWholeWithItsTimeslicesOrNotAtAll) {
  Store st = open();
  const int64_t run = ok(st.begin_run(pg_run("whole")));
  std::vector<TimesliceRecord> slices;
  for (int i = 0; i < 150; ++i) {
    TimesliceRecord t;
    t.source = i % 2 ? "client" : "server";
    t.slice = i / 2;
    t.start_s = i;
    t.end_s = i + 1;
    t.started = i;
    t.data = {{"i", i}};
    slices.push_back(t);
  }
  FailureRecord f;
  f.run_id = run;
  f.kind = "assertion";
  f.message = "too few requests";
  PointRecord p = pg_point(run, 0, 4);
  p.status = metrics::PointStatus::kInvalid;
  p.created_at = 1'765'000'000;
  p.artifacts_dir = "runs/whole/01-k";
  EXPECT_FALSE(ok(st.point_stored(p)));
  const std::string records = "{\"ttft\": 0.01}\n{\"ttft\": 0.02}\n";
  const int64_t id =
      ok(st.add_point_whole(p, slices, f, {PointFile{"records_conc_4.jsonl", "", records}}));
  EXPECT_TRUE(ok(st.point_stored(p)));
  // Its records, kept in the store for readers on other machines.
  auto kept = ok(st.point_file(id, "records_conc_4.jsonl"));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->body, records);
  EXPECT_EQ(kept->sha256.size(), 64u);
  EXPECT_FALSE(ok(st.point_file(id, "records_conc_8.jsonl")).has_value());
  EXPECT_EQ(ok(st.point_files(id)).size(), 1u);
  EXPECT_FALSE(st.add_point_file(id, PointFile{"../x", "", "y"}).ok());
  PointRecord other = p;
  other.created_at += 1;
  EXPECT_FALSE(ok(st.point_stored(other)));
  auto back = ok(st.timeslices(id));
  ASSERT_EQ(back.size(), 150u);
  EXPECT_EQ(back.front().source, "server");  // server slices first, each with its own data
  EXPECT_EQ(back.front().data.at("i").as_int64() % 2, 0);
  EXPECT_EQ(back.back().source, "client");
  EXPECT_EQ(back.back().data.at("i").as_int64(), 149);
  auto failures = ok(st.failures(run));
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].point_id, id);
  // A duplicate slice (the table's key) fails the write: neither the point nor its slices stay.
  slices.push_back(slices.front());
  PointRecord again = pg_point(run, 0, 8);
  EXPECT_FALSE(st.add_point_whole(again, slices, std::nullopt).ok());
  EXPECT_EQ(ok(st.points(run)).size(), 1u);
  EXPECT_EQ(ok(st.failures(run)).size(), 1u);
}

TEST_F(StorePgTest, ThreeWritersAtOnceStoreEveryPointExactlyOnce) {
  constexpr int kWriters = 3, kPoints = 25;
  // First opens race to migrate: one does, the others see the latest version.
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto s = Store::open(url);
      if (!s) {
        errors[w] = s.error().message;
        return;
      }
      auto run = s->begin_run(pg_run(fmt::format("writer-{}", w)));
      if (!run) {
        errors[w] = run.error().message;
        return;
      }
      ServerConfigRecord c;
      c.run_id = *run;
      c.config_key = "k";
      c.fingerprint = "fp";
      auto cid = s->add_server_config(c);
      if (!cid) {
        errors[w] = cid.error().message;
        return;
      }
      for (int n = 0; n < kPoints; ++n) {
        if (auto p = s->add_point(pg_point(*run, *cid, n + 1)); !p) errors[w] = p.error().message;
      }
      (void)s->finish_run(*run, RunStatus::kOk);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  Store st = open();
  auto runs = ok(st.list_runs());
  ASSERT_EQ(runs.size(), 3u);
  std::set<int64_t> run_ids, point_ids;
  size_t points = 0;
  for (const auto& r : runs) {
    run_ids.insert(r.run.id);
    EXPECT_EQ(r.points.ok, kPoints) << r.run.name;
    for (const auto& p : ok(st.points(r.run.id))) {
      point_ids.insert(p.id);
      ++points;
    }
  }
  EXPECT_EQ(run_ids.size(), 3u);
  EXPECT_EQ(points, static_cast<size_t>(kWriters * kPoints));
  EXPECT_EQ(point_ids.size(), points);
}

TEST_F(StorePgTest, AReaderCannotWriteAndAnEmptyDatabaseIsNoStore) {
  auto empty = Store::open_read_only(url);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("not an inferbench results database"), std::string::npos)
      << empty.error().message;
  { Store st = open(); }
  auto reader = Store::open_read_only(url);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  auto w = reader->begin_run(pg_run("nope"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("read-only"), std::string::npos) << w.error().message;
}

}  // namespace
}  // namespace ib::store
