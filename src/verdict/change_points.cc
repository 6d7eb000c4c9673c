#include "verdict/change_points.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <utility>

namespace ib::verdict {

namespace {

// The finite values of a series, position after position; `start[p]` is the first value of
// kept position p (start has one entry more than there are kept positions) and `original[p]`
// its index in the caller's series.
struct CpValues {
  std::vector<double> v;
  std::vector<size_t> start;
  std::vector<size_t> original;
  size_t positions() const { return original.size(); }
  std::span<const double> span(size_t a, size_t b) const {
    return std::span<const double>(v).subspan(start[a], start[b] - start[a]);
  }
};

CpValues cp_flatten(const std::vector<std::vector<double>>& series) {
  CpValues f;
  f.start.push_back(0);
  for (size_t i = 0; i < series.size(); ++i) {
    const size_t before = f.v.size();
    for (double x : series[i])
      if (std::isfinite(x)) f.v.push_back(x);
    if (f.v.size() == before) continue;
    f.original.push_back(i);
    f.start.push_back(f.v.size());
  }
  return f;
}

// The argmax of Q over the splits of positions [a, b) that leave at least `min_seg` positions on
// each side (none when there is no such split). O(V²) for the segment's V values.
std::optional<size_t> cp_best_split(const CpValues& f, size_t a, size_t b, size_t min_seg) {
  if (b - a < min_seg || b - a - min_seg < min_seg) return std::nullopt;
  const std::span<const double> x = f.span(a, b);
  const size_t n_all = x.size();
  // within_left[t]: Σ|x_i - x_k| over i < k < t; within_right[t]: over t <= i < k.
  std::vector<double> within_left(n_all + 1, 0.0), within_right(n_all + 1, 0.0);
  for (size_t t = 1; t < n_all; ++t) {
    double add = 0;
    for (size_t i = 0; i < t; ++i) add += std::fabs(x[i] - x[t]);
    within_left[t + 1] = within_left[t] + add;
  }
  for (size_t t = n_all - 1; t-- > 0;) {
    double add = 0;
    for (size_t j = t + 1; j < n_all; ++j) add += std::fabs(x[t] - x[j]);
    within_right[t] = within_right[t + 1] + add;
  }
  const double total = within_left[n_all];
  std::optional<size_t> best;
  double best_q = 0;
  for (size_t tau = a + min_seg; tau + min_seg <= b; ++tau) {
    const size_t t = f.start[tau] - f.start[a];
    const double n = static_cast<double>(t), m = static_cast<double>(n_all - t);
    const double cross = total - within_left[t] - within_right[t];
    double e = 2 * cross / (n * m);
    if (t >= 2) e -= within_left[t] / (n * (n - 1) / 2);
    if (n_all - t >= 2) e -= within_right[t] / (m * (m - 1) / 2);
    const double q = n * m / (n + m) * e;
    if (!best || q > best_q) {
      best = tau;
      best_q = q;
    }
  }
  return best;
}

double cp_mean(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

double cp_sum_squares(std::span<const double> x, double mean) {
  double s = 0;
  for (double v : x) s += (v - mean) * (v - mean);
  return s;
}

// Two-sided Student's t-test (pooled variance) between `l` and `r`, both non-empty.
double cp_ttest_pvalue(std::span<const double> l, std::span<const double> r) {
  const double nl = static_cast<double>(l.size()), nr = static_cast<double>(r.size());
  const double ml = cp_mean(l), mr = cp_mean(r);
  const double scale = std::max(std::fabs(ml), std::fabs(mr));
  const double diff = std::fabs(mr - ml);
  if (diff <= 1e-12 * scale) return 1;
  const double df = nl + nr - 2;
  if (df <= 0) return 1;
  const double pooled = (cp_sum_squares(l, ml) + cp_sum_squares(r, mr)) / df;
  const double se = std::sqrt(pooled * (1 / nl + 1 / nr));
  if (se <= 1e-12 * scale) return 0;
  const double p = 2 * student_t_cdf(-diff / se, df);
  return std::isfinite(p) ? std::clamp(p, 0.0, 1.0) : 1.0;
}

// The change point at position `tau` between the segments [a, tau) and [tau, b), but for its
// interval.
ChangePoint cp_stats(const CpValues& f, size_t a, size_t tau, size_t b) {
  const std::span<const double> l = f.span(a, tau), r = f.span(tau, b);
  ChangePoint c;
  c.index = f.original[tau];
  c.before = cp_mean(l);
  c.after = cp_mean(r);
  if (c.before != 0) {
    c.step_pct = (c.after - c.before) / c.before * 100;
  } else if (c.after != c.before) {
    c.step_pct = std::copysign(HUGE_VAL, c.after - c.before);
  }
  c.pvalue = cp_ttest_pvalue(l, r);
  c.before_positions = tau - a;
  c.after_positions = b - tau;
  return c;
}

// The step's Welch interval in % of `c.before`, between the segments [a, tau) and [tau, b)
// (computed for the reported change points only: the t quantile costs far more than the rest).
void cp_add_interval(ChangePoint& c, const CpValues& f, size_t a, size_t tau, size_t b,
                     double confidence) {
  if (c.before == 0) return;
  if (auto w = welch_interval(f.span(a, tau), f.span(tau, b), confidence)) {
    const double lo = w->ci.lo / c.before * 100, hi = w->ci.hi / c.before * 100;
    c.step_ci_pct = {std::min(lo, hi), std::max(lo, hi)};
  }
}

// Candidates by bisection, in position order: each segment of [0, positions) long enough is
// split at its argmax Q, and the split is kept and both halves split again when its t-test's
// p-value is at most `explore_pvalue`.
std::vector<size_t> cp_candidates(const CpValues& f, size_t min_seg, double explore_pvalue) {
  std::vector<size_t> out;
  std::vector<std::pair<size_t, size_t>> todo{{0, f.positions()}};
  while (!todo.empty()) {
    const auto [a, b] = todo.back();
    todo.pop_back();
    const std::optional<size_t> tau = cp_best_split(f, a, b, min_seg);
    if (!tau) continue;
    if (cp_ttest_pvalue(f.span(a, *tau), f.span(*tau, b)) > explore_pvalue) continue;
    out.push_back(*tau);
    todo.push_back({a, *tau});
    todo.push_back({*tau, b});
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The candidate to drop next (Hunter's merge step), or none when every one stays.
std::optional<size_t> cp_weakest(const std::vector<ChangePoint>& cps, const ChangePointOptions& o) {
  std::optional<size_t> worst;
  for (size_t i = 0; i < cps.size(); ++i)
    if (cps[i].pvalue > o.max_pvalue && (!worst || cps[i].pvalue > cps[*worst].pvalue)) worst = i;
  if (worst) return worst;
  for (size_t i = 0; i < cps.size(); ++i) {
    const double mag = std::fabs(cps[i].step_pct);
    if (mag < o.min_magnitude_pct && (!worst || mag < std::fabs(cps[*worst].step_pct))) worst = i;
  }
  return worst;
}

}  // namespace

std::vector<ChangePoint> find_change_points(const std::vector<std::vector<double>>& series,
                                            const ChangePointOptions& o) {
  const CpValues f = cp_flatten(series);
  const size_t min_seg = std::max<size_t>(o.min_segment, 1);
  std::vector<size_t> taus = cp_candidates(f, min_seg, std::min(1.0, 10 * o.max_pvalue));
  // Segment bounds of candidate i: taus[i-1] (or 0) and taus[i+1] (or the end).
  auto bound_before = [&](size_t i) { return i == 0 ? size_t{0} : taus[i - 1]; };
  auto bound_after = [&](size_t i) { return i + 1 == taus.size() ? f.positions() : taus[i + 1]; };
  auto stats_of = [&](size_t i) { return cp_stats(f, bound_before(i), taus[i], bound_after(i)); };
  std::vector<ChangePoint> cps;
  for (size_t i = 0; i < taus.size(); ++i) cps.push_back(stats_of(i));
  while (const std::optional<size_t> drop = cp_weakest(cps, o)) {
    const size_t i = *drop;
    taus.erase(taus.begin() + static_cast<std::ptrdiff_t>(i));
    cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(i));
    if (i > 0) cps[i - 1] = stats_of(i - 1);
    if (i < taus.size()) cps[i] = stats_of(i);
  }
  for (size_t i = 0; i < taus.size(); ++i)
    cp_add_interval(cps[i], f, bound_before(i), taus[i], bound_after(i), o.confidence);
  return cps;
}

}  // namespace ib::verdict
