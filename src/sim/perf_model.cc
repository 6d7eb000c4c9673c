#include "sim/perf_model.h"

#include "sim/power_model.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace ib::sim {

void StepBatch::add(int new_tokens, int context_before, bool samples, int window) {
  assert(new_tokens >= 1 && context_before >= 0);
  const double q = new_tokens;
  const double c0 = context_before;
  const double c1 = c0 + q;
  ++seqs;
  tokens += new_tokens;
  if (samples) ++sampled;
  // Causal attention: query at position p (1-based) attends to p keys.
  const double pairs = q * c0 + q * (q + 1) / 2;
  if (new_tokens == 1) {
    ++decode_seqs;
    pairs_full_decode += pairs;
  } else {
    pairs_full_prefill += pairs;
  }
  kv_read_full += c1;
  if (window > 0) {
    const double w = window;
    // Σ_{p=c0+1}^{c1} min(p, w): the part below the window grows, the rest is capped at w.
    double below = 0;
    if (c0 < w) {
      const double last = std::min(c1, w);
      below = (c0 + 1 + last) * (last - c0) / 2;
    }
    const double capped = std::max(0.0, c1 - std::max(c0, w)) * w;
    pairs_window += below + capped;
    kv_read_window += std::min(c1, w + q);
  }
}

PerfModel::PerfModel(const ModelSpec& model, const HardwareSpec& hardware,
                     const PerfSettings& settings)
    : model_(model), hardware_(hardware), settings_(settings), params_(param_counts(model)) {
  assert(settings_.tp >= 1);
  assert(!settings_.expert_parallel || model_.is_moe());
  quantized_bytes_ = bytes_per_weight(settings_.weights);
  non_expert_bytes_ = model_.quant_scope == QuantScope::kAllLinear
                          ? quantized_bytes_
                          : bytes_per_weight(Precision::kBf16);
  non_expert_linear_ =
      params_.attention + params_.dense_mlp + params_.shared_experts + params_.router;
  const double bf16 = bytes_per_weight(Precision::kBf16);
  // Vocab-parallel embedding and LM head, layers sliced (or experts split) over tp GPUs.
  resident_weight_bytes_ =
      ((params_.embedding + params_.lm_head) * bf16 + non_expert_linear_ * non_expert_bytes_ +
       params_.routed_experts * quantized_bytes_) /
      settings_.tp;
  kv_bytes_per_token_layer_ = kv_bytes_per_token_layer(model_, settings_.tp, settings_.kv_bytes);
  kv_bytes_per_token_ = kv_bytes_per_token_layer_ * model_.layers;
}

double PerfModel::touched_experts(int tokens) const {
  if (!model_.is_moe() || tokens <= 0) return 0;
  const double e = model_.experts;
  const double k = model_.experts_per_token;
  return e * (1.0 - std::pow(1.0 - k / e, tokens));
}

AllReduceCost PerfModel::layer_all_reduce(int tokens) const {
  // BF16 activations of the hidden size for every token in the step.
  const double bytes = static_cast<double>(tokens) * model_.hidden * 2.0;
  return all_reduce_cost(hardware_, settings_.tp, bytes, settings_.all_reduce);
}

StepCost PerfModel::step_cost(const StepBatch& b) const {
  StepCost c;
  const double tp = settings_.tp;
  const double t = b.tokens;
  const double bf16 = bytes_per_weight(Precision::kBf16);

  // Weights read once per step; routed experts only as far as some token chose them.
  const double experts_read =
      touched_experts(b.tokens) * params_.per_expert * model_.moe_layers() * quantized_bytes_;
  c.weight_bytes =
      (params_.lm_head * bf16 + non_expert_linear_ * non_expert_bytes_ + experts_read) / tp;

  // GEMM FLOPs: 2 per weight per token; the LM head only for sampled positions.
  const double expert_flops =
      2.0 * params_.per_expert * model_.experts_per_token * model_.moe_layers() * t;
  const double non_expert_flops = 2.0 * non_expert_linear_ * t;
  const double lm_head_flops = 2.0 * params_.lm_head * b.sampled;
  double quantized_flops = expert_flops;
  double bf16_flops = lm_head_flops;
  if (model_.quant_scope == QuantScope::kAllLinear) {
    quantized_flops += non_expert_flops;
  } else {
    bf16_flops += non_expert_flops;
  }
  quantized_flops /= tp;
  bf16_flops /= tp;

  // Attention: QK^T and PV, 2 FLOPs per multiply-add, heads split over tp GPUs.
  const double heads = model_.heads / tp;
  double attention_flops = 0;
  if (model_.attention == AttentionKind::kGqa) {
    const double per_pair = 4.0 * model_.head_dim * heads;
    attention_flops =
        per_pair * ((b.pairs_full_decode + b.pairs_full_prefill) * model_.full_attention_layers() +
                    b.pairs_window * model_.sliding_layers);
  } else {
    // MLA: decode runs on the absorbed latent (QK over kv_lora + rope, PV over kv_lora);
    // prefill on the decompressed heads (QK over nope + rope, PV over v_head_dim).
    const double decode_pair = 2.0 * (2 * model_.kv_lora_rank + model_.qk_rope_dim) * heads;
    const double prefill_pair =
        2.0 * (model_.qk_nope_dim + model_.qk_rope_dim + model_.v_head_dim) * heads;
    attention_flops =
        (decode_pair * b.pairs_full_decode + prefill_pair * b.pairs_full_prefill) * model_.layers;
  }
  c.flops = quantized_flops + bf16_flops + attention_flops;
  const double efficiency = settings_.compute_efficiency;
  c.compute_s =
      quantized_flops / (hardware_.peak_flops(settings_.weights) * efficiency) +
      (bf16_flops + attention_flops) / (hardware_.peak_flops(Precision::kBf16) * efficiency);

  // KV cache: each sequence's context read once per layer, new tokens written.
  const double kv_read =
      kv_bytes_per_token_layer_ *
      (b.kv_read_full * model_.full_attention_layers() + b.kv_read_window * model_.sliding_layers);
  const double kv_write = kv_bytes_per_token_layer_ * t * model_.layers;
  c.kv_bytes = kv_read + kv_write;
  const double bandwidth = hardware_.hbm_tb_s * 1e12 * settings_.memory_efficiency;
  c.weight_memory_s = c.weight_bytes / bandwidth;
  c.memory_s = (c.weight_bytes + c.kv_bytes) / bandwidth;

  // Tensor-parallel communication, on the critical path between layers.
  if (settings_.tp > 1) {
    const AllReduceCost ar = layer_all_reduce(b.tokens);
    c.all_reduce = ar.impl;
    if (settings_.expert_parallel && model_.is_moe()) {
      // Attention output all-reduce in every layer and the dense layers' MLP all-reduce; MoE
      // layers dispatch each token's hidden state (FP8) to its experts' GPUs and combine the
      // results (BF16) with all-to-alls over a 1/tp share of the tokens each.
      const int reduces = model_.layers + model_.dense_layers;
      const double remote = (tp - 1) / tp;
      const double sent = t / tp * model_.experts_per_token * model_.hidden * remote;
      const double a2a = all_to_all_seconds(hardware_, settings_.tp, sent * 1.0) +
                         all_to_all_seconds(hardware_, settings_.tp, sent * 2.0);
      c.comm_s = reduces * ar.seconds + model_.moe_layers() * a2a;
      c.collectives = reduces + 2 * model_.moe_layers();
    } else {
      // Two all-reduces per layer: after the attention output and after the MLP.
      c.collectives = 2 * model_.layers;
      c.comm_s = c.collectives * ar.seconds;
    }
  }
  c.overhead_s = settings_.step_overhead_s;
  return c;
}

std::pair<double, double> PerfModel::time_step(const StepBatch& batch) const {
  const StepCost c = step_cost(batch);
  return {c.total_s(), step_activity(c)};
}

}  // namespace ib::sim
