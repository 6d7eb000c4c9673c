// RunRecorder (docs/architecture.md, "The point pipeline"): owns one sweep run's folder
// (runs/<name>/) and its rows in the results database. Every write goes through here, and a write
// that fails is an error the run reports (errors()), never a dropped status.
//
// A database that goes away (a server's connection lost; docs/store.md, "When the database goes
// away") stops no measurement: the writes it cannot take are held, in order, in memory and in the
// run folder's unstored.json (sweep/held_writes.h), and stored when it is back (each later write
// tries first; finish() waits up to set_db_wait). What it never took stays in that file, which
// --resume stores before it measures anything.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/expected.h"
#include "load/bench.h"
#include "load/metrics_scraper.h"
#include "metrics/point.h"
#include "store/store.h"
#include "sweep/held_writes.h"

namespace ib::sweep {

class RunRecorder {
 public:
  RunRecorder(RunRecorder&&) noexcept;
  RunRecorder& operator=(RunRecorder&&) noexcept;
  ~RunRecorder();

  /// A new run (folder named by the UTC time) or, with `resume` set, the stored run of that id or
  /// name, marked running again.
  static Expected<RunRecorder> open(const std::filesystem::path& db_path,
                                    const std::filesystem::path& runs_dir,
                                    const std::string& resume, store::RunRecord fresh);

  int64_t run_id() const { return run_id_; }
  const std::string& run_name() const { return run_name_; }
  const std::filesystem::path& run_dir() const { return run_dir_; }
  const std::filesystem::path& db_path() const { return db_path_; }
  store::Store& store() { return store_; }

  /// The artifacts folder of the index-th server configuration: NN-<key>-<fingerprint prefix>.
  std::filesystem::path config_dir(size_t index, const std::string& config_key,
                                   const std::string& fingerprint) const;

  /// Inserts (sets c.id). False when the database refused it (recorded in errors()).
  bool add_config(store::ServerConfigRecord& c);
  void update_config(const store::ServerConfigRecord& c);

  /// The stored point that --resume skips, or --reuse copies; nullopt when it must be measured.
  std::optional<metrics::PointResult> resumed(const metrics::PointIdentity& id);
  std::optional<metrics::PointResult> reusable(const metrics::PointIdentity& id);

  /// Writes a measured point's files into p.artifacts_dir (conc_N.json, agg_conc_N.json,
  /// records_conc_N.jsonl); `aggregate` is InferenceX's form of the result.
  void write_point_files(const metrics::PointResult& p, const boost::json::object& aggregate,
                         const std::vector<metrics::RequestRecord>& records, int64_t origin_ns);
  /// An eval point's files: its result (`eval_gsm8k_conc_<C>.json`) and one JSON line per
  /// problem (`eval_gsm8k_conc_<C>_samples.jsonl`, lm-eval's --log_samples).
  void write_eval_files(const metrics::PointResult& p, const std::vector<boost::json::object>& samples);
  /// The point's raw server-metrics scrapes, gzip-compressed JSONL
  /// (`server_metrics_conc_<C>.jsonl.gz`: one line per scrape, the exposition text in "text").
  void write_scrapes(const metrics::PointResult& p, const std::vector<load::RawScrape>& scrapes);

  /// Stores the point (skipped and resumed points are not stored); a point that is not a
  /// success also gets a failure row of `failure_kind` with the log tail (none when the kind is
  /// empty: the caller recorded the cause once for the whole configuration).
  void record_point(const metrics::PointResult& p, int64_t config_id,
                    const std::string& failure_kind = "point", const std::string& log_tail = "");
  void record_failure(int64_t config_id, const std::string& kind, const std::string& message,
                      const std::string& log_tail = "");

  /// summary.json and the run's final status. Writes still held wait for the database up to
  /// set_db_wait; what it does not take by then is an error that says where it is kept.
  void finish(const boost::json::object& summary, store::RunStatus status);

  const std::vector<std::string>& errors() const { return errors_; }

  /// How long finish() waits for an unreachable database to take the held writes (seconds).
  void set_db_wait(double seconds) { db_wait_s_ = seconds; }
  /// Receives each thing said about the database as the sweep goes on (it went away; it is back
  /// and took the held writes): those said so far at once, then each as it arises.
  void set_on_note(std::function<void(const std::string&)> on_note);
  /// Writes the database has not taken yet.
  size_t held() const { return held_.size(); }
  /// The file the held writes are kept in while there are any: <run folder>/unstored.json.
  std::filesystem::path held_file() const { return run_dir_ / "unstored.json"; }

 private:
  explicit RunRecorder(store::Store s);
  // Says every kHeartbeatSeconds, on a connection of its own, that this sweep is at the run.
  struct Heartbeat;
  void start_heartbeat();
  void write_file(const std::filesystem::path& file, const std::string& text);
  void db_error(const std::string& what, const Error& e);
  void note(std::string text);

  enum class Submitted { kStored, kHeld, kRefused };
  // Stores w now (after the writes held before it), or holds it while the database is away.
  Submitted submit(HeldWrite w, const std::string& what);
  // `retry`: a held write, tried before (it may be stored already: stored only when it is not).
  Status apply(HeldWrite& w, bool retry);
  // Stores the held writes in order; false while some are still held (the database is away).
  bool flush();
  void save_held();
  // --resume: the writes a sweep of this run kept in its folder (nullopt: none), read before the
  // run is claimed, then stored first (take_held).
  Expected<std::optional<HeldWrites>> read_held();
  void take_held(HeldWrites h);
  bool wait_for_database();
  int64_t stored_id(int64_t id) const;
  std::string describe(const HeldWrite& w) const;
  std::optional<metrics::PointResult> held_completed(const metrics::PointIdentity& id) const;

  store::Store store_;
  int64_t run_id_ = 0;
  std::string run_name_;
  std::filesystem::path run_dir_;
  std::filesystem::path db_path_;
  std::string resume_command_;
  std::vector<std::string> errors_;
  std::vector<std::string> notes_;
  std::function<void(const std::string&)> on_note_;
  double db_wait_s_ = 60;
  std::vector<HeldWrite> held_;
  std::map<int64_t, int64_t> stored_ids_;  // provisional server configuration id -> stored id
  int64_t next_provisional_ = -1;
  // Points whose --resume lookup failed: stored only when the run has none of their identity.
  std::set<std::tuple<std::string, int64_t, std::string>> unsure_;
  std::optional<std::chrono::steady_clock::time_point> away_since_;
  size_t stored_since_away_ = 0, points_since_away_ = 0;
  std::unique_ptr<Heartbeat> heartbeat_;
};

/// PointResult ↔ the stored form.
store::PointRecord to_record(const metrics::PointResult& p, int64_t run_id, int64_t config_id);

metrics::PointResult from_record(const store::PointRecord& r, const std::string& config_key);

}  // namespace ib::sweep
