#include "tune/objective.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "core/strings.h"
#include "metrics/keys.h"
#include "core/numeric.h"

namespace ib::tune {

bool usable(const metrics::PointResult& p) {
  return metrics::is_success(p.status) && p.validity.valid();
}

double point_metric(const metrics::PointResult& p, std::string_view key) {
  if (metrics::headline_index(key)) return p.headline.get(key);
  const auto* v = p.result.if_contains(key);
  if (v != nullptr && v->is_number()) return v->to_number<double>();
  return kNaN;
}

bool Slo::meets(double value) const {
  if (!std::isfinite(value)) return false;
  return upper ? value <= bound : value >= bound;
}

bool Slo::meets(const metrics::PointResult& p) const {
  return usable(p) && meets(point_metric(p, metric));
}

std::string Slo::describe() const {
  return fmt::format("{} {} {}", metric, upper ? "<=" : ">=", bound);
}

Expected<Slo> parse_slo(std::string_view text) {
  const size_t le = text.find("<=");
  const size_t ge = text.find(">=");
  const size_t at = le != std::string_view::npos ? le : ge;
  auto bad = [&](const std::string& why) {
    return Error{fmt::format("--slo '{}': {}", printable(text, 80), why)};
  };
  if (at == std::string_view::npos) return bad("expected METRIC<=VALUE or METRIC>=VALUE");
  Slo s;
  s.metric = std::string(trim(text.substr(0, at)));
  s.upper = at == le;
  const std::string_view num = trim(text.substr(at + 2));
  if (!metrics::headline_index(s.metric)) {
    return bad(fmt::format("'{}' is not a headline metric ({})", printable(s.metric, 40),
                           metrics::headline_keys_text()));
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || ec != std::errc() || ptr != num.data() + num.size() || !std::isfinite(v)) {
    return bad(fmt::format("'{}' is not a number", printable(num, 40)));
  }
  s.bound = v;
  return s;
}

std::string Objective::name() const {
  switch (kind) {
    case Kind::kFormula:
      return formula->text();
    case Kind::kTputAtSlo:
      return "tput_per_gpu at SLO";
    default:
      return metric;
  }
}

std::string Objective::describe() const {
  const std::string dir = higher_is_better ? "higher is better" : "lower is better";
  if (kind == Kind::kTputAtSlo) {
    std::vector<std::string> s;
    for (const auto& slo : slos) s.push_back(slo.describe());
    return fmt::format("tput_per_gpu at the highest concurrency meeting {} ({})",
                       fmt::join(s, " and "), dir);
  }
  return fmt::format("{} at concurrency {} ({})", name(), conc, dir);
}

double Objective::value(const metrics::PointResult& p) const {
  if (!usable(p)) return kNaN;
  if (kind == Kind::kFormula) {
    return formula->eval([&](std::string_view k) { return point_metric(p, k); });
  }
  return point_metric(p, metric);
}

bool Objective::meets(const metrics::PointResult& p) const {
  if (!usable(p)) return false;
  for (const auto& s : slos) {
    if (!s.meets(p)) return false;
  }
  return true;
}

std::vector<std::string> Objective::metrics() const {
  if (kind == Kind::kFormula) return formula->metrics();
  return {metric};
}

namespace {

// SLOs that no point can meet: a metric that is never negative held below zero, or bounds on one
// metric that exclude each other (<= 10 and >= 20). Given twice, the same SLO is said too.
Status check_slos(const std::vector<Slo>& slos) {
  for (size_t i = 0; i < slos.size(); ++i) {
    const Slo& a = slos[i];
    if (a.upper && a.bound < 0) {
      return Error{fmt::format("--slo {}: no point can meet it ({} is never negative)",
                               a.describe(), a.metric)};
    }
    for (size_t j = 0; j < i; ++j) {
      const Slo& b = slos[j];
      if (a.metric != b.metric) continue;
      if (a.upper == b.upper) {
        return Error{fmt::format("--slo {} and --slo {}: two {} bounds on {}; give one",
                                 b.describe(), a.describe(), a.upper ? "upper" : "lower",
                                 a.metric)};
      }
      const Slo& upper = a.upper ? a : b;
      const Slo& lower = a.upper ? b : a;
      if (lower.bound > upper.bound) {
        return Error{
            fmt::format("--slo {} and --slo {} contradict each other: no value of {} "
                        "meets both",
                        b.describe(), a.describe(), a.metric)};
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<Objective> make_objective(const std::string& text, const std::vector<std::string>& slos,
                                   int64_t conc, bool minimize) {
  Objective o;
  o.conc = conc;
  for (const auto& s : slos) {
    auto slo = parse_slo(s);
    if (!slo) return slo.error();
    o.slos.push_back(std::move(*slo));
  }
  if (auto s = check_slos(o.slos); !s.ok()) return s.error();
  const bool slo_objective = text == "tput-at-slo" || (text.empty() && !o.slos.empty());
  if (!o.slos.empty() && !slo_objective) {
    return Error{
        fmt::format("--slo goes with --objective tput-at-slo, not '{}'", printable(text, 80))};
  }
  if (slo_objective) {
    if (o.slos.empty()) {
      return Error{"--objective tput-at-slo needs at least one --slo METRIC<=VALUE (or >=)"};
    }
    if (minimize) return Error{"--minimize does not go with --objective tput-at-slo"};
    o.kind = Objective::Kind::kTputAtSlo;
    o.metric = "tput_per_gpu";
    return o;
  }
  const std::string t = text.empty() ? "tput_per_gpu" : text;
  if (t == "e2e-intvty" || t.starts_with("e2e-intvty:")) {
    const std::string pct = t == "e2e-intvty" ? "p90" : t.substr(11);
    if (pct != "p50" && pct != "p90" && pct != "p99" && pct != "p99.9") {
      return Error{fmt::format("--objective '{}': the percentile is one of p50, p90, p99, p99.9",
                               printable(t, 80))};
    }
    if (minimize) return Error{"--minimize does not go with --objective e2e-intvty"};
    o.kind = Objective::Kind::kE2eIntvty;
    o.metric = (pct == "p50" ? std::string("median") : pct) + "_e2e_norm_intvty";
    return o;
  }
  if (auto i = metrics::headline_index(t)) {
    o.metric = t;
    o.higher_is_better = metrics::kHeadlineMetrics[*i].higher_is_better;
    if (minimize && o.higher_is_better) {
      return Error{fmt::format("--minimize: {} is better higher; give a formula to turn it", t)};
    }
    return o;
  }
  auto f =
      Formula::parse(t, [](std::string_view k) { return metrics::headline_index(k).has_value(); });
  if (!f) {
    return Error{
        fmt::format("{} (an objective is a headline metric, e2e-intvty[:pXX], "
                    "tput-at-slo, or a formula over the headline metrics: {})",
                    f.error().message, metrics::headline_keys_text())};
  }
  if (f->metrics().empty()) {
    // '1/0' or '42': the same for every candidate (or never a number).
    return Error{
        fmt::format("--objective '{}': the formula reads no metric, so it cannot tell "
                    "candidates apart; name a headline metric in it ({})",
                    printable(t, 80), metrics::headline_keys_text())};
  }
  o.kind = Objective::Kind::kFormula;
  o.formula = std::make_shared<const Formula>(std::move(*f));
  o.metric = o.formula->text();
  o.higher_is_better = !minimize;
  return o;
}

}  // namespace ib::tune
