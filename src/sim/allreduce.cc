#include "sim/allreduce.h"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace ib::sim {

namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kUs = 1e-6;

// Latency and achieved-bandwidth constants, fitted to the H100 all-reduce tables in vLLM PRs
// #24111 and #24532 and the SGLang custom all-reduce table in PR #2904 (docs/perf-model.md):
//   one-shot: ~4-6 us for tiny messages, 10 us at 512 KiB on TP4  -> 4 us + 0.25 us per GPU,
//             ~85 % of link bandwidth;
//   two-shot: ~13 us at small sizes, overtakes one-shot above ~1-2 MiB -> 12 us, 60 %;
//   NCCL ring: ~18-21 us at 512 KiB on TP4, ~30 us on TP8 -> 10 us + 1.5 us per ring step, 68 %.
// The same constants are used for AMD (no comparable public table); QuickReduce adds a fixed
// codec cost for quantizing and dequantizing.
double one_shot_latency(int n) {
  return (4.0 + 0.25 * n) * kUs;
}
constexpr double kOneShotEfficiency = 0.85;
constexpr double kTwoShotLatency = 12.0 * kUs;
constexpr double kTwoShotEfficiency = 0.60;
double ring_latency(int n) {
  return (10.0 + 1.5 * 2 * (n - 1)) * kUs;
}
constexpr double kRingEfficiency = 0.68;
constexpr double kQuickReduceCodec = 4.0 * kUs;
constexpr double kAllToAllLatency = 15.0 * kUs;
constexpr double kAllToAllEfficiency = 0.60;


}  // namespace

std::string_view to_string(AllReduceImpl impl) {
  switch (impl) {
    case AllReduceImpl::kNone:
      return "none";
    case AllReduceImpl::kRing:
      return "ring";
    case AllReduceImpl::kOneShot:
      return "one_shot";
    case AllReduceImpl::kTwoShot:
      return "two_shot";
    case AllReduceImpl::kQuickReduce:
      return "quick_reduce";
  }
  return "none";
}

std::string_view to_string(QuickReduceLevel level) {
  switch (level) {
    case QuickReduceLevel::kNone:
      return "NONE";
    case QuickReduceLevel::kFp:
      return "FP";
    case QuickReduceLevel::kInt8:
      return "INT8";
    case QuickReduceLevel::kInt6:
      return "INT6";
    case QuickReduceLevel::kInt4:
      return "INT4";
  }
  return "NONE";
}

bool parse_quick_reduce(std::string_view text, QuickReduceLevel& out) {
  constexpr std::array<QuickReduceLevel, 5> all = {QuickReduceLevel::kNone, QuickReduceLevel::kFp,
                                                   QuickReduceLevel::kInt8, QuickReduceLevel::kInt6,
                                                   QuickReduceLevel::kInt4};
  for (QuickReduceLevel level : all) {
    if (boost::beast::iequals(text, to_string(level))) {
      out = level;
      return true;
    }
  }
  return false;
}

double quick_reduce_payload_ratio(QuickReduceLevel level) {
  switch (level) {
    case QuickReduceLevel::kNone:
    case QuickReduceLevel::kFp:
      return 1.0;
    case QuickReduceLevel::kInt8:
      return 8.5 / 16.0;
    case QuickReduceLevel::kInt6:
      return 6.5 / 16.0;
    case QuickReduceLevel::kInt4:
      return 4.5 / 16.0;
  }
  return 1.0;
}

double quick_reduce_min_bytes(int n, QuickReduceLevel level) {
  // vLLM QuickAllReduce._QR_MIN_SIZE[(float16, n)] in the order FP, INT8, INT6, INT4.
  static constexpr double kTable[3][4] = {
      {1 * kMiB, 2 * kMiB, 2 * kMiB, 1 * kMiB},   // n = 2
      {1 * kMiB, 16 * kMiB, 4 * kMiB, 2 * kMiB},  // n = 4
      {16 * kMiB, 4 * kMiB, 4 * kMiB, 2 * kMiB},  // n = 8
  };
  const int row = n <= 2 ? 0 : n <= 4 ? 1 : 2;
  switch (level) {
    case QuickReduceLevel::kNone:
      return 0;
    case QuickReduceLevel::kFp:
      return kTable[row][0];
    case QuickReduceLevel::kInt8:
      return kTable[row][1];
    case QuickReduceLevel::kInt6:
      return kTable[row][2];
    case QuickReduceLevel::kInt4:
      return kTable[row][3];
  }
  return 0;
}

double all_reduce_seconds(const HardwareSpec& hw, AllReduceImpl impl, int n, double bytes,
                          QuickReduceLevel level) {
  if (n <= 1 || impl == AllReduceImpl::kNone) return 0;
  const double bw = hw.collective_bytes_per_s(n);
  const double ring_factor = 2.0 * (n - 1) / n;  // bytes each GPU sends, per byte reduced
  switch (impl) {
    case AllReduceImpl::kNone:
      return 0;
    case AllReduceImpl::kRing:
      return ring_latency(n) + ring_factor * bytes / (bw * kRingEfficiency);
    case AllReduceImpl::kOneShot:
      // Each GPU reads the whole message from each of its n - 1 peers.
      return one_shot_latency(n) + (n - 1) * bytes / (bw * kOneShotEfficiency);
    case AllReduceImpl::kTwoShot:
      return kTwoShotLatency + ring_factor * bytes / (bw * kTwoShotEfficiency);
    case AllReduceImpl::kQuickReduce:
      return kTwoShotLatency + kQuickReduceCodec +
             ring_factor * bytes * quick_reduce_payload_ratio(level) / (bw * kTwoShotEfficiency);
  }
  return 0;
}

AllReduceCost all_reduce_cost(const HardwareSpec& hw, int n, double bytes,
                              const AllReduceConfig& config) {
  AllReduceCost cost;
  if (n <= 1) return cost;
  // vLLM's dispatch order: QuickReduce (ROCm), then the custom kernel, then NCCL/RCCL.
  if (hw.vendor == Vendor::kAmd && config.quick_reduce != QuickReduceLevel::kNone &&
      bytes >= quick_reduce_min_bytes(n, config.quick_reduce)) {
    cost.impl = AllReduceImpl::kQuickReduce;
  } else if (config.custom_enabled && bytes < config.custom_max_bytes) {
    const bool one_shot = n == 2 || (n <= 4 && bytes < 512 * kKiB) || bytes < 256 * kKiB;
    cost.impl = one_shot ? AllReduceImpl::kOneShot : AllReduceImpl::kTwoShot;
  } else {
    cost.impl = AllReduceImpl::kRing;
  }
  cost.seconds = all_reduce_seconds(hw, cost.impl, n, bytes, config.quick_reduce);
  return cost;
}

double all_to_all_seconds(const HardwareSpec& hw, int n, double bytes_out) {
  if (n <= 1) return 0;
  return kAllToAllLatency + bytes_out / (hw.collective_bytes_per_s(n) * kAllToAllEfficiency);
}

}  // namespace ib::sim
