// Cost of one tensor-parallel all-reduce on one node: the algorithm an engine picks for a message
// size (custom one-shot / two-shot kernels for small messages, AMD's quantized QuickReduce, NCCL
// or RCCL ring otherwise) and its time from a latency + bytes / bandwidth model. Constants and
// their sources: docs/perf-model.md "Tensor-parallel communication".
#pragma once

#include <string_view>

#include "sim/hardware.h"

namespace ib::sim {

enum class AllReduceImpl {
  kNone,         // tp = 1: nothing to reduce
  kRing,         // NCCL / RCCL ring
  kOneShot,      // custom all-reduce, one stage: every GPU reads all peers' buffers
  kTwoShot,      // custom all-reduce, reduce-scatter then all-gather
  kQuickReduce,  // AMD QuickReduce: two-shot on a quantized payload
};

/// "none", "ring", "one_shot", "two_shot", "quick_reduce".
std::string_view to_string(AllReduceImpl impl);

/// Quantization of QuickReduce payloads, as vLLM's VLLM_ROCM_QUICK_REDUCE_QUANTIZATION.
enum class QuickReduceLevel { kNone, kFp, kInt8, kInt6, kInt4 };

/// "NONE", "FP", "INT8", "INT6", "INT4".
std::string_view to_string(QuickReduceLevel level);
/// Parses those names (case-insensitive); false when unknown.
bool parse_quick_reduce(std::string_view text, QuickReduceLevel& out);

/// Payload bytes QuickReduce moves per BF16 byte at `level`: the quantized value plus a 16-bit
/// scale per 32 values (INT8 8.5/16, INT6 6.5/16, INT4 4.5/16; FP 1).
double quick_reduce_payload_ratio(QuickReduceLevel level);

/// What the engine may use for all-reduces (resolved at startup, docs/serve-sim.md).
struct AllReduceConfig {
  bool custom_enabled = true;  // custom one-shot/two-shot kernels for messages < custom_max_bytes
  double custom_max_bytes = 8.0 * 1024 * 1024;              // vLLM CustomAllreduce max_size
  QuickReduceLevel quick_reduce = QuickReduceLevel::kNone;  // AMD only; kNone disables it
};

struct AllReduceCost {
  AllReduceImpl impl = AllReduceImpl::kNone;
  double seconds = 0;
};

/// The implementation chosen for `bytes` over `n` GPUs and its time: QuickReduce when enabled and
/// the size is in its window, else the custom kernel below custom_max_bytes (one-shot for two
/// GPUs or below 512 KiB at n <= 4 / 256 KiB at n <= 8, two-shot above), else the ring.
AllReduceCost all_reduce_cost(const HardwareSpec& hw, int n, double bytes,
                              const AllReduceConfig& config);

/// The time of one algorithm, whatever the selection rules say (for tests and documentation).
double all_reduce_seconds(const HardwareSpec& hw, AllReduceImpl impl, int n, double bytes,
                          QuickReduceLevel level = QuickReduceLevel::kNone);

/// Smallest message QuickReduce handles at `level` over `n` GPUs (vLLM's _QR_MIN_SIZE for FP16
/// inputs, which BF16 is cast to by default).
double quick_reduce_min_bytes(int n, QuickReduceLevel level);

/// One all-to-all of `bytes_out` bytes sent by each GPU to the others (expert-parallel dispatch
/// or combine).
double all_to_all_seconds(const HardwareSpec& hw, int n, double bytes_out);

}  // namespace ib::sim
