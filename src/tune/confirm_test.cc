// Stage 3's decision rule (tune/confirm.h) on synthetic figures: the objective's Welch interval
// over the repeats, the guards, accuracy, confounding and the SLO values decide it, in that order.
#include "tune/confirm.h"

#include <gtest/gtest.h>

namespace ib::tune {
namespace {

Objective tput() {
  auto o = make_objective("tput_per_gpu", {}, 32, false);
  EXPECT_TRUE(o.ok());
  return *o;
}

// Five repeats of a baseline near 100 against `head`.
ConfirmResult repeats(std::vector<double> head) {
  ConfirmResult r;
  r.candidate_id = "c1";
  r.base_values = {100, 101, 99, 100, 100};
  r.head_values = std::move(head);
  return r;
}

// +11% with a Welch interval of about [+10, +12].
ConfirmResult improved() {
  return repeats({111, 112, 110, 111, 111});
}

GuardResult guard(const std::string& verdict) {
  GuardResult g;
  g.guard = *parse_guard("median_tpot_ms", 5);
  g.delta_pct = verdict == "regressed" ? 48 : 1;
  g.ci_pct = verdict == "regressed" ? verdict::Interval{40, 56} : verdict::Interval{-3, 4};
  if (verdict == "inconclusive") g.ci_pct = {-3, 9};
  g.verdict = verdict;
  return g;
}

TEST(Confirm, ImprovedWithGuardsWithinIsConfirmed) {
  auto r = improved();
  r.guards = {guard("within")};
  decide_confirmation(r, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(r.decision, ConfirmDecision::kConfirmed) << r.reason;
  EXPECT_NEAR(r.delta_pct, 11, 0.01);
  ASSERT_TRUE(r.ci_pct.valid());
  EXPECT_GT(r.ci_pct.lo, 9);
  EXPECT_LT(r.ci_pct.hi, 13);
  EXPECT_NE(r.reason.find("1 guard within tolerance"), std::string::npos) << r.reason;
}

TEST(Confirm, AGuardThatRegressedRejectsAnImprovement) {
  auto r = improved();
  r.guards = {guard("within"), guard("regressed")};
  decide_confirmation(r, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(r.decision, ConfirmDecision::kRejected);
  EXPECT_NE(r.reason.find("guard median_tpot_ms +48.00%"), std::string::npos) << r.reason;
}

TEST(Confirm, AGuardNotShownWithinToleranceIsInconclusive) {
  auto r = improved();
  r.guards = {guard("inconclusive")};
  decide_confirmation(r, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(r.decision, ConfirmDecision::kInconclusive);
  EXPECT_NE(r.reason.find("--confirm-repeats 10"), std::string::npos) << r.reason;
}

TEST(Confirm, NoSignificantChangeAndRegressionsAreRejected) {
  auto r = repeats({100, 102, 99, 101, 100});
  decide_confirmation(r, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(r.decision, ConfirmDecision::kRejected);
  EXPECT_NE(r.reason.find("no significant change"), std::string::npos) << r.reason;
  // Interval beyond the minimum effect only in part: not improved.
  auto partly = repeats({101, 109, 103, 107, 105});  // +5%, interval about [+1, +9]
  decide_confirmation(partly, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(partly.decision, ConfirmDecision::kRejected);
  EXPECT_NE(partly.reason.find("no significant change"), std::string::npos) << partly.reason;
  auto worse = repeats({93, 94, 92, 93, 93});
  decide_confirmation(worse, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(worse.decision, ConfirmDecision::kRejected);
  EXPECT_NE(worse.reason.find("regressed"), std::string::npos);
}

TEST(Confirm, LowerIsBetterObjectivesImproveDownwards) {
  auto o = make_objective("median_ttft_ms", {}, 32, false);
  ASSERT_TRUE(o.ok());
  ConfirmResult r;
  r.base_values = {100, 100, 100};
  r.head_values = {80, 81, 79};
  decide_confirmation(r, *o, 0.95, 2, 0.01, 3);
  EXPECT_EQ(r.decision, ConfirmDecision::kConfirmed) << r.reason;
}

TEST(Confirm, AccuracyConfoundingAndTheSloDecideToo) {
  auto acc = improved();
  verdict::AccuracyDelta a;
  a.filter = "strict-match";
  a.delta = -0.05;
  a.ci = {-0.08, -0.02};
  a.verdict = verdict::Verdict::kRegressed;
  acc.accuracy = {a};
  decide_confirmation(acc, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(acc.decision, ConfirmDecision::kRejected);
  EXPECT_NE(acc.reason.find("accuracy regressed"), std::string::npos);

  auto unsure = improved();
  a.ci = {-0.03, 0.01};
  a.verdict = verdict::Verdict::kNoChange;
  unsure.accuracy = {a};
  decide_confirmation(unsure, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(unsure.decision, ConfirmDecision::kInconclusive) << unsure.reason;

  auto confounded = improved();
  confounded.confounded = true;
  confounded.compare_verdict = "CONFOUNDED: image differs";
  decide_confirmation(confounded, tput(), 0.95, 2, 0.01, 5);
  EXPECT_EQ(confounded.decision, ConfirmDecision::kInconclusive);

  // The operating point is an edge: repeats on both sides of the bound are fine while the mean
  // meets it within the minimum effect (2% of 10 ms here).
  auto s = make_objective("tput-at-slo", {"median_tpot_ms<=10"}, 8, false);
  ASSERT_TRUE(s.ok());
  auto edge = improved();
  edge.slo_met = 2;
  edge.slo_values = {{9.9, 10.1, 10.3, 9.8, 10.2}};
  decide_confirmation(edge, *s, 0.95, 2, 0.01, 5);
  EXPECT_EQ(edge.decision, ConfirmDecision::kConfirmed) << edge.reason;
  auto miss = improved();
  miss.slo_values = {{10.4, 10.5, 10.3, 10.6, 10.2}};
  decide_confirmation(miss, *s, 0.95, 2, 0.01, 5);
  EXPECT_EQ(miss.decision, ConfirmDecision::kRejected);
  EXPECT_NE(miss.reason.find("misses the SLO: median_tpot_ms averages 10.4 over 5 repeats"),
            std::string::npos)
      << miss.reason;
}

TEST(Confirm, TooFewRepeatsAreNotMeasured) {
  ConfirmResult r;
  r.base_values = {100, std::nan("")};
  r.head_values = {std::nan(""), 110};
  decide_confirmation(r, tput(), 0.95, 2, 0.01, 2);
  EXPECT_EQ(r.decision, ConfirmDecision::kNotMeasured);
}

TEST(Confirm, Guards) {
  auto g = parse_guard("p99_ttft_ms:10%", 5);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->metric, "p99_ttft_ms");
  EXPECT_EQ(g->tolerance_pct, 10);
  EXPECT_FALSE(g->higher_is_better);
  auto bad = parse_guard("speed", 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--guard 'speed': 'speed' is not a headline metric"),
            std::string::npos);
  auto tol = parse_guard("p99_ttft_ms:x", 5);
  ASSERT_FALSE(tol.ok());
  EXPECT_NE(tol.error().message.find("not a percentage"), std::string::npos);
  // The objective's own metric is no guard; an SLO's metric is bounded by the SLO already.
  auto o = make_objective("median_tpot_ms", {}, 8, false);
  ASSERT_TRUE(o.ok());
  for (const auto& x : default_guards(*o, 5)) EXPECT_NE(x.metric, "median_tpot_ms");
  EXPECT_EQ(default_guards(*o, 5).size(), 4u);
  auto s = make_objective("tput-at-slo", {"p99_ttft_ms<=500"}, 8, false);
  ASSERT_TRUE(s.ok());
  for (const auto& x : default_guards(*s, 5)) EXPECT_NE(x.metric, "p99_ttft_ms");
}

}  // namespace
}  // namespace ib::tune
