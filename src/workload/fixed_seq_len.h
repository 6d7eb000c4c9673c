// Fixed ISL/OSL random prompts (InferenceX's fixed-seq-len scenario, vLLM's "random" dataset):
// at concurrency C, max(min_prompts, prompts_per_conc × C) measured prompts and
// warmups_per_conc × C warmups, lengths uniform in [range_ratio · L, L].
#pragma once

#include "workload/workload.h"

namespace ib::workload {

struct FixedSeqLenParams {
  int isl = 1024;
  int osl = 1024;
  // Defaults follow InferenceX (benchmark_serving with --num-prompts conc×10, --num-warmups
  // conc×2, --random-range-ratio 0.8, seed 0) so that numbers are comparable with theirs.
  double range_ratio = 0.8;
  uint64_t seed = 0;
  int prompts_per_conc = 10;
  int min_prompts = 1;
  int warmups_per_conc = 2;
  bool as_text = false;             // chat API: text prompts of N words instead of token ids
  std::string api = "completions";  // recorded in the key: the same prompts on another API differ
  /// Exact-length natural-text prompts for this tokenizer (workload/exact_prompts.h); its
  /// identity is part of the key.
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;

  /// The error names the parameter, prefixed by `where` (e.g. "recipe.yaml: key.workload").
  Status validate(const std::string& where = "") const;
};

class FixedSeqLenWorkload : public Workload {
 public:
  explicit FixedSeqLenWorkload(FixedSeqLenParams p) : p_(std::move(p)) {}
  std::string kind() const override { return "fixed-seq-len"; }
  std::string label() const override;
  boost::json::object canonical(int64_t concurrency) const override;
  Expected<PointPlan> plan(int64_t concurrency) const override;
  Status check_point(int64_t concurrency) const override;
  const FixedSeqLenParams& params() const { return p_; }

  int prompts_at(int64_t concurrency) const;
  int warmups_at(int64_t concurrency) const;

 private:
  FixedSeqLenParams p_;
};

/// The prompts of one random point: `measured` with w's seed, `warmups` with a derived seed so
/// that warmups never prime a prefix cache for the measured prompts. Shared with `bench`.
Expected<PointPlan> random_point_plan(const RandomWorkload& w, int warmups, int concurrency);

}  // namespace ib::workload
