// The results database (docs/architecture.md): runs, the server configurations each run launched,
// its benchmark points (headline metrics in columns, the full result JSON beside them) and its
// failures, in one SQLite file (default runs/inferbench.db).
//
// Dead runs: a run records its owner (pid, host, boot and process start time, core/process.h).
// A sweep that is killed without a chance to finish its run (SIGKILL, a crash, a power loss)
// leaves it stored as "running"; every read of such a run checks its owner and reports a run
// whose owner is gone as "interrupted" (RunRecord::owner_state), resumable like one stopped by
// Ctrl-C. Readers never write the corrected status back: they may not be able to (read-only).
// A process on another host (a team's shared database) cannot be checked from here: its sweep's
// heartbeat (every 30 s) tells instead, and a run unheard for 10 minutes reads "gone" too.
//
// Consistency: every write is one transaction, and the file is in WAL mode, so a sweep killed at
// any instant (SIGKILL included) leaves a consistent database: a point is there whole or not at
// all. A committed write survives the death of the process; after a power loss the last few commits
// may be lost (synchronous=NORMAL) but the file stays consistent.
//
// Schema: versioned by PRAGMA user_version; kMigrations is an ordered list of SQL scripts, each
// applied in its own transaction. A database written by a newer inferbench is refused.
#pragma once

#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "core/process.h"
#include "metrics/identity.h"
#include "metrics/keys.h"
#include "metrics/point.h"
#include "store/db.h"

namespace ib::store {

/// The default database file, relative to the working directory.
inline constexpr std::string_view kDefaultDatabase = "runs/inferbench.db";

/// The results database a command reads when --db is not given: $INFERBENCH_DB (a file, or a
/// team's postgresql:// URL; docs/store.md), else kDefaultDatabase.
std::string default_database();
/// A --db value as a message may show it: a server's URL with its password hidden.
std::string database_name(std::string_view db);
/// Whether there is a database to read at `db`: a file that exists, or any server URL (connecting
/// tells).
bool database_exists(const std::string& db);

/// A run's state, stored as its name: still being measured, or how it ended.
enum class RunStatus { kRunning, kOk, kFailed, kInterrupted };
/// A server configuration's state: not launched yet, how it ended, or skipped (every point was
/// resumed or reused: not launched).
enum class ConfigStatus { kPending, kOk, kFailed, kSkipped };

std::string_view status_name(RunStatus s);     // "running" | "ok" | "failed" | "interrupted"
std::string_view status_name(ConfigStatus s);  // "pending" | "ok" | "failed" | "skipped"
std::optional<RunStatus> parse_run_status(std::string_view name);
std::optional<ConfigStatus> parse_config_status(std::string_view name);

/// One sweep invocation. A run resumed with --resume keeps its id.
struct RunRecord {
  int64_t id = 0;            // assigned by begin_run
  std::string name;          // unique, e.g. "20261130-104500"
  std::string tool_version;  // inferbench version that measured the points
  std::string git_revision;  // of the recipes checkout; may be empty
  std::string host;
  std::string command_line;
  std::vector<std::string> labels;
  boost::json::object options;  // the sweep's options, as it wants them recorded
  int64_t started_at = 0;       // unix seconds; begin_run sets now when 0
  int64_t ended_at = 0;         // unix seconds, 0 while running
  RunStatus status = RunStatus::kRunning;
  /// The sweep process that measures the run (begin_run records it, claim_run replaces it when
  /// the run is resumed). pid 0: not recorded (a run stored before schema version 4).
  ProcessIdentity owner;
  /// Set by every read of a run stored as "running", from its owner (core/process.h):
  /// "alive"; "gone" — the process ended without finishing the run (SIGKILL, a crash, a reboot),
  /// and `status` then reads "interrupted", as a run stopped by Ctrl-C does; "unknown" — it
  /// cannot be checked from here (another host or container, or no owner recorded). Empty for
  /// a run that is not stored as running.
  std::string owner_state;
  /// Unix seconds: when its sweep last said it is at it (begin_run, claim_run, then heartbeat()
  /// every kHeartbeatSeconds while it measures); 0: never (an older inferbench). A run of another
  /// host whose heartbeat is older than kHeartbeatStaleSeconds reads "gone".
  int64_t heartbeat_at = 0;
  /// For people, when owner_state is set: whose run it is and, when it can be, how to continue it.
  std::string status_note;
};

/// How often a sweep says it is still at its run (Store::heartbeat), and how long a run of
/// another host may go unheard before readers take its sweep for dead (10 minutes: far beyond a
/// database's short outage, a clock's skew between hosts, or a write waiting for the lock).
inline constexpr int64_t kHeartbeatSeconds = 30;
inline constexpr int64_t kHeartbeatStaleSeconds = 600;

/// How to continue run `r`: `inferbench sweep RECIPE... --resume NAME` with its recipes.
std::string resume_command(const RunRecord& r);

/// Points of one run counted by status.
struct PointCounts {
  int64_t ok = 0, failed = 0, reused = 0, invalid = 0;
  int64_t total() const { return ok + failed + reused + invalid; }
};

/// A run as `inferbench runs` lists it.
struct RunSummary {
  RunRecord run;
  PointCounts points;
};

/// One server configuration (a recipe row) launched, or to be launched, by a run.
struct ServerConfigRecord {
  int64_t id = 0;  // assigned by add_server_config
  int64_t run_id = 0;
  std::string config_key;
  std::string fingerprint;  // the recipe row's fingerprint (hex)
  std::string launcher;     // local | slurm | endpoint | sim ...
  boost::json::object row;  // the recipe row JSON
  boost::json::object effective_config;
  boost::json::object env_reads;
  std::string log_path;
  ConfigStatus status = ConfigStatus::kPending;
  std::string error;

  /// What the configuration is (metrics/identity.h): from its row and the settings its server
  /// showed; the one derivation compare, report and verify use for stored runs.
  metrics::Identity identity() const;
};

/// One benchmark point: a server configuration at one concurrency under one workload.
struct PointRecord {
  int64_t id = 0;  // assigned by add_point
  int64_t run_id = 0;
  int64_t server_config_id = 0;  // 0: none (stored NULL)
  std::string fingerprint;       // the server configuration's fingerprint
  std::string workload_key;      // identifies the workload (workload/workload.h: Workload::key)
  int64_t concurrency = 0;
  /// ok | failed | reused | invalid (skipped and resumed points are not stored)
  metrics::PointStatus status = metrics::PointStatus::kOk;
  std::string error;
  std::optional<int64_t> reused_from_run;  // set when status is reused
  /// Headline metrics (metrics/keys.h: one column each); NaN when not measured (stored NULL,
  /// JSON null; the counts completed and failed are stored 0).
  metrics::Headline headline;
  metrics::Validity validity;  // why the numbers may not be used (invalid points)
  boost::json::object result;  // the full result JSON
  std::string artifacts_dir;
  int64_t created_at = 0;  // unix seconds; add_point sets now when 0
};

/// Copies the headline metrics from `p.result`, under the result JSON's own key names
/// (request_throughput, median_ttft_ms, tput_per_gpu, ...). Keys absent from the result, or not
/// numbers, leave the field as it was.
void set_headline_from_result(PointRecord& p);

/// Something that went wrong during a run, kept for the report.
struct FailureRecord {
  int64_t id = 0;  // assigned by add_failure
  int64_t run_id = 0;
  std::optional<int64_t> server_config_id, point_id;
  std::string kind;  // server-start | server-exit | point | assertion | interrupted | ...
  std::string message;
  std::string log_tail;
  int64_t at = 0;  // unix seconds; add_failure sets now when 0
};

/// The schema, oldest first: script i brings user_version from i to i+1. Never edit a released
/// script; append a new one.
extern const std::span<const std::string_view> kMigrations;

/// Applies the scripts of `migrations` the database has not seen yet, each in its own transaction
/// that also sets user_version. Concurrent openers are safe (the version is re-read under the
/// write lock). Error when the database's version is newer than migrations.size().
Status migrate(Database& db, std::span<const std::string_view> migrations);

/// One telemetry timeslice of a point (docs/telemetry.md): a server slice (from the server's
/// Prometheus metrics) or a client slice (from the request records). Unset values are NULL.
using TimesliceRecord = metrics::TimesliceRow;

/// The name of a point's request records in its artifacts folder (and in the store).
std::string records_file_name(int64_t concurrency);

/// A file of a point kept in the store (its request records, `records_conc_N.jsonl`), for
/// readers on machines that do not have the point's folder.
struct PointFile {
  std::string name;    // its name in the point's artifacts folder
  std::string sha256;  // of body (computed when stored)
  std::string body;
};

/// Everything stored about one run, as `inferbench show` prints it and `inferbench report` draws
/// it (Store::run_details).
struct RunDetails {
  RunRecord run;
  PointCounts counts;
  std::vector<ServerConfigRecord> configs;  // in insertion order
  std::vector<PointRecord> points;          // in insertion order
  std::vector<FailureRecord> failures;      // in insertion order
  /// Timeslices by point id (points without any are absent); read only when asked for.
  std::map<int64_t, std::vector<TimesliceRecord>> timeslices;
};

/// A run copied from another store (Store::import_run).
struct ImportedRun {
  int64_t id = 0;        // in this store
  std::string name;      // its name here (the source's, or "<name>-N" where that was taken)
  bool existed = false;  // copied before: nothing was written
  size_t configs = 0, points = 0, failures = 0, timeslices = 0, files = 0;
};

/// Whether Store::run_details also reads the timeslices of the run's points.
enum class WithTimeslices : bool { kNo, kYes };

/// The results database. Thread-safe: all methods may be called concurrently from several
/// threads (they are serialized on one connection); several processes may share one file.
class Store {
 public:
  /// Opens the file, creating it and its parent folders when absent, and migrates the schema.
  /// Error names the file (not a database, newer schema, I/O).
  static Expected<Store> open(const std::filesystem::path& file);
  /// As open(), but a missing file is an error instead of being created.
  static Expected<Store> open_existing(const std::filesystem::path& file);
  /// For commands that only read (runs, show, report, compare, verify): opens the file read-only
  /// (SQLite's read-only mode, which still sees what a sweep writing at the same time commits)
  /// and never creates, migrates or otherwise changes it. A database of an older schema is read
  /// through a migrated copy in memory (up to 256 MiB; beyond that an error says how to upgrade
  /// the file). Errors name the file: missing, a folder, empty, not a database, not a results
  /// database, newer schema. Writes through the returned Store fail.
  static Expected<Store> open_read_only(const std::filesystem::path& file);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::filesystem::path& file() const;

  // --- writes (each one transaction) ---

  /// Inserts the run with status "running" (r.status and r.id are ignored); returns its id.
  /// Error when the name is empty or already used.
  Expected<int64_t> begin_run(RunRecord r);
  /// Sets the final status (ok | failed | interrupted) and ended_at = now.
  Status finish_run(int64_t run_id, RunStatus status);
  /// Sets the status; "running" also clears ended_at (a run resumed with --resume).
  Status set_run_status(int64_t run_id, RunStatus status);
  /// --resume: makes `owner` the run's owner and its status "running" (ended_at cleared), in one
  /// transaction that first checks the current owner: a run still being measured by a live
  /// process, or by one that cannot be checked from here (another host or container), is
  /// refused with an error that says whose it is and what to do.
  Status claim_run(int64_t run_id, const ProcessIdentity& owner);

  /// The sweep `owner` is still at run `run_id`: its heartbeat is now. False when the run is no
  /// longer that sweep's (another sweep resumed it, or it was finished).
  Expected<bool> heartbeat(int64_t run_id, const ProcessIdentity& owner);
  /// Inserts; returns the id. REQUIRES: c.run_id names a run.
  Expected<int64_t> add_server_config(const ServerConfigRecord& c);
  /// Updates the mutable fields of server configuration c.id: effective_config, env_reads,
  /// log_path, status, error.
  Status update_server_config(const ServerConfigRecord& c);

  /// Inserts the point (headline columns and full result JSON together); returns its id.
  /// Error when status is "reused" without reused_from_run.
  Expected<int64_t> add_point(const PointRecord& p);
  /// Inserts; returns the id.
  Expected<int64_t> add_failure(const FailureRecord& f);
  /// A measured point whole, in one transaction: the point, its timeslices, its kept files and,
  /// when given, its failure row (whose point_id becomes the point's). Nothing of it is kept
  /// when a part fails.
  Expected<int64_t> add_point_whole(const PointRecord& p,
                                    const std::vector<TimesliceRecord>& slices,
                                    std::optional<FailureRecord> failure,
                                    const std::vector<PointFile>& files = {});
  /// Keeps a file of point `point_id` in the store (its sha256 computed here). Error when the
  /// point has a file of that name already.
  Status add_point_file(int64_t point_id, const PointFile& f);
  /// A kept file of a point; nullopt when there is none of that name.
  Expected<std::optional<PointFile>> point_file(int64_t point_id, const std::string& name);
  /// Every kept file of point `point_id`, by name.
  Expected<std::vector<PointFile>> point_files(int64_t point_id);
  /// A server's store (PostgreSQL), shared by machines that do not have each other's run folders.
  bool is_server() const;
  /// Whether the database can take a write now (a server's lost connection is tried again); a
  /// file always can. The sweep holds its writes while this is false (sweep/recorder.h).
  bool reachable();
  /// Copies `run` (read from another store with its timeslices) into this one, in one
  /// transaction: the run (its status, times and labels; no owner), its server configurations,
  /// points (ids mapped), failures and timeslices. `origin` says where it comes from and is kept
  /// in the run's options ("origin"; a run that already carries one keeps it): a run with the
  /// same origin here is the same run, and nothing is written (pushing twice adds nothing). A
  /// reused point's source run must be here already (by origin). `files`, when given, says which
  /// files to keep with each point (asked one point at a time, as it is copied: a run's records
  /// are never all in memory at once). Error when a record cannot be written or read; nothing of
  /// the run is then kept.
  using PointFilesOf = std::function<Expected<std::vector<PointFile>>(const PointRecord&)>;
  Expected<ImportedRun> import_run(const RunDetails& run, boost::json::object origin,
                                   const PointFilesOf& files = {});
  /// Inserts the telemetry timeslices of point `point_id` (one transaction).
  Status add_timeslices(int64_t point_id, const std::vector<TimesliceRecord>& rows);

  // --- queries ---

  /// --resume: the newest point of run `run_id` with this fingerprint, concurrency and workload
  /// whose status is ok or reused; nullopt when the point must be (re)measured.
  Expected<std::optional<PointRecord>> completed_point(int64_t run_id,
                                                       const std::string& fingerprint,
                                                       int64_t concurrency,
                                                       const std::string& workload_key);

  /// Whether this very point write is stored already: a point of its run, identity, status,
  /// creation time and artifacts folder. For a write whose outcome is unknown (the connection lost
  /// around its COMMIT; a held write the sweep was killed just after storing), so that it is never
  /// stored twice (sweep/recorder.h).
  Expected<bool> point_stored(const PointRecord& p);
  /// --reuse: the newest point measured (status ok; reused points are never re-reused, so the
  /// source run is always the one that measured it) with this fingerprint, concurrency, workload
  /// and tool version, in a run that ended ok. Newest = latest run start, then latest point.
  Expected<std::optional<PointRecord>> reusable_point(const std::string& fingerprint,
                                                      int64_t concurrency,
                                                      const std::string& workload_key,
                                                      const std::string& tool_version);

  /// Runs newest first with their point counts; limit <= 0: all.
  Expected<std::vector<RunSummary>> list_runs(int limit = 0);
  /// By numeric id when `id_or_name` is all digits and such a run exists, else by name.
  Expected<std::optional<RunRecord>> find_run(const std::string& id_or_name);
  Expected<std::optional<RunRecord>> run(int64_t run_id);
  Expected<PointCounts> point_counts(int64_t run_id);
  /// In insertion order.
  Expected<std::vector<ServerConfigRecord>> server_configs(int64_t run_id);
  Expected<std::vector<PointRecord>> points(int64_t run_id);
  Expected<std::vector<FailureRecord>> failures(int64_t run_id);
  /// A point's timeslices, server ones first, by slice; `source` "server" or "client" filters.
  Expected<std::vector<TimesliceRecord>> timeslices(int64_t point_id,
                                                    const std::string& source = "");
  /// Everything stored about `run` (as run() or find_run() returned it): its point counts,
  /// server configurations, points, failures and, with WithTimeslices::kYes, its points'
  /// timeslices. The first read that fails is the error.
  Expected<RunDetails> run_details(RunRecord run, WithTimeslices with = WithTimeslices::kNo);

 private:
  Expected<int64_t> import_records(const RunDetails& run, const boost::json::object& origin,
                                   const PointFilesOf& files, ImportedRun& out);
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// JSON forms, used by `inferbench show --json` and by the sweep. NaN metrics become null;
/// absent optional ids become null.
boost::json::object to_json(const RunRecord& r);
boost::json::object to_json(const PointCounts& c);
boost::json::object to_json(const RunSummary& s);
boost::json::object to_json(const ServerConfigRecord& c);
boost::json::object to_json(const PointRecord& p);
boost::json::object to_json(const FailureRecord& f);

}  // namespace ib::store
