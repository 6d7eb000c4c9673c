// The SLO concurrency search (tune/search.h) against synthetic thresholds whose answer is known:
// the bracket it ends on, how many probes it takes, and that it never probes a value twice.
#include "tune/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <vector>

namespace ib::tune {
namespace {

// Runs the search to the end against `meets`, checking every probe is new and in range.
std::vector<int64_t> run(SloSearch& s, int64_t min, int64_t max,
                         const std::function<bool(int64_t)>& meets) {
  std::vector<int64_t> probed;
  std::set<int64_t> seen;
  while (auto c = s.next()) {
    EXPECT_GE(*c, min);
    EXPECT_LE(*c, max);
    EXPECT_TRUE(seen.insert(*c).second) << "probed " << *c << " twice";
    probed.push_back(*c);
    s.record(*c, meets(*c));
    if (probed.size() > 200) {
      ADD_FAILURE() << "no end";
      break;
    }
  }
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.probes(), static_cast<int>(probed.size()));
  return probed;
}

int ceil_log2(double x) {
  return x <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(x)));
}

// Meets iff c <= t, the search over [min, max] from `start`: the exact bracket with tolerance 0.
void check_exact(int64_t start, int64_t min, int64_t max, int64_t t) {
  SloSearch s(start, min, max, 0);
  const auto probed = run(s, min, max, [t](int64_t c) { return c <= t; });
  SCOPED_TRACE(::testing::Message()
               << "start " << start << " min " << min << " max " << max << " threshold " << t);
  if (t >= max) {
    EXPECT_EQ(s.lo(), max);
    EXPECT_EQ(s.hi(), 0);
  } else if (t < min) {
    EXPECT_EQ(s.lo(), 0);
    EXPECT_EQ(s.hi(), min);
  } else {
    EXPECT_EQ(s.lo(), t);
    EXPECT_EQ(s.hi(), t + 1);
  }
  EXPECT_LE(static_cast<int>(probed.size()), 2 * ceil_log2(static_cast<double>(max)) + 2);
}

TEST(SloSearch, FindsEveryThresholdExactly) {
  for (int64_t t = 0; t <= 1100; ++t) check_exact(32, 1, 1024, t);
}

TEST(SloSearch, FindsEveryThresholdFromAnyStartAndRange) {
  for (int64_t min : {1, 3, 8}) {
    for (int64_t max : {min, min + 1, int64_t{100}, int64_t{1000}}) {
      for (int64_t start : {min, (min + max) / 2, max}) {
        for (int64_t t = 0; t <= max + 2; ++t) check_exact(start, min, max, t);
      }
    }
  }
}

TEST(SloSearch, HugeRangesDoNotOverflow) {
  const int64_t max = int64_t{1} << 62;
  for (int64_t t : {int64_t{0}, int64_t{1}, int64_t{123456789012}, max - 1, max}) {
    check_exact(64, 1, max, t);
  }
  check_exact(max / 3, 1, INT64_MAX, INT64_MAX - 5);
  check_exact(max / 3, 1, INT64_MAX, INT64_MAX);
}

TEST(SloSearch, ToleranceStopsEarlyWithinIt) {
  for (double tol : {0.01, 0.05, 0.1, 0.25, 0.5, 1.0}) {
    int saved = 0;
    for (int64_t t = 1; t < 1024; ++t) {
      SCOPED_TRACE(::testing::Message() << "tolerance " << tol << " threshold " << t);
      SloSearch s(32, 1, 1024, tol);
      const auto probed = run(s, 1, 1024, [t](int64_t c) { return c <= t; });
      // The truth is inside the bracket, and the bracket within the tolerance (or one apart).
      EXPECT_LE(s.lo(), t);
      EXPECT_GT(s.hi(), t);
      EXPECT_TRUE(s.hi() - s.lo() <= 1 ||
                  static_cast<double>(s.hi()) <= static_cast<double>(s.lo()) * (1 + tol));
      EXPECT_LE(static_cast<int>(probed.size()), ceil_log2(1024.0) + ceil_log2(1 / tol) + 2);
      SloSearch exact(32, 1, 1024, 0);
      saved += static_cast<int>(run(exact, 1, 1024, [t](int64_t c) { return c <= t; }).size()) -
               static_cast<int>(probed.size());
    }
    EXPECT_GT(saved, 0) << "tolerance " << tol << " saved no probe";
  }
}

TEST(SloSearch, ToleranceTenPercentLeavesAWiderBracket) {
  SloSearch s(32, 1, 1024, 0.1);
  run(s, 1, 1024, [](int64_t c) { return c <= 500; });
  EXPECT_LE(s.lo(), 500);
  EXPECT_GT(s.hi(), 500);
  EXPECT_GT(s.hi() - s.lo(), 1);
  EXPECT_LE(static_cast<double>(s.hi()), static_cast<double>(s.lo()) * 1.1);
}

TEST(SloSearch, ProbesTheDocumentedSequence) {
  // Fails at the start, halves once, then bisects the ratio [16, 32].
  SloSearch s(32, 1, 1024, 0);
  EXPECT_EQ(s.describe(), "searching: nothing probed yet");
  EXPECT_EQ(run(s, 1, 1024, [](int64_t c) { return c <= 30; }),
            (std::vector<int64_t>{32, 16, 23, 27, 29, 30, 31}));
  EXPECT_EQ(s.describe(), "meets at 30, not at 31 (7 probes)");
  // Meets from the start: doubles, capped at a maximum that is not a power of two.
  SloSearch up(100, 1, 1000, 0);
  EXPECT_EQ(run(up, 1, 1000, [](int64_t c) { return c <= 5000; }),
            (std::vector<int64_t>{100, 200, 400, 800, 1000}));
  EXPECT_EQ(up.describe(), "meets even at the maximum 1000");
  SloSearch down(32, 1, 1024, 0);
  EXPECT_EQ(run(down, 1, 1024, [](int64_t) { return false; }),
            (std::vector<int64_t>{32, 16, 8, 4, 2, 1}));
  EXPECT_EQ(down.describe(), "not met even at concurrency 1");
  // A minimum above 1: halving stops there.
  SloSearch floored(40, 6, 1024, 0);
  EXPECT_EQ(run(floored, 6, 1024, [](int64_t) { return false; }),
            (std::vector<int64_t>{40, 20, 10, 6}));
  EXPECT_EQ(floored.describe(), "not met even at concurrency 6");
}

TEST(SloSearch, DescribesTheSearchInProgress) {
  SloSearch s(32, 1, 1024, 0);
  s.record(32, true);
  EXPECT_EQ(s.describe(), "searching: meets at 32 (1 probe)");
  EXPECT_EQ(s.next(), 64);
  s.record(64, false);
  EXPECT_EQ(s.describe(), "searching: meets at 32, not at 64 (2 probes)");
  EXPECT_EQ(s.lo(), 32);
  EXPECT_EQ(s.hi(), 64);
  EXPECT_FALSE(s.done());
  SloSearch f(32, 1, 1024, 0);
  f.record(32, false);
  EXPECT_EQ(f.describe(), "searching: not met at 32 (1 probe)");
}

TEST(SloSearch, OneProbeAtTheEdges) {
  SloSearch at_max(64, 1, 64, 0);
  EXPECT_EQ(run(at_max, 1, 64, [](int64_t) { return true; }).size(), 1u);
  EXPECT_EQ(at_max.lo(), 64);
  EXPECT_EQ(at_max.hi(), 0);
  SloSearch at_min(4, 4, 64, 0);
  EXPECT_EQ(run(at_min, 4, 64, [](int64_t) { return false; }).size(), 1u);
  EXPECT_EQ(at_min.lo(), 0);
  EXPECT_EQ(at_min.hi(), 4);
  SloSearch single(7, 7, 7, 0);
  EXPECT_EQ(run(single, 7, 7, [](int64_t) { return true; }).size(), 1u);
  EXPECT_EQ(single.describe(), "meets even at the maximum 7");
}

// A noisy server is not monotone: the search still ends, never repeats a probe, and its bracket
// is consistent with what it saw (lo met, hi failed, lo < hi).
TEST(SloSearch, NonMonotoneAnswersStillEnd) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const double tol = (rng() % 3) * 0.1;
    SloSearch s(32, 1, 1024, tol);
    std::set<int64_t> met, failed;
    run(s, 1, 1024, [&](int64_t c) {
      const bool m = rng() % 2 == 0;
      (m ? met : failed).insert(c);
      return m;
    });
    if (s.lo() > 0) {
      EXPECT_TRUE(met.contains(s.lo()));
    }
    if (s.hi() > 0) {
      EXPECT_TRUE(failed.contains(s.hi()));
      EXPECT_LT(s.lo(), s.hi());
    }
  }
}

}  // namespace
}  // namespace ib::tune
