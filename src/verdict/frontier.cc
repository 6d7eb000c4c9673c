#include "verdict/frontier.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ib::verdict {

std::vector<CurvePoint> pareto_frontier(std::vector<CurvePoint> points) {
  std::erase_if(points, [](const CurvePoint& p) {
    return !std::isfinite(p.x) || !std::isfinite(p.y) || p.x <= 0;
  });
  // Sweep from the highest x down, keeping a point only when its y beats every y seen at a
  // higher-or-equal x (ties in x: the highest y first, so the others are dominated).
  std::stable_sort(points.begin(), points.end(), [](const CurvePoint& a, const CurvePoint& b) {
    return a.x != b.x ? a.x > b.x : a.y > b.y;
  });
  std::vector<CurvePoint> out;
  double best_y = -std::numeric_limits<double>::infinity();
  for (const auto& p : points) {
    if (p.y > best_y) {
      out.push_back(p);
      best_y = p.y;
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

double sign(double v) {
  return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0);
}

}  // namespace

MonotoneCurve::MonotoneCurve(std::vector<CurvePoint> points) : pts_(std::move(points)) {
  const size_t n = pts_.size();
  slopes_.assign(n, 0.0);
  if (n < 2) return;
  std::vector<double> h(n - 1), s(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) {
    h[i] = pts_[i + 1].x - pts_[i].x;
    s[i] = (pts_[i + 1].y - pts_[i].y) / h[i];
  }
  // Steffen (1990): interior slopes bounded so that no piece overshoots its end values.
  for (size_t i = 1; i + 1 < n; ++i) {
    const double p = (s[i - 1] * h[i] + s[i] * h[i - 1]) / (h[i - 1] + h[i]);
    slopes_[i] = (sign(s[i - 1]) + sign(s[i])) *
                 std::min({std::fabs(s[i - 1]), std::fabs(s[i]), 0.5 * std::fabs(p)});
  }
  // Ends: the secant slope (within the monotone region with Steffen's interior slopes).
  slopes_[0] = s[0];
  slopes_[n - 1] = s[n - 2];
}

double MonotoneCurve::x_min() const {
  return pts_.empty() ? std::numeric_limits<double>::quiet_NaN() : pts_.front().x;
}

double MonotoneCurve::x_max() const {
  return pts_.empty() ? std::numeric_limits<double>::quiet_NaN() : pts_.back().x;
}

std::optional<double> MonotoneCurve::at(double x) const {
  if (pts_.empty() || !(x >= pts_.front().x) || !(x <= pts_.back().x)) return std::nullopt;
  if (pts_.size() == 1) return pts_[0].y;
  auto it = std::upper_bound(pts_.begin(), pts_.end(), x,
                             [](double v, const CurvePoint& p) { return v < p.x; });
  size_t i = static_cast<size_t>(it - pts_.begin());
  i = i == 0 ? 0 : i - 1;
  if (i + 1 >= pts_.size()) return pts_.back().y;
  const double h = pts_[i + 1].x - pts_[i].x;
  const double t = (x - pts_[i].x) / h;
  const double t2 = t * t, t3 = t2 * t;
  return (2 * t3 - 3 * t2 + 1) * pts_[i].y + (t3 - 2 * t2 + t) * h * slopes_[i] +
         (-2 * t3 + 3 * t2) * pts_[i + 1].y + (t3 - t2) * h * slopes_[i + 1];
}

double MonotoneCurve::integral_to(double x) const {
  double sum = 0;
  for (size_t i = 0; i + 1 < pts_.size(); ++i) {
    const double x0 = pts_[i].x, x1 = pts_[i + 1].x;
    if (x <= x0) break;
    const double h = x1 - x0;
    const double t = (std::min(x, x1) - x0) / h;
    const double t2 = t * t, t3 = t2 * t, t4 = t3 * t;
    // Antiderivatives of the Hermite basis from 0 to t.
    const double H00 = t4 / 2 - t3 + t, H10 = t4 / 4 - 2 * t3 / 3 + t2 / 2;
    const double H01 = -t4 / 2 + t3, H11 = t4 / 4 - t3 / 3;
    sum += h * (pts_[i].y * H00 + h * slopes_[i] * H10 + pts_[i + 1].y * H01 +
                h * slopes_[i + 1] * H11);
  }
  return sum;
}

std::optional<double> MonotoneCurve::area(double a, double b) const {
  if (pts_.empty() || a > b || a < pts_.front().x || b > pts_.back().x) return std::nullopt;
  return integral_to(b) - integral_to(a);
}

FrontierComparison compare_frontiers(const std::vector<CurvePoint>& base_frontier,
                                     const std::vector<CurvePoint>& head_frontier) {
  FrontierComparison out;
  out.area_delta_pct = std::numeric_limits<double>::quiet_NaN();
  if (base_frontier.empty() || head_frontier.empty()) return out;
  const MonotoneCurve base(base_frontier), head(head_frontier);
  out.lo = std::max(base.x_min(), head.x_min());
  out.hi = std::min(base.x_max(), head.x_max());
  if (out.lo > out.hi) return out;
  out.overlap = true;
  std::vector<double> xs;
  for (const auto* f : {&base_frontier, &head_frontier}) {
    for (const auto& p : *f) {
      if (p.x >= out.lo && p.x <= out.hi) xs.push_back(p.x);
    }
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  double sum = 0;
  for (double x : xs) {
    LevelDelta d;
    d.x = x;
    d.base_y = *base.at(x);
    d.head_y = *head.at(x);
    d.delta_pct = d.base_y != 0 ? (d.head_y - d.base_y) / d.base_y * 100
                                : std::numeric_limits<double>::quiet_NaN();
    sum += d.delta_pct;
    out.levels.push_back(d);
  }
  if (!out.levels.empty()) out.mean_delta_pct = sum / static_cast<double>(out.levels.size());
  if (out.hi > out.lo) {
    out.base_area = *base.area(out.lo, out.hi);
    out.head_area = *head.area(out.lo, out.hi);
    if (out.base_area != 0) out.area_delta_pct = (out.head_area - out.base_area) / out.base_area * 100;
  }
  return out;
}

}  // namespace ib::verdict
