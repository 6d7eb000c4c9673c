#include "sim/allreduce.h"

#include <gtest/gtest.h>

namespace ib::sim {
namespace {

constexpr double kKiB = 1024;
constexpr double kMiB = 1024 * 1024;

TEST(AllReduce, NothingToDoOnOneGpu) {
  const HardwareSpec& h = *find_hardware("H100");
  const AllReduceCost c = all_reduce_cost(h, 1, 1 * kMiB, AllReduceConfig{});
  EXPECT_EQ(c.impl, AllReduceImpl::kNone);
  EXPECT_EQ(c.seconds, 0);
}

TEST(AllReduce, TimeGrowsWithBytesForEveryAlgorithm) {
  const HardwareSpec& h = *find_hardware("H200");
  for (AllReduceImpl impl : {AllReduceImpl::kRing, AllReduceImpl::kOneShot, AllReduceImpl::kTwoShot,
                             AllReduceImpl::kQuickReduce}) {
    double last = 0;
    for (double bytes = 1 * kKiB; bytes <= 64 * kMiB; bytes *= 4) {
      const double t = all_reduce_seconds(h, impl, 8, bytes, QuickReduceLevel::kInt8);
      EXPECT_GT(t, last) << to_string(impl) << " at " << bytes;
      last = t;
    }
  }
}

TEST(AllReduce, CustomKernelsWinOnSmallMessagesRingOrTwoShotOnLargeOnes) {
  const HardwareSpec& h = *find_hardware("H100");
  for (int n : {2, 4, 8}) {
    // Decode-sized messages: latency-bound, the one-shot kernel beats NCCL.
    EXPECT_LT(all_reduce_seconds(h, AllReduceImpl::kOneShot, n, 64 * kKiB),
              all_reduce_seconds(h, AllReduceImpl::kRing, n, 64 * kKiB))
        << n;
  }
  // Large messages on 8 GPUs: one-shot reads 7 copies; two-shot moves 2 x 7/8.
  EXPECT_LT(all_reduce_seconds(h, AllReduceImpl::kTwoShot, 8, 32 * kMiB),
            all_reduce_seconds(h, AllReduceImpl::kOneShot, 8, 32 * kMiB));
}

TEST(AllReduce, SelectionFollowsSizeAndSettings) {
  const HardwareSpec& h = *find_hardware("H100");
  AllReduceConfig config;
  EXPECT_EQ(all_reduce_cost(h, 8, 16 * kKiB, config).impl, AllReduceImpl::kOneShot);
  EXPECT_EQ(all_reduce_cost(h, 8, 1 * kMiB, config).impl, AllReduceImpl::kTwoShot);
  EXPECT_EQ(all_reduce_cost(h, 4, 400 * kKiB, config).impl, AllReduceImpl::kOneShot);
  EXPECT_EQ(all_reduce_cost(h, 2, 4 * kMiB, config).impl, AllReduceImpl::kOneShot);
  EXPECT_EQ(all_reduce_cost(h, 8, 64 * kMiB, config).impl, AllReduceImpl::kRing);
  config.custom_enabled = false;
  EXPECT_EQ(all_reduce_cost(h, 8, 16 * kKiB, config).impl, AllReduceImpl::kRing);
  // Disabling the custom kernel makes small all-reduces slower.
  EXPECT_GT(all_reduce_cost(h, 8, 16 * kKiB, config).seconds,
            all_reduce_cost(h, 8, 16 * kKiB, AllReduceConfig{}).seconds);
  // QuickReduce is ROCm only.
  config = AllReduceConfig{};
  config.quick_reduce = QuickReduceLevel::kInt4;
  EXPECT_NE(all_reduce_cost(h, 8, 32 * kMiB, config).impl, AllReduceImpl::kQuickReduce);
}

TEST(AllReduce, QuantizedAllReduceLowersCommunicationTime) {
  const HardwareSpec& h = *find_hardware("MI355X");
  const double bytes = 32 * kMiB;  // a prefill-sized message
  AllReduceConfig fp;
  AllReduceConfig int8;
  int8.quick_reduce = QuickReduceLevel::kInt8;
  AllReduceConfig int4;
  int4.quick_reduce = QuickReduceLevel::kInt4;
  for (int n : {2, 4, 8}) {
    const AllReduceCost a = all_reduce_cost(h, n, bytes, fp);
    const AllReduceCost b = all_reduce_cost(h, n, bytes, int8);
    const AllReduceCost c = all_reduce_cost(h, n, bytes, int4);
    EXPECT_EQ(b.impl, AllReduceImpl::kQuickReduce) << n;
    EXPECT_EQ(c.impl, AllReduceImpl::kQuickReduce) << n;
    EXPECT_LT(b.seconds, a.seconds) << n;
    EXPECT_LT(c.seconds, b.seconds) << n;
  }
  // Below its size window QuickReduce steps aside (decode messages keep the custom kernel).
  EXPECT_EQ(all_reduce_cost(h, 8, 64 * kKiB, int4).impl, AllReduceImpl::kOneShot);
}

TEST(AllReduce, MeshWithFewGpusHasLessBandwidthThanASwitch) {
  // Two MI300X GPUs share one 64 GB/s link; two H100s have the whole NVLink port.
  const double bytes = 64 * kMiB;
  EXPECT_GT(all_reduce_seconds(*find_hardware("MI300X"), AllReduceImpl::kRing, 2, bytes),
            all_reduce_seconds(*find_hardware("H100"), AllReduceImpl::kRing, 2, bytes));
}

TEST(AllReduce, ParseQuickReduceLevels) {
  QuickReduceLevel level = QuickReduceLevel::kNone;
  EXPECT_TRUE(parse_quick_reduce("int4", level));
  EXPECT_EQ(level, QuickReduceLevel::kInt4);
  EXPECT_TRUE(parse_quick_reduce("NONE", level));
  EXPECT_EQ(level, QuickReduceLevel::kNone);
  EXPECT_FALSE(parse_quick_reduce("INT2", level));
}

}  // namespace
}  // namespace ib::sim
