// The one table of headline metric keys (docs/architecture.md, "The point pipeline"). Each key is
// declared here once; the result JSON (metrics_to_json), the SQLite headline columns (store/), the
// point tables of `sweep` and `show`, and the InferenceX aggregate all read it.
#pragma once

#include <array>
#include <boost/json.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ib::metrics {

struct BenchMetrics;
struct MetricsOptions;

struct MetricKey {
  std::string_view key;    // result JSON key and SQL column, vLLM/InferenceX spelling
  std::string_view title;  // column title in text tables
  int decimals;            // shown with this many decimals
  bool integer;            // a count (stored as INTEGER)
  bool table;              // a column of the point tables (sweep, show)
  /// The good direction, for verdicts (`inferbench compare`): throughput, interactivity and
  /// completed requests are better higher; latencies and failures better lower.
  bool higher_is_better;
  /// The value from a point's metrics (per-GPU keys use options.num_gpus; a percentile not in
  /// options.percentiles is NaN).
  double (*value)(const BenchMetrics& m, const MetricsOptions& options);
};

inline constexpr size_t kHeadlineCount = 16;

/// Each is a column of the store's points table (the first 14 in its order; later ones added by
/// migrations, at the end).
extern const std::array<MetricKey, kHeadlineCount> kHeadlineMetrics;

/// Index of `key` in kHeadlineMetrics; nullopt when it is not a headline key.
std::optional<size_t> headline_index(std::string_view key);

/// A headline metric that describes the stream rather than its speed (tokens per event: more
/// can mean speculation or a coarser stream interval): `compare` shows its change with an interval
/// but gives no verdict, whatever `higher_is_better` says.
bool descriptive_metric(std::string_view key);

/// Every headline key, comma-separated in table order: what an error about an unknown metric
/// lists.
std::string headline_keys_text();

/// The headline values of one point; NaN where not measured.
class Headline {
 public:
  Headline();
  static Headline from_metrics(const BenchMetrics& m, const MetricsOptions& options);
  /// From a result JSON (keys absent or not numbers stay NaN).
  static Headline from_json(const boost::json::object& result);

  double at(size_t i) const { return v_[i]; }
  void set_at(size_t i, double v) { v_[i] = v; }
  /// REQUIRES: headline_index(key).
  double get(std::string_view key) const;
  void set(std::string_view key, double v);
  bool empty() const;  // nothing measured
  /// Every key; NaN as null, counts as integers.
  boost::json::object to_json() const;
  /// The cell text of key i: fixed decimals, "-" when NaN.
  std::string cell(size_t i) const;

 private:
  std::array<double, kHeadlineCount> v_;
};

}  // namespace ib::metrics
