#include "sim/model_spec.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/hardware.h"

namespace ib::sim {
namespace {

TEST(ModelSpec, DerivedParameterCountsMatchTheModelCards) {
  for (const ModelSpec& m : model_presets()) {
    const ParamCounts p = param_counts(m);
    EXPECT_NEAR(p.total() / 1e9, m.card_total_b, 0.02 * m.card_total_b) << m.name;
    if (m.is_moe()) {
      const double active = p.active(m.experts_per_token, m.moe_layers()) / 1e9;
      EXPECT_NEAR(active, m.card_active_b, 0.06 * m.card_active_b) << m.name;
      EXPECT_LT(active, 0.1 * p.total() / 1e9) << m.name << ": MoE activates a small fraction";
    } else {
      EXPECT_EQ(p.routed_experts, 0) << m.name;
    }
  }
}

TEST(ModelSpec, KvBytesPerTokenFollowTheAttentionLayout) {
  const ModelSpec& llama = *find_model("llama-3.1-8b");
  // 2 (K and V) x 8 heads x 128 dims x 2 bytes x 32 layers.
  EXPECT_EQ(kv_bytes_per_token(llama, 1, 2.0), 2.0 * 8 * 128 * 2 * 32);
  // GQA heads split over GPUs, down to one head per GPU.
  EXPECT_EQ(kv_bytes_per_token(llama, 2, 2.0), kv_bytes_per_token(llama, 1, 2.0) / 2);
  EXPECT_EQ(kv_bytes_per_token(llama, 8, 2.0), kv_bytes_per_token(llama, 1, 2.0) / 8);
  // FP8 halves it.
  EXPECT_EQ(kv_bytes_per_token(llama, 1, 1.0), kv_bytes_per_token(llama, 1, 2.0) / 2);
  // MLA caches one latent per token, replicated on every GPU.
  const ModelSpec& r1 = *find_model("deepseek-r1");
  EXPECT_EQ(kv_bytes_per_token(r1, 1, 2.0), (512.0 + 64.0) * 2 * 61);
  EXPECT_EQ(kv_bytes_per_token(r1, 8, 2.0), kv_bytes_per_token(r1, 1, 2.0));
  // MLA needs far less KV per token than a GQA model of similar size would.
  EXPECT_LT(kv_bytes_per_token(r1, 1, 2.0),
            kv_bytes_per_token(*find_model("llama-3.3-70b"), 1, 2.0));
}

TEST(ModelSpec, PresetsCoverTheRequiredClasses) {
  int dense = 0, moe = 0;
  for (const ModelSpec& m : model_presets()) (m.is_moe() ? moe : dense) += 1;
  EXPECT_GE(dense, 2);
  EXPECT_GE(moe, 3);
  EXPECT_NE(find_model("LLAMA-3.1-8B"), nullptr);  // case-insensitive
  EXPECT_EQ(find_model("gpt-5"), nullptr);
  EXPECT_NE(model_names().find("minimax-m2"), std::string::npos);
}

TEST(Hardware, PresetsAndPrecisionFallback) {
  for (const char* name : {"H100", "H200", "B200", "B300", "MI300X", "MI325X", "MI355X"}) {
    const HardwareSpec* h = find_hardware(name);
    ASSERT_NE(h, nullptr) << name;
    EXPECT_GT(h->fp8_tflops, h->bf16_tflops) << name;
    EXPECT_GT(h->memory_bytes(), 64.0 * (1 << 30)) << name;
  }
  const HardwareSpec& h200 = *find_hardware("h200");
  const HardwareSpec& b200 = *find_hardware("B200");
  // No FP4 units on Hopper: FP4 weights compute at BF16 speed; Blackwell runs FP4 natively.
  EXPECT_EQ(h200.compute_precision(Precision::kFp4), Precision::kBf16);
  EXPECT_EQ(h200.peak_flops(Precision::kFp4), h200.peak_flops(Precision::kBf16));
  EXPECT_EQ(b200.compute_precision(Precision::kFp4), Precision::kFp4);
  EXPECT_GT(b200.peak_flops(Precision::kFp4), b200.peak_flops(Precision::kFp8));
  // Lower precision stores fewer bytes per weight.
  EXPECT_LT(bytes_per_weight(Precision::kFp4), bytes_per_weight(Precision::kFp8));
  EXPECT_LT(bytes_per_weight(Precision::kFp8), bytes_per_weight(Precision::kBf16));
}

TEST(Hardware, MeshBandwidthGrowsWithPeersSwitchDoesNot) {
  const HardwareSpec& mi300 = *find_hardware("MI300X");
  const HardwareSpec& h100 = *find_hardware("H100");
  EXPECT_LT(mi300.collective_bytes_per_s(2), mi300.collective_bytes_per_s(4));
  EXPECT_LT(mi300.collective_bytes_per_s(4), mi300.collective_bytes_per_s(8));
  EXPECT_EQ(h100.collective_bytes_per_s(2), h100.collective_bytes_per_s(8));
}

TEST(Hardware, ParsePrecision) {
  EXPECT_EQ(parse_precision("BF16"), Precision::kBf16);
  EXPECT_EQ(parse_precision("auto"), Precision::kBf16);
  EXPECT_EQ(parse_precision("fp8"), Precision::kFp8);
  EXPECT_EQ(parse_precision("mxfp4"), Precision::kFp4);
  EXPECT_EQ(parse_precision("nvfp4"), Precision::kFp4);
  EXPECT_FALSE(parse_precision("int3").has_value());
}

}  // namespace
}  // namespace ib::sim
