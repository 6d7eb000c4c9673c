#include "recipe/golden_al.h"

#include <gtest/gtest.h>

#include "core/files.h"

namespace ib::recipe {
namespace {

const std::string kGolden = INFERBENCH_TEST_DATA "/inferencex/golden_al_distribution";

GoldenAl load(const std::string& name) {
  auto text = read_file(kGolden + "/" + name);
  if (!text) {
    ADD_FAILURE() << text.error().message;
    return {};
  }
  auto g = parse_golden_al(*text, name);
  if (!g) {
    ADD_FAILURE() << g.error().message;
    return {};
  }
  return *g;
}

TEST(GoldenAl, ReadsInferenceXFilesAndPicksByModelModeAndDraftLength) {
  const GoldenAl minimax = load("minimaxm3_eagle3.yaml");
  ASSERT_EQ(minimax.curves.size(), 1u);  // `_metadata` is not a model
  EXPECT_EQ(minimax.curves.at("minimax-m3").at("off").size(), 8u);
  auto off3 = pick_golden(minimax, "", "off", 3);
  ASSERT_TRUE(off3) << off3.error().message;
  EXPECT_DOUBLE_EQ(off3->al, 2.93);
  EXPECT_EQ(off3->where, "minimaxm3_eagle3.yaml: minimax-m3 thinking_off, 3 draft tokens");
  // Two modes: the mode must be said.
  auto either = pick_golden(minimax, "", "", 3);
  ASSERT_FALSE(either);
  EXPECT_NE(either.error().message.find("say which with thinking: on|off"), std::string::npos);

  const GoldenAl qwen = load("qwen3.8_mtp.yaml");
  auto only = pick_golden(qwen, "", "", 7);
  ASSERT_TRUE(only) << only.error().message;
  EXPECT_DOUBLE_EQ(only->al, 3.67);
  // A length that was not measured is not interpolated.
  auto k3 = pick_golden(qwen, "qwen3.8-27b", "on", 3);
  ASSERT_FALSE(k3);
  EXPECT_NE(k3.error().message.find("no golden AL for 3 draft tokens (it has: 7)"),
            std::string::npos)
      << k3.error().message;
  auto other = pick_golden(qwen, "llama", "on", 7);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("no model 'llama' (the file has: qwen3.8-27b)"),
            std::string::npos);
}

TEST(GoldenAl, BadFilesNameTheLineAndThePath) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"m:\n  thinking_on:\n    3: 5.5\n", "g.yaml:3:8: m.thinking_on.3: expected"},
           Case{"m:\n  thinking_on:\n    0: 1.5\n", "m.thinking_on.0: expected a draft length"},
           Case{"m:\n  thinking_on:\n    x: 1.5\n", "m.thinking_on.x: expected a draft length"},
           Case{"m:\n  thinking_maybe:\n    3: 2.5\n", "m.thinking_maybe: unknown field"},
           Case{"m:\n  thinking_on: 2.5\n", "m.thinking_on: expected a mapping"},
           Case{"m: [1, 2]\n", "m: expected a mapping of thinking_on / thinking_off"},
           Case{"_metadata: {a: 1}\n", "no model in the file"},
           Case{"- 1\n", "expected a mapping of model"},
           Case{"m:\n  thinking_on:\n    3: 2.5\n    3: 2.6\n", "duplicate"},
           Case{"m: {thinking_on: {3: [\n", "g.yaml:"},
       }) {
    auto g = parse_golden_al(c.text, "g.yaml");
    ASSERT_FALSE(g) << c.text;
    EXPECT_NE(g.error().message.find(c.message), std::string::npos) << c.text << "\n"
                                                                    << g.error().message;
  }
}

TEST(GoldenAl, FindsEachEnginesDraftLengthAndSyntheticAcceptance) {
  // vLLM: both in the --speculative-config JSON.
  auto vllm = find_spec_knobs(
      {"vllm", "serve", "m", "--speculative-config",
       R"({"method": "mtp", "num_speculative_tokens": 3, "synthetic_acceptance_length": 2.5})"},
      {});
  EXPECT_EQ(vllm.draft_tokens, 3);
  ASSERT_EQ(vllm.pins.size(), 1u);
  EXPECT_DOUBLE_EQ(vllm.pins[0].al, 2.5);
  EXPECT_FALSE(vllm.pins[0].environment);
  // SGLang and TensorRT-LLM pin through the environment; TensorRT-LLM's value is AL - 1.
  auto sglang =
      find_spec_knobs({"python", "-m", "sglang.launch_server", "--speculative-num-steps=3"},
                      {{"SGLANG_SIMULATE_ACC_LEN", "2.5"}});
  EXPECT_EQ(sglang.draft_tokens, 3);
  ASSERT_EQ(sglang.pins.size(), 1u);
  EXPECT_TRUE(sglang.pins[0].environment);
  EXPECT_EQ(sglang.pins[0].variable, "SGLANG_SIMULATE_ACC_LEN");
  auto trt =
      find_spec_knobs({"trtllm-serve"}, {{"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "1.5"}});
  ASSERT_EQ(trt.pins.size(), 1u);
  EXPECT_DOUBLE_EQ(trt.pins[0].al, 2.5);
  EXPECT_NE(trt.pins[0].knob.find("(AL - 1)"), std::string::npos);
  // ATOM's rate spelling: AL = 1 + rate * K.
  auto atom = find_spec_knobs(
      {"atom", "--num-speculative-tokens", "4", "--spec-decode-acceptance-rate", "0.5"}, {});
  ASSERT_EQ(atom.pins.size(), 1u);
  EXPECT_DOUBLE_EQ(atom.pins[0].al, 3);
  // serve-sim: per-position acceptance p gives 1 + p + p^2 + p^3 at K = 3.
  auto sim = find_spec_knobs({"inferbench", "serve-sim", "--spec-decode", "3", "--spec-acceptance",
                              "0.5", "--spec-decoding", "mtp"},
                             {});
  ASSERT_EQ(sim.pins.size(), 1u);
  EXPECT_DOUBLE_EQ(sim.pins[0].al, 1.875);
  EXPECT_FALSE(sim.off);
  EXPECT_TRUE(find_spec_knobs({"serve-sim", "--spec-decoding", "none"}, {}).off);
  // Nothing readable: nothing found (the engine refuses its own bad values).
  auto bad = find_spec_knobs({"vllm", "--speculative-config", "{not json", "--spec-decode", "x"},
                             {{"SGLANG_SIMULATE_ACC_LEN", "fast"}});
  EXPECT_FALSE(bad.draft_tokens);
  EXPECT_TRUE(bad.pins.empty());
}

}  // namespace
}  // namespace ib::recipe
