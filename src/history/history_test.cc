#include "history/history.h"

#include <gtest/gtest.h>

#include "core/temp_dir.h"

namespace ib::history {
namespace {

// A store of runs of one key at one workload and concurrency, each with its TPOT.
class HistoryTest : public ::testing::Test {
 protected:
  TempDir dir{"ib-history"};
  store::Store db = std::move(*store::Store::open(dir.path() / "h.db"));
  int64_t t = 1'700'000'000;

  int64_t run(const std::string& rev, double tpot,
              metrics::PointStatus status = metrics::PointStatus::kOk) {
    store::RunRecord r;
    r.name = "r" + std::to_string(t);
    r.git_revision = rev;
    r.started_at = t += 3600;
    const int64_t id = *db.begin_run(r);
    store::ServerConfigRecord c;
    c.run_id = id;
    c.config_key = "k";
    c.fingerprint = "f";
    c.row = {{"image", rev == "img2" ? "img:2" : "img:1"}};
    const int64_t cid = *db.add_server_config(c);
    store::PointRecord p;
    p.run_id = id;
    p.server_config_id = cid;
    p.concurrency = 4;
    p.workload_key = "fixed-seq-len:{}";
    p.status = status;
    if (status == metrics::PointStatus::kReused) p.reused_from_run = 1;
    p.headline.set("median_tpot_ms", tpot);
    EXPECT_TRUE(db.add_point(p).ok());
    return id;
  }
  History build(HistoryOptions o = {}) {
    if (o.metrics.empty()) o.metrics = {"median_tpot_ms"};
    auto h = build_history(db, o);
    EXPECT_TRUE(h.ok()) << h.error().message;
    return h.ok() ? *h : History{};
  }
};

TEST_F(HistoryTest, RepeatsAtOneRevisionArePooledAndOnlyMeasuredValidPointsCount) {
  run("a", 10.0);
  run("a", 10.2);  // a repeat at revision a
  run("b", 10.1);
  run("b", 99.0, metrics::PointStatus::kReused);   // another run's numbers
  run("c", 99.0, metrics::PointStatus::kInvalid);  // may not be used
  run("", 10.3);                                   // no revision: a position of its own
  const auto h = build();
  EXPECT_EQ(h.order, "time");  // no repository
  ASSERT_EQ(h.series.size(), 1u);
  const auto& s = h.series[0];
  EXPECT_EQ(s.key.config_key, "k");
  EXPECT_FALSE(s.higher_is_better);
  ASSERT_EQ(s.positions.size(), 3u);
  EXPECT_EQ(s.positions[0].values, (std::vector<double>{10.0, 10.2}));
  EXPECT_EQ(s.positions[1].values, (std::vector<double>{10.1}));
  EXPECT_EQ(s.positions[2].revision, "");
  EXPECT_TRUE(s.change_points.empty());
}

TEST_F(HistoryTest, AStepIsFoundAndItsImageNamedWithoutARepository) {
  for (int i = 0; i < 6; ++i) run("r" + std::to_string(i), 10.0 + 0.01 * (i % 3));
  for (int i = 6; i < 12; ++i)
    run(i == 6 ? "img2" : "r" + std::to_string(i), 10.5 + 0.01 * (i % 3));
  const auto h = build();
  ASSERT_EQ(h.series.size(), 1u);
  const auto& s = h.series[0];
  ASSERT_EQ(s.change_points.size(), 1u);
  EXPECT_EQ(s.change_points[0].index, 6u);
  EXPECT_TRUE(s.regression(0));  // TPOT up
  const auto& a = s.attributions.at(0);
  EXPECT_NE(a.unread.find("no repository"), std::string::npos);
  ASSERT_EQ(a.confounders.size(), 1u);
  EXPECT_EQ(a.confounders[0].key(), "image");
  const auto j = s.to_json();
  EXPECT_EQ(j.at("change_points").as_array().size(), 1u);
  EXPECT_EQ(j.at("positions").as_array().size(), 12u);
  // A lower-is-better metric getting lower is no regression; the text marks what is.
  EXPECT_NE(history_text(h, false).find("REGRESSION"), std::string::npos);
}

TEST_F(HistoryTest, KeysSinceAndUnknownMetrics) {
  run("a", 10.0);
  run("b", 11.0);
  HistoryOptions o;
  o.keys = {"other-*"};
  EXPECT_TRUE(build(o).series.empty());
  o.keys = {};
  o.since = "2099-01-01";
  EXPECT_TRUE(build(o).series.empty());
  o.since = "2026-13-45";  // date-shaped, but no date
  auto not_date = build_history(db, o);
  ASSERT_FALSE(not_date.ok());
  EXPECT_NE(not_date.error().message.find("--since 2026-13-45: not a date"), std::string::npos);
  o.since = "a-revision";  // without a repository
  auto bad = build_history(db, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--since a-revision"), std::string::npos);
  o.since = "";
  o.metrics = {"tpot"};
  auto m = build_history(db, o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("--metric tpot: not a headline metric"), std::string::npos);
}

}  // namespace
}  // namespace ib::history
