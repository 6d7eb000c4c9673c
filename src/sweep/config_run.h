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

  /// Runs one configuration; false when any of its points did not succeed.
  bool run(const ConfigPlan& cfg, size_t index);
  /// Every point of `concs` skipped with `why` (shown, not stored).
  void skip_all(const ConfigPlan& cfg, const std::vector<int64_t>& concs, const std::string& why);

 private:
  metrics::PointIdentity identity(const ConfigPlan& cfg, int64_t conc) const;
  metrics::PointResult measure(const ConfigPlan& cfg, int64_t conc,
                               const std::filesystem::path& dir, const std::string& url,
                               const metrics::Validity& unverified,
                               const std::optional<std::filesystem::path>& power_dir);
  bool fail_config(const ConfigPlan& cfg, const std::vector<int64_t>& concs,
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
