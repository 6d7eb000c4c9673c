#include "verdict/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "metrics/result.h"
#include "verdict/sources.h"

namespace ib::verdict {
namespace {

// A point of `n` requests whose tokens come `gap_ms` apart (with ±10% jitter from `seed`).
SidePoint point(double gap_ms, uint64_t seed, int64_t conc = 4, int n = 60,
                const std::string& model = "m") {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  std::vector<metrics::RequestRecord> rs;
  int64_t lane_free[64] = {};
  for (int i = 0; i < n; ++i) {
    metrics::RequestRecord r;
    r.index = i;
    r.input_len = 32;
    r.output_len = 16;
    const int lane = i % static_cast<int>(conc);
    r.sched_ns = r.send_ns = 1 + lane_free[lane];
    int64_t t = r.send_ns + static_cast<int64_t>(30e6 * jitter(gen));
    for (int k = 0; k < 16; ++k) {
      r.content_ns.push_back(t);
      t += static_cast<int64_t>(gap_ms * 1e6 * jitter(gen));
    }
    r.done_ns = r.content_ns.back() + 1000;
    lane_free[lane] = r.done_ns;
    r.prompt_tokens = 32;
    r.completion_tokens = 16;
    rs.push_back(std::move(r));
  }
  metrics::MetricsOptions mo;
  SidePoint p;
  p.source = "test";
  p.config_key = "cfg";
  p.workload_key = "isl 32 / osl 16";
  p.workload_label = "isl 32 / osl 16";
  p.concurrency = conc;
  p.headline = metrics::Headline::from_metrics(metrics::compute_metrics(rs, mo), mo);
  p.records = std::move(rs);
  p.has_records = true;
  p.identity = metrics::Identity::from_json(
      {{"model", model}, {"image", "img"}, {"hardware", "h100"}, {"validity", "valid"}});
  return p;
}

Side side(std::vector<SidePoint> pts) {
  Side s;
  s.label = "test";
  s.points = std::move(pts);
  return s;
}

const MetricDelta& metric(const PairResult& p, const std::string& key) {
  for (const auto& m : p.metrics) {
    if (m.key == key) return m;
  }
  throw std::runtime_error("no metric " + key);
}

CompareOptions fast() {
  CompareOptions o;
  o.resamples = 500;
  return o;
}

TEST(VerdictCompare, FasterDecodeIsImprovedWithAnIntervalExcludingZero) {
  const auto c = compare(side({point(10, 1, 4), point(10, 2, 8)}),
                         side({point(7, 3, 4), point(7, 4, 8)}), fast());
  ASSERT_EQ(c.pairs.size(), 2u);
  const auto& tpot = metric(c.pairs[0], "median_tpot_ms");
  EXPECT_EQ(tpot.interval, "bootstrap");
  EXPECT_EQ(tpot.verdict, Verdict::kImproved);  // lower is better
  EXPECT_LT(tpot.bootstrap_pct.hi, 0);
  const auto& intvty = metric(c.pairs[0], "median_intvty");
  EXPECT_EQ(intvty.verdict, Verdict::kImproved);
  EXPECT_GT(intvty.bootstrap_pct.lo, 0);
  // 60 requests are too few for a p99's bootstrap interval (5 beyond it need 500).
  const auto& p99 = metric(c.pairs[0], "p99_tpot_ms");
  EXPECT_EQ(p99.interval, "none");
  EXPECT_NE(p99.note.find("too few for a bootstrap interval of a p99 (needs 500)"),
            std::string::npos)
      << p99.note;
  EXPECT_FALSE(c.confounded);
  EXPECT_EQ(c.regressed, 0);
  EXPECT_TRUE(c.verdict_line().starts_with("IMPROVED")) << c.verdict_line();
  // One curve (one configuration and workload) with two frontier points a side.
  ASSERT_EQ(c.curves.size(), 1u);
  EXPECT_TRUE(c.curves[0].delta.overlap || c.curves[0].head_frontier.front().x > 0);
}

TEST(VerdictCompare, IdenticalSidesShowNoSignificantChange) {
  const auto c = compare(side({point(10, 1)}), side({point(10, 1)}), fast());
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_EQ(c.improved, 0);
  EXPECT_EQ(c.regressed, 0);
  EXPECT_GT(c.unchanged, 0);
  EXPECT_TRUE(c.verdict_line().starts_with("NO SIGNIFICANT CHANGE")) << c.verdict_line();
  const auto& tpot = metric(c.pairs[0], "median_tpot_ms");
  EXPECT_LE(tpot.bootstrap_pct.lo, 0);
  EXPECT_GE(tpot.bootstrap_pct.hi, 0);
}

TEST(VerdictCompare, ADifferentModelIsConfoundedUnlessAccepted) {
  auto base = side({point(10, 1, 4, 60, "model-a")});
  auto head = side({point(7, 2, 4, 60, "model-b")});
  auto c = compare(base, head, fast());
  EXPECT_TRUE(c.confounded);
  ASSERT_FALSE(c.confounders.empty());
  EXPECT_EQ(c.confounders[0].field, metrics::IdentityField::kModel);
  EXPECT_TRUE(c.verdict_line().starts_with("CONFOUNDED: not evidence for this change"));
  EXPECT_NE(comparison_markdown(c).find("model-a"), std::string::npos);
  auto o = fast();
  o.accepted_confounders.insert(metrics::IdentityField::kModel);
  c = compare(base, head, o);
  EXPECT_FALSE(c.confounded);
  EXPECT_TRUE(c.confounders[0].accepted);
}

TEST(VerdictCompare, InvalidPointsAreExcludedAndCounted) {
  auto bad = point(10, 5, 8);
  bad.status = metrics::PointStatus::kInvalid;
  bad.validity.add(metrics::InvalidKind::kExpectFailed, "settings.tp == 4 (not set)");
  const auto c =
      compare(side({point(10, 1, 4), bad}), side({point(10, 2, 4), point(10, 3, 8)}), fast());
  EXPECT_EQ(c.pairs.size(), 1u);
  ASSERT_EQ(c.excluded.size(), 2u);  // the invalid base point, and its head partner
  EXPECT_NE(c.excluded[0].why.find("invalid: "), std::string::npos) << c.excluded[0].why;
  EXPECT_NE(c.excluded[0].why.find("settings.tp == 4"), std::string::npos) << c.excluded[0].why;
  EXPECT_NE(comparison_text(c).find("EXCLUDED (2 point(s)"), std::string::npos);
  const auto j = comparison_json(c);
  EXPECT_EQ(j.at("counts").at("excluded").as_int64(), 2);
}

TEST(VerdictCompare, WithoutRecordsOnlyThePointEstimate) {
  auto a = point(10, 1), b = point(7, 2);
  a.records.clear();
  a.has_records = false;
  const auto c = compare(side({a}), side({b}), fast());
  const auto& tpot = metric(c.pairs[0], "median_tpot_ms");
  EXPECT_EQ(tpot.interval, "none");
  EXPECT_EQ(tpot.verdict, Verdict::kNoInterval);
  EXPECT_NE(tpot.note.find("no per-request records"), std::string::npos);
  EXPECT_LT(tpot.delta_pct, 0);
}

// Where the TTFT went on each side: descriptive, beside the TTFT row that judges the change; a
// part one side lacks is shown with no change. And the parts are read from a result as stored.
TEST(VerdictCompare, TtftPartsShowWhichPartMoved) {
  auto a = point(10, 1), b = point(10, 2), b2 = point(10, 3);
  a.ttft_parts = {{"kv_transfer", 2.0}, {"prefill", 5.0}};
  b.ttft_parts = {{"kv_transfer", 6.0}, {"prefill", 5.0}, {"unattributed", 1.0}};
  b2.ttft_parts = {{"kv_transfer", 8.0}, {"prefill", 5.0}};
  b2.run = "r2";
  const auto c = compare(side({a}), side({b, b2}), fast());
  ASSERT_EQ(c.pairs.size(), 1u);
  const auto& parts = c.pairs[0].ttft_parts;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].part, "kv_transfer");
  EXPECT_DOUBLE_EQ(parts[0].base, 2.0);
  EXPECT_DOUBLE_EQ(parts[0].head, 7.0);  // the mean of the head's repeats
  EXPECT_TRUE(std::isnan(parts[2].base));
  EXPECT_NE(comparison_text(c).find("kv_transfer 2.00 \u2192 7.00 (+5.00)"), std::string::npos)
      << comparison_text(c);
  const auto j = comparison_json(c);
  const auto& jp = j.at("pairs").at(0).at("ttft_parts").as_array();
  EXPECT_DOUBLE_EQ(jp.at(0).at("delta_ms").as_double(), 5.0);
  EXPECT_TRUE(jp.at(2).at("base_ms").is_null());

  const auto read = point_from_result(
      boost::json::parse(
          R"({"ttft_attribution":{"parts":{"router":{"median_ms":0.5}},)"
          R"("unattributed":{"median_ms":0.25}},)"
          R"("server_timing":{"queue":{"median_ms":3},"engine_ttft":{"median_ms":9},)"
          R"("outside_engine":{"median_ms":1}}})")
          .as_object(),
      "f.json");
  ASSERT_EQ(read.ttft_parts.size(), 5u);
  EXPECT_EQ(read.ttft_parts[1].first, "unattributed");
  EXPECT_EQ(read.ttft_parts[3].first, "engine ttft");
  EXPECT_DOUBLE_EQ(read.ttft_parts[3].second, 9);
}

// Another topology under one config key is another configuration: 1P1D and 2P1D at the same
// concurrency are two pairs, never two repeats of one; a side with one parallelism against a side
// with another pairs them, and says so.
TEST(VerdictCompare, TopologyIsPartOfTheConfiguration) {
  using F = metrics::IdentityField;
  auto at = [](SidePoint p, const char* par) {
    p.identity.set(F::kParallelism, par);
    return p;
  };
  const auto c =
      compare(side({at(point(10, 1), "P1xTP1 D1xTP1"), at(point(10, 2), "P2xTP1 D1xTP1")}),
              side({at(point(10, 3), "P1xTP1 D1xTP1"), at(point(10, 4), "P2xTP1 D1xTP1")}), fast());
  ASSERT_EQ(c.pairs.size(), 2u);
  for (const auto& pr : c.pairs) {
    EXPECT_EQ(pr.base_repeats, 1u);
    EXPECT_EQ(pr.base_parallelism, pr.head_parallelism);
  }
  EXPECT_NE(comparison_text(c).find("[P2xTP1 D1xTP1]"), std::string::npos);

  const auto tp = compare(side({at(point(10, 1), "TP4")}), side({at(point(7, 2), "TP8")}), fast());
  ASSERT_EQ(tp.pairs.size(), 1u);
  EXPECT_NE(comparison_text(tp).find("[TP4 \u2192 TP8]"), std::string::npos);
  EXPECT_EQ(comparison_json(tp).at("pairs").at(0).at("head_parallelism").as_string(), "TP8");

  // Two base topologies, one head topology that matches neither: no guess, each says why.
  const auto two = compare(side({at(point(10, 1), "TP4"), at(point(10, 2), "TP2")}),
                           side({at(point(10, 3), "TP8")}), fast());
  EXPECT_TRUE(two.pairs.empty());
  ASSERT_EQ(two.excluded.size(), 3u);
  EXPECT_NE(two.excluded[0].why.find("has TP8, not TP2"), std::string::npos) << two.excluded[0].why;
}

TEST(VerdictCompare, RepeatsGiveAWelchInterval) {
  auto rep = [](double gap, uint64_t seed, const std::string& run) {
    auto p = point(gap, seed);
    p.run = run;
    return p;
  };
  const auto c = compare(side({rep(10, 1, "a1"), rep(10, 2, "a2"), rep(10, 3, "a3")}),
                         side({rep(7, 4, "b1"), rep(7, 5, "b2"), rep(7, 6, "b3")}), fast());
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_EQ(c.pairs[0].base_repeats, 3u);
  const auto& tpot = metric(c.pairs[0], "median_tpot_ms");
  EXPECT_EQ(tpot.interval, "welch");
  EXPECT_TRUE(tpot.welch_pct.valid());
  EXPECT_TRUE(tpot.bootstrap_pct.valid());
  EXPECT_EQ(tpot.verdict, Verdict::kImproved);
}

TEST(VerdictCompare, ExplicitPairsMatchDifferentKeys) {
  auto b = point(10, 1);
  b.config_key = "old";
  auto h = point(10, 2);
  h.config_key = "new";
  EXPECT_TRUE(compare(side({b}), side({h}), fast()).pairs.empty());
  auto o = fast();
  o.pairs["old"] = "new";
  const auto c = compare(side({b}), side({h}), o);
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_EQ(c.pairs[0].head_key, "new");
}

TEST(VerdictCompare, AgenticCurvesUseE2eNormalizedInteractivity) {
  auto agentic = [](double gap, uint64_t seed, int64_t conc, double norm) {
    auto p = point(gap, seed, conc);
    p.agentic = true;
    p.e2e_norm_intvty = norm;
    return p;
  };
  const auto c = compare(side({agentic(10, 1, 2, 50), agentic(10, 2, 8, 30)}),
                         side({agentic(8, 3, 2, 60), agentic(8, 4, 8, 40)}), fast());
  ASSERT_EQ(c.curves.size(), 1u);
  EXPECT_EQ(c.curves[0].x_metric, "e2e_norm_intvty_p90");
  ASSERT_EQ(c.curves[0].base_frontier.size(), 2u);
  EXPECT_DOUBLE_EQ(c.curves[0].base_frontier[0].x, 30);
  EXPECT_DOUBLE_EQ(c.curves[0].base_frontier[1].x, 50);
  EXPECT_TRUE(c.curves[0].delta.overlap);  // [40, 50] is covered by both
  EXPECT_DOUBLE_EQ(c.curves[0].delta.lo, 40);
  EXPECT_DOUBLE_EQ(c.curves[0].delta.hi, 50);
}

TEST(VerdictCompare, MarkdownPutsTheVerdictFirstAndNamesConfoundersBeforeTheTable) {
  const auto c = compare(side({point(10, 1, 4, 60, "model-a")}),
                         side({point(7, 2, 4, 60, "model-b")}), fast());
  const std::string md = comparison_markdown(c);
  EXPECT_TRUE(md.starts_with("### inferbench compare: " + c.verdict_line() + "\n"));
  const auto named = md.find("differ besides the change: **model**");
  ASSERT_NE(named, std::string::npos) << md;
  EXPECT_LT(named, md.find("| CONFIG |"));
  EXPECT_LT(md.find("| CONFIG |"), md.find("**Excluded**"));
  const std::string text = comparison_text(c);
  EXPECT_LT(text.find("CONFOUNDERS"), text.find("METRICS"));
}

}  // namespace
}  // namespace ib::verdict

namespace ib::verdict {
namespace {

SidePoint eval_point(double strict, double se,
                     metrics::PointStatus status = metrics::PointStatus::kOk) {
  SidePoint p;
  p.source = "test";
  p.config_key = "cfg";
  p.workload_key = "gsm8k:{}";
  p.workload_label = "gsm8k 5-shot chat";
  p.concurrency = 64;
  p.status = status;
  metrics::EvalSummary e;
  e.task = "gsm8k";
  e.em_strict = strict;
  e.em_strict_se = se;
  e.em_flexible = strict + 0.01;
  e.em_flexible_se = se;
  e.n_eff = 1319;
  p.eval = e;
  return p;
}

TEST(VerdictCompare, AccuracyChangesHaveANormalIntervalAndAFailedGateIsStillCompared) {
  Side base{"base", {"b"}, {eval_point(0.95, 0.006)}};
  // The head's eval failed its gate (invalid by eval_gate only): compared, and regressed.
  SidePoint gated = eval_point(0.85, 0.01, metrics::PointStatus::kInvalid);
  gated.validity.add(metrics::InvalidKind::kEvalGate, "eval gate: below 0.9");
  Side head{"head", {"h"}, {gated}};
  Comparison c = compare(base, head, CompareOptions{});
  ASSERT_EQ(c.pairs.size(), 1u);
  ASSERT_TRUE(c.excluded.empty());
  const auto& acc = c.pairs[0].accuracy;
  ASSERT_EQ(acc.size(), 2u);
  EXPECT_EQ(acc[0].filter, "strict-match");
  EXPECT_NEAR(acc[0].delta, -0.10, 1e-12);
  const double half = 1.959963984540054 * std::sqrt(0.006 * 0.006 + 0.01 * 0.01);
  EXPECT_NEAR(acc[0].ci.lo, -0.10 - half, 1e-6);
  EXPECT_NEAR(acc[0].ci.hi, -0.10 + half, 1e-6);
  EXPECT_EQ(acc[0].verdict, Verdict::kRegressed);
  EXPECT_EQ(c.regressed, 2);
  EXPECT_TRUE(c.pairs[0].metrics.empty());
  EXPECT_TRUE(c.curves.empty());
  EXPECT_NE(c.verdict_line().find("REGRESSED"), std::string::npos);
  EXPECT_NE(comparison_text(c).find("-10.0 pts"), std::string::npos) << comparison_text(c);
  // Within the noise: no significant change. A failed eval (no scores) is excluded.
  Side near{"head", {"h"}, {eval_point(0.945, 0.006)}};
  Comparison same = compare(base, near, CompareOptions{});
  ASSERT_EQ(same.pairs.size(), 1u);
  EXPECT_EQ(same.pairs[0].accuracy[0].verdict, Verdict::kNoChange);
  SidePoint failed = eval_point(0.9, 0.01, metrics::PointStatus::kFailed);
  failed.validity.add(metrics::InvalidKind::kFailureRate, "none answered");
  Comparison ex = compare(base, Side{"head", {"h"}, {failed}}, CompareOptions{});
  EXPECT_TRUE(ex.pairs.empty());
  EXPECT_EQ(ex.excluded.size(), 2u);  // the failed head and the base without a partner
}

}  // namespace
}  // namespace ib::verdict
