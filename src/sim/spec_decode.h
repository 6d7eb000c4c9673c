// Speculative decoding in the simulated engine (issue 31; docs/serve-sim.md, "Speculative
// decoding"): every decode step after the first token drafts K tokens, the target model accepts
// a prefix of them and adds one token of its own, so a step yields 1..K+1 tokens. The mean tokens
// a step yields is the acceptance length AL, the figure InferenceX pins per model
// (golden_al_distribution). Two acceptance models: per position (each draft token accepted,
// given the previous one, with probability p: AL = 1 + p + p^2 + ... + p^K), or a pinned AL
// realised as the engines' synthetic acceptance does (vLLM's synthetic_acceptance_length,
// TensorRT-LLM's forced count: floor(AL - 1) drafts accepted every step, one more with
// probability frac(AL - 1), the least variance any AL can have). Counted as vLLM counts it
// (num_drafts, num_draft_tokens, num_accepted_tokens, per position), so that /metrics says AL = 1 +
// accepted / drafts.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/expected.h"

namespace ib::sim {

/// The most draft tokens a step may have.
inline constexpr int kMaxSpeculativeTokens = 16;

struct SpecDecodeConfig {
  int num_speculative_tokens = 0;  // K; 0: no speculation
  double acceptance = 0;           // p: a draft token's acceptance, given the previous one's
  /// > 0: the pinned acceptance length, realised with the least variance (then `acceptance` is
  /// the per-position p with the same AL, for what is shown).
  double pinned_length = 0;
  double draft_ms = 0;             // the draft's cost per draft token, added to every step
  bool enabled() const { return num_speculative_tokens > 0; }
};

/// K out of [1, kMaxSpeculativeTokens], p in [0, 1], a pinned length 0 or in [1, K + 1],
/// draft_ms >= 0 and finite; the error names
/// the setting.
Status validate(const SpecDecodeConfig& c);

/// 1 + p + ... + p^k: the mean tokens a step yields.
double acceptance_length(double p, int k);

/// The p whose acceptance_length is `al`. REQUIRES: 1 <= al <= k + 1.
double acceptance_for_length(double al, int k);

/// Draft tokens accepted in one step: 0..K, consecutive from the first.
int draw_accepted(std::mt19937_64& rng, const SpecDecodeConfig& c);

/// vLLM's spec-decode counters (vllm/v1/spec_decode/metrics.py).
struct SpecDecodeCounters {
  int64_t drafts = 0;        // steps that drafted
  int64_t draft_tokens = 0;  // K per draft
  int64_t accepted = 0;      // draft tokens accepted
  std::vector<int64_t> accepted_per_pos;  // [j]: drafts whose position j was accepted
  /// Counts one step that accepted `accepted` of `k` drafts.
  void count(int accepted_tokens, int k);
};

/// One request's counters as vLLM's --per-request-spec-decode-metrics summary returns them, the
/// value of the response's "metrics" key: {"speculative_decoding":{"mean_acceptance_length",
/// "draft_acceptance_rate", "acceptance_histogram" ([j]: steps that accepted exactly j drafts,
/// j = 0..K), "num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens",
/// "num_spec_tokens"}}. Empty when no step of the request speculated.
std::string request_spec_metrics_json(const SpecDecodeCounters& c, int k);

}  // namespace ib::sim
