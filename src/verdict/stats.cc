#include "verdict/stats.h"

#include <algorithm>
#include <random>

#include "metrics/stats.h"

namespace ib::verdict {

Interval percentile_interval(std::vector<double> replicates, double confidence) {
  std::erase_if(replicates, [](double v) { return !std::isfinite(v); });
  if (replicates.size() < 2) return {};
  const double tail = (1.0 - confidence) / 2.0 * 100.0;
  std::sort(replicates.begin(), replicates.end());
  return {metrics::percentile_sorted(replicates, tail),
          metrics::percentile_sorted(replicates, 100 - tail)};
}

Interval bootstrap_mean(std::span<const double> samples, int resamples, uint64_t seed,
                        double confidence) {
  if (samples.size() < 2 || resamples < 2) return {};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, samples.size() - 1);
  std::vector<double> reps;
  reps.reserve(static_cast<size_t>(resamples));
  for (int b = 0; b < resamples; ++b) {
    double sum = 0;
    for (size_t i = 0; i < samples.size(); ++i) sum += samples[pick(rng)];
    reps.push_back(sum / static_cast<double>(samples.size()));
  }
  return percentile_interval(std::move(reps), confidence);
}

namespace {

// Continued fraction for I_x(a, b) (modified Lentz), as in Numerical Recipes' betacf.
double beta_cf(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double ln_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(ln_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  const double x = df / (df + t * t);
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, x);
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (p == 0.5) return 0;
  // Bisection on the CDF: monotone, and 200 halvings of [-1e6, 1e6] are far below double
  // resolution for any p a confidence level asks for.
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

namespace {

double mean_of(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double sample_var(std::span<const double> v, double mean) {
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return s / static_cast<double>(v.size() - 1);
}

}  // namespace

std::optional<WelchInterval> welch_interval(std::span<const double> base,
                                            std::span<const double> head, double confidence) {
  if (base.empty() || head.empty() || (base.size() < 2 && head.size() < 2)) return std::nullopt;
  const double na = static_cast<double>(base.size()), nb = static_cast<double>(head.size());
  const double ma = mean_of(base), mb = mean_of(head);
  double va = base.size() >= 2 ? sample_var(base, ma) : 0;
  double vb = head.size() >= 2 ? sample_var(head, mb) : 0;
  WelchInterval w;
  w.diff = mb - ma;
  if (base.size() < 2 || head.size() < 2) {
    // One side measured once: its variance is unknown; take the other side's.
    const double v = base.size() >= 2 ? va : vb;
    va = vb = v;
    w.se = std::sqrt(v / na + v / nb);
    w.df = (base.size() >= 2 ? na : nb) - 1;
  } else {
    const double sa = va / na, sb = vb / nb;
    w.se = std::sqrt(sa + sb);
    const double denom = sa * sa / (na - 1) + sb * sb / (nb - 1);
    w.df = denom > 0 ? (sa + sb) * (sa + sb) / denom : na + nb - 2;
  }
  if (!std::isfinite(w.se)) return std::nullopt;
  const double t = student_t_quantile((1 + confidence) / 2, w.df);
  w.ci = {w.diff - t * w.se, w.diff + t * w.se};
  return w;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kImproved: return "improved";
    case Verdict::kRegressed: return "regressed";
    case Verdict::kNoChange: return "no significant change";
    case Verdict::kNoInterval: return "no interval";
    case Verdict::kDescriptive:
      return "descriptive";
  }
  return "?";
}

Verdict decide(const Interval& ci_pct, bool higher_is_better, double min_effect_pct) {
  if (!ci_pct.valid()) return Verdict::kNoInterval;
  const bool above = ci_pct.lo >= min_effect_pct;   // wholly at or beyond +min effect
  const bool below = ci_pct.hi <= -min_effect_pct;  // wholly at or beyond -min effect
  if (above) return higher_is_better ? Verdict::kImproved : Verdict::kRegressed;
  if (below) return higher_is_better ? Verdict::kRegressed : Verdict::kImproved;
  return Verdict::kNoChange;
}

}  // namespace ib::verdict
