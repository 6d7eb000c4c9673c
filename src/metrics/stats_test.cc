#include "metrics/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace ib::metrics {
namespace {

// Expected values computed with numpy 1.26: np.percentile(x, q) (method="linear"), np.std(x).
TEST(Percentile, MatchesNumpyLinear) {
  std::vector<double> x = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 99), 3.97);
  EXPECT_NEAR(percentile_sorted(x, 99.9), 3.997, 1e-12);
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 0), 1);
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 100), 4);
}

TEST(Percentile, TenValues) {
  std::vector<double> x = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 50), 55);
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 90), 91);    // h = 8.1
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 99), 99.1);  // h = 8.91
}

TEST(Percentile, SingleValue) {
  std::vector<double> x = {7.5};
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 1), 7.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(x, 99.9), 7.5);
}

TEST(Summarize, PopulationStdAndUnsortedInput) {
  std::vector<double> x = {4, 1, 3, 2};
  std::vector<double> q = {90, 99};
  Summary s = summarize(x, q);
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.std, 1.118033988749895);  // np.std([1,2,3,4]) (ddof=0)
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  ASSERT_EQ(s.percentiles.size(), 2u);
  EXPECT_DOUBLE_EQ(s.percentiles[0], 3.7);
  EXPECT_DOUBLE_EQ(s.percentiles[1], 3.97);
}

TEST(Summarize, EmptyGivesZeros) {
  std::vector<double> x;
  std::vector<double> q = {99};
  Summary s = summarize(x, q);
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.std, 0);
  ASSERT_EQ(s.percentiles.size(), 1u);
  EXPECT_EQ(s.percentiles[0], 0);
}

}  // namespace
}  // namespace ib::metrics
