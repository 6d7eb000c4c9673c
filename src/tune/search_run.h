// The SLO search of `inferbench tune --objective tput-at-slo` (docs/tune.md): for the baseline and
// every candidate that survived stage 1, the highest concurrency whose point meets every SLO,
// found by doubling or halving and then geometric bisection (tune/search.h). The sides advance in
// lockstep, one block per step holding the baseline's probe first and each still-searching
// candidate's, so probes are interleaved as screening passes are. The concurrency found is each
// side's operating point in stages 2 and 3.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/expected.h"
#include "tune/blocks.h"
#include "tune/knob.h"
#include "tune/objective.h"

namespace ib::tune {

struct SideSearch {
  std::string config_key;
  int64_t lo = 0;  // the highest concurrency that met (0: none)
  int64_t hi = 0;  // the lowest that did not (0: the maximum met)
  int probes = 0;
  std::string text;  // "meets at 30, not at 31 (6 probes)"
  struct Probe {
    int64_t conc = 0;
    bool meets = false;
    double value = 0;  // tput_per_gpu (NaN: not a valid success)
    std::string why;   // what missed: "median_tpot_ms 12.3 > 11.1", "failed: ..."
  };
  std::vector<Probe> probed;  // in order
};

struct SearchOptions {
  int64_t start = 32, min = 1, max = 1024;
  double tolerance = 0.10;
  RowSelector row;
  sweep::WorkloadOverrides workload;  // the screening workload
};

struct SearchStage {
  std::vector<SideSearch> sides;  // the baseline first, then the candidates given
  std::vector<std::string> runs;
  int points = 0;
  int64_t requests = 0;
  double wall_s = 0;
  bool interrupted = false;
  /// Each side's operating point by config key (sides that meet at some concurrency).
  std::map<std::string, int64_t> operating_conc() const;
};

/// Searches every side in blocks "search-<step>". Error when a block cannot run; the baseline not
/// meeting the SLO anywhere is a result (its `lo` is 0), which the caller reports.
Expected<SearchStage> search_operating_points(
    const recipe::ConfigEntry& base, const std::vector<const Candidate*>& candidates,
    const Objective& objective, const SearchOptions& options, BlockRunner& runner,
    const std::function<void(const std::string&)>& progress);

}  // namespace ib::tune
