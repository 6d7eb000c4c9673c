// `inferbench compare BASE HEAD` (docs/compare.md): two sides' points paired by configuration,
// workload and concurrency; per pair the change of every headline metric with a confidence
// interval and a verdict; per configuration the Pareto frontiers; and, before any number, the
// identity fields the sides differ in besides the change.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "metrics/eval_result.h"
#include "metrics/identity.h"
#include "metrics/keys.h"
#include "metrics/point.h"
#include "metrics/record.h"
#include "metrics/steady.h"
#include "verdict/frontier.h"
#include "verdict/stats.h"

namespace ib::verdict {

/// The identity fields (metrics/identity.h): one list and one confounders() for compare,
/// report, verify and tune. A model, image or hardware difference makes a side "confounded".
using metrics::Confounder;

/// One measured point of one side (from the store or from a result file).
struct SidePoint {
  std::string source;  // "run 20261201-1030 point 17", or the file
  std::string run;     // the run's name ("" for files): repeats come from different runs
  std::string config_key;
  std::string workload_key;    // pairing key
  std::string workload_label;  // for tables
  int64_t concurrency = 0;
  metrics::PointStatus status = metrics::PointStatus::kOk;
  metrics::Validity validity;
  std::string error;
  metrics::Headline headline;
  double e2e_norm_intvty = std::numeric_limits<double>::quiet_NaN();  // p90; agentic only
  bool agentic = false;
  int gpus = 1;
  int decode_gpus = 0;  // a disaggregated point's (output per GPU is over them); 0: not one
  bool has_records = false;
  std::vector<metrics::RequestRecord> records;  // measured requests (records_conc_<C>.jsonl)
  /// The result's steady state (metrics/steady.h), as stored; and, after use_steady_window(),
  /// the window the resamples are restricted to.
  std::optional<metrics::Headline> steady_headline;
  std::optional<metrics::SteadyWindow> window;
  metrics::Identity identity;  // "" where unknown
  /// An accuracy eval's scores (docs/evals.md); nullopt for throughput points.
  std::optional<metrics::EvalSummary> eval;
  /// Where its TTFT went, medians in ms (docs/metrics.md): a disaggregated deployment's parts
  /// ("kv_transfer", ..., "unattributed") and the engine's own timing ("engine queue", "engine
  /// ttft", "outside engine"), in the result's order; empty when it reported none.
  std::vector<std::pair<std::string, double>> ttft_parts;

  /// Measured and valid. An eval below its threshold is still compared (its accuracy change is
  /// the point of comparing it): invalid only by its gate counts as usable.
  bool usable() const;
};

struct Side {
  std::string label;                 // "run 3 (20261201-1030)", "rev abc123 (2 runs)", a folder
  std::vector<std::string> sources;  // run names or files
  std::vector<SidePoint> points;
};

struct CompareOptions {
  double confidence = 0.95;                    // (0, 1)
  double min_effect_pct = 2;                   // >= 0
  int resamples = 2000;                        // bootstrap resamples
  uint64_t seed = 20261201;                    // bootstrap seed
  std::map<std::string, std::string> pairs;    // base config key -> head config key (--pair)
  std::set<metrics::IdentityField> accepted_confounders;  // --accept-confounder
  /// "run" (each point's whole run) or "steady" (its steady state: use_steady_window was applied
  /// to both sides); said in the JSON and the markdown.
  std::string window = "run";
};

struct MetricDelta {
  std::string key;  // kHeadlineMetrics key
  bool higher_is_better = true;
  double base = 0, head = 0;  // means over repeats; NaN when not measured
  double delta_pct = 0;       // (head - base) / base · 100
  Interval bootstrap_pct;     // percentile bootstrap over per-request records
  Interval welch_pct;         // over repeated runs
  std::string interval;       // which decided: "welch" | "bootstrap" | "none"
  Verdict verdict = Verdict::kNoInterval;
  std::string note;  // why there is no interval
};

/// The change of an eval's exact match (one filter) between the sides, in absolute terms:
/// head - base with the normal interval delta ± z·√(se_b² + se_h²) (each side's standard error,
/// the mean's over repeats). Improved or regressed only when the whole interval is beyond 0.
struct AccuracyDelta {
  std::string filter;  // "strict-match" | "flexible-extract"
  double base = 0, head = 0;
  double base_se = 0, head_se = 0;
  double delta = 0;  // head - base
  Interval ci;       // of delta
  Verdict verdict = Verdict::kNoInterval;
};

/// One part of the TTFT on both sides: the mean over repeats of its median (NaN where a side has
/// none). Descriptive: it says what moved a TTFT change, the TTFT row judges it.
struct PartDelta {
  std::string part;
  double base = 0, head = 0;  // ms
};

struct PairResult {
  std::string base_key, head_key, workload_key, workload_label;
  /// The sides' parallelism ("TP8", "P2xTP4 D1xTP8"; "" unknown): equal unless it is the change.
  std::string base_parallelism, head_parallelism;
  int64_t concurrency = 0;
  size_t base_repeats = 0, head_repeats = 0;
  bool records = false;                 // both sides had per-request records
  std::vector<MetricDelta> metrics;     // throughput points
  std::vector<AccuracyDelta> accuracy;  // eval points
  std::vector<PartDelta> ttft_parts;    // where either side reported its TTFT's parts
};

struct Excluded {
  std::string side;  // base | head
  std::string source, config_key, workload_label;
  int64_t concurrency = 0;
  std::string why;  // "invalid: expect failed: ...", "failed: ...", "no partner in head"
};

struct CurveResult {
  std::string base_key, head_key, workload_label;
  std::string x_metric;  // median_intvty | e2e_norm_intvty_p90
  std::vector<CurvePoint> base_frontier, head_frontier;
  FrontierComparison delta;
};

struct Comparison {
  CompareOptions options;
  std::string base_label, head_label;
  std::vector<Confounder> confounders;
  bool confounded = false;  // an unaccepted model, image or hardware difference
  std::vector<PairResult> pairs;
  std::vector<Excluded> excluded;
  std::vector<CurveResult> curves;
  int improved = 0, regressed = 0, unchanged = 0, no_interval = 0;  // metric verdict counts

  /// One line: "CONFOUNDED: not evidence for this change (model differs: a → b)",
  /// "REGRESSED: 2 metrics regressed, 1 improved ...", "IMPROVED: ...", "NO SIGNIFICANT CHANGE".
  std::string verdict_line() const;
};

/// Compares the sides. Never fails: what cannot be compared is listed in `excluded`.
/// `compare --window steady`: each point's steady state in place of its whole run. With per-request
/// records the window is found again from them (metrics::find_steady_window) and the resamples
/// keep to it; without, the result's stored `steady` figures are used. A point with neither has
/// no headline left (its metrics are "not measured"). Returns how many points had no window.
size_t use_steady_window(Side& side);

Comparison compare(const Side& base, const Side& head, const CompareOptions& options);

/// The terminal form: verdict, confounders, the metric table, curves, exclusions.
std::string comparison_text(const Comparison& c);
/// The PR-comment form: verdict first, then the table, then confounders and exclusions.
std::string comparison_markdown(const Comparison& c);
boost::json::object comparison_json(const Comparison& c);

}  // namespace ib::verdict
