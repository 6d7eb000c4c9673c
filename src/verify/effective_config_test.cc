#include "verify/effective_config.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/files.h"

namespace ib::verify {
namespace {

namespace json = boost::json;

std::string fixture(const std::string& name) {
  auto text = read_file(INFERBENCH_SOURCE_DIR "/tests/fixtures/logs/" + name);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : std::string();
}

std::string value_text(const EffectiveConfig& c, const std::string& key) {
  const json::value* v = c.settings.if_contains(key);
  return v == nullptr ? "<not set>" : setting_text(*v);
}

std::string all_warnings(const EffectiveConfig& c) {
  std::string out;
  for (const std::string& w : c.warnings) out += w + "\n";
  return out;
}

struct LogCase {
  std::string file;
  std::string engine;
  std::vector<std::pair<std::string, std::string>> settings;  // key -> setting_text
  std::string evidence_key;                                   // where one value was read
  std::string evidence_probe;
  int evidence_line;
  size_t warnings;
};

void PrintTo(const LogCase& c, std::ostream* os) {
  *os << c.file;
}

class RealLogs : public testing::TestWithParam<LogCase> {};

TEST_P(RealLogs, ProbesReadTheEffectiveConfiguration) {
  const LogCase& c = GetParam();
  const EffectiveConfig config = probe_effective_config(fixture(c.file));
  EXPECT_EQ(config.engine, c.engine);
  for (const auto& [key, expected] : c.settings) {
    EXPECT_EQ(value_text(config, key), expected) << key;
  }
  auto hit = config.evidence.find(c.evidence_key);
  ASSERT_NE(hit, config.evidence.end()) << c.evidence_key;
  EXPECT_EQ(hit->second.probe, c.evidence_probe);
  EXPECT_EQ(hit->second.line, c.evidence_line);
  EXPECT_FALSE(hit->second.text.empty());
  EXPECT_LE(hit->second.text.size(), 600u);  // long lines are excerpted
  EXPECT_EQ(config.warnings.size(), c.warnings) << all_warnings(config);
  // Every setting has its evidence.
  for (const auto& [key, value] : config.settings) {
    EXPECT_EQ(config.evidence.count(std::string(key)), 1u) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, RealLogs,
    testing::Values(
        LogCase{"sglang-dsr1-mi355x-tp8.log",
                "sglang",
                {{"model_path", "deepseek-ai/DeepSeek-R1-0528"},
                 {"tp_size", "8"},
                 {"mem_fraction_static", "0.8"},
                 {"attention_backend", "aiter"},
                 {"disable_custom_all_reduce", "false"},
                 {"chunked_prefill_size", "196608"},
                 {"json_model_override_args", "{\"rope_scaling\": null}"},
                 {"cuda_graph_bs", "[1,2,4,8,12,16,24,32,40,48,56,64,128,256,512]"},
                 {"mm_process_config", "{}"},
                 {"max_running_requests", "4096"},  // resolved by the scheduler (was None)
                 {"context_len", "2304"},
                 {"available_gpu_mem", "38.39 GB"},    // the later rank line
                 {"kv_cache_pool_tokens", "2315187"},  // TP ranks share one pool
                 {"engine-version", "<not set>"}},
                "tp_size",
                "sglang-server-args",
                5,
                0},
        LogCase{"sglang-dsr1-h200-dp-attention.log",
                "sglang",
                {{"dp_size", "8"},
                 {"enable_dp_attention", "true"},
                 {"speculative_algorithm", "EAGLE"},
                 {"chat_template", "it's {{ messages }}\n\xE2\x80\xA8"},
                 {"chunked_prefill_size", "4096"},      // the per-DP-rank size the server logged
                 {"kv_cache_pool_tokens", "1748480"}},  // 218560 on DP0 x dp_size 8
                "chunked_prefill_size",
                "sglang-memory-pool",
                7,
                1},
        LogCase{"vllm-qwen3-32b-tp4.log",
                "vllm",
                {{"engine-version", "0.11.0"},
                 {"tensor_parallel_size", "4"},
                 {"served_model_name", "qwen3-32b"},
                 {"dtype", "torch.bfloat16"},
                 {"tokenizer_mode", "auto"},
                 {"max_model_len", "9472"},
                 {"max_num_batched_tokens", "8192"},
                 {"gpu_memory_utilization", "0.92"},
                 {"override_generation_config.min_p", "1e-05"},
                 {"structured_outputs_config.backend", "auto"},
                 {"compilation_config.level", "3"},
                 {"compilation_config.use_inductor", "true"},
                 {"compilation_config.local_cache_dir", "none"},
                 {"compilation_config.cudagraph_mode", "[2,1]"},  // engine config over args
                 {"kv_cache_pool_tokens", "1839952"}},
                "kv_cache_pool_tokens",
                "vllm-kv-cache",
                19,
                1},
        LogCase{"vllm-dsv4-dp2-banner.log",
                "vllm",
                {{"engine-version", "0.25.0"},
                 {"data_parallel_size", "2"},
                 {"enable_expert_parallel", "true"},
                 {"speculative_config.method", "mtp"},
                 {"speculative_config.num_speculative_tokens", "1"},
                 {"api_key", "[\"***\"]"},
                 {"max_model_len", "1048576"},
                 {"kv_cache_pool_tokens", "2088960"}},  // both engine cores' pools
                "trust_remote_code",
                "vllm-non-default-args",
                6,
                0},
        LogCase{
            "trtllm-dsr1-fp4-b200-tp8.log",
            "trtllm",
            {{"engine-version", "1.2.0rc5"},
             {"model", "nvidia/DeepSeek-R1-0528-FP4-v2"},
             {"tensor_parallel_size", "8"},
             {"moe_expert_parallel_size", "8"},
             {"enable_attention_dp", "true"},
             {"kv_cache_config.free_gpu_memory_fraction", "0.8"},
             {"kv_cache_config.dtype", "fp8"},
             {"quant_config.exclude_modules", "[\"lm_head\"]"},
             {"scheduler_config.capacity_scheduler_policy",
              "<CapacitySchedulerPolicy.GUARANTEED_NO_EVICT: 'GUARANTEED_NO_EVICT'>"},
             {"scheduler_config.dynamic_batch_config.dynamic_batch_moving_average_window", "128"},
             {"backend", "pytorch"},
             {"max_num_requests", "512"},
             {"tokens_per_block", "32"},
             {"kv_cache_pool_tokens", "3357184"}},
            "tensor_parallel_size",
            "trtllm-llm-args",
            15,
            0},
        LogCase{"llamacpp-llama32-3b-l40s.log",
                "llamacpp",
                {{"engine-version", "b6550"},
                 {"build_commit", "3ecb2f67"},
                 {"n_ctx", "16384"},
                 {"n_ctx_per_seq", "4096"},
                 {"n_batch", "2048"},
                 {"flash_attn", "auto"},
                 {"kv_unified", "false"},
                 {"cache_type_k", "q8_0"},
                 {"n_threads", "16"},
                 {"system_info.CUDA.ARCHS", "890"},
                 {"model.file_type", "Q4_K - Medium"},
                 {"model.n_ctx_train", "131072"},
                 {"model.general.name", "Llama 3.2 3B Instruct"},
                 {"n_slots", "4"},
                 {"listen", "http://0.0.0.0:8080"}},
                "n_ctx",
                "llamacpp-context",
                35,
                0},
        LogCase{"servesim-minimax-mi355x-tp4.log",
                "serve-sim",
                {{"hardware", "MI355X"},
                 {"tensor_parallel_size", "4"},
                 {"disable_custom_all_reduce", "true"},
                 {"quick_reduce_quantization", "INT4"},
                 {"truth_log", "none"},
                 {"source.disable_custom_all_reduce", "preset"},
                 {"source.kv_cache_dtype", "default"},
                 {"kv_cache_pool_tokens", "3444528"},
                 {"listen", "http://127.0.0.1:18731"}},
                "disable_custom_all_reduce",
                "servesim-args",
                1,
                0}));

struct PrefixCase {
  std::string line;
};

class LinePrefixes : public testing::TestWithParam<PrefixCase> {};

TEST_P(LinePrefixes, AreTolerated) {
  const EffectiveConfig c = probe_effective_config(GetParam().line);
  EXPECT_EQ(c.engine, "sglang");
  EXPECT_EQ(value_text(c, "tp_size"), "2");
  EXPECT_EQ(c.evidence.at("tp_size").line, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LinePrefixes,
    testing::Values(PrefixCase{"server_args=ServerArgs(tp_size=2)"},
                    PrefixCase{"[2026-11-30 10:00:00] server_args=ServerArgs(tp_size=2)"},
                    PrefixCase{"[2026-11-30 10:00:00] INFO engine.py:177: server_args=ServerArgs("
                               "tp_size=2)"},
                    PrefixCase{"Nov 30 10:00:00 host sglang[42]: [2026-11-30 10:00:00 TP0] "
                               "server_args=ServerArgs(tp_size=2) trailing text"},
                    PrefixCase{
                        "\x1b[32m[2026-11-30 10:00:00]\x1b[0m server_args=ServerArgs(tp_size=2)"},
                    PrefixCase{"srun: [1,0]<stdout>: server_args=ServerArgs(tp_size=2)\r\n"}));

TEST(ProbeEffectiveConfig, LaterLineWinsWithinAProbe) {
  const EffectiveConfig c = probe_effective_config(
      "server_args=ServerArgs(tp_size=2, dp_size=1)\n"
      "restarting\n"
      "server_args=ServerArgs(tp_size=4, dp_size=1)\n");
  EXPECT_EQ(value_text(c, "tp_size"), "4");
  EXPECT_EQ(c.evidence.at("tp_size").line, 3);
  EXPECT_TRUE(c.warnings.empty()) << all_warnings(c);
}

TEST(ProbeEffectiveConfig, ResolvedStateWinsOverArgumentsWhateverTheOrder) {
  // The memory pool line comes first here; the later ServerArgs dump must not override it.
  const EffectiveConfig c = probe_effective_config(
      "[TP0] max_total_num_tokens=1000, max_running_requests=1, context_len=8192\n"
      "server_args=ServerArgs(max_running_requests=2, tp_size=1)\n");
  EXPECT_EQ(value_text(c, "max_running_requests"), "1");
  EXPECT_EQ(c.evidence.at("max_running_requests").probe, "sglang-memory-pool");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("max_running_requests: sglang-memory-pool (line 1) says 1, "
                               "sglang-server-args (line 2) says 2; using sglang-memory-pool"),
            std::string::npos)
      << c.warnings[0];
}

TEST(ProbeEffectiveConfig, RecipeProbesAddAndOverrideValues) {
  const std::string log = fixture("servesim-minimax-mi355x-tp4-custom-ar.log");
  const EffectiveConfig c = probe_effective_config(
      log, {{"ar_impl", R"(\[AR\] tp_rank=\d+: using .*?else (\w+))"},
            {"tensor_parallel_size", R"(parallelism: tensor_parallel_size (\d+))"},
            {"quick_reduce_quantization", R"(quick all-reduce (\w+) \(from)"}});
  EXPECT_EQ(c.engine, "serve-sim");
  EXPECT_EQ(value_text(c, "ar_impl"), "AiterCustomAllreduce");
  EXPECT_EQ(c.evidence.at("ar_impl").probe, "recipe");
  EXPECT_EQ(c.evidence.at("ar_impl").line, 14);  // the last of the four rank lines
  EXPECT_EQ(value_text(c, "tensor_parallel_size"), "4");
  EXPECT_EQ(c.evidence.at("tensor_parallel_size").probe, "recipe");
  EXPECT_EQ(value_text(c, "quick_reduce_quantization"), "INT4");
  EXPECT_TRUE(c.warnings.empty()) << all_warnings(c);
}

TEST(ProbeEffectiveConfig, BadRecipeProbesBecomeWarnings) {
  const EffectiveConfig c = probe_effective_config(
      "hello world\n", {{"a", "(unclosed"}, {"b", "no group"}, {"c", "never (\\d+) here"}});
  EXPECT_EQ(c.engine, "");
  EXPECT_TRUE(c.settings.empty());
  ASSERT_EQ(c.warnings.size(), 3u) << all_warnings(c);
  EXPECT_NE(c.warnings[0].find("recipe probe 'a': invalid regex"), std::string::npos);
  EXPECT_NE(c.warnings[1].find("recipe probe 'b': the regex has no capture group"),
            std::string::npos);
  EXPECT_NE(c.warnings[2].find("recipe probe 'c' matched no line"), std::string::npos);
}

TEST(ProbeEffectiveConfig, OnlyRecipeProbesMeansCustomEngine) {
  const EffectiveConfig c =
      probe_effective_config("my-server 1.0 ready, batch=32\n", {{"batch", R"(batch=(\d+))"}});
  EXPECT_EQ(c.engine, "custom");
  EXPECT_EQ(value_text(c, "batch"), "32");
  EXPECT_TRUE(c.settings.at("batch").is_int64());
}

TEST(ProbeEffectiveConfig, UnreadableLinesAreWarningsNotFailures) {
  const EffectiveConfig c = probe_effective_config(
      "ok line\n"
      "[2026-01-01] server_args=ServerArgs(tp_size=8, broken=[1, 2\n"
      "INFO non-default args: {'x': \n");
  ASSERT_EQ(c.warnings.size(), 2u) << all_warnings(c);
  EXPECT_NE(c.warnings[0].find("line 2: server_args=ServerArgs(...) is unreadable: offset"),
            std::string::npos)
      << c.warnings[0];
  EXPECT_NE(c.warnings[1].find("line 3: vLLM's non-default args is unreadable"), std::string::npos)
      << c.warnings[1];
  EXPECT_TRUE(c.settings.empty());
}

TEST(ProbeEffectiveConfig, EmptyAndGarbageLogs) {
  EXPECT_EQ(probe_effective_config("").engine, "");
  EXPECT_TRUE(probe_effective_config("\n\n\r\n").settings.empty());
  std::mt19937 rng(7);
  const std::string pieces[] = {"server_args=ServerArgs(",
                                "non-default args: {",
                                "LLM Args:",
                                " with config: ",
                                "LLM engine",
                                "llama_context: ",
                                "=",
                                "'",
                                "(",
                                "[",
                                "{",
                                "\n",
                                "system_info: ",
                                " | ",
                                "\x1b[",
                                ",",
                                "max_total_num_tokens=",
                                "context_len=",
                                "GPU KV cache size: "};
  for (int i = 0; i < 500; ++i) {
    std::string log;
    for (int j = 0; j < 30; ++j) log += pieces[rng() % std::size(pieces)];
    const EffectiveConfig c = probe_effective_config(log, {{"k", "(=)"}});
    EXPECT_EQ(c.settings.size(), c.evidence.size());
  }
}

TEST(ProbeEffectiveConfig, ToJsonHasEngineSettingsEvidenceWarnings) {
  const EffectiveConfig c =
      probe_effective_config("x\nserver_args=ServerArgs(tp_size=2, mem_fraction_static=0.85)\n");
  const json::object j = c.to_json();
  EXPECT_EQ(j.at("engine"), "sglang");
  EXPECT_EQ(j.at("settings").at("tp_size"), 2);
  EXPECT_EQ(j.at("evidence").at("tp_size").at("probe"), "sglang-server-args");
  EXPECT_EQ(j.at("evidence").at("tp_size").at("line"), 2);
  EXPECT_TRUE(j.at("warnings").as_array().empty());
  EXPECT_NO_THROW((void)json::parse(json::serialize(j)));
}

TEST(DiffEffective, ShowsExactlyWhatTheChangeChanged) {
  const EffectiveConfig base = probe_effective_config(fixture("servesim-minimax-mi355x-tp4.log"));
  const EffectiveConfig head =
      probe_effective_config(fixture("servesim-minimax-mi355x-tp4-custom-ar.log"));
  const json::object diff = diff_effective(base, head);
  EXPECT_EQ(diff, json::parse(R"j({
    "disable_custom_all_reduce": {"base": true, "head": false},
    "source.disable_custom_all_reduce": {"base": "preset", "head": "default"}})j"))
      << json::serialize(diff);
  EXPECT_TRUE(diff_effective(base, base).empty());
}

TEST(DiffEffective, MissingKeysReadAsNull) {
  const EffectiveConfig a = probe_effective_config("server_args=ServerArgs(tp_size=2, x=None)");
  const EffectiveConfig b = probe_effective_config("server_args=ServerArgs(tp_size=2.0, y=1)");
  EXPECT_EQ(diff_effective(a, b), json::parse(R"j({"y": {"base": null, "head": 1}})j"));
}

struct SameCase {
  std::string a;  // JSON
  std::string b;
  bool same;
};

class SameSetting : public testing::TestWithParam<SameCase> {};

TEST_P(SameSetting, Normalises) {
  const SameCase& c = GetParam();
  EXPECT_EQ(same_setting(json::parse(c.a), json::parse(c.b)), c.same) << c.a << " vs " << c.b;
  EXPECT_EQ(same_setting(json::parse(c.b), json::parse(c.a)), c.same) << c.b << " vs " << c.a;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SameSetting,
    testing::Values(SameCase{"8", "8", true}, SameCase{"8", "8.0", true},
                    SameCase{"8", "\"8\"", true}, SameCase{"0.85", "\"0.85\"", true},
                    SameCase{"8", "9", false}, SameCase{"true", "\"True\"", true},
                    SameCase{"false", "\"false\"", true}, SameCase{"true", "false", false},
                    SameCase{"null", "\"None\"", true}, SameCase{"null", "0", false},
                    SameCase{"\"fp8\"", "\"fp8\"", true}, SameCase{"\"fp8\"", "\"FP8\"", false},
                    SameCase{"[\"x\"]", "\"x\"", true}, SameCase{"[1, 2]", "[1, 2]", true},
                    SameCase{"\"bfloat16\"", "\"torch.bfloat16\"", true},
                    SameCase{"\"1\"", "true", false}));

}  // namespace
}  // namespace ib::verify
