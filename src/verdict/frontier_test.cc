#include "verdict/frontier.h"

#include <gtest/gtest.h>

namespace ib::verdict {
namespace {

TEST(Frontier, KeepsOnlyNonDominatedPointsSortedByInteractivity) {
  // (x interactivity, y throughput per GPU); (20, 50) is dominated by (30, 60).
  std::vector<CurvePoint> pts = {{10, 100, 1}, {30, 60, 2}, {20, 50, 3}, {50, 20, 4},
                                 {40, 20, 5},  {0, 500, 6}, {-1, 9, 7}};
  const auto f = pareto_frontier(pts);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].tag, 1);
  EXPECT_EQ(f[1].tag, 2);
  EXPECT_EQ(f[2].tag, 4);  // (40, 20) is dominated by (50, 20); x <= 0 is left out
  for (size_t i = 1; i < f.size(); ++i) {
    EXPECT_GT(f[i].x, f[i - 1].x);
    EXPECT_LT(f[i].y, f[i - 1].y);
  }
}

TEST(Frontier, EqualInteractivityKeepsTheHigherThroughput) {
  const auto f = pareto_frontier({{10, 50, 1}, {10, 80, 2}, {10, 80, 3}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tag, 2);
}

TEST(Frontier, MonotoneInterpolationPassesThroughPointsAndNeverOvershoots) {
  const std::vector<CurvePoint> f = {{10, 100}, {20, 90}, {30, 30}, {60, 25}};
  MonotoneCurve c(f);
  for (const auto& p : f) EXPECT_NEAR(*c.at(p.x), p.y, 1e-9);
  double prev = *c.at(10);
  for (double x = 10.1; x <= 60; x += 0.1) {
    const double y = *c.at(x);
    EXPECT_LE(y, prev + 1e-9) << x;  // monotone like the points
    prev = y;
  }
  // Between two points the curve stays between their values.
  for (double x = 20; x <= 30; x += 0.5) {
    EXPECT_LE(*c.at(x), 90 + 1e-9);
    EXPECT_GE(*c.at(x), 30 - 1e-9);
  }
}

TEST(Frontier, NoExtrapolationOutsideTheCoveredRange) {
  MonotoneCurve c({{10, 100}, {20, 50}});
  EXPECT_FALSE(c.at(9.99).has_value());
  EXPECT_FALSE(c.at(20.01).has_value());
  EXPECT_TRUE(c.at(10).has_value());
  EXPECT_FALSE(c.area(5, 15).has_value());
  EXPECT_FALSE(MonotoneCurve({}).at(1).has_value());
}

TEST(Frontier, AreaOfALineIsExact) {
  // Two points: the curve is the straight line (end slopes = secant): area of a trapezoid.
  MonotoneCurve c({{10, 100}, {20, 50}});
  EXPECT_NEAR(*c.area(10, 20), 750, 1e-9);
  EXPECT_NEAR(*c.area(10, 15), 5 * (100 + 75) / 2.0, 1e-9);
}

TEST(Frontier, ComparisonAtEqualInteractivityOverTheCommonRangeOnly) {
  // Head: 10% more throughput at every interactivity, over a wider range.
  const std::vector<CurvePoint> base = {{10, 100}, {20, 80}, {40, 20}};
  const std::vector<CurvePoint> head = {{5, 120}, {10, 110}, {20, 88}, {40, 22}, {80, 5}};
  const auto d = compare_frontiers(base, head);
  ASSERT_TRUE(d.overlap);
  EXPECT_DOUBLE_EQ(d.lo, 10);
  EXPECT_DOUBLE_EQ(d.hi, 40);
  ASSERT_EQ(d.levels.size(), 3u);  // 5 and 80 are outside what the base covers
  for (const auto& l : d.levels) EXPECT_NEAR(l.delta_pct, 10, 1e-9) << l.x;
  EXPECT_NEAR(d.mean_delta_pct, 10, 1e-9);
  EXPECT_GT(d.area_delta_pct, 0);

  const auto none = compare_frontiers({{10, 100}, {20, 80}}, {{30, 100}, {40, 80}});
  EXPECT_FALSE(none.overlap);
  EXPECT_TRUE(none.levels.empty());
}

}  // namespace
}  // namespace ib::verdict
