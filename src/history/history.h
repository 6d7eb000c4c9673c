// `inferbench history` (docs/history.md): every config key's numbers over the stored runs, in git
// (or time) order, with change points found by E-Divisive means and a t-test
// (verdict/change_points.h) and attributed to what changed between the runs on either side: the
// perf-changelog entries and the key's recipe changes in that revision range, and the identity
// fields (image, engine version, hardware) that differ.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/changed.h"
#include "metrics/identity.h"
#include "store/store.h"
#include "verdict/change_points.h"

namespace ib::history {

/// What compare pairs on: one config key, workload and concurrency.
struct SeriesKey {
  std::string config_key;
  std::string workload_key;    // canonical (workload/workload.h)
  std::string workload_label;  // "isl 64 / osl 8"
  int64_t concurrency = 0;
  std::string metric;  // a headline key (metrics/keys.h)
  auto operator<=>(const SeriesKey&) const = default;
};

/// One position of a series: a revision's runs (repeats at one revision are one position), or a
/// run without a revision.
struct Position {
  std::string revision;  // "" when the run recorded none
  int64_t time = 0;      // the earliest run's start (unix seconds)
  std::vector<int64_t> run_ids;
  std::vector<std::string> run_names;
  std::vector<int64_t> point_ids;
  std::vector<double> values;  // one per point
  std::set<std::string> images;
  std::vector<metrics::Identity> identities;  // of the points' server configurations
  std::vector<std::string> labels;
  double mean() const;
};

/// What changed between the positions on either side of a change point.
struct Attribution {
  std::string from_revision, to_revision;  // the last position before, the first after
  /// The perf-changelog entries appended in (from, to] that name this key: their descriptions
  /// and links, with the file's line at `to`.
  struct Entry {
    int line = 0;
    std::vector<std::string> description;
    std::string pr_link;
  };
  std::vector<Entry> entries;
  /// The key's recipe changes in the range (govern::changed_keys), as text.
  std::vector<std::string> key_changes;
  /// Identity fields whose values differ between the two positions.
  std::vector<metrics::Confounder> confounders;
  /// Why the range could not be read (no repository, a revision it does not know); "" when read.
  std::string unread;
  boost::json::object to_json() const;
};

struct Series {
  SeriesKey key;
  bool higher_is_better = false;
  std::vector<Position> positions;
  std::vector<verdict::ChangePoint> change_points;
  std::vector<Attribution> attributions;  // one per change point
  /// The last segment (after the last change point) against the one before it, or the latest
  /// position against the whole series when there is no change point.
  boost::json::object to_json() const;
  /// Whether change point i makes the metric worse.
  bool regression(size_t i) const;
};

struct HistoryOptions {
  std::vector<std::string> keys;     // fnmatch globs; empty: all
  std::vector<std::string> metrics;  // headline keys; empty: kDefaultMetrics
  std::string since;                 // a revision (with a repository) or YYYY-MM-DD; "": all
  verdict::ChangePointOptions detector;
  /// The repository the runs' revisions belong to (git order and attribution); nullopt: time
  /// order and no attribution.
  std::optional<std::filesystem::path> repo;
  govern::ChangedOptions recipes;  // repository-relative recipe paths and runners
  std::string changelog = "perf-changelog.yaml";
};

/// Sets `o.repo` to the git repository containing `dir` (and its recipe, runners and changelog
/// paths, given relative to `dir`, relative to the repository's root); leaves it unset when `dir`
/// is in no repository (time order, no attribution). Default recipe paths: recipes/ and
/// examples/recipes/.
void use_repository(HistoryOptions& o, const std::filesystem::path& dir,
                    const std::vector<std::string>& recipes, const std::string& runners,
                    const std::string& changelog);

/// The metrics a history follows when none are named: the point table's speed and latency keys.
extern const std::vector<std::string> kDefaultMetrics;

struct History {
  std::string order;  // "git" | "time": how positions were ordered, and why when time
  std::vector<Series> series;
  std::vector<std::string> notes;
  boost::json::object to_json() const;
};

/// Reads every run of `db` and builds the series. Errors: an unknown metric, an unreadable
/// database, a --since the repository does not know (usage errors name the option).
Expected<History> build_history(store::Store& db, const HistoryOptions& o);

/// The change points of `h` whose first position after the change lies after `revision` in git
/// order (the regressions gate: `--new-since`). Error when the revision is unknown.
Expected<std::vector<std::pair<const Series*, size_t>>> change_points_since(
    const History& h, const std::filesystem::path& repo, const std::string& revision);

/// The terminal form: per series its positions (revision, runs, value) and change points with
/// their attribution.
std::string history_text(const History& h, bool all_series);

}  // namespace ib::history
