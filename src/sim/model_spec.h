// Model presets of the performance model: the architecture numbers that set weight bytes, FLOPs
// and KV-cache bytes per token, from each model's published config.json. Parameter counts are
// derived from the architecture (and checked against the model cards in model_spec_test.cc).
// Sources: docs/perf-model.md "Models".
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "sim/hardware.h"

namespace ib::sim {

enum class AttentionKind {
  kGqa,  // grouped-query attention: K and V of kv_heads heads cached per token
  kMla,  // multi-head latent attention (DeepSeek): one compressed latent cached per token
};

/// Which weights a quantized checkpoint stores at its precision; the rest stays BF16.
enum class QuantScope {
  kAllLinear,    // every linear layer except the embedding and the LM head
  kExpertsOnly,  // only the routed experts (gpt-oss: MXFP4 experts, BF16 attention)
};

struct ModelSpec {
  std::string_view name;    // preset name, e.g. "llama-3.1-8b"
  std::string_view hf_id;   // checkpoint it describes
  std::string_view family;  // "llama", "deepseek_v3", "gpt_oss", "minimax_m2"
  int layers;
  int hidden;
  int vocab;
  // Attention.
  AttentionKind attention;
  int heads;
  int kv_heads;        // GQA
  int head_dim;        // GQA
  int q_lora_rank;     // MLA (0: queries not compressed)
  int kv_lora_rank;    // MLA
  int qk_nope_dim;     // MLA
  int qk_rope_dim;     // MLA
  int v_head_dim;      // MLA
  int sliding_window;  // tokens a sliding-window layer attends to (0: none)
  int sliding_layers;  // layers with a sliding window
  // MLP: the first dense_layers layers are dense, the rest are mixture-of-experts.
  int dense_layers;
  int dense_intermediate;
  int experts;  // routed experts per MoE layer (0: dense model)
  int experts_per_token;
  int shared_experts;
  int expert_intermediate;
  // Checkpoint.
  Precision checkpoint;
  QuantScope quant_scope;
  int max_context;
  double card_total_b;   // total parameters on the model card, billions
  double card_active_b;  // active parameters per token on the model card (MoE), billions

  bool is_moe() const { return experts > 0; }
  int moe_layers() const { return is_moe() ? layers - dense_layers : 0; }
  int full_attention_layers() const { return layers - sliding_layers; }
};

/// Parameter counts by kind, from the architecture.
struct ParamCounts {
  double embedding = 0;       // input embedding (a lookup, not a GEMM)
  double lm_head = 0;         // output projection (computed only for sampled positions)
  double attention = 0;       // all layers
  double dense_mlp = 0;       // dense layers' MLPs
  double shared_experts = 0;  // always-active experts of MoE layers
  double router = 0;          // MoE gates
  double routed_experts = 0;  // all routed experts of all MoE layers
  double per_expert = 0;      // one routed expert of one layer

  double total() const;
  /// Weights used by one token: everything but the embedding and the unchosen experts (the
  /// convention of the MoE model cards).
  double active(int experts_per_token, int moe_layers) const;
};

ParamCounts param_counts(const ModelSpec& m);

/// Bytes of KV cache one token occupies on one GPU at tensor-parallel size `tp` with
/// `kv_bytes` bytes per element: GQA splits KV heads over GPUs (at least one head per GPU), MLA's
/// latent is replicated on every GPU. Counts every layer (sliding-window layers too).
double kv_bytes_per_token(const ModelSpec& m, int tp, double kv_bytes);

/// KV bytes per token per layer on one GPU.
double kv_bytes_per_token_layer(const ModelSpec& m, int tp, double kv_bytes);

/// Every model preset, in documentation order.
std::span<const ModelSpec> model_presets();

/// The preset named `name` (case-insensitive), or nullptr.
const ModelSpec* find_model(std::string_view name);

/// "llama-3.1-8b, ..." for error messages and --help.
std::string model_names();

}  // namespace ib::sim
