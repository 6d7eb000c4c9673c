// Effective configuration of the roofline engine, resolved the way real engines do it: preset
// defaults, then environment variables, then command-line flags (highest), except where a code
// path pins a setting whatever the flags and the environment say. Environment variables are read
// through sim_getenv() only when the resolution actually consults them, so a variable on a pinned
// path, or one whose flag was given, is never read. The result carries one log line per key
// decision. Precedence table and pinned paths: docs/serve-sim.md "Effective configuration".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/expected.h"
#include "sim/allreduce.h"
#include "sim/hardware.h"
#include "sim/model_spec.h"
#include "sim/perf_model.h"
#include "sim/scheduler.h"

namespace ib::sim {

// Environment variables the resolution may consult.
inline constexpr const char* kEnvMaxNumSeqs = "SIM_MAX_NUM_SEQS";
inline constexpr const char* kEnvMaxNumBatchedTokens = "SIM_MAX_NUM_BATCHED_TOKENS";
inline constexpr const char* kEnvGpuMemoryUtilization = "SIM_GPU_MEMORY_UTILIZATION";
inline constexpr const char* kEnvEnablePrefixCaching = "SIM_ENABLE_PREFIX_CACHING";
inline constexpr const char* kEnvKvCacheDtype = "SIM_KV_CACHE_DTYPE";
inline constexpr const char* kEnvDisableCustomAllReduce = "SIM_DISABLE_CUSTOM_ALL_REDUCE";
inline constexpr const char* kEnvQuickReduceQuantization = "SIM_QUICK_REDUCE_QUANTIZATION";
inline constexpr const char* kEnvMinimaxAllowCustomAr = "SIM_MINIMAX_ALLOW_CUSTOM_AR";

/// Engine settings as given on the command line (unset: not given).
struct EngineFlags {
  std::optional<std::string> hardware;        // --hardware
  std::optional<std::string> model_preset;    // --model-preset
  std::optional<std::string> quantization;    // --quantization
  std::optional<std::string> kv_cache_dtype;  // --kv-cache-dtype
  std::optional<int> tensor_parallel_size;    // --tensor-parallel-size / --tp
  std::optional<bool> enable_expert_parallel;
  std::optional<int> max_num_seqs;
  std::optional<int> max_num_batched_tokens;
  std::optional<int> block_size;
  std::optional<int> num_gpu_blocks_override;
  std::optional<double> gpu_memory_utilization;
  std::optional<bool> enable_prefix_caching;
  std::optional<bool> disable_custom_all_reduce;
  std::optional<double> compute_efficiency;
  std::optional<double> memory_efficiency;
  std::optional<double> step_overhead_us;
};

/// Where a resolved setting came from.
enum class SettingSource { kDefault, kPreset, kEnv, kCli, kPinned };
std::string_view to_string(SettingSource source);

/// The resolved configuration of the roofline engine.
struct EngineConfig {
  const HardwareSpec* hardware = nullptr;
  const ModelSpec* model = nullptr;
  Precision quantization = Precision::kBf16;
  std::string kv_cache_dtype = "bf16";  // "bf16" or "fp8"
  int tensor_parallel_size = 1;
  bool enable_expert_parallel = false;
  double gpu_memory_utilization = 0.9;
  bool disable_custom_all_reduce = false;
  QuickReduceLevel quick_reduce = QuickReduceLevel::kNone;
  bool all_reduce_pinned = false;  // a hardware/checkpoint path fixed the all-reduce settings
  SchedulerConfig scheduler;       // num_blocks, block size, caps, prefix caching
  int max_model_len = 0;           // context length: --max-model-len, else the preset's (capped)
  PerfSettings perf;               // what the step costs depend on
  double weight_bytes_per_gpu = 0;
  double kv_bytes_per_token = 0;  // per GPU
  /// Setting name -> source, in resolution order.
  std::vector<std::pair<std::string, SettingSource>> sources;
  /// Log lines, one per key decision, in order (the last ones: one per tensor-parallel rank).
  std::vector<std::string> decisions;
};

/// Resolves `flags` for a server whose context length is `max_model_len` (--max-model-len). When
/// it is not given, the context length is the model preset's max_context, capped to what the KV
/// cache holds: agentic replay needs the native context (InferenceX leaves MAX_MODEL_LEN unset),
/// and where vLLM would refuse to start with a cache too small for it, our default must still
/// start; a decision line says so. Errors name the flag or environment variable at fault, or
/// explain why the model does not fit (weights larger than the usable memory, an explicit
/// max_model_len larger than the KV cache).
Expected<EngineConfig> resolve_engine_config(const EngineFlags& flags,
                                             std::optional<int> max_model_len);

/// Memory set aside on each GPU for activations, CUDA graphs and communication buffers before the
/// KV cache is sized (vLLM measures it by profiling a forward pass; a few GiB for these models).
inline constexpr double kActivationReserveGiB = 2.0;

}  // namespace ib::sim
