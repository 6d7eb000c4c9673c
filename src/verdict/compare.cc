#include "verdict/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "core/numeric.h"
#include "core/strings.h"
#include "metrics/result.h"
#include "report/table.h"
#include "verdict/resample.h"

namespace ib::verdict {

namespace json = boost::json;

namespace {

// config, parallelism (the topology: "TP8", "P2xTP4 D1xTP8"), workload, conc
using GroupKey = std::tuple<std::string, std::string, std::string, int64_t>;

double mean_finite(const std::vector<const SidePoint*>& pts, size_t i) {
  double sum = 0;
  int n = 0;
  for (const auto* p : pts) {
    const double v = p->headline.at(i);
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  }
  return n == 0 ? kNaN : sum / n;
}

double rel_pct(double base, double head) {
  if (!std::isfinite(base) || !std::isfinite(head)) return kNaN;
  if (base == 0) return head == 0 ? 0.0 : kNaN;
  return (head - base) / base * 100;
}

// Requests beyond a tail percentile that its bootstrap interval needs (e.g. p99: 500 requests).
constexpr double kMinTailSamples = 5;

// The fraction of samples above the percentile a headline key reports ("p99_..." → 0.01); 0 for
// the median, means and throughputs.
double tail_fraction(std::string_view key) {
  if (key.starts_with("p99.9_")) return 0.001;
  if (key.starts_with("p99_")) return 0.01;
  if (key.starts_with("p90_")) return 0.10;
  return 0;
}

// Bootstrap replicates of every headline metric's relative change: per replicate, each repeat of
// each side is resampled (its requests, with replacement) and the side's value is the mean over
// its repeats. replicates[metric][b].
std::vector<std::vector<double>> bootstrap_deltas(const std::vector<const SidePoint*>& base,
                                                  const std::vector<const SidePoint*>& head,
                                                  const CompareOptions& o) {
  auto prepare = [](const std::vector<const SidePoint*>& pts) {
    std::vector<PointResampler> out;
    for (const auto* p : pts) {
      out.emplace_back(p->records, p->gpus);
      out.back().set_output_gpus(p->decode_gpus);
    }
    return out;
  };
  const auto pb = prepare(base), ph = prepare(head);
  std::mt19937_64 rng(o.seed);
  std::vector<uint32_t> counts;
  std::vector<std::vector<double>> reps(metrics::kHeadlineCount);
  for (auto& r : reps) r.reserve(static_cast<size_t>(o.resamples));
  auto side_value = [&](const std::vector<PointResampler>& side,
                        std::array<double, metrics::kHeadlineCount>& v) {
    v.fill(0);
    for (const auto& p : side) {
      std::uniform_int_distribution<size_t> u(0, p.requests() - 1);
      counts.assign(p.requests(), 0);
      for (size_t k = 0; k < p.requests(); ++k) ++counts[u(rng)];
      const metrics::Headline h = p.headline(counts);
      for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
        v[i] += h.at(i) / static_cast<double>(side.size());
      }
    }
  };
  std::array<double, metrics::kHeadlineCount> vb{}, vh{};
  for (int b = 0; b < o.resamples; ++b) {
    side_value(pb, vb);
    side_value(ph, vh);
    for (size_t i = 0; i < metrics::kHeadlineCount; ++i) reps[i].push_back(rel_pct(vb[i], vh[i]));
  }
  return reps;
}

// Mean and standard error of one filter's exact match over a side's repeats (independent runs:
// the mean's standard error is √(Σ seᵢ²) / k).
std::pair<double, double> eval_mean_se(const std::vector<const SidePoint*>& side, bool strict) {
  double sum = 0, var = 0;
  for (const auto* p : side) {
    sum += strict ? p->eval->em_strict : p->eval->em_flexible;
    const double se = strict ? p->eval->em_strict_se : p->eval->em_flexible_se;
    var += se * se;
  }
  const double k = static_cast<double>(side.size());
  return {sum / k, std::sqrt(var) / k};
}

// What a pair is: keys, workload, concurrency, repeats.
PairResult pair_of(const std::vector<const SidePoint*>& base,
                   const std::vector<const SidePoint*>& head) {
  PairResult pr;
  pr.base_key = base.front()->config_key;
  pr.head_key = head.front()->config_key;
  pr.workload_key = base.front()->workload_key;
  pr.workload_label = base.front()->workload_label;
  pr.concurrency = base.front()->concurrency;
  pr.base_repeats = base.size();
  pr.head_repeats = head.size();
  return pr;
}

PairResult compare_eval_pair(const std::vector<const SidePoint*>& base,
                             const std::vector<const SidePoint*>& head, const CompareOptions& o) {
  PairResult pr = pair_of(base, head);
  // The normal quantile (Student's t with very many degrees of freedom).
  const double z = student_t_quantile((1 + o.confidence) / 2, 1e9);
  for (bool strict : {true, false}) {
    AccuracyDelta d;
    d.filter = strict ? "strict-match" : "flexible-extract";
    std::tie(d.base, d.base_se) = eval_mean_se(base, strict);
    std::tie(d.head, d.head_se) = eval_mean_se(head, strict);
    d.delta = d.head - d.base;
    const double se = std::sqrt(d.base_se * d.base_se + d.head_se * d.head_se);
    if (std::isfinite(d.delta) && std::isfinite(se)) {
      d.ci = {d.delta - z * se, d.delta + z * se};
      d.verdict = d.ci.lo > 0   ? Verdict::kImproved
                  : d.ci.hi < 0 ? Verdict::kRegressed
                                : Verdict::kNoChange;
    }
    pr.accuracy.push_back(d);
  }
  return pr;
}

// Each TTFT part either side reported, in the order first seen: the mean of each side's repeats'
// medians (NaN where none of them has it).
std::vector<PartDelta> part_deltas(const std::vector<const SidePoint*>& base,
                                   const std::vector<const SidePoint*>& head) {
  std::vector<PartDelta> out;
  auto mean = [](const std::vector<const SidePoint*>& side, const std::string& part) {
    double sum = 0;
    int n = 0;
    for (const auto* p : side) {
      for (const auto& [name, v] : p->ttft_parts) {
        if (name == part) sum += v, ++n;
      }
    }
    return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
  };
  for (const auto* side : {&base, &head}) {
    for (const auto* p : *side) {
      for (const auto& [name, v] : p->ttft_parts) {
        if (std::none_of(out.begin(), out.end(),
                         [&](const PartDelta& d) { return d.part == name; })) {
          out.push_back({name, mean(base, name), mean(head, name)});
        }
      }
    }
  }
  return out;
}

PairResult compare_pair(const std::vector<const SidePoint*>& base,
                        const std::vector<const SidePoint*>& head, const CompareOptions& o) {
  PairResult pr = pair_of(base, head);
  bool records = true;
  for (const auto* side : {&base, &head}) {
    for (const auto* p : *side) records &= p->has_records && p->records.size() >= 2;
  }
  pr.records = records;
  std::vector<std::vector<double>> reps;
  if (records && o.resamples >= 2) reps = bootstrap_deltas(base, head, o);
  const bool repeats = base.size() >= 2 || head.size() >= 2;
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    const metrics::MetricKey& k = metrics::kHeadlineMetrics[i];
    MetricDelta d;
    d.key = std::string(k.key);
    d.higher_is_better = k.higher_is_better;
    d.base = mean_finite(base, i);
    d.head = mean_finite(head, i);
    d.delta_pct = rel_pct(d.base, d.head);
    if (!std::isfinite(d.delta_pct)) {
      d.note = std::isfinite(d.base) && std::isfinite(d.head) ? "base is 0" : "not measured";
      d.interval = "none";
      pr.metrics.push_back(std::move(d));
      continue;
    }
    if (!reps.empty()) {
      // A tail percentile needs enough requests beyond it: resampling 40 requests' p99 only
      // reshuffles the largest few, which gives a narrow interval that means nothing.
      const double tail = tail_fraction(k.key);
      size_t fewest = std::numeric_limits<size_t>::max();
      for (const auto* side : {&base, &head}) {
        for (const auto* p : *side) fewest = std::min(fewest, p->records.size());
      }
      if (tail > 0 && tail * static_cast<double>(fewest) < kMinTailSamples) {
        d.note =
            fmt::format("{} requests: too few for a bootstrap interval of a p{:g} (needs {:g})",
                        fewest, (1 - tail) * 100, std::ceil(kMinTailSamples / tail));
      } else {
        d.bootstrap_pct = percentile_interval(reps[i], o.confidence);
      }
    }
    if (repeats && d.base != 0) {
      std::vector<double> a, b;
      for (const auto* p : base) {
        if (std::isfinite(p->headline.at(i))) a.push_back(p->headline.at(i));
      }
      for (const auto* p : head) {
        if (std::isfinite(p->headline.at(i))) b.push_back(p->headline.at(i));
      }
      if (auto w = welch_interval(a, b, o.confidence)) {
        d.welch_pct = {w->ci.lo / d.base * 100, w->ci.hi / d.base * 100};
      }
    }
    // Run-to-run variation, when measured, is the larger and the honest one.
    if (d.welch_pct.valid()) {
      d.interval = "welch";
      d.verdict = decide(d.welch_pct, d.higher_is_better, o.min_effect_pct);
    } else if (d.bootstrap_pct.valid()) {
      d.interval = "bootstrap";
      d.verdict = decide(d.bootstrap_pct, d.higher_is_better, o.min_effect_pct);
    } else {
      d.interval = "none";
      if (d.note.empty()) d.note = records ? "no interval" : "no per-request records: no interval";
    }
    if (d.verdict != Verdict::kNoInterval && metrics::descriptive_metric(k.key)) {
      d.verdict = Verdict::kDescriptive;
      d.note = "how the tokens arrived, not better or worse";
    }
    pr.metrics.push_back(std::move(d));
  }
  pr.ttft_parts = part_deltas(base, head);
  return pr;
}

std::string join_set(const std::set<std::string>& s) {
  std::string out;
  for (const auto& v : s) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out.empty() ? "unknown" : out;
}

double curve_x(const SidePoint& p) {
  return p.agentic ? p.e2e_norm_intvty : p.headline.get("median_intvty");
}

// A side's usable points by configuration, workload and concurrency.
using PointGroups = std::map<GroupKey, std::vector<const SidePoint*>>;

// Confounders: every identity field whose values differ between the sides (sets c.confounded
// when one is confounding and not accepted).
void find_confounders(const Side& base, const Side& head, const CompareOptions& o, Comparison& c) {
  auto identities = [](const Side& side) {
    std::vector<metrics::Identity> out;
    for (const auto& p : side.points) out.push_back(p.identity);
    return out;
  };
  c.confounders = metrics::confounders(identities(base), identities(head));
  for (auto& cf : c.confounders) {
    cf.accepted = o.accepted_confounders.count(cf.field) > 0;
    if (cf.confounding && !cf.accepted) c.confounded = true;
  }
}

// Usable points grouped; the rest excluded (and counted) as side `name`.
PointGroups group_usable(const Side& s, const char* name, std::vector<Excluded>& excluded) {
  PointGroups g;
  for (const auto& p : s.points) {
    if (!p.usable()) {
      std::string why(metrics::status_name(p.status));
      if (!p.validity.valid()) {
        why = "invalid: " + p.validity.text();
      } else if (!p.error.empty()) {
        why += ": " + p.error;
      }
      excluded.push_back({name, p.source, p.config_key, p.workload_label, p.concurrency, why});
      continue;
    }
    // Another parallelism or topology under one key is another configuration (1P1D and 2P1D,
    // TP4 and TP8), never a repeat.
    g[{p.config_key, p.identity.get(metrics::IdentityField::kParallelism), p.workload_key,
       p.concurrency}]
        .push_back(&p);
  }
  return g;
}

// The head configuration a base configuration is compared with (--pair, else the same name).
std::string partner_key(const CompareOptions& o, const std::string& config) {
  auto pair_it = o.pairs.find(config);
  return pair_it == o.pairs.end() ? config : pair_it->second;
}

using GroupMatch = std::pair<const GroupKey*, const GroupKey*>;  // base group, head group

// Each base group's partner in head: the group of the partner key, workload and concurrency with
// the same parallelism; else, where exactly one base group and one head group of that key,
// workload and concurrency are left, those two (the parallelism is then the change compared: TP4
// against TP8, 1P1D against 2P1D). `unmatched` gets why a base group found none.
std::vector<GroupMatch> match_groups(const PointGroups& gb, const PointGroups& gh,
                                     const CompareOptions& o,
                                     std::map<const GroupKey*, std::string>* unmatched) {
  std::vector<GroupMatch> out;
  std::set<const GroupKey*> used;
  std::vector<const GroupKey*> left;
  for (const auto& [key, pts] : gb) {
    const auto& [config, par, workload, conc] = key;
    auto it = gh.find({partner_key(o, config), par, workload, conc});
    if (it == gh.end()) {
      left.push_back(&key);
      continue;
    }
    out.emplace_back(&key, &it->first);
    used.insert(&it->first);
  }
  for (const GroupKey* b : left) {
    const auto& [config, par, workload, conc] = *b;
    const std::string head_key = partner_key(o, config);
    auto same_place = [&](const GroupKey& k) {
      return std::get<0>(k) == head_key && std::get<2>(k) == workload && std::get<3>(k) == conc;
    };
    std::vector<const GroupKey*> heads;
    std::set<std::string> pars;
    for (const auto& [hk, pts] : gh) {
      if (!same_place(hk)) continue;
      pars.insert(std::get<1>(hk).empty() ? std::string("unknown") : std::get<1>(hk));
      if (!used.count(&hk)) heads.push_back(&hk);
    }
    const auto bases = std::count_if(left.begin(), left.end(), [&](const GroupKey* k) {
      return std::get<0>(*k) == config && std::get<2>(*k) == workload && std::get<3>(*k) == conc;
    });
    if (heads.size() == 1 && bases == 1) {
      out.emplace_back(b, heads.front());
      used.insert(heads.front());
      continue;
    }
    std::string why = fmt::format("no partner in head ({} at conc {})", head_key, conc);
    if (!pars.empty()) {
      why = fmt::format("no partner in head ({} at conc {} has {}, not {})", head_key, conc,
                        fmt::join(pars, ", "), par.empty() ? std::string("unknown") : par);
    }
    (*unmatched)[b] = why;
  }
  return out;
}

// Compares each base group with its partner in head; groups of either side without one are
// excluded.
void compare_groups(const PointGroups& gb, const PointGroups& gh, const CompareOptions& o,
                    Comparison& c) {
  std::map<const GroupKey*, std::string> unmatched;
  std::set<const GroupKey*> matched_head;
  for (const auto& [b, h] : match_groups(gb, gh, o, &unmatched)) {
    const auto& pts = gb.at(*b);
    const auto& hpts = gh.at(*h);
    matched_head.insert(h);
    PairResult pr = pts.front()->eval && hpts.front()->eval ? compare_eval_pair(pts, hpts, o)
                                                            : compare_pair(pts, hpts, o);
    pr.base_parallelism = std::get<1>(*b);
    pr.head_parallelism = std::get<1>(*h);
    c.pairs.push_back(std::move(pr));
  }
  for (const auto& [key, pts] : gb) {  // in the groups' order
    const auto why = unmatched.find(&key);
    if (why == unmatched.end()) continue;
    for (const auto* p : pts) {
      c.excluded.push_back(
          {"base", p->source, std::get<0>(key), p->workload_label, std::get<3>(key), why->second});
    }
  }
  // Read in the order people look for: configuration, workload, then concurrency ascending (the
  // workload key may differ per concurrency, e.g. its prompt count, so the map's order is not it).
  std::stable_sort(c.pairs.begin(), c.pairs.end(), [](const PairResult& a, const PairResult& b) {
    return std::tie(a.base_key, a.workload_label, a.base_parallelism, a.concurrency) <
           std::tie(b.base_key, b.workload_label, b.base_parallelism, b.concurrency);
  });
  for (const auto& [key, pts] : gh) {
    if (matched_head.count(&key)) continue;
    for (const auto* p : pts) {
      c.excluded.push_back({"head", p->source, p->config_key, p->workload_label, p->concurrency,
                            "no partner in base"});
    }
  }
}

// The verdict counts over every pair's metrics and accuracy deltas.
void count_verdicts(Comparison& c) {
  for (const auto& pr : c.pairs) {
    std::vector<Verdict> verdicts;
    for (const auto& m : pr.metrics) verdicts.push_back(m.verdict);
    for (const auto& a : pr.accuracy) verdicts.push_back(a.verdict);
    for (Verdict v : verdicts) {
      switch (v) {
        case Verdict::kImproved:
          ++c.improved;
          break;
        case Verdict::kRegressed:
          ++c.regressed;
          break;
        case Verdict::kNoChange:
          ++c.unchanged;
          break;
        case Verdict::kNoInterval:
          ++c.no_interval;
          break;
        case Verdict::kDescriptive:
          break;  // shown, not counted for either side
      }
    }
  }
}

// Curves: per paired configuration and workload, the frontier of each side's usable points
// (means over repeats), throughput per GPU against interactivity.
std::vector<CurveResult> compare_curves(const PointGroups& gb, const PointGroups& gh,
                                        const CompareOptions& o) {
  std::map<std::tuple<std::string, std::string, std::string>, CurveResult> curves;
  std::map<const GroupKey*, std::string> unmatched;
  for (const auto& [b, h] : match_groups(gb, gh, o, &unmatched)) {
    const auto& pts = gb.at(*b);
    const std::string& config = std::get<0>(*b);
    const int64_t conc = std::get<3>(*b);
    if (pts.front()->eval) continue;  // an eval has no throughput curve
    const std::string head_key = std::get<0>(*h);
    const auto it = gh.find(*h);
    // One curve per configuration and workload shape: the workload key also names the
    // concurrency's prompt count, so the curve groups by the label ("isl 1024 / osl 1024").
    CurveResult& cr = curves[{config, head_key, pts.front()->workload_label}];
    cr.base_key = config;
    cr.head_key = head_key;
    cr.workload_label = pts.front()->workload_label;
    cr.x_metric = pts.front()->agentic ? "e2e_norm_intvty_p90" : "median_intvty";
    auto point_of = [&](const std::vector<const SidePoint*>& side) {
      double x = 0, y = 0;
      for (const auto* p : side) {
        x += curve_x(*p) / static_cast<double>(side.size());
        y += p->headline.get("tput_per_gpu") / static_cast<double>(side.size());
      }
      return CurvePoint{x, y, conc};
    };
    cr.base_frontier.push_back(point_of(pts));
    cr.head_frontier.push_back(point_of(it->second));
  }
  std::vector<CurveResult> out;
  for (auto& [key, cr] : curves) {
    cr.base_frontier = pareto_frontier(std::move(cr.base_frontier));
    cr.head_frontier = pareto_frontier(std::move(cr.head_frontier));
    cr.delta = compare_frontiers(cr.base_frontier, cr.head_frontier);
    out.push_back(std::move(cr));
  }
  return out;
}

}  // namespace

size_t use_steady_window(Side& side) {
  size_t without = 0;
  for (SidePoint& p : side.points) {
    if (p.eval) continue;  // an eval has no load to be steady in
    std::optional<metrics::SteadyWindow> w;
    if (p.has_records) w = metrics::find_steady_window(p.records, p.concurrency);
    if (w) {
      metrics::MetricsOptions mo;
      mo.num_gpus = p.gpus;
      mo.decode_gpus = p.decode_gpus;
      p.headline = metrics::Headline::from_json(metrics::steady_json(p.records, *w, mo, 0));
      p.window = w;
    } else if (p.steady_headline && !p.has_records) {
      p.headline = *p.steady_headline;
    } else {
      p.headline = metrics::Headline();
      ++without;
    }
  }
  return without;
}

Comparison compare(const Side& base, const Side& head, const CompareOptions& o) {
  Comparison c;
  c.options = o;
  c.base_label = base.label;
  c.head_label = head.label;
  find_confounders(base, head, o, c);
  const PointGroups gb = group_usable(base, "base", c.excluded);
  const PointGroups gh = group_usable(head, "head", c.excluded);
  compare_groups(gb, gh, o, c);
  count_verdicts(c);
  c.curves = compare_curves(gb, gh, o);
  return c;
}

bool SidePoint::usable() const {
  if (eval) {
    using metrics::PointStatus;
    if (status != PointStatus::kOk && status != PointStatus::kReused &&
        status != PointStatus::kInvalid) {
      return false;
    }
    for (const auto& r : validity.reasons) {
      if (r.kind != metrics::InvalidKind::kEvalGate) return false;
    }
    return true;
  }
  return (status == metrics::PointStatus::kOk || status == metrics::PointStatus::kReused) &&
         validity.valid();
}

std::string Comparison::verdict_line() const {
  if (confounded) {
    std::string what;
    for (const auto& cf : confounders) {
      if (!cf.confounding || cf.accepted) continue;
      if (!what.empty()) what += "; ";
      what +=
          fmt::format("{} differs: {} \u2192 {}", cf.title(), join_set(cf.base), join_set(cf.head));
    }
    return fmt::format("CONFOUNDED: not evidence for this change ({})", what);
  }
  if (pairs.empty()) return "NOTHING COMPARED: no point of one side has a partner in the other";
  const std::string counts = fmt::format(
      "{} improved, {} regressed, {} no significant change, {} without interval "
      "(at {:g}% confidence, min effect {:g}%)",
      improved, regressed, unchanged, no_interval, options.confidence * 100,
      options.min_effect_pct);
  if (improved + regressed + unchanged == 0) {
    return "NO VERDICT: no metric has an interval (no per-request records and no repeated runs): " +
           counts;
  }
  if (regressed > 0 && improved > 0) return "MIXED: " + counts;
  if (regressed > 0) return "REGRESSED: " + counts;
  if (improved > 0) return "IMPROVED: " + counts;
  return "NO SIGNIFICANT CHANGE: " + counts;
}

namespace {

// A pair's configuration as tables name it: "key", "base → head", and its parallelism where
// known: "key [TP8]", "key [P1xTP1 D1xTP1 → P2xTP1 D1xTP1]".
std::string pair_config(const PairResult& pr) {
  std::string out =
      pr.base_key == pr.head_key ? pr.base_key : pr.base_key + " \u2192 " + pr.head_key;
  if (pr.base_parallelism == pr.head_parallelism) {
    if (!pr.base_parallelism.empty()) out += " [" + pr.base_parallelism + "]";
  } else {
    auto shown = [](const std::string& p) { return p.empty() ? std::string("?") : p; };
    out += " [" + shown(pr.base_parallelism) + " \u2192 " + shown(pr.head_parallelism) + "]";
  }
  return out;
}

std::string pct_text(double v) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:+.1f}%", v);
}

std::string interval_text(const Interval& i) {
  if (!i.valid()) return "no interval";
  return fmt::format("[{:+.1f}%, {:+.1f}%]", i.lo, i.hi);
}

std::string value_text(double v, size_t metric) {
  return report::fixed(v, metrics::kHeadlineMetrics[metric].decimals);
}

std::string decided_interval(const MetricDelta& m) {
  if (m.interval == "welch") return interval_text(m.welch_pct) + " welch";
  if (m.interval == "bootstrap") return interval_text(m.bootstrap_pct) + " bootstrap";
  return m.note.empty() ? "no interval" : m.note;
}

std::vector<std::vector<std::string>> metric_rows(const Comparison& c) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& pr : c.pairs) {
    const std::string config = pair_config(pr);
    for (size_t i = 0; i < pr.metrics.size(); ++i) {
      const auto& m = pr.metrics[i];
      rows.push_back({config, pr.workload_label, std::to_string(pr.concurrency),
                      fmt::format("{}{}", m.key, m.higher_is_better ? " \u2191" : " \u2193"),
                      value_text(m.base, i), value_text(m.head, i), pct_text(m.delta_pct),
                      decided_interval(m), std::string(verdict_name(m.verdict)),
                      fmt::format("{}/{}", pr.base_repeats, pr.head_repeats)});
    }
    for (const auto& a : pr.accuracy) {
      rows.push_back(
          {config, pr.workload_label, std::to_string(pr.concurrency),
           "exact_match," + a.filter + " \u2191", fmt::format("{:.4f}", a.base),
           fmt::format("{:.4f}", a.head), fmt::format("{:+.1f} pts", a.delta * 100),
           a.ci.valid() ? fmt::format("[{:+.1f}, {:+.1f}] pts normal", a.ci.lo * 100, a.ci.hi * 100)
                        : std::string("no interval (no standard error)"),
           std::string(verdict_name(a.verdict)),
           fmt::format("{}/{}", pr.base_repeats, pr.head_repeats)});
    }
  }
  return rows;
}

const std::vector<std::string> kMetricTitles = {"CONFIG",  "WORKLOAD", "CONC",  "METRIC",
                                                "BASE",    "HEAD",     "DELTA", "INTERVAL",
                                                "VERDICT", "RUNS B/H"};

std::string confounder_value_text(const Confounder& cf) {
  std::string tag;
  if (cf.confounding) tag = cf.accepted ? " (accepted with --accept-confounder)" : " (confounded)";
  return fmt::format("{}: {} \u2192 {}{}", cf.title(), join_set(cf.base), join_set(cf.head), tag);
}

std::string curves_text(const Comparison& c, bool markdown) {
  std::string out;
  for (const auto& cr : c.curves) {
    const std::string config =
        cr.base_key == cr.head_key ? cr.base_key : cr.base_key + " \u2192 " + cr.head_key;
    const auto& d = cr.delta;
    std::string line = fmt::format("{} {}: frontier {} point(s) base, {} head (tput/gpu vs {})",
                                   config, cr.workload_label, cr.base_frontier.size(),
                                   cr.head_frontier.size(), cr.x_metric);
    if (!d.overlap) {
      line += "; the interactivity ranges do not overlap: no equal-interactivity comparison";
    } else {
      line += fmt::format("; at equal interactivity ({:.1f}\u2013{:.1f}): throughput {} on mean",
                          d.lo, d.hi, pct_text(d.mean_delta_pct));
      std::vector<std::string> lv;
      for (const auto& l : d.levels)
        lv.push_back(fmt::format("{:.1f}: {}", l.x, pct_text(l.delta_pct)));
      line += fmt::format(" ({})", fmt::join(lv, ", "));
      line += fmt::format("; frontier area {}", std::isfinite(d.area_delta_pct)
                                                    ? pct_text(d.area_delta_pct)
                                                    : std::string("- (range has no width)"));
    }
    out += (markdown ? "- " : "  ") + line + "\n";
  }
  return out;
}

// Where TTFT went on each side, per pair that reported it (medians, ms; no interval: the TTFT
// row above judges the change, these say which part moved).
std::string parts_text(const Comparison& c, bool markdown) {
  std::string out;
  for (const auto& pr : c.pairs) {
    if (pr.ttft_parts.empty()) continue;
    const std::string config = pair_config(pr);
    std::vector<std::string> cells;
    for (const auto& d : pr.ttft_parts) {
      const std::string delta = std::isfinite(d.base) && std::isfinite(d.head)
                                    ? fmt::format("{:+.2f}", d.head - d.base)
                                    : std::string("-");
      auto ms = [](double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "-"; };
      cells.push_back(fmt::format("{} {} \u2192 {} ({})", d.part, ms(d.base), ms(d.head), delta));
    }
    const std::string line = fmt::format("{} {} conc {}: {}", config, pr.workload_label,
                                         pr.concurrency, fmt::join(cells, "; "));
    out += markdown ? "- " + markdown_cell(line) + "\n" : "  " + line + "\n";
  }
  if (out.empty()) return "";
  return (markdown ? std::string("\n**TTFT by part** (medians in ms, base \u2192 head; which part "
                                 "moved the TTFT above)\n\n")
                   : std::string("\nTTFT BY PART (medians in ms, base \u2192 head (change); which "
                                 "part moved the TTFT above)\n")) +
         out;
}

}  // namespace

std::string comparison_text(const Comparison& c) {
  std::string out = fmt::format("compare: base {}  head {}\n", c.base_label, c.head_label);
  out += "\nCONFOUNDERS (identity fields that differ besides the change)\n";
  if (c.confounders.empty()) out += "  none\n";
  for (const auto& cf : c.confounders) out += "  " + confounder_value_text(cf) + "\n";
  out += "\nVERDICT: " + c.verdict_line() + "\n";
  out += fmt::format(
      "\nMETRICS (interval of the relative change at {:g}% confidence; min effect "
      "{:g}%; \u2191 higher is better, \u2193 lower)\n",
      c.options.confidence * 100, c.options.min_effect_pct);
  std::vector<report::Column> cols;
  for (const auto& t : kMetricTitles) {
    const bool left =
        t == "CONFIG" || t == "WORKLOAD" || t == "METRIC" || t == "INTERVAL" || t == "VERDICT";
    cols.push_back({t, left ? report::Align::kLeft : report::Align::kRight, 0, 0});
  }
  report::Table table(std::move(cols));
  for (auto& r : metric_rows(c)) table.add_row(std::move(r));
  out += table.rows() > 0 ? table.render() : "  none paired\n";
  out += parts_text(c, false);
  out += "\nCURVES (Pareto frontier per configuration)\n";
  out += c.curves.empty() ? "  none\n" : curves_text(c, false);
  out += fmt::format(
      "\nEXCLUDED ({} point(s): invalid, failed or without a partner; never compared)\n",
      c.excluded.size());
  if (c.excluded.empty()) out += "  none\n";
  for (const auto& e : c.excluded) {
    out += fmt::format("  {} {} {} conc {} ({}): {}\n", e.side, e.config_key, e.workload_label,
                       e.concurrency, e.source, e.why);
  }
  return out;
}

std::string comparison_markdown(const Comparison& c) {
  std::string out = "### inferbench compare: " + c.verdict_line() + "\n\n";
  out += fmt::format("Base: {}  \nHead: {}\n\n", markdown_cell(c.base_label),
                     markdown_cell(c.head_label));
  if (c.options.window == "steady") {
    out +=
        "Figures of each point's steady state: the window with at least 95% of its "
        "concurrency in flight (ramp-up and drain left out).\n\n";
  }
  // Confounders before any number; their values follow the table.
  if (c.confounders.empty()) {
    out += "Identity fields that differ besides the change: none.\n\n";
  } else {
    std::vector<std::string> fields;
    for (const auto& cf : c.confounders) fields.emplace_back(cf.title());
    out += fmt::format("Identity fields that differ besides the change: **{}** (values below).\n\n",
                       fmt::join(fields, ", "));
  }
  if (c.confounded) {
    out +=
        "> **Confounded: not evidence for this change.** The sides differ in model, image or "
        "hardware (below); the numbers describe that difference too.\n\n";
  }
  out += fmt::format(
      "Interval of the relative change at {:g}% confidence; a metric is improved "
      "or regressed only when the whole interval is beyond {:g}% in its good "
      "or bad direction (\u2191 higher is better, \u2193 lower).\n\n",
      c.options.confidence * 100, c.options.min_effect_pct);
  out += "|";
  for (const auto& t : kMetricTitles) out += " " + t + " |";
  out += "\n|";
  for (size_t i = 0; i < kMetricTitles.size(); ++i)
    out += i < 4 || i == 7 || i == 8 ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& r : metric_rows(c)) {
    out += "|";
    for (size_t i = 0; i < r.size(); ++i) {
      std::string cell = markdown_cell(r[i]);
      if (i == 8 && (r[i] == "improved" || r[i] == "regressed")) cell = "**" + cell + "**";
      out += " " + cell + " |";
    }
    out += "\n";
  }
  if (c.pairs.empty()) out += "\nNo pairs.\n";
  out += parts_text(c, true);
  out += "\n**Curves** (Pareto frontier, throughput per GPU vs interactivity)\n\n";
  out += c.curves.empty() ? "none\n" : curves_text(c, true);
  out += "\n**Confounders** (identity fields that differ besides the change)\n\n";
  if (c.confounders.empty()) out += "none\n";
  for (const auto& cf : c.confounders)
    out += "- " + markdown_cell(confounder_value_text(cf)) + "\n";
  out += fmt::format("\n**Excluded** ({} point(s), never compared)\n\n", c.excluded.size());
  if (c.excluded.empty()) out += "none\n";
  for (const auto& e : c.excluded) {
    out += markdown_cell(fmt::format("- {} {} {} conc {} ({}): {}", e.side, e.config_key,
                                     e.workload_label, e.concurrency, e.source, e.why)) +
           "\n";
  }
  return out;
}

namespace {

json::value num_or_null(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

json::value interval_json(const Interval& i) {
  if (!i.valid()) return nullptr;
  return json::array{i.lo, i.hi};
}

json::array curve_json(const std::vector<CurvePoint>& f) {
  json::array a;
  for (const auto& p : f) a.push_back(json::object{{"x", p.x}, {"y", p.y}, {"concurrency", p.tag}});
  return a;
}

json::object counts_json(const Comparison& c) {
  return json::object{{"improved", c.improved},
                      {"regressed", c.regressed},
                      {"no_significant_change", c.unchanged},
                      {"no_interval", c.no_interval},
                      {"pairs", static_cast<int64_t>(c.pairs.size())},
                      {"excluded", static_cast<int64_t>(c.excluded.size())}};
}

json::array confounders_json(const std::vector<Confounder>& confounders) {
  json::array conf;
  for (const auto& cf : confounders) conf.push_back(cf.to_json());
  return conf;
}

// A throughput pair's metrics by key.
json::object pair_metrics_json(const PairResult& pr) {
  json::object ms;
  for (const auto& m : pr.metrics) {
    ms[m.key] = json::object{{"higher_is_better", m.higher_is_better},
                             {"base", num_or_null(m.base)},
                             {"head", num_or_null(m.head)},
                             {"delta_pct", num_or_null(m.delta_pct)},
                             {"bootstrap_ci_pct", interval_json(m.bootstrap_pct)},
                             {"welch_ci_pct", interval_json(m.welch_pct)},
                             {"interval", m.interval},
                             {"verdict", verdict_name(m.verdict)},
                             {"note", m.note}};
  }
  return ms;
}

// An eval pair's accuracy changes by "exact_match,<filter>".
json::object pair_accuracy_json(const PairResult& pr) {
  json::object acc;
  for (const auto& a : pr.accuracy) {
    acc["exact_match," + a.filter] = json::object{
        {"base", num_or_null(a.base)},           {"head", num_or_null(a.head)},
        {"base_stderr", num_or_null(a.base_se)}, {"head_stderr", num_or_null(a.head_se)},
        {"delta", num_or_null(a.delta)},         {"ci", interval_json(a.ci)},
        {"verdict", verdict_name(a.verdict)}};
  }
  return acc;
}

json::array pairs_json(const std::vector<PairResult>& pairs) {
  json::array out;
  for (const auto& pr : pairs) {
    json::object p{{"base_config", pr.base_key},
                   {"head_config", pr.head_key},
                   {"base_parallelism", pr.base_parallelism},
                   {"head_parallelism", pr.head_parallelism},
                   {"workload_key", pr.workload_key},
                   {"workload", pr.workload_label},
                   {"concurrency", pr.concurrency},
                   {"base_runs", static_cast<int64_t>(pr.base_repeats)},
                   {"head_runs", static_cast<int64_t>(pr.head_repeats)},
                   {"records", pr.records}};
    p["metrics"] = pair_metrics_json(pr);
    if (!pr.accuracy.empty()) p["accuracy"] = pair_accuracy_json(pr);
    if (!pr.ttft_parts.empty()) {
      json::array parts;
      for (const auto& d : pr.ttft_parts) {
        parts.push_back(json::object{{"part", d.part},
                                     {"base_ms", num_or_null(d.base)},
                                     {"head_ms", num_or_null(d.head)},
                                     {"delta_ms", num_or_null(d.head - d.base)}});
      }
      p["ttft_parts"] = std::move(parts);
    }
    out.push_back(std::move(p));
  }
  return out;
}

// The frontiers compared at equal interactivity.
json::object equal_interactivity_json(const FrontierComparison& delta) {
  json::array levels;
  for (const auto& l : delta.levels) {
    levels.push_back(json::object{{"x", l.x},
                                  {"base_tput_per_gpu", l.base_y},
                                  {"head_tput_per_gpu", l.head_y},
                                  {"delta_pct", num_or_null(l.delta_pct)}});
  }
  json::object d{{"overlap", delta.overlap}, {"levels", std::move(levels)}};
  if (delta.overlap) {
    d["lo"] = delta.lo;
    d["hi"] = delta.hi;
    d["mean_delta_pct"] = num_or_null(delta.mean_delta_pct);
    d["base_area"] = delta.base_area;
    d["head_area"] = delta.head_area;
    d["area_delta_pct"] = num_or_null(delta.area_delta_pct);
  }
  return d;
}

json::array curves_json(const std::vector<CurveResult>& curves) {
  json::array out;
  for (const auto& cr : curves) {
    out.push_back(json::object{{"base_config", cr.base_key},
                               {"head_config", cr.head_key},
                               {"workload", cr.workload_label},
                               {"x_metric", cr.x_metric},
                               {"base_frontier", curve_json(cr.base_frontier)},
                               {"head_frontier", curve_json(cr.head_frontier)},
                               {"equal_interactivity", equal_interactivity_json(cr.delta)}});
  }
  return out;
}

json::array excluded_json(const std::vector<Excluded>& excluded) {
  json::array ex;
  for (const auto& e : excluded) {
    ex.push_back(json::object{{"side", e.side},
                              {"source", e.source},
                              {"config", e.config_key},
                              {"workload", e.workload_label},
                              {"concurrency", e.concurrency},
                              {"why", e.why}});
  }
  return ex;
}

}  // namespace

json::object comparison_json(const Comparison& c) {
  json::object o;
  o["verdict"] = c.verdict_line();
  o["confounded"] = c.confounded;
  o["base"] = c.base_label;
  o["head"] = c.head_label;
  o["confidence"] = c.options.confidence;
  o["min_effect_pct"] = c.options.min_effect_pct;
  o["resamples"] = c.options.resamples;
  o["seed"] = c.options.seed;
  o["window"] = c.options.window;
  o["counts"] = counts_json(c);
  o["confounders"] = confounders_json(c.confounders);
  o["pairs"] = pairs_json(c.pairs);
  o["curves"] = curves_json(c.curves);
  o["excluded"] = excluded_json(c.excluded);
  return o;
}

}  // namespace ib::verdict
