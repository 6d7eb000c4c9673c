#include "sim/model_spec.h"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace ib::sim {

namespace {


// Architecture numbers from each checkpoint's config.json on Hugging Face (docs/perf-model.md
// "Models" links them). Field order follows ModelSpec.
// clang-format off
constexpr std::array<ModelSpec, 5> kModelPresets = {{
    // meta-llama/Llama-3.1-8B-Instruct: 32 layers, hidden 4096, 32 heads / 8 KV heads of 128,
    // intermediate 14336, vocab 128256, BF16.
    {"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "llama", 32, 4096, 128256,
     AttentionKind::kGqa, 32, 8, 128, 0, 0, 0, 0, 0, 0, 0, 32, 14336, 0, 0, 0, 0,
     Precision::kBf16, QuantScope::kAllLinear, 131072, 8.03, 0},
    // meta-llama/Llama-3.3-70B-Instruct: 80 layers, hidden 8192, 64 heads / 8 KV heads of 128,
    // intermediate 28672, vocab 128256, BF16.
    {"llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", "llama", 80, 8192, 128256,
     AttentionKind::kGqa, 64, 8, 128, 0, 0, 0, 0, 0, 0, 0, 80, 28672, 0, 0, 0, 0,
     Precision::kBf16, QuantScope::kAllLinear, 131072, 70.6, 0},
    // deepseek-ai/DeepSeek-R1 (DeepSeek-V3 architecture): 61 layers (3 dense, intermediate
    // 18432), hidden 7168, 128 heads, MLA q_lora 1536 / kv_lora 512 / nope 128 / rope 64 / v 128,
    // 256 routed experts (top 8) + 1 shared, expert intermediate 2048, vocab 129280, FP8 weights.
    {"deepseek-r1", "deepseek-ai/DeepSeek-R1", "deepseek_v3", 61, 7168, 129280,
     AttentionKind::kMla, 128, 128, 0, 1536, 512, 128, 64, 128, 0, 0, 3, 18432, 256, 8, 1, 2048,
     Precision::kFp8, QuantScope::kAllLinear, 163840, 671, 37},
    // openai/gpt-oss-120b: 36 layers alternating sliding-window (128) and full attention, hidden
    // 2880, 64 heads / 8 KV heads of 64, 128 experts (top 4), intermediate 2880, vocab 201088,
    // MXFP4 experts with BF16 attention.
    {"gpt-oss-120b", "openai/gpt-oss-120b", "gpt_oss", 36, 2880, 201088, AttentionKind::kGqa, 64,
     8, 64, 0, 0, 0, 0, 0, 128, 18, 0, 0, 128, 4, 0, 2880, Precision::kFp4,
     QuantScope::kExpertsOnly, 131072, 116.8, 5.1},
    // MiniMaxAI/MiniMax-M2: 62 layers, hidden 3072, 48 heads / 8 KV heads of 128, 256 experts
    // (top 8), expert intermediate 1536, vocab 200064, FP8 weights.
    {"minimax-m2", "MiniMaxAI/MiniMax-M2", "minimax_m2", 62, 3072, 200064, AttentionKind::kGqa,
     48, 8, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 256, 8, 0, 1536, Precision::kFp8,
     QuantScope::kAllLinear, 196608, 230, 10},
}};
// clang-format on

double attention_params_per_layer(const ModelSpec& m) {
  const double h = m.hidden;
  if (m.attention == AttentionKind::kGqa) {
    const double q = static_cast<double>(m.heads) * m.head_dim;
    const double kv = static_cast<double>(m.kv_heads) * m.head_dim;
    return h * q + 2 * h * kv + q * h;
  }
  const double heads = m.heads;
  const double qk = m.qk_nope_dim + m.qk_rope_dim;
  const double q_proj =
      m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * heads * qk : h * heads * qk;
  const double kv_a = h * (m.kv_lora_rank + m.qk_rope_dim);
  const double kv_b = static_cast<double>(m.kv_lora_rank) * heads * (m.qk_nope_dim + m.v_head_dim);
  const double o = heads * m.v_head_dim * h;
  return q_proj + kv_a + kv_b + o;
}

}  // namespace

double ParamCounts::total() const {
  return embedding + lm_head + attention + dense_mlp + shared_experts + router + routed_experts;
}

double ParamCounts::active(int experts_per_token, int moe_layers) const {
  return lm_head + attention + dense_mlp + shared_experts + router +
         per_expert * experts_per_token * moe_layers;
}

ParamCounts param_counts(const ModelSpec& m) {
  ParamCounts p;
  const double h = m.hidden;
  p.embedding = h * m.vocab;
  p.lm_head = h * m.vocab;  // none of the presets ties the embeddings
  p.attention = attention_params_per_layer(m) * m.layers;
  p.dense_mlp = 3 * h * m.dense_intermediate * m.dense_layers;  // gate, up and down projections
  if (m.is_moe()) {
    p.per_expert = 3 * h * m.expert_intermediate;
    p.routed_experts = p.per_expert * m.experts * m.moe_layers();
    p.shared_experts = p.per_expert * m.shared_experts * m.moe_layers();
    p.router = h * m.experts * m.moe_layers();
  }
  return p;
}

double kv_bytes_per_token_layer(const ModelSpec& m, int tp, double kv_bytes) {
  if (m.attention == AttentionKind::kMla) {
    return static_cast<double>(m.kv_lora_rank + m.qk_rope_dim) * kv_bytes;
  }
  const double heads_per_gpu = std::max(1.0, static_cast<double>(m.kv_heads) / std::max(1, tp));
  return 2.0 * heads_per_gpu * m.head_dim * kv_bytes;
}

double kv_bytes_per_token(const ModelSpec& m, int tp, double kv_bytes) {
  return kv_bytes_per_token_layer(m, tp, kv_bytes) * m.layers;
}

std::span<const ModelSpec> model_presets() {
  return kModelPresets;
}

const ModelSpec* find_model(std::string_view name) {
  for (const ModelSpec& m : kModelPresets) {
    if (boost::beast::iequals(m.name, name)) return &m;
  }
  return nullptr;
}

std::string model_names() {
  std::string out;
  for (const ModelSpec& m : kModelPresets) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

}  // namespace ib::sim
