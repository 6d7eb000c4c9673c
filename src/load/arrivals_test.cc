#include "load/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace ib::load {
namespace {

struct GapStats {
  double mean = 0, cv = 0;  // coefficient of variation of the gaps
};

GapStats gap_stats(const std::vector<int64_t>& t) {
  std::vector<double> gaps;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back(static_cast<double>(t[i] - t[i - 1]) / 1e9);
  GapStats s;
  s.mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
  double var = 0;
  for (double g : gaps) var += (g - s.mean) * (g - s.mean);
  var /= gaps.size();
  s.cv = std::sqrt(var) / s.mean;
  return s;
}

TEST(Arrivals, ConstantIsEvenlySpacedWithoutDrift) {
  ArrivalSpec s{3.0, ArrivalProcess::kConstant, 1.0, 0};
  auto t = arrival_offsets_ns(s, 3001);
  EXPECT_EQ(t[0], 0);
  EXPECT_EQ(t[1], 333333333);
  // After 3000 gaps of 1/3 s the schedule is at exactly 1000 s: no accumulated rounding.
  EXPECT_NEAR(static_cast<double>(t[3000]), 1000e9, 2.0);
}

TEST(Arrivals, PoissonHasTheRequestedRateAndUnitCv) {
  ArrivalSpec s{50.0, ArrivalProcess::kPoisson, 1.0, 1};
  auto g = gap_stats(arrival_offsets_ns(s, 20001));
  EXPECT_NEAR(g.mean, 0.02, 0.02 * 0.03);  // 20k samples: standard error ~0.7%
  EXPECT_NEAR(g.cv, 1.0, 0.03);
}

TEST(Arrivals, GammaBurstinessSetsTheVariability) {
  // Gamma gaps with shape k have CV = 1/sqrt(k).
  for (double k : {0.25, 1.0, 4.0}) {
    ArrivalSpec s{10.0, ArrivalProcess::kGamma, k, 2};
    auto g = gap_stats(arrival_offsets_ns(s, 40001));
    EXPECT_NEAR(g.mean, 0.1, 0.1 * 0.05) << "k=" << k;
    EXPECT_NEAR(g.cv, 1.0 / std::sqrt(k), 0.06 / std::sqrt(k)) << "k=" << k;
  }
}

TEST(Arrivals, DeterministicPerSeed) {
  ArrivalSpec a{10.0, ArrivalProcess::kPoisson, 1.0, 5};
  ArrivalSpec b = a;
  b.seed = 6;
  EXPECT_EQ(arrival_offsets_ns(a, 10), arrival_offsets_ns(a, 10));
  EXPECT_NE(arrival_offsets_ns(a, 10), arrival_offsets_ns(b, 10));
}

TEST(Arrivals, ValidationNamesTheOption) {
  ArrivalSpec s;
  s.rate = 0;
  ASSERT_FALSE(validate(s).ok());
  EXPECT_NE(validate(s).error().message.find("--request-rate"), std::string::npos);
  s.rate = 1;
  s.burstiness = -1;
  EXPECT_NE(validate(s).error().message.find("--burstiness"), std::string::npos);
  EXPECT_EQ(parse_arrival("gamma"), ArrivalProcess::kGamma);
  EXPECT_FALSE(parse_arrival("uniform"));
}

}  // namespace
}  // namespace ib::load
