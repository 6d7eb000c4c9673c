// The roofline performance model of one engine step (one forward pass over a continuous batch):
//   step = max(compute, memory) + tensor-parallel communication + fixed per-step overhead
// with compute from 2 x active parameters x tokens plus attention over each sequence's context,
// and memory from the weights read once per step plus the KV cache read and written. Derivation
// and every constant's source: docs/perf-model.md.
#pragma once

#include <utility>

#include "sim/allreduce.h"
#include "sim/hardware.h"
#include "sim/model_spec.h"

namespace ib::sim {

/// The work of one step, accumulated by the scheduler one sequence at a time.
struct StepBatch {
  int tokens = 0;       // new tokens computed (prefill chunks and decode tokens)
  int seqs = 0;         // sequences in the step
  int sampled = 0;      // sequences that sample a token at the end of the step (LM-head rows)
  int decode_seqs = 0;  // sequences computing exactly one token
  // Attention (query, key) pairs, summed over sequences, per layer kind.
  double pairs_full_decode = 0;   // full-attention layers, decode tokens
  double pairs_full_prefill = 0;  // full-attention layers, prefill chunks
  double pairs_window = 0;        // sliding-window layers
  // Context tokens whose K/V each layer reads once per sequence.
  double kv_read_full = 0;
  double kv_read_window = 0;

  /// Adds a sequence computing `new_tokens` tokens after `context_before` cached ones.
  /// `window` is the model's sliding window (0: none). REQUIRES: new_tokens >= 1.
  void add(int new_tokens, int context_before, bool samples, int window);
  bool empty() const { return seqs == 0; }
};

/// Engine settings the step cost depends on.
struct PerfSettings {
  int tp = 1;                    // tensor-parallel GPUs
  bool expert_parallel = false;  // MoE layers: experts split over the tp GPUs, all-to-all traffic
  Precision weights = Precision::kBf16;  // precision of the quantized weights (QuantScope)
  double kv_bytes = 2.0;                 // bytes per cached K/V element
  double compute_efficiency = 0.6;       // achieved / peak tensor throughput
  double memory_efficiency = 0.8;        // achieved / peak HBM bandwidth
  double step_overhead_s = 0.001;        // fixed cost of every step (scheduling, launch, sampling)
  AllReduceConfig all_reduce;
};

/// One step's cost, per GPU, with its parts.
struct StepCost {
  double compute_s = 0;        // GEMMs and attention at peak x efficiency
  double memory_s = 0;         // weights + KV traffic at HBM bandwidth x efficiency
  double weight_memory_s = 0;  // the weights' share of memory_s
  double comm_s = 0;           // all-reduces / all-to-alls, not overlapped
  double overhead_s = 0;
  double flops = 0;
  double weight_bytes = 0;                          // weights read
  double kv_bytes = 0;                              // KV read and written
  int collectives = 0;                              // communication operations in the step
  AllReduceImpl all_reduce = AllReduceImpl::kNone;  // implementation of the per-layer reduce

  double total_s() const {
    return (compute_s > memory_s ? compute_s : memory_s) + comm_s + overhead_s;
  }
  bool compute_bound() const { return compute_s > memory_s; }
};

/// What an engine needs to time steps. Implementations are immutable.
class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  /// Seconds one step with this work takes. REQUIRES: !batch.empty().
  virtual double step_seconds(const StepBatch& batch) const = 0;
  /// The step's seconds and its power activity, 0..1 (sim/power_model.h); models without a
  /// roofline report full activity.
  virtual std::pair<double, double> time_step(const StepBatch& batch) const {
    return {step_seconds(batch), 1.0};
  }
  /// The model's sliding window, for StepBatch::add (0: none).
  virtual int sliding_window() const { return 0; }
};

class PerfModel final : public StepCostModel {
 public:
  /// REQUIRES: settings.tp >= 1; expert_parallel only for MoE models.
  PerfModel(const ModelSpec& model, const HardwareSpec& hardware, const PerfSettings& settings);

  StepCost step_cost(const StepBatch& batch) const;
  double step_seconds(const StepBatch& batch) const override { return step_cost(batch).total_s(); }
  std::pair<double, double> time_step(const StepBatch& batch) const override;
  int sliding_window() const override { return model_.sliding_window; }

  /// Bytes of weights resident on each GPU.
  double weight_bytes_per_gpu() const { return resident_weight_bytes_; }
  /// KV-cache bytes one token occupies on each GPU.
  double kv_bytes_per_token() const { return kv_bytes_per_token_; }
  /// Expected routed experts (per MoE layer) that `tokens` tokens touch, with uniform routing.
  double touched_experts(int tokens) const;
  /// The per-layer all-reduce of `tokens` tokens' activations.
  AllReduceCost layer_all_reduce(int tokens) const;

  const ModelSpec& model() const { return model_; }
  const HardwareSpec& hardware() const { return hardware_; }
  const PerfSettings& settings() const { return settings_; }

 private:
  const ModelSpec& model_;
  const HardwareSpec& hardware_;
  PerfSettings settings_;
  ParamCounts params_;
  double quantized_bytes_;    // bytes per weight of quantized layers
  double non_expert_bytes_;   // bytes per weight of attention/dense/shared layers
  double non_expert_linear_;  // attention + dense MLP + shared experts + router parameters
  double resident_weight_bytes_;
  double kv_bytes_per_token_;
  double kv_bytes_per_token_layer_;
};

}  // namespace ib::sim
