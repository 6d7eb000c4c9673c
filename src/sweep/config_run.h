// One server configuration of a sweep: resumed and reused points, then a ServerSession and each
// remaining point (internal to sweep/).
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/launcher.h"
#include "launch/session.h"
#include "load/bench.h"
#include "load/eval_run.h"
#include "load/judge.h"
#include "sweep/cache_flush.h"
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
  /// One point (sweep/measure.cc): its workload's plan through load::run_point, judged by
  /// load::judge with `before` (the server observation's reasons) in front, its files written.
  metrics::PointResult measure(const ConfigPlan& cfg, const Point& point,
                               const std::filesystem::path& dir, const std::string& url,
                               const metrics::Validity& before,
                               const std::optional<std::filesystem::path>& power_dir);
  load::BenchSpec point_spec(const ConfigPlan& cfg, const workload::PointPlan& plan,
                             const std::string& url,
                             const std::optional<std::filesystem::path>& power_dir) const;
  void record_bench(const ConfigPlan& cfg, metrics::PointResult& p, load::BenchReport& report,
                    const load::JudgeRules& rules);
  void record_eval(const ConfigPlan& cfg, metrics::PointResult& p, const load::EvalReport& report,
                   const load::JudgeRules& rules);
  /// What one configuration's points came to, for its record (not_ok: points that fail the run).
  struct Tally {
    size_t points = 0, not_ok = 0;
    bool all_ok = true;
  };
  // The steps of run(), in order.
  /// The points still to measure; resumed and reused ones are emitted.
  std::vector<Point> pending_points(const ConfigPlan& cfg, store::ServerConfigRecord& rec);
  /// The server started and observed; null when it could not be (its points are recorded).
  std::unique_ptr<launch::ServerSession> start_session(const ConfigPlan& cfg,
                                                       const std::filesystem::path& dir,
                                                       const std::vector<Point>& pending,
                                                       store::ServerConfigRecord& rec);
  /// True (points failed) when an endpoint serves another model than the recipe's.
  bool refuse_other_model(const ConfigPlan& cfg, launch::ServerSession& session,
                          const std::vector<Point>& pending, store::ServerConfigRecord& rec);
  /// True (points invalid) when `expect` failed on the server's log or environment reads.
  bool refuse_failed_expect(const ConfigPlan& cfg, launch::ServerSession& session,
                            const std::vector<Point>& pending,
                            const store::ServerConfigRecord& rec);
  /// The reasons every point carries before it runs: `expect` this launcher cannot observe.
  metrics::Validity unverified(const ConfigPlan& cfg, launch::ServerSession& session,
                               const store::ServerConfigRecord& rec);
  void measure_points(const ConfigPlan& cfg, const std::filesystem::path& dir,
                      launch::ServerSession& session, const std::vector<Point>& pending,
                      const metrics::Validity& before, store::ServerConfigRecord& rec,
                      Tally& tally);
  /// Stops the server, records how the configuration ended; returns tally.all_ok.
  bool finish(launch::ServerSession& session, store::ServerConfigRecord& rec, const Tally& tally);
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
  /// A disaggregated deployment's /metrics, every role's (the router's alone would leave the
  /// workers' figures empty); empty for one server.
  std::vector<std::string> role_metrics_urls_;
  std::map<std::string, std::string> role_metrics_labels_;  // url -> role label
  std::map<std::string, std::unique_ptr<launch::Launcher>> launchers_;
  /// The cache flush before the point being measured (cfg.flush_path), for its result.
  std::optional<FlushOutcome> flush_;
  void flush_before_point(const ConfigPlan& cfg, launch::ServerSession& session);
};

}  // namespace ib::sweep
