// The screening arithmetic (tune/screen.h) on values whose answer is known.
#include "tune/screen.h"

#include <gtest/gtest.h>

#include <set>

namespace ib::tune {
namespace {

TEST(Screen, HalvingKeepsTheTopAndDoublesThePasses) {
  // 5 candidates, keep 2, eta 2: 5 -> 3 -> 2, passes 3, 6, 12.
  const HalvingPlan p = plan_halving(5, 2, 2, 3);
  EXPECT_EQ(p.candidates, (std::vector<int>{5, 3, 2}));
  EXPECT_EQ(p.passes, (std::vector<int>{3, 6, 12}));
  EXPECT_EQ(p.points(), 3 * 6 + 6 * 4 + 12 * 3 + 3);
  // Already at most `keep`: one round.
  const HalvingPlan one = plan_halving(2, 2, 2, 3);
  EXPECT_EQ(one.rounds(), 1);
  EXPECT_EQ(one.points(), 3 * 3 + 1);
}

TEST(Screen, EveryCandidateTakesEveryPositionAndTheOrderIsSeeded) {
  const int n = 4;
  std::vector<std::set<int>> positions(n);
  for (int pass = 0; pass < n; ++pass) {
    const auto order = pass_order(n, 7, pass);
    ASSERT_EQ(order.size(), static_cast<size_t>(n));
    for (int pos = 0; pos < n; ++pos) positions[static_cast<size_t>(order[static_cast<size_t>(pos)])].insert(pos);
  }
  for (const auto& p : positions) EXPECT_EQ(p.size(), static_cast<size_t>(n));
  EXPECT_EQ(pass_order(n, 7, 1), pass_order(n, 7, 1));
  EXPECT_EQ(pass_order(n, 7, 0), pass_order(n, 7, n));
}

TEST(Screen, RatiosToTheAdjacentBaselinesCancelASteadyDrift) {
  // The machine slows by 1% a pass; the candidate is 10% faster than the baseline at any time.
  std::vector<double> base, cand;
  for (int p = 0; p <= 6; ++p) base.push_back(1000 * (1 - 0.01 * p));
  for (int p = 0; p < 6; ++p) cand.push_back(1.10 * (base[static_cast<size_t>(p)] + base[static_cast<size_t>(p) + 1]) / 2);
  auto s = score(cand, base, true, 0.95, 2);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->delta_pct, 10, 1e-9);
  EXPECT_EQ(s->passes, 6);
  // Identical ratios: a zero-width interval at +10%: improved.
  EXPECT_NEAR(s->ci_pct.lo, 10, 1e-6);
  EXPECT_EQ(s->verdict, verdict::Verdict::kImproved);
  const Drift d = baseline_drift(base, 2);
  EXPECT_NEAR(d.pct, -100.0 * 0.06 / 0.97, 1e-6);
  EXPECT_TRUE(d.significant);
}

TEST(Screen, LowerIsBetterInvertsTheRatio) {
  // A latency objective: 20% lower is a 25% improvement in the inverted ratio.
  const std::vector<double> base = {100, 100, 100};
  const std::vector<double> cand = {80, 80};
  auto s = score(cand, base, false, 0.95, 2);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->delta_pct, 25, 1e-9);
  EXPECT_FALSE(score(std::vector<double>{80, NAN}, base, false, 0.95, 2).has_value());
  EXPECT_FALSE(score(cand, std::vector<double>{100, 100}, false, 0.95, 2).has_value());
}

TEST(Screen, ARoundDropsRegressionsAndNoChangesThenKeepsTheBest) {
  auto mk = [](double delta, double lo, double hi, verdict::Verdict v) {
    Score s;
    s.delta_pct = delta;
    s.ci_pct = {lo, hi};
    s.passes = 3;
    s.verdict = v;
    return std::optional<Score>(s);
  };
  using V = verdict::Verdict;
  std::vector<std::optional<Score>> scores = {
      mk(12, 9, 15, V::kImproved),     // the best
      mk(-8, -11, -5, V::kRegressed),  // worse
      mk(0.2, -0.8, 1.1, V::kNoChange),  // cannot reach +2%
      mk(4, -1, 9, V::kNoChange),      // noisy, might be better: ranked
      std::nullopt,                    // a failed point
      mk(3, 0.5, 5.5, V::kNoChange)};  // ranked below 4
  const auto d = decide_round(scores, 2, 2);
  EXPECT_EQ(d[0], ScreenDecision::kAdvance);
  EXPECT_EQ(d[1], ScreenDecision::kRegressed);
  EXPECT_EQ(d[2], ScreenDecision::kNoChange);
  EXPECT_EQ(d[3], ScreenDecision::kAdvance);
  EXPECT_EQ(d[4], ScreenDecision::kNotMeasured);
  EXPECT_EQ(d[5], ScreenDecision::kRankedOut);
  EXPECT_EQ(to_string(d[2]), "no significant change");
}

}  // namespace
}  // namespace ib::tune
