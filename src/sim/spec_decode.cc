#include "sim/spec_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ib::sim {

Status validate(const SpecDecodeConfig& c) {
  if (c.num_speculative_tokens < 0 || c.num_speculative_tokens > kMaxSpeculativeTokens) {
    return Error{fmt::format("num_speculative_tokens must be 0 to {}, got {}",
                             kMaxSpeculativeTokens, c.num_speculative_tokens)};
  }
  if (!(c.acceptance >= 0 && c.acceptance <= 1)) {
    return Error{fmt::format("spec acceptance must be from 0 to 1, got {}", c.acceptance)};
  }
  if (c.pinned_length != 0 &&
      !(c.pinned_length >= 1 && c.pinned_length <= c.num_speculative_tokens + 1)) {
    return Error{fmt::format("spec acceptance length must be from 1 to {} (K + 1), got {}",
                             c.num_speculative_tokens + 1, c.pinned_length)};
  }
  if (!(c.draft_ms >= 0) || !std::isfinite(c.draft_ms)) {
    return Error{fmt::format("spec draft_ms must be a finite number >= 0, got {}", c.draft_ms)};
  }
  return Status::Ok();
}

double acceptance_length(double p, int k) {
  double al = 1, term = 1;
  for (int j = 1; j <= k; ++j) {
    term *= p;
    al += term;
  }
  return al;
}

double acceptance_for_length(double al, int k) {
  // acceptance_length is increasing in p on [0, 1]: bisection to well below any tolerance.
  double lo = 0, hi = 1;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    if (acceptance_length(mid, k) < al) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

int draw_accepted(std::mt19937_64& rng, const SpecDecodeConfig& c) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (c.pinned_length > 0) {
    const double extra = c.pinned_length - 1;
    const int whole = static_cast<int>(std::floor(extra));
    const int n = whole + (u(rng) < extra - whole ? 1 : 0);
    return std::min(n, c.num_speculative_tokens);
  }
  int accepted = 0;
  while (accepted < c.num_speculative_tokens && u(rng) < c.acceptance) ++accepted;
  return accepted;
}

void SpecDecodeCounters::count(int accepted_tokens, int k) {
  ++drafts;
  draft_tokens += k;
  accepted += accepted_tokens;
  if (accepted_per_pos.size() < static_cast<size_t>(k)) accepted_per_pos.resize(k, 0);
  for (int j = 0; j < accepted_tokens; ++j) ++accepted_per_pos[static_cast<size_t>(j)];
}

std::string request_spec_metrics_json(const SpecDecodeCounters& c, int k) {
  if (c.drafts <= 0 || k <= 0) return {};
  // Acceptance is consecutive from the first draft: the steps that accepted at least j + 1 are
  // accepted_per_pos[j], so exactly j is the difference of two neighbours.
  std::vector<int64_t> at_least(static_cast<size_t>(k) + 2, 0);
  at_least[0] = c.drafts;
  for (size_t j = 0; j < c.accepted_per_pos.size() && j < static_cast<size_t>(k); ++j) {
    at_least[j + 1] = c.accepted_per_pos[j];
  }
  std::string histogram;
  for (int j = 0; j <= k; ++j) {
    if (j > 0) histogram += ',';
    histogram +=
        fmt::format("{}", at_least[static_cast<size_t>(j)] - at_least[static_cast<size_t>(j) + 1]);
  }
  const double al = 1.0 + static_cast<double>(c.accepted) / static_cast<double>(c.drafts);
  const double rate = c.draft_tokens > 0
                          ? static_cast<double>(c.accepted) / static_cast<double>(c.draft_tokens)
                          : 0.0;
  return fmt::format(
      R"({{"speculative_decoding":{{"mean_acceptance_length":{},"draft_acceptance_rate":{},)"
      R"("acceptance_histogram":[{}],"num_spec_steps":{},"num_accepted_draft_tokens":{},)"
      R"("num_draft_tokens":{},"num_spec_tokens":{}}}}})",
      al, rate, histogram, c.drafts, c.accepted, c.draft_tokens, k);
}

}  // namespace ib::sim
