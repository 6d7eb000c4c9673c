#include "verdict/stats.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ib::verdict {
namespace {

TEST(Bootstrap, MeanOfNormalSamplesCoversTheMeanWithTheExpectedWidth) {
  // 400 samples of N(100, 10²): the standard error of the mean is 10/√400 = 0.5, so a 95%
  // interval is about 2·1.96·0.5 = 1.96 wide and contains 100 (for this fixed seed).
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal(100, 10);
  std::vector<double> xs(400);
  for (auto& x : xs) x = normal(gen);
  const Interval ci = bootstrap_mean(xs, 2000, 42, 0.95);
  ASSERT_TRUE(ci.valid());
  EXPECT_LT(ci.lo, 100);
  EXPECT_GT(ci.hi, 100);
  EXPECT_NEAR(ci.hi - ci.lo, 1.96, 0.25);
  // Fixed seed: the same interval every time.
  const Interval again = bootstrap_mean(xs, 2000, 42, 0.95);
  EXPECT_EQ(ci.lo, again.lo);
  EXPECT_EQ(ci.hi, again.hi);
  // A higher confidence gives a wider interval.
  const Interval wide = bootstrap_mean(xs, 2000, 42, 0.99);
  EXPECT_GT(wide.hi - wide.lo, ci.hi - ci.lo);
}

TEST(Bootstrap, TooFewSamplesGiveNoInterval) {
  std::vector<double> one = {5};
  EXPECT_FALSE(bootstrap_mean(one, 2000, 1, 0.95).valid());
  EXPECT_FALSE(percentile_interval({1.0}, 0.95).valid());
}

TEST(Bootstrap, PercentileIntervalIsNumpyLinear) {
  std::vector<double> reps;
  for (int i = 0; i <= 100; ++i) reps.push_back(i);
  const Interval ci = percentile_interval(reps, 0.90);
  EXPECT_DOUBLE_EQ(ci.lo, 5);
  EXPECT_DOUBLE_EQ(ci.hi, 95);
}

TEST(VerdictStudentT, QuantilesMatchTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228139, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.706205, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.95, 4), 2.131847, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.025, 10), -2.228139, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.959966, 1e-4);
}

TEST(VerdictWelch, MatchesAHandComputedInterval) {
  // base: mean 10, sample variance 1 (n 3); head: mean 12, sample variance 4 (n 3).
  // se = √(1/3 + 4/3) = 1.290994; df = (5/3)² / ((1/3)²/2 + (4/3)²/2) = 2.777778 / 0.944444
  // = 2.941176; t(0.975, 2.941176) = 3.21876 (Simpson integration of the t density) → 2 ± 4.1554.
  const std::vector<double> base = {9, 10, 11};
  const std::vector<double> head = {10, 12, 14};
  auto w = welch_interval(base, head, 0.95);
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->diff, 2);
  EXPECT_NEAR(w->se, 1.290994, 1e-6);
  EXPECT_NEAR(w->df, 2.941176, 1e-6);
  EXPECT_NEAR(w->ci.lo, 2 - 3.21876 * 1.290994, 1e-3);
  EXPECT_NEAR(w->ci.hi, 2 + 3.21876 * 1.290994, 1e-3);
}

TEST(VerdictWelch, OneSingleRunBorrowsTheOtherSidesVariance) {
  const std::vector<double> base = {10};
  const std::vector<double> head = {10, 12, 14};  // variance 4
  auto w = welch_interval(base, head, 0.95);
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->diff, 2);
  EXPECT_NEAR(w->se, std::sqrt(4.0 / 1 + 4.0 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(w->df, 2);
  EXPECT_FALSE(welch_interval(base, base, 0.95).has_value());  // nothing repeated
}

TEST(VerdictRule, EdgesOfTheMinimumEffect) {
  // Higher is better.
  EXPECT_EQ(decide({2.0, 5.0}, true, 2), Verdict::kImproved);  // the bound itself counts
  EXPECT_EQ(decide({1.99, 5.0}, true, 2), Verdict::kNoChange);
  EXPECT_EQ(decide({-5.0, -2.0}, true, 2), Verdict::kRegressed);
  EXPECT_EQ(decide({-5.0, -1.99}, true, 2), Verdict::kNoChange);
  EXPECT_EQ(decide({-1.0, 1.0}, true, 2), Verdict::kNoChange);
  // Lower is better (latency): a negative change is the improvement.
  EXPECT_EQ(decide({-5.0, -2.0}, false, 2), Verdict::kImproved);
  EXPECT_EQ(decide({2.0, 5.0}, false, 2), Verdict::kRegressed);
  EXPECT_EQ(decide({0.5, 5.0}, false, 2), Verdict::kNoChange);
  // An interval that excludes 0 but not the minimum effect is no significant change.
  EXPECT_EQ(decide({0.5, 1.5}, true, 2), Verdict::kNoChange);
  EXPECT_EQ(decide({0.5, 1.5}, true, 0), Verdict::kImproved);
  EXPECT_EQ(decide({}, true, 2), Verdict::kNoInterval);
  EXPECT_EQ(verdict_name(Verdict::kNoChange), "no significant change");
}

}  // namespace
}  // namespace ib::verdict
