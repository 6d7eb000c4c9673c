#include "sim/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "core/strings.h"
#include "sim/env.h"

namespace ib::sim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Defaults of settings that neither a preset nor the environment sets.
constexpr const char* kDefaultHardware = "H200";
constexpr const char* kDefaultModel = "llama-3.1-8b";
constexpr int kDefaultBlockSize = 16;              // vLLM's CUDA default block size
constexpr double kDefaultMemoryUtilization = 0.9;  // vLLM's --gpu-memory-utilization default
constexpr double kDefaultComputeEfficiency = 0.6;
constexpr double kDefaultMemoryEfficiency = 0.8;
constexpr double kDefaultStepOverheadUs = 1000.0;

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_double(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string t = lower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  return std::nullopt;
}

std::string flag_name(std::string_view setting) {
  std::string out = "--";
  for (char c : setting) out += c == '_' ? '-' : c;
  return out;
}

// Resolves one setting: the flag when given, else the environment variable when set (read only
// then), else the fallback. Records the source.
class Resolver {
 public:
  explicit Resolver(EngineConfig& config) : config_(config) {}

  template <class T, class Parse, class Check>
  Status setting(const char* name, const std::optional<T>& flag, const char* env, const T& fallback,
                 SettingSource fallback_source, Parse parse, Check check, const char* rule,
                 T& out) {
    if (flag) {
      if (!check(*flag)) {
        return Error{fmt::format("{} must be {}", flag_name(name), rule)};
      }
      out = *flag;
      record(name, SettingSource::kCli);
      return Status::Ok();
    }
    if (env != nullptr) {
      if (std::optional<std::string> text = sim_getenv(env)) {
        std::optional<T> value = parse(*text);
        if (!value || !check(*value)) {
          return Error{
              fmt::format("environment variable {}={} is invalid: must be {}", env, *text, rule)};
        }
        out = *value;
        record(name, SettingSource::kEnv);
        return Status::Ok();
      }
    }
    out = fallback;
    record(name, fallback_source);
    return Status::Ok();
  }

  // Records (or, when a later step overrides it, updates) where `name` came from.
  void record(const std::string& name, SettingSource source) {
    for (auto& [n, s] : config_.sources) {
      if (n == name) {
        s = source;
        return;
      }
    }
    config_.sources.emplace_back(name, source);
  }

 private:
  EngineConfig& config_;
};

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / kGiB);
}

std::string tflops(double t) {
  return t > 0 ? fmt::format("{:g}", t) : std::string("-");
}

// Pinned path: on gfx950 an FP4 checkpoint takes the vendor's FP4 overrides, which set custom
// all-reduce and INT4 QuickReduce and return before any model override or environment lookup.
void pin_gfx950_fp4_all_reduce(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  c.all_reduce_pinned = true;
  c.disable_custom_all_reduce = false;
  c.quick_reduce = QuickReduceLevel::kInt4;
  r.record("disable_custom_all_reduce", SettingSource::kPinned);
  r.record("quick_reduce_quantization", SettingSource::kPinned);
  std::string line = fmt::format(
      "all-reduce: pinned by the gfx950 fp4 overrides ({} with an fp4 checkpoint): custom "
      "all-reduce on, QuickReduce INT4; this path returns before the model overrides, so {}, {} "
      "and {} are not read",
      c.hardware->name, kEnvDisableCustomAllReduce, kEnvMinimaxAllowCustomAr,
      kEnvQuickReduceQuantization);
  if (flags.disable_custom_all_reduce.value_or(false)) {
    line += "; --disable-custom-all-reduce is overridden";
  }
  c.decisions.push_back(std::move(line));
}

// The QuickReduce level from the environment (AMD only); true when the environment set it.
Expected<bool> resolve_quick_reduce(EngineConfig& c, Resolver& r) {
  const HardwareSpec& hw = *c.hardware;
  if (hw.vendor != Vendor::kAmd) {
    c.decisions.push_back(fmt::format(
        "quick all-reduce: not available on {} (QuickReduce is ROCm only); {} is not read", hw.name,
        kEnvQuickReduceQuantization));
    return false;
  }
  // vLLM reads VLLM_ROCM_QUICK_REDUCE_QUANTIZATION only when it sets up QuickReduce on ROCm.
  if (std::optional<std::string> text = sim_getenv(kEnvQuickReduceQuantization)) {
    if (!parse_quick_reduce(*text, c.quick_reduce)) {
      return Error{
          fmt::format("environment variable {}={} is invalid: must be NONE, FP, INT8, INT6 or INT4",
                      kEnvQuickReduceQuantization, *text)};
    }
    r.record("quick_reduce_quantization", SettingSource::kEnv);
    return true;
  }
  r.record("quick_reduce_quantization", SettingSource::kDefault);
  return false;
}

// Model override: MiniMax-M on ROCm runs its all-reduces on RCCL unless the opt-in is set, and
// raises QuickReduce to INT4.
void apply_minimax_all_reduce_override(bool quick_reduce_set, EngineConfig& c, Resolver& r) {
  const std::optional<std::string> allow = sim_getenv(kEnvMinimaxAllowCustomAr);
  const bool allowed = allow && parse_bool(*allow).value_or(false);
  if (!c.disable_custom_all_reduce && !allowed) {
    c.disable_custom_all_reduce = true;
    r.record("disable_custom_all_reduce", SettingSource::kPreset);
    c.decisions.push_back(fmt::format(
        "custom all-reduce: disabled by the MiniMax-M ROCm override (set {}=1 to keep it)",
        kEnvMinimaxAllowCustomAr));
  } else if (allowed) {
    c.decisions.push_back(
        fmt::format("custom all-reduce: kept by {}={}", kEnvMinimaxAllowCustomAr, *allow));
  }
  if (!quick_reduce_set || c.quick_reduce == QuickReduceLevel::kInt8) {
    c.quick_reduce = QuickReduceLevel::kInt4;
    r.record("quick_reduce_quantization", SettingSource::kPreset);
    c.decisions.push_back("MiniMax-M: quick all-reduce INT4 (from INT8 or unset)");
  }
}

// The all-reduce settings and their decision lines (docs/serve-sim.md "Pinned paths").
Status decide_all_reduce(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  const HardwareSpec& hw = *c.hardware;
  const bool amd = hw.vendor == Vendor::kAmd;
  if (c.tensor_parallel_size == 1) {
    c.disable_custom_all_reduce = flags.disable_custom_all_reduce.value_or(false);
    c.decisions.push_back("all-reduce: none (tensor_parallel_size=1)");
    return Status::Ok();
  }
  if (amd && hw.arch == "gfx950" && c.quantization == Precision::kFp4) {
    pin_gfx950_fp4_all_reduce(flags, c, r);
    return Status::Ok();
  }
  bool disable = false;
  if (auto s = r.setting<bool>(
          "disable_custom_all_reduce", flags.disable_custom_all_reduce, kEnvDisableCustomAllReduce,
          false, SettingSource::kDefault, [](const std::string& t) { return parse_bool(t); },
          [](bool) { return true; }, "a boolean (1/0, true/false)", disable);
      !s) {
    return s;
  }
  c.disable_custom_all_reduce = disable;
  const Expected<bool> quick_reduce_set = resolve_quick_reduce(c, r);
  if (!quick_reduce_set) return quick_reduce_set.error();
  if (amd && c.model->family == "minimax_m2") {
    apply_minimax_all_reduce_override(quick_reduce_set.value(), c, r);
  }
  return Status::Ok();
}

// One log line per tensor-parallel rank: the all-reduce implementation it uses.
void all_reduce_rank_lines(EngineConfig& c) {
  const HardwareSpec& hw = *c.hardware;
  const bool amd = hw.vendor == Vendor::kAmd;
  const int n = c.tensor_parallel_size;
  if (n == 1) return;
  const std::string ring = amd ? "RCCL ring" : "NCCL ring";
  const int custom_max_mib = static_cast<int>(c.perf.all_reduce.custom_max_bytes / (1024 * 1024));
  std::string impl;
  if (c.disable_custom_all_reduce) {
    impl = ring + " for every size";
  } else {
    const char* name = amd ? "AiterCustomAllreduce" : "CustomAllreduce";
    if (n == 2) {
      impl = fmt::format("{} one-shot below {} MiB, {} above", name, custom_max_mib, ring);
    } else {
      impl = fmt::format("{} (one-shot below {} KiB, two-shot below {} MiB), {} above", name,
                         n <= 4 ? 512 : 256, custom_max_mib, ring);
    }
  }
  if (c.quick_reduce != QuickReduceLevel::kNone) {
    impl = fmt::format("QuickReduce {} from {:g} MiB, else {}", to_string(c.quick_reduce),
                       quick_reduce_min_bytes(n, c.quick_reduce) / (1024 * 1024), impl);
  }
  for (int rank = 0; rank < n; ++rank) {
    c.decisions.push_back(fmt::format("[AR] tp_rank={}: using {}{}", rank, impl,
                                      c.all_reduce_pinned ? " (pinned)" : ""));
  }
}

// Presets: --hardware and --model-preset, else the defaults.
Status resolve_presets(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  const std::string hw_name = flags.hardware.value_or(kDefaultHardware);
  c.hardware = find_hardware(hw_name);
  if (c.hardware == nullptr) {
    return Error{fmt::format("--hardware {} is unknown; presets: {}", hw_name, hardware_names())};
  }
  r.record("hardware", flags.hardware ? SettingSource::kCli : SettingSource::kDefault);
  const std::string model_name = flags.model_preset.value_or(kDefaultModel);
  c.model = find_model(model_name);
  if (c.model == nullptr) {
    return Error{
        fmt::format("--model-preset {} is unknown; presets: {}", model_name, model_names())};
  }
  r.record("model_preset", flags.model_preset ? SettingSource::kCli : SettingSource::kDefault);
  return Status::Ok();
}

// Precision: the checkpoint's unless --quantization says otherwise; then the KV cache's dtype.
Status resolve_precision(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  if (flags.quantization) {
    std::optional<Precision> p = parse_precision(*flags.quantization);
    if (!p) {
      return Error{
          fmt::format("--quantization {} is unknown; use bf16, fp8 or fp4", *flags.quantization)};
    }
    c.quantization = *p;
    r.record("quantization", SettingSource::kCli);
  } else {
    c.quantization = c.model->checkpoint;
    r.record("quantization", SettingSource::kPreset);
  }
  std::string kv_dtype;
  if (auto s = r.setting<std::string>(
          "kv_cache_dtype", flags.kv_cache_dtype, kEnvKvCacheDtype, std::string("auto"),
          SettingSource::kDefault, [](const std::string& t) { return std::optional(lower(t)); },
          [](const std::string& t) {
            const std::string v = lower(t);
            return v == "auto" || v == "bf16" || v == "bfloat16" || v == "fp8";
          },
          "auto, bf16 or fp8", kv_dtype);
      !s) {
    return s;
  }
  kv_dtype = lower(kv_dtype);
  c.kv_cache_dtype = kv_dtype == "fp8" ? "fp8" : "bf16";  // auto: the activation dtype, BF16
  return Status::Ok();
}

// Parallelism: the tensor-parallel size and expert parallelism, checked against the node and the
// model.
Status resolve_parallelism(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  const HardwareSpec& hw = *c.hardware;
  const ModelSpec& m = *c.model;
  c.tensor_parallel_size = flags.tensor_parallel_size.value_or(1);
  r.record("tensor_parallel_size",
           flags.tensor_parallel_size ? SettingSource::kCli : SettingSource::kDefault);
  const int tp = c.tensor_parallel_size;
  if (tp < 1 || tp > hw.gpus_per_node) {
    return Error{
        fmt::format("--tensor-parallel-size must be between 1 and {} (GPUs of one {} "
                    "node), got {}",
                    hw.gpus_per_node, hw.name, tp)};
  }
  if (m.heads % tp != 0 ||
      (m.attention == AttentionKind::kGqa && m.kv_heads % tp != 0 && tp % m.kv_heads != 0)) {
    return Error{fmt::format(
        "--tensor-parallel-size {} does not divide {}'s {} attention heads ({} KV heads)", tp,
        m.name, m.heads, m.kv_heads)};
  }
  c.enable_expert_parallel = flags.enable_expert_parallel.value_or(false);
  r.record("enable_expert_parallel",
           flags.enable_expert_parallel ? SettingSource::kCli : SettingSource::kDefault);
  if (c.enable_expert_parallel && !m.is_moe()) {
    return Error{
        fmt::format("--enable-expert-parallel needs a mixture-of-experts model; {} is "
                    "dense",
                    m.name)};
  }
  if (c.enable_expert_parallel && m.experts % tp != 0) {
    return Error{fmt::format("--enable-expert-parallel: {} experts do not split over {} GPUs",
                             m.experts, tp)};
  }
  return Status::Ok();
}

// Scheduler limits: vLLM's defaults for GPUs with at least 70 GiB (every preset here) are
// max_num_seqs 1024 and max_num_batched_tokens 8192 for the API server; smaller GPUs get 256
// and 2048.
Status resolve_scheduler(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  const bool big_gpu = c.hardware->memory_gib >= 70;
  auto int_in = [](int lo, int hi) { return [=](int v) { return v >= lo && v <= hi; }; };
  auto parse_i = [](const std::string& t) { return parse_int(t); };
  SchedulerConfig& sc = c.scheduler;
  if (auto s = r.setting<int>("max_num_seqs", flags.max_num_seqs, kEnvMaxNumSeqs,
                              big_gpu ? 1024 : 256, SettingSource::kPreset, parse_i,
                              int_in(1, 1 << 20), "an integer >= 1", sc.max_num_seqs);
      !s) {
    return s;
  }
  if (auto s =
          r.setting<int>("max_num_batched_tokens", flags.max_num_batched_tokens,
                         kEnvMaxNumBatchedTokens, big_gpu ? 8192 : 2048, SettingSource::kPreset,
                         parse_i, int_in(1, 1 << 24), "an integer >= 1", sc.max_num_batched_tokens);
      !s) {
    return s;
  }
  if (auto s = r.setting<int>("block_size", flags.block_size, nullptr, kDefaultBlockSize,
                              SettingSource::kDefault, parse_i, int_in(1, 1024),
                              "between 1 and 1024", sc.block_size);
      !s) {
    return s;
  }
  auto parse_d = [](const std::string& t) { return parse_double(t); };
  if (auto s = r.setting<double>(
          "gpu_memory_utilization", flags.gpu_memory_utilization, kEnvGpuMemoryUtilization,
          kDefaultMemoryUtilization, SettingSource::kDefault, parse_d,
          [](double v) { return v > 0 && v <= 1; }, "in (0, 1]", c.gpu_memory_utilization);
      !s) {
    return s;
  }
  bool prefix_caching = true;
  if (auto s = r.setting<bool>(
          "enable_prefix_caching", flags.enable_prefix_caching, kEnvEnablePrefixCaching, true,
          SettingSource::kDefault, [](const std::string& t) { return parse_bool(t); },
          [](bool) { return true; }, "a boolean (1/0, true/false)", prefix_caching);
      !s) {
    return s;
  }
  sc.prefix_caching = prefix_caching;
  sc.sliding_window = c.model->sliding_window;
  return Status::Ok();
}

// Performance knobs (calibration; command line only), and the other settings the step costs
// depend on.
Status resolve_perf(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  PerfSettings& p = c.perf;
  auto positive_fraction = [](double v) { return v > 0 && v <= 1; };
  auto no_parse = [](const std::string&) { return std::optional<double>(); };
  if (auto s = r.setting<double>("compute_efficiency", flags.compute_efficiency, nullptr,
                                 kDefaultComputeEfficiency, SettingSource::kDefault, no_parse,
                                 positive_fraction, "in (0, 1]", p.compute_efficiency);
      !s) {
    return s;
  }
  if (auto s = r.setting<double>("memory_efficiency", flags.memory_efficiency, nullptr,
                                 kDefaultMemoryEfficiency, SettingSource::kDefault, no_parse,
                                 positive_fraction, "in (0, 1]", p.memory_efficiency);
      !s) {
    return s;
  }
  double overhead_us = kDefaultStepOverheadUs;
  if (auto s = r.setting<double>(
          "step_overhead_us", flags.step_overhead_us, nullptr, kDefaultStepOverheadUs,
          SettingSource::kDefault, no_parse, [](double v) { return v >= 0 && v < 1e7; },
          ">= 0 (microseconds)", overhead_us);
      !s) {
    return s;
  }
  p.step_overhead_s = overhead_us * 1e-6;
  p.tp = c.tensor_parallel_size;
  p.expert_parallel = c.enable_expert_parallel;
  p.weights = c.quantization;
  p.kv_bytes = c.kv_cache_dtype == "fp8" ? 1.0 : 2.0;
  return Status::Ok();
}

// The all-reduce settings, then what the step costs take from them.
Status resolve_all_reduce(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  if (auto s = decide_all_reduce(flags, c, r); !s) return s;
  c.perf.all_reduce.custom_enabled = !c.disable_custom_all_reduce;
  c.perf.all_reduce.quick_reduce =
      c.hardware->vendor == Vendor::kAmd ? c.quick_reduce : QuickReduceLevel::kNone;
  return Status::Ok();
}

// Memory: weights, then the KV cache in what utilization leaves after the activation reserve.
Status resolve_kv_cache(const EngineFlags& flags, EngineConfig& c, Resolver& r) {
  const HardwareSpec& hw = *c.hardware;
  const ModelSpec& m = *c.model;
  SchedulerConfig& sc = c.scheduler;
  const PerfModel model(m, hw, c.perf);
  c.weight_bytes_per_gpu = model.weight_bytes_per_gpu();
  c.kv_bytes_per_token = model.kv_bytes_per_token();
  const double usable = hw.memory_bytes() * c.gpu_memory_utilization;
  const double kv_space = usable - c.weight_bytes_per_gpu - kActivationReserveGiB * kGiB;
  const double block_bytes = c.kv_bytes_per_token * sc.block_size;
  if (flags.num_gpu_blocks_override) {
    if (*flags.num_gpu_blocks_override < 1) {
      return Error{"--num-gpu-blocks-override must be >= 1"};
    }
    sc.num_blocks = *flags.num_gpu_blocks_override;
    r.record("num_gpu_blocks", SettingSource::kCli);
    return Status::Ok();
  }
  if (kv_space < block_bytes) {
    return Error{fmt::format(
        "{} ({} weights) needs {} of weights per GPU at tensor_parallel_size {}, but {} "
        "offers {} at gpu_memory_utilization {} (minus a {:g} GiB activation reserve): "
        "raise --tensor-parallel-size or use a smaller --quantization",
        m.name, to_string(c.quantization), gib(c.weight_bytes_per_gpu), c.tensor_parallel_size,
        hw.name, gib(usable), c.gpu_memory_utilization, kActivationReserveGiB)};
  }
  sc.num_blocks = static_cast<int>(std::min(kv_space / block_bytes, 2e9));
  r.record("num_gpu_blocks", SettingSource::kDefault);
  return Status::Ok();
}

// Tokens the KV cache holds (all its blocks).
int64_t kv_cache_tokens(const SchedulerConfig& sc) {
  return static_cast<int64_t>(sc.num_blocks) * sc.block_size;
}

// The context length (rules: resolve_engine_config in config.h); returns its decision line.
Expected<std::string> resolve_context(std::optional<int> max_model_len, EngineConfig& c,
                                      Resolver& r) {
  const ModelSpec& m = *c.model;
  const int64_t kv_tokens = kv_cache_tokens(c.scheduler);
  if (max_model_len) {
    if (*max_model_len > kv_tokens) {
      return Error{fmt::format(
          "max_model_len {} is larger than the maximum number of tokens that can be stored in "
          "the KV cache ({}): lower --max-model-len, raise --gpu-memory-utilization or "
          "--tensor-parallel-size",
          *max_model_len, kv_tokens)};
    }
    c.max_model_len = *max_model_len;
    r.record("max_model_len", SettingSource::kCli);
    return fmt::format("context: max_model_len {} (--max-model-len)", c.max_model_len);
  }
  if (m.max_context > kv_tokens) {
    // vLLM refuses to start here; the simulator's default must start, so it serves what fits.
    c.max_model_len = static_cast<int>(kv_tokens);
    r.record("max_model_len", SettingSource::kPreset);
    return fmt::format(
        "context: max_model_len {} = what the KV cache holds, capped from {}'s max_context {} "
        "(vLLM would refuse to start; pass --max-model-len to choose)",
        c.max_model_len, m.name, m.max_context);
  }
  c.max_model_len = m.max_context;
  r.record("max_model_len", SettingSource::kPreset);
  return fmt::format("context: max_model_len {} ({}'s max_context)", c.max_model_len, m.name);
}

// The decision line on the GEMMs: at the weights' precision, or as bf16 where the hardware has no
// tensor cores for it.
std::string compute_line(const EngineConfig& c) {
  const HardwareSpec& hw = *c.hardware;
  if (hw.compute_precision(c.quantization) == c.quantization) {
    return fmt::format("compute: {} GEMMs at {:g} TFLOPS peak x {:g} efficiency",
                       to_string(c.quantization), hw.peak_flops(c.quantization) / 1e12,
                       c.perf.compute_efficiency);
  }
  return fmt::format(
      "compute: {} weights run as bf16 GEMMs at {:g} TFLOPS peak x {:g} "
      "efficiency ({} has no {} tensor cores); weight bytes stay {}",
      to_string(c.quantization), hw.peak_flops(Precision::kBf16) / 1e12, c.perf.compute_efficiency,
      hw.name, to_string(c.quantization), to_string(c.quantization));
}

// The decision line on tensor and expert parallelism.
std::string parallelism_line(const EngineConfig& c) {
  const ModelSpec& m = *c.model;
  const int tp = c.tensor_parallel_size;
  if (c.enable_expert_parallel) {
    return fmt::format(
        "parallelism: tensor_parallel_size {}, expert parallel: {} experts "
        "over {} GPUs ({} each), dispatch/combine all-to-all per MoE layer",
        tp, m.experts, tp, m.experts / tp);
  }
  return fmt::format("parallelism: tensor_parallel_size {}{}", tp,
                     m.is_moe() && tp > 1 ? ", experts sliced over GPUs" : "");
}

// The decision lines that open the log: model, hardware, compute, memory, context (given),
// scheduler and parallelism.
std::vector<std::string> summary_lines(const EngineFlags& flags, const EngineConfig& c,
                                       std::string context_line) {
  const HardwareSpec& hw = *c.hardware;
  const ModelSpec& m = *c.model;
  const SchedulerConfig& sc = c.scheduler;
  const double block_bytes = c.kv_bytes_per_token * sc.block_size;
  const ParamCounts pc = param_counts(m);
  return {
      fmt::format("model: {} ({}), {:.2f}B parameters, {:.2f}B active per token, {} weights "
                  "({}{})",
                  m.name, m.hf_id, pc.total() / 1e9,
                  pc.active(m.experts_per_token, m.moe_layers()) / 1e9, to_string(c.quantization),
                  c.quantization == m.checkpoint ? "checkpoint" : "--quantization",
                  m.quant_scope == QuantScope::kExpertsOnly ? ", routed experts only" : ""),
      fmt::format("hardware: {} ({}) x{}, {:g} GiB HBM at {:g} TB/s, dense TFLOPS bf16 {} / "
                  "fp8 {} / fp4 {}",
                  hw.name, hw.arch, c.tensor_parallel_size, hw.memory_gib, hw.hbm_tb_s,
                  tflops(hw.bf16_tflops), tflops(hw.fp8_tflops), tflops(hw.fp4_tflops)),
      compute_line(c),
      fmt::format("memory: weights {} per GPU; KV cache {} blocks x {} tokens = {} tokens "
                  "({} per GPU, {:g} bytes/token, {}) at gpu_memory_utilization {:g}{}",
                  gib(c.weight_bytes_per_gpu), sc.num_blocks, sc.block_size, kv_cache_tokens(sc),
                  gib(static_cast<double>(sc.num_blocks) * block_bytes), c.kv_bytes_per_token,
                  c.kv_cache_dtype, c.gpu_memory_utilization,
                  flags.num_gpu_blocks_override ? " (--num-gpu-blocks-override)" : ""),
      std::move(context_line),
      fmt::format("scheduler: continuous batching, chunked prefill, max_num_seqs {}, "
                  "max_num_batched_tokens {}, prefix caching {}",
                  sc.max_num_seqs, sc.max_num_batched_tokens,
                  sc.prefix_caching ? "on (block hashes, LRU eviction)" : "off"),
      parallelism_line(c),
  };
}

// The "setting sources:" line: each setting's source, in resolution order.
std::string sources_line(const EngineConfig& c) {
  std::string sources = "setting sources:";
  for (const auto& [name, source] : c.sources) {
    sources += fmt::format(" {}={}", name, to_string(source));
  }
  return sources;
}

// The resolution steps, in order: each reads what the earlier ones resolved (the all-reduce step
// the parallelism, the KV cache the weights' precision and the step costs' settings).
using ResolveStep = Status (*)(const EngineFlags&, EngineConfig&, Resolver&);
constexpr ResolveStep kResolveSteps[] = {
    resolve_presets, resolve_precision,  resolve_parallelism, resolve_scheduler,
    resolve_perf,    resolve_all_reduce, resolve_kv_cache,
};

}  // namespace

std::string_view to_string(SettingSource source) {
  switch (source) {
    case SettingSource::kDefault:
      return "default";
    case SettingSource::kPreset:
      return "preset";
    case SettingSource::kEnv:
      return "env";
    case SettingSource::kCli:
      return "cli";
    case SettingSource::kPinned:
      return "pinned";
  }
  return "default";
}

Expected<EngineConfig> resolve_engine_config(const EngineFlags& flags,
                                             std::optional<int> max_model_len) {
  EngineConfig c;
  Resolver r(c);
  for (ResolveStep step : kResolveSteps) {
    if (Status s = step(flags, c, r); !s) return s.error();
  }
  Expected<std::string> context_line = resolve_context(max_model_len, c, r);
  if (!context_line) return context_line.error();
  std::vector<std::string> summary = summary_lines(flags, c, std::move(*context_line));
  c.decisions.insert(c.decisions.begin(), std::make_move_iterator(summary.begin()),
                     std::make_move_iterator(summary.end()));
  c.decisions.push_back(sources_line(c));
  all_reduce_rank_lines(c);
  return c;
}

}  // namespace ib::sim
