// One server configuration of a sweep: resumed and reused points, then a ServerSession and each
// remaining point (internal to sweep/).
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launch/launcher.h"
#include "sweep/planner.h"
#include "sweep/recorder.h"
#include "sweep/sweep.h"

namespace ib::sweep {

class ConfigRunner {
 public:
  ConfigRunner(const SweepOptions& o, std::FILE* out, RunRecorder* recorder, SweepOutcome* outcome,
               std::map<std::string, const recipe::ConfigEntry*> entries)
      : o_(o), out_(out), rec_(recorder), outcome_(outcome), entries_(std::move(entries)) {}

  /// Runs one configuration; false when any of its throughput points did not succeed (an eval
  /// that fails its gate fails the sweep, but never stops other configurations: InferenceX).
  bool run(const ConfigPlan& cfg, size_t index);
  /// Every point of `points` skipped with `why` (shown, not stored).
  void skip_all(const ConfigPlan& cfg, const std::vector<ConfigPlan::Point>& points,
                const std::string& why);

 private:
  using Point = ConfigPlan::Point;
  metrics::PointIdentity identity(const ConfigPlan& cfg, const Point& point) const;
  metrics::PointResult measure(const ConfigPlan& cfg, int64_t conc,
                               const std::filesystem::path& dir, const std::string& url,
                               const metrics::Validity& unverified,
                               const std::optional<std::filesystem::path>& power_dir);
  /// One eval point (sweep/measure_eval.cc): run_eval, scores, the gate as validity.
  metrics::PointResult measure_eval(const ConfigPlan& cfg, int64_t conc,
                                    const std::filesystem::path& dir, const std::string& url,
                                    const metrics::Validity& unverified);
  bool fail_config(const ConfigPlan& cfg, const std::vector<Point>& points,
                   store::ServerConfigRecord& rec, const std::string& kind, const std::string& why);
  void emit(metrics::PointResult p);
  void note(const std::string& n);
  Expected<launch::Launcher*> launcher(const std::string& name);

  const SweepOptions& o_;
  std::FILE* out_;
  RunRecorder* rec_;
  SweepOutcome* outcome_;
  std::map<std::string, const recipe::ConfigEntry*> entries_;
  std::map<std::string, std::unique_ptr<launch::Launcher>> launchers_;
};

}  // namespace ib::sweep
