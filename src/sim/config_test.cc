#include "sim/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "sim/env.h"

namespace ib::sim {
namespace {

// Sets environment variables for one test and restores a clean state after it.
class ScopedEnv {
 public:
  ScopedEnv() { clear(); }
  ~ScopedEnv() { clear(); }
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  static void clear() {
    for (const char* name : {kEnvMaxNumSeqs, kEnvMaxNumBatchedTokens, kEnvGpuMemoryUtilization,
                             kEnvEnablePrefixCaching, kEnvKvCacheDtype, kEnvDisableCustomAllReduce,
                             kEnvQuickReduceQuantization, kEnvMinimaxAllowCustomAr}) {
      ::unsetenv(name);
    }
    clear_env_reads();
  }
};

bool has_line(const EngineConfig& c, const std::string& part) {
  for (const std::string& line : c.decisions) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

SettingSource source(const EngineConfig& c, const std::string& name) {
  SettingSource last = SettingSource::kDefault;
  for (const auto& [n, s] : c.sources) {
    if (n == name) last = s;
  }
  return last;
}

EngineConfig resolve_ok(const EngineFlags& flags, int max_model_len = 8192) {
  auto c = resolve_engine_config(flags, max_model_len);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? std::move(*c) : EngineConfig{};
}

TEST(EngineConfig, DefaultsAreTheBundledPreset) {
  ScopedEnv env;
  const EngineConfig c = resolve_ok({});
  ASSERT_NE(c.hardware, nullptr);
  EXPECT_EQ(c.hardware->name, "H200");
  EXPECT_EQ(c.model->name, "llama-3.1-8b");
  EXPECT_EQ(c.tensor_parallel_size, 1);
  EXPECT_EQ(c.quantization, Precision::kBf16);
  // vLLM's defaults for GPUs with at least 70 GiB.
  EXPECT_EQ(c.scheduler.max_num_seqs, 1024);
  EXPECT_EQ(c.scheduler.max_num_batched_tokens, 8192);
  EXPECT_EQ(c.scheduler.block_size, 16);
  EXPECT_TRUE(c.scheduler.prefix_caching);
  EXPECT_GT(c.scheduler.num_blocks, 1000);
  EXPECT_TRUE(has_line(c, "all-reduce: none"));
  EXPECT_EQ(source(c, "max_num_seqs"), SettingSource::kPreset);
}

TEST(EngineConfig, CommandLineBeatsEnvironmentBeatsPreset) {
  ScopedEnv env;
  env.set(kEnvMaxNumSeqs, "64");
  env.set(kEnvMaxNumBatchedTokens, "2048");
  EngineFlags flags;
  flags.max_num_seqs = 8;
  const EngineConfig c = resolve_ok(flags);
  EXPECT_EQ(c.scheduler.max_num_seqs, 8);
  EXPECT_EQ(source(c, "max_num_seqs"), SettingSource::kCli);
  EXPECT_EQ(c.scheduler.max_num_batched_tokens, 2048);
  EXPECT_EQ(source(c, "max_num_batched_tokens"), SettingSource::kEnv);
  // A flag that is given means its variable is never consulted.
  EXPECT_FALSE(env_was_read(kEnvMaxNumSeqs));
  EXPECT_TRUE(env_was_read(kEnvMaxNumBatchedTokens));
}

TEST(EngineConfig, EnvironmentSettingsTakeEffect) {
  ScopedEnv env;
  env.set(kEnvEnablePrefixCaching, "false");
  env.set(kEnvKvCacheDtype, "fp8");
  env.set(kEnvGpuMemoryUtilization, "0.5");
  const EngineConfig c = resolve_ok({});
  EXPECT_FALSE(c.scheduler.prefix_caching);
  EXPECT_EQ(c.kv_cache_dtype, "fp8");
  EXPECT_EQ(c.gpu_memory_utilization, 0.5);
  // Less memory for the cache, and FP8 halves the bytes per token.
  const EngineConfig base = [] {
    ScopedEnv clean;
    return resolve_ok({});
  }();
  EXPECT_EQ(c.kv_bytes_per_token, base.kv_bytes_per_token / 2);
}

TEST(EngineConfig, BadEnvironmentValuesNameTheVariable) {
  ScopedEnv env;
  env.set(kEnvMaxNumSeqs, "lots");
  auto c = resolve_engine_config({}, 8192);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find(kEnvMaxNumSeqs), std::string::npos) << c.error().message;
}

TEST(EngineConfig, BadFlagsNameTheFlag) {
  ScopedEnv env;
  EngineFlags f;
  f.hardware = "TPUv9";
  auto c = resolve_engine_config(f, 8192);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("--hardware"), std::string::npos);
  EXPECT_NE(c.error().message.find("MI355X"), std::string::npos) << "lists the presets";

  EngineFlags g;
  g.model_preset = "minimax-m2";  // 48 heads
  g.tensor_parallel_size = 5;
  c = resolve_engine_config(g, 8192);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("--tensor-parallel-size"), std::string::npos);

  EngineFlags h;
  h.enable_expert_parallel = true;  // llama is dense
  c = resolve_engine_config(h, 8192);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("--enable-expert-parallel"), std::string::npos);
}

TEST(EngineConfig, AModelThatDoesNotFitSaysSo) {
  ScopedEnv env;
  EngineFlags f;
  f.model_preset = "llama-3.3-70b";  // 141 GB of BF16 weights
  f.hardware = "H100";
  auto c = resolve_engine_config(f, 8192);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("weights per GPU"), std::string::npos) << c.error().message;
  f.tensor_parallel_size = 4;
  EXPECT_TRUE(resolve_engine_config(f, 8192).ok());
}

TEST(EngineConfig, MaxModelLenMustFitTheKvCache) {
  ScopedEnv env;
  EngineFlags f;
  f.num_gpu_blocks_override = 10;  // 160 tokens
  auto c = resolve_engine_config(f, 1000);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("max_model_len"), std::string::npos);
  EXPECT_TRUE(resolve_engine_config(f, 160).ok());
}

TEST(EngineConfig, WithoutMaxModelLenThePresetsContextIsServed) {
  ScopedEnv env;
  // llama-3.1-8b on one H200: 900k tokens of KV cache hold the native 128k context.
  EngineConfig c = [] {
    auto r = resolve_engine_config({}, std::nullopt);
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::move(*r) : EngineConfig{};
  }();
  EXPECT_EQ(c.max_model_len, 131072);
  EXPECT_EQ(source(c, "max_model_len"), SettingSource::kPreset);
  EXPECT_TRUE(has_line(c, "context: max_model_len 131072 (llama-3.1-8b's max_context)"));

  // deepseek-r1's 160k context on 8 x H200.
  EngineFlags d;
  d.model_preset = "deepseek-r1";
  d.tensor_parallel_size = 8;
  auto r = resolve_engine_config(d, std::nullopt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->max_model_len, 163840);

  // An explicit value is kept as given.
  EXPECT_EQ(resolve_ok({}, 4096).max_model_len, 4096);
  EXPECT_EQ(source(resolve_ok({}, 4096), "max_model_len"), SettingSource::kCli);
}

TEST(EngineConfig, ThePresetsContextIsCappedToTheKvCacheWithALogLine) {
  ScopedEnv env;
  EngineFlags f;
  f.num_gpu_blocks_override = 100;  // 1600 tokens: vLLM would refuse to start with 131072
  auto c = resolve_engine_config(f, std::nullopt);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->max_model_len, 1600);
  EXPECT_TRUE(has_line(*c,
                       "context: max_model_len 1600 = what the KV cache holds, capped from "
                       "llama-3.1-8b's max_context 131072"));
  // An explicit value that does not fit is still an error.
  EXPECT_FALSE(resolve_engine_config(f, 1601).ok());
}

TEST(EngineConfig, MoreTensorParallelismLeavesMoreKvCache) {
  ScopedEnv env;
  EngineFlags f;
  f.model_preset = "llama-3.3-70b";
  f.tensor_parallel_size = 2;
  const EngineConfig two = resolve_ok(f);
  f.tensor_parallel_size = 8;
  const EngineConfig eight = resolve_ok(f);
  EXPECT_LT(eight.weight_bytes_per_gpu, two.weight_bytes_per_gpu);
  EXPECT_GT(eight.scheduler.num_blocks, two.scheduler.num_blocks);
}

TEST(EngineConfig, OneAllReduceLinePerTensorParallelRank) {
  ScopedEnv env;
  EngineFlags f;
  f.model_preset = "llama-3.3-70b";
  f.tensor_parallel_size = 4;
  const EngineConfig c = resolve_ok(f);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(has_line(c, "[AR] tp_rank=" + std::to_string(rank) + ": using CustomAllreduce"))
        << rank;
  }
  EXPECT_FALSE(has_line(c, "tp_rank=4"));
  // QuickReduce is ROCm only: on NVIDIA its variable is not even read.
  EXPECT_FALSE(env_was_read(kEnvQuickReduceQuantization));
  EXPECT_TRUE(has_line(c, "QuickReduce is ROCm only"));
}

TEST(EngineConfig, DisablingCustomAllReduceFromTheEnvironment) {
  ScopedEnv env;
  env.set(kEnvDisableCustomAllReduce, "1");
  EngineFlags f;
  f.model_preset = "llama-3.3-70b";
  f.tensor_parallel_size = 2;
  const EngineConfig c = resolve_ok(f);
  EXPECT_TRUE(c.disable_custom_all_reduce);
  EXPECT_FALSE(c.perf.all_reduce.custom_enabled);
  EXPECT_TRUE(has_line(c, "[AR] tp_rank=0: using NCCL ring for every size"));
}

// The MiniMax-M ROCm override of docs/serve-sim.md "Pinned paths": with an FP8 checkpoint the
// override disables custom all-reduce unless SIM_MINIMAX_ALLOW_CUSTOM_AR=1, so the variable
// matters.
TEST(EngineConfig, ModelOverrideReadsItsOptIn) {
  EngineFlags f;
  f.hardware = "MI355X";
  f.model_preset = "minimax-m2";
  f.quantization = "fp8";
  f.tensor_parallel_size = 4;
  EngineConfig without;
  {
    ScopedEnv env;
    without = resolve_ok(f);
    EXPECT_TRUE(env_was_read(kEnvMinimaxAllowCustomAr));
  }
  EXPECT_TRUE(without.disable_custom_all_reduce);
  EXPECT_TRUE(has_line(without, "disabled by the MiniMax-M ROCm override"));
  EXPECT_EQ(without.quick_reduce, QuickReduceLevel::kInt4);  // raised from unset
  EXPECT_TRUE(has_line(without, "[AR] tp_rank=0: using QuickReduce INT4"));
  {
    ScopedEnv env;
    env.set(kEnvMinimaxAllowCustomAr, "1");
    const EngineConfig with = resolve_ok(f);
    EXPECT_FALSE(with.disable_custom_all_reduce);
    EXPECT_TRUE(has_line(with, "kept by SIM_MINIMAX_ALLOW_CUSTOM_AR=1"));
  }
  {
    ScopedEnv env;
    env.set(kEnvQuickReduceQuantization, "NONE");
    const EngineConfig none = resolve_ok(f);
    EXPECT_EQ(none.quick_reduce, QuickReduceLevel::kNone);
    EXPECT_TRUE(env_was_read(kEnvQuickReduceQuantization));
  }
}

// The pinned path: an FP4 checkpoint on gfx950 takes the vendor overrides, which return before
// the model override, so neither the opt-in nor the QuickReduce variable is read, and setting
// them changes nothing; the startup log says why.
TEST(EngineConfig, EnvironmentOnAPinnedPathChangesNothingAndIsNotRead) {
  EngineFlags f;
  f.hardware = "MI355X";
  f.model_preset = "minimax-m2";
  f.quantization = "fp4";
  f.tensor_parallel_size = 4;
  EngineConfig plain;
  {
    ScopedEnv env;
    plain = resolve_ok(f);
  }
  ScopedEnv env;
  env.set(kEnvMinimaxAllowCustomAr, "0");
  env.set(kEnvQuickReduceQuantization, "NONE");
  env.set(kEnvDisableCustomAllReduce, "1");
  const EngineConfig c = resolve_ok(f);
  EXPECT_TRUE(c.all_reduce_pinned);
  EXPECT_FALSE(c.disable_custom_all_reduce);
  EXPECT_EQ(c.quick_reduce, QuickReduceLevel::kInt4);
  EXPECT_EQ(c.disable_custom_all_reduce, plain.disable_custom_all_reduce);
  EXPECT_EQ(c.quick_reduce, plain.quick_reduce);
  EXPECT_EQ(c.decisions, plain.decisions);
  EXPECT_TRUE(has_line(c, "pinned by the gfx950 fp4 overrides"));
  EXPECT_TRUE(has_line(c, "SIM_MINIMAX_ALLOW_CUSTOM_AR"));
  EXPECT_TRUE(has_line(c, "are not read"));
  EXPECT_TRUE(has_line(c, "[AR] tp_rank=3: using QuickReduce INT4"));
  EXPECT_FALSE(env_was_read(kEnvMinimaxAllowCustomAr));
  EXPECT_FALSE(env_was_read(kEnvQuickReduceQuantization));
  EXPECT_FALSE(env_was_read(kEnvDisableCustomAllReduce));
  EXPECT_EQ(source(c, "quick_reduce_quantization"), SettingSource::kPinned);
}

TEST(EngineConfig, PinnedPathOverridesTheCommandLineToo) {
  ScopedEnv env;
  EngineFlags f;
  f.hardware = "MI355X";
  f.model_preset = "gpt-oss-120b";  // MXFP4 checkpoint
  f.tensor_parallel_size = 2;
  f.disable_custom_all_reduce = true;
  const EngineConfig c = resolve_ok(f);
  EXPECT_TRUE(c.all_reduce_pinned);
  EXPECT_FALSE(c.disable_custom_all_reduce);
  EXPECT_TRUE(has_line(c, "--disable-custom-all-reduce is overridden"));
}

TEST(EngineConfig, QuantizationSetsWeightBytesAndComputePath) {
  ScopedEnv env;
  EngineFlags f;
  f.model_preset = "gpt-oss-120b";
  const EngineConfig h200 = resolve_ok(f);
  EXPECT_EQ(h200.quantization, Precision::kFp4);
  EXPECT_TRUE(has_line(h200, "run as bf16 GEMMs"));
  f.hardware = "B200";
  const EngineConfig b200 = resolve_ok(f);
  EXPECT_TRUE(has_line(b200, "compute: fp4 GEMMs"));
  EngineFlags g;
  g.quantization = "fp8";
  EXPECT_LT(resolve_ok(g).weight_bytes_per_gpu, resolve_ok({}).weight_bytes_per_gpu);
}

}  // namespace
}  // namespace ib::sim
