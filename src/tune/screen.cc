#include "tune/screen.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace ib::tune {

int HalvingPlan::points() const {
  int total = rounds();  // a closing baseline a round
  for (size_t r = 0; r < candidates.size(); ++r) total += passes[r] * (candidates[r] + 1);
  return total;
}

HalvingPlan plan_halving(int n0, int keep, int eta, int passes0) {
  HalvingPlan plan;
  int n = n0;
  int passes = passes0;
  while (true) {
    plan.candidates.push_back(n);
    plan.passes.push_back(passes);
    if (n <= keep) break;
    n = std::max(keep, (n + eta - 1) / eta);
    passes *= eta;
  }
  return plan;
}

std::vector<int> pass_order(int n, uint64_t seed, int pass) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Fisher-Yates with an explicit draw, so the order is the same with every standard library.
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) {
    const auto j = static_cast<int>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  if (n > 0) {
    std::rotate(order.begin(), order.begin() + (pass % n), order.end());
  }
  return order;
}

std::optional<Score> score(std::span<const double> values, std::span<const double> baselines,
                           bool higher_is_better, double confidence, double min_effect_pct) {
  if (values.empty() || baselines.size() != values.size() + 1) return std::nullopt;
  std::vector<double> ratios;
  for (size_t p = 0; p < values.size(); ++p) {
    const double b = (baselines[p] + baselines[p + 1]) / 2;
    const double v = values[p];
    if (!(std::isfinite(v) && std::isfinite(b) && v > 0 && b > 0)) return std::nullopt;
    ratios.push_back(higher_is_better ? v / b : b / v);
  }
  const double n = static_cast<double>(ratios.size());
  const double mean = std::accumulate(ratios.begin(), ratios.end(), 0.0) / n;
  Score s;
  s.passes = static_cast<int>(ratios.size());
  s.delta_pct = 100 * (mean - 1);
  if (ratios.size() >= 2) {
    double ss = 0;
    for (double r : ratios) ss += (r - mean) * (r - mean);
    const double sd = std::sqrt(ss / (n - 1));
    const double t = verdict::student_t_quantile((1 + confidence) / 2, n - 1);
    const double half = t * sd / std::sqrt(n);
    s.ci_pct = {100 * (mean - half - 1), 100 * (mean + half - 1)};
  }
  s.verdict = verdict::decide(s.ci_pct, true, min_effect_pct);
  return s;
}

Drift baseline_drift(std::span<const double> baselines, double min_effect_pct) {
  Drift d;
  const size_t n = baselines.size();
  if (n < 2) return d;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += static_cast<double>(i);
    my += baselines[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (static_cast<double>(i) - mx) * (baselines[i] - my);
    sxx += (static_cast<double>(i) - mx) * (static_cast<double>(i) - mx);
  }
  if (sxx <= 0 || my == 0) return d;
  d.pct = 100 * (sxy / sxx) * static_cast<double>(n - 1) / my;
  d.significant = std::abs(d.pct) > min_effect_pct;
  return d;
}

std::string_view to_string(ScreenDecision d) {
  switch (d) {
    case ScreenDecision::kAdvance:
      return "advances";
    case ScreenDecision::kRegressed:
      return "regressed";
    case ScreenDecision::kNoChange:
      return "no significant change";
    case ScreenDecision::kRankedOut:
      return "ranked out";
    case ScreenDecision::kNotMeasured:
      return "not measured";
  }
  return "?";
}

std::vector<ScreenDecision> decide_round(const std::vector<std::optional<Score>>& scores, int keep,
                                         double min_effect_pct) {
  std::vector<ScreenDecision> out(scores.size(), ScreenDecision::kRankedOut);
  std::vector<size_t> ranked;
  for (size_t i = 0; i < scores.size(); ++i) {
    const auto& s = scores[i];
    if (!s) {
      out[i] = ScreenDecision::kNotMeasured;
    } else if (s->verdict == verdict::Verdict::kRegressed) {
      out[i] = ScreenDecision::kRegressed;
    } else if (s->ci_pct.valid() && s->ci_pct.hi < min_effect_pct) {
      // Even the interval's best end is short of the minimum effect.
      out[i] = ScreenDecision::kNoChange;
    } else {
      ranked.push_back(i);
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return scores[a]->delta_pct > scores[b]->delta_pct; });
  for (size_t k = 0; k < ranked.size() && k < static_cast<size_t>(keep); ++k) {
    out[ranked[k]] = ScreenDecision::kAdvance;
  }
  return out;
}

}  // namespace ib::tune
