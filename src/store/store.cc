#include "store/store.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "core/clock.h"
#include "core/json_text.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "store/pg.h"

namespace ib::store {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Schema

namespace {

// Version 1. JSON columns hold serialized JSON text; statuses are checked in code (store.h lists
// them) so that adding one needs no table rebuild.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL UNIQUE,
  tool_version  TEXT NOT NULL,
  git_revision  TEXT NOT NULL DEFAULT '',
  host          TEXT NOT NULL DEFAULT '',
  command_line  TEXT NOT NULL DEFAULT '',
  labels        TEXT NOT NULL DEFAULT '[]',
  options       TEXT NOT NULL DEFAULT '{}',
  started_at    INTEGER NOT NULL,
  ended_at      INTEGER NOT NULL DEFAULT 0,
  status        TEXT NOT NULL
);
CREATE TABLE server_configs (
  id                INTEGER PRIMARY KEY,
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  config_key        TEXT NOT NULL,
  fingerprint       TEXT NOT NULL,
  launcher          TEXT NOT NULL DEFAULT '',
  row_json          TEXT NOT NULL DEFAULT '{}',
  effective_config  TEXT NOT NULL DEFAULT '{}',
  env_reads         TEXT NOT NULL DEFAULT '{}',
  log_path          TEXT NOT NULL DEFAULT '',
  status            TEXT NOT NULL,
  error             TEXT NOT NULL DEFAULT ''
);
CREATE INDEX server_configs_by_run ON server_configs(run_id);
CREATE TABLE points (
  id                      INTEGER PRIMARY KEY,
  run_id                  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  server_config_id        INTEGER REFERENCES server_configs(id) ON DELETE SET NULL,
  fingerprint             TEXT NOT NULL,
  workload_key            TEXT NOT NULL,
  concurrency             INTEGER NOT NULL,
  status                  TEXT NOT NULL,
  error                   TEXT NOT NULL DEFAULT '',
  reused_from_run         INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  request_throughput      REAL,
  output_throughput       REAL,
  total_token_throughput  REAL,
  median_ttft_ms          REAL,
  p99_ttft_ms             REAL,
  median_tpot_ms          REAL,
  p99_tpot_ms             REAL,
  median_itl_ms           REAL,
  median_e2el_ms          REAL,
  median_intvty           REAL,
  tput_per_gpu            REAL,
  output_tput_per_gpu     REAL,
  completed               INTEGER NOT NULL DEFAULT 0,
  failed                  INTEGER NOT NULL DEFAULT 0,
  result                  TEXT NOT NULL DEFAULT '{}',
  artifacts_dir           TEXT NOT NULL DEFAULT '',
  created_at              INTEGER NOT NULL
);
CREATE INDEX points_by_run ON points(run_id, fingerprint, concurrency, workload_key);
CREATE INDEX points_by_identity ON points(fingerprint, concurrency, workload_key, status);
CREATE TABLE failures (
  id                INTEGER PRIMARY KEY,
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  server_config_id  INTEGER REFERENCES server_configs(id) ON DELETE SET NULL,
  point_id          INTEGER REFERENCES points(id) ON DELETE SET NULL,
  kind              TEXT NOT NULL,
  message           TEXT NOT NULL DEFAULT '',
  log_tail          TEXT NOT NULL DEFAULT '',
  at                INTEGER NOT NULL
);
CREATE INDEX failures_by_run ON failures(run_id);
)sql";

// v2: each point's Validity (metrics/point.h) as a JSON array of reasons.
constexpr std::string_view kSchemaV2 = R"sql(
ALTER TABLE points ADD COLUMN validity TEXT NOT NULL DEFAULT '[]';
)sql";

// v3: telemetry timeslices of each point (docs/telemetry.md): server slices (from its Prometheus
// metrics) and client slices (from the request records), the main quantities as columns, the
// whole slice as JSON.
constexpr std::string_view kSchemaV3 = R"sql(
CREATE TABLE timeslices (
  point_id          INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
  source            TEXT NOT NULL CHECK (source IN ('server', 'client')),
  slice             INTEGER NOT NULL,
  start_s           REAL NOT NULL,
  end_s             REAL NOT NULL,
  running           REAL,
  waiting           REAL,
  kv_usage          REAL,
  prefix_hit_rate   REAL,
  preemptions       REAL,
  prompt_tps        REAL,
  generation_tps    REAL,
  spec_acceptance   REAL,
  started           INTEGER,
  finished          INTEGER,
  output_tokens     INTEGER,
  mean_ttft_ms      REAL,
  mean_intvty       REAL,
  data              TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (point_id, source, slice)
);
)sql";

// v4: the process that owns each run (store.h, "Dead runs"): pid, host, boot, PID namespace and
// start time, so that readers can tell a run whose sweep was killed from one still measuring.
constexpr std::string_view kSchemaV4 = R"sql(
ALTER TABLE runs ADD COLUMN owner_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN owner_host TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN owner_boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN owner_pid_namespace TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN owner_start_ticks INTEGER NOT NULL DEFAULT 0;
)sql";

// v5: the inter-chunk latency and tokens per event of multi-token streams (issue 31).
constexpr std::string_view kSchemaV5 = R"sql(
ALTER TABLE points ADD COLUMN median_icl_ms REAL;
ALTER TABLE points ADD COLUMN mean_tokens_per_event REAL;
)sql";

// v6: the heartbeat of each run's sweep (store.h, "Dead runs"), by which readers on other hosts
// tell a dead sweep's run from one still measuring.
constexpr std::string_view kSchemaV6 = R"sql(
ALTER TABLE runs ADD COLUMN heartbeat_at INTEGER NOT NULL DEFAULT 0;
)sql";

// v7: files of a point kept in the store itself (docs/store.md): its request records, so that a
// team's store read on another machine than the one that measured still has them (compare's
// intervals are resampled from them). Written by a sweep into a server, and by push and pull.
constexpr std::string_view kSchemaV7 = R"sql(
CREATE TABLE point_files (
  point_id  INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
  name      TEXT NOT NULL,
  sha256    TEXT NOT NULL,
  body      TEXT NOT NULL,
  PRIMARY KEY (point_id, name)
);
)sql";

constexpr std::array<std::string_view, 7> kAllMigrations = {
    kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4, kSchemaV5, kSchemaV6, kSchemaV7};

}  // namespace

const std::span<const std::string_view> kMigrations{kAllMigrations};

std::string default_database() {
  const char* env = std::getenv("INFERBENCH_DB");
  return env && *env ? std::string(env) : std::string(kDefaultDatabase);
}

std::string database_name(std::string_view db) {
  return is_postgres_url(db) ? redact_pg_url(db) : std::string(db);
}

bool database_exists(const std::string& db) {
  if (is_postgres_url(db)) return true;
  std::error_code ec;
  return fs::exists(db, ec);
}

Status migrate(Database& db, std::span<const std::string_view> migrations) {
  const auto latest = static_cast<int64_t>(migrations.size());
  auto newer_error = [&](int64_t version) {
    return Error{
        fmt::format("{}: database schema version {} is newer than this inferbench supports ({}); "
                    "use a newer inferbench or another --db file",
                    db.file().string(), version, latest)};
  };
  auto version = db.user_version();
  if (!version) return version.error();
  if (*version > latest) return newer_error(*version);
  while (*version < latest) {
    auto txn = Transaction::begin(db);
    if (!txn) return txn.error();
    // Another process may have migrated between our read and the write lock.
    version = db.user_version();
    if (!version) return version.error();
    if (*version > latest) return newer_error(*version);
    if (*version == latest) break;
    const auto& script = migrations[static_cast<size_t>(*version)];
    // One logical schema: PostgreSQL takes SQLite's DDL with its types translated.
    if (auto st = db.is_postgres() ? db.exec(pg_ddl(script)) : db.exec(script); !st) {
      return Error{
          fmt::format("migrating to schema version {}: {}", *version + 1, st.error().message)};
    }
    if (auto st = db.set_user_version(*version + 1); !st) return st.error();
    if (auto st = txn->commit(); !st) return st.error();
    version = *version + 1;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Helpers

namespace {

int64_t now_s() {
  return static_cast<int64_t>(unix_seconds());
}

constexpr std::array<std::string_view, 4> kRunStatuses = {"running", "ok", "failed", "interrupted"};
constexpr std::array<std::string_view, 4> kConfigStatuses = {"pending", "ok", "failed", "skipped"};

template <class E, size_t N>
std::optional<E> parse_enum(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}
// Statuses a stored point may have (skipped and resumed points are not stored as such).
bool storable(metrics::PointStatus s) {
  return s == metrics::PointStatus::kOk || s == metrics::PointStatus::kFailed ||
         s == metrics::PointStatus::kReused || s == metrics::PointStatus::kInvalid;
}

std::string to_text(const boost::json::object& o) {
  return json_text(o);
}

std::string to_text(const std::vector<std::string>& labels) {
  boost::json::array a;
  for (const auto& l : labels) a.emplace_back(l);
  return json_text(a);
}

// Context for decoding errors: "<file>: <table> row <id> column <column>".
struct Where {
  const fs::path& file;
  std::string_view table;
  int64_t id;
};

Expected<boost::json::value> parse_json(const Where& w, std::string_view column,
                                        const std::string& text) {
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec) {
    return Error{fmt::format("{}: {} row {} column {}: invalid JSON: {}", w.file.string(), w.table,
                             w.id, column, ec.message())};
  }
  return v;
}

Expected<boost::json::object> parse_object(const Where& w, std::string_view column,
                                           const std::string& text) {
  auto v = parse_json(w, column, text);
  if (!v) return v.error();
  if (!v->is_object()) {
    return Error{fmt::format("{}: {} row {} column {}: not a JSON object", w.file.string(), w.table,
                             w.id, column)};
  }
  return std::move(v->as_object());
}

Expected<std::vector<std::string>> parse_labels(const Where& w, const std::string& text) {
  auto v = parse_json(w, "labels", text);
  if (!v) return v.error();
  auto bad = [&] {
    return Error{fmt::format("{}: {} row {} column labels: not a JSON array of strings",
                             w.file.string(), w.table, w.id)};
  };
  if (!v->is_array()) return bad();
  std::vector<std::string> out;
  for (const auto& e : v->as_array()) {
    if (!e.is_string()) return bad();
    out.emplace_back(e.as_string());
  }
  return out;
}

boost::json::value optional_id(const std::optional<int64_t>& id) {
  if (!id) return nullptr;
  return *id;
}

// Column lists and decoders, one per table, so every query returns whole records.
constexpr std::string_view kRunColumns =
    "r.id, r.name, r.tool_version, r.git_revision, r.host, r.command_line, r.labels, r.options, "
    "r.started_at, r.ended_at, r.status, r.owner_pid, r.owner_host, r.owner_boot_id, "
    "r.owner_pid_namespace, r.owner_start_ticks, r.heartbeat_at";
constexpr int kRunColumnCount = 17;

// "40 s", "12 min", "3 h 5 min".
std::string duration_text(int64_t s) {
  if (s < 120) return fmt::format("{} s", s);
  if (s < 7200) return fmt::format("{} min", s / 60);
  return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
}

// A run stored as "running": is its sweep still at it? (store.h, "Dead runs".)
void check_owner(RunRecord& r) {
  if (r.status != RunStatus::kRunning) return;
  const auto& o = r.owner;
  if (o.pid <= 0) {
    r.owner_state = "unknown";
    r.status_note = fmt::format(
        "no owner recorded (stored by an older inferbench); if its sweep is no longer running, "
        "continue it with `{}`",
        resume_command(r));
    return;
  }
  switch (process_state(o)) {
    case ProcessState::kAlive:
      r.owner_state = "alive";
      r.status_note = fmt::format("being measured by pid {} on {}", o.pid, printable(o.host));
      return;
    case ProcessState::kGone:
      r.owner_state = "gone";
      r.status = RunStatus::kInterrupted;
      r.status_note = fmt::format(
          "its sweep (pid {} on {}) ended without finishing it (killed or crashed); finished "
          "points are kept; continue with `{}`",
          o.pid, printable(o.host), resume_command(r));
      return;
    case ProcessState::kUnknown:
      if (r.heartbeat_at > 0) {
        // Another host's sweep: its heartbeat says whether it is still at it.
        const int64_t quiet = std::max<int64_t>(0, now_s() - r.heartbeat_at);
        if (quiet > kHeartbeatStaleSeconds) {
          r.owner_state = "gone";
          r.status = RunStatus::kInterrupted;
          r.status_note = fmt::format(
              "its sweep (pid {} on {}) has not been heard from for {} (it says it is at it every "
              "{} s): it ended without finishing the run (killed, crashed, or its machine "
              "gone); finished points are kept; continue with `{}`",
              o.pid, printable(o.host), duration_text(quiet), kHeartbeatSeconds, resume_command(r));
        } else {
          r.owner_state = "alive";
          r.status_note = fmt::format("being measured by pid {} on {} (heard from {} ago)", o.pid,
                                      printable(o.host), duration_text(quiet));
        }
        return;
      }
      r.owner_state = "unknown";
      r.status_note = fmt::format(
          "measured by pid {} on {}, which cannot be checked from here (another host or "
          "container); it may still be running",
          o.pid, printable(o.host));
      return;
  }
}

Expected<RunRecord> read_run(const Statement& s, const fs::path& file, int first = 0) {
  RunRecord r;
  r.id = s.column_int(first + 0);
  Where w{file, "runs", r.id};
  r.name = s.column_text(first + 1);
  r.tool_version = s.column_text(first + 2);
  r.git_revision = s.column_text(first + 3);
  r.host = s.column_text(first + 4);
  r.command_line = s.column_text(first + 5);
  auto labels = parse_labels(w, s.column_text(first + 6));
  if (!labels) return labels.error();
  r.labels = std::move(*labels);
  auto options = parse_object(w, "options", s.column_text(first + 7));
  if (!options) return options.error();
  r.options = std::move(*options);
  r.started_at = s.column_int(first + 8);
  r.ended_at = s.column_int(first + 9);
  const std::string status = s.column_text(first + 10);
  const auto parsed = parse_run_status(status);
  if (!parsed) {
    return Error{fmt::format("{}: {} row {}: unknown run status '{}'", w.file.string(), w.table,
                             w.id, printable(status, 40))};
  }
  r.status = *parsed;
  r.owner.pid = s.column_int(first + 11);
  r.owner.host = s.column_text(first + 12);
  r.owner.boot_id = s.column_text(first + 13);
  r.owner.pid_namespace = s.column_text(first + 14);
  r.owner.start_ticks = s.column_int(first + 15);
  r.heartbeat_at = s.column_int(first + 16);
  check_owner(r);
  return r;
}

constexpr std::string_view kConfigColumns =
    "id, run_id, config_key, fingerprint, launcher, row_json, effective_config, env_reads, "
    "log_path, status, error";

Expected<ServerConfigRecord> read_config(const Statement& s, const fs::path& file) {
  ServerConfigRecord c;
  c.id = s.column_int(0);
  Where w{file, "server_configs", c.id};
  c.run_id = s.column_int(1);
  c.config_key = s.column_text(2);
  c.fingerprint = s.column_text(3);
  c.launcher = s.column_text(4);
  auto row = parse_object(w, "row_json", s.column_text(5));
  if (!row) return row.error();
  c.row = std::move(*row);
  auto eff = parse_object(w, "effective_config", s.column_text(6));
  if (!eff) return eff.error();
  c.effective_config = std::move(*eff);
  auto env = parse_object(w, "env_reads", s.column_text(7));
  if (!env) return env.error();
  c.env_reads = std::move(*env);
  c.log_path = s.column_text(8);
  const std::string status = s.column_text(9);
  const auto parsed = parse_config_status(status);
  if (!parsed) {
    return Error{fmt::format("{}: {} row {}: unknown status '{}'", w.file.string(), w.table, w.id,
                             printable(status, 40))};
  }
  c.status = *parsed;
  c.error = s.column_text(10);
  return c;
}

// The point columns: identity, then the headline metrics in the order of the one metric table
// (metrics/keys.h; the schema's columns are checked against it by a test), then the rest.
const std::string& point_columns() {
  static const std::string cols = [] {
    std::string s =
        "p.id, p.run_id, p.server_config_id, p.fingerprint, p.workload_key, p.concurrency, "
        "p.status, p.error, p.reused_from_run";
    for (const auto& k : metrics::kHeadlineMetrics) s += fmt::format(", p.{}", k.key);
    s += ", p.result, p.artifacts_dir, p.created_at, p.validity";
    return s;
  }();
  return cols;
}

constexpr int kFirstHeadlineColumn = 9;
constexpr int kAfterHeadline = kFirstHeadlineColumn + static_cast<int>(metrics::kHeadlineCount);

Expected<PointRecord> read_point(const Statement& s, const fs::path& file) {
  PointRecord p;
  p.id = s.column_int(0);
  Where w{file, "points", p.id};
  p.run_id = s.column_int(1);
  p.server_config_id = s.column_optional_int(2).value_or(0);
  p.fingerprint = s.column_text(3);
  p.workload_key = s.column_text(4);
  p.concurrency = s.column_int(5);
  const std::string status = s.column_text(6);
  auto parsed = metrics::parse_status(status);
  if (!parsed) {
    return Error{
        fmt::format("{}: points row {}: unknown status '{}'", file.string(), p.id, status)};
  }
  p.status = *parsed;
  p.error = s.column_text(7);
  p.reused_from_run = s.column_optional_int(8);
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    const int col = kFirstHeadlineColumn + static_cast<int>(i);
    p.headline.set_at(i, metrics::kHeadlineMetrics[i].integer
                             ? static_cast<double>(s.column_int(col))
                             : s.column_double(col));
  }
  auto result = parse_object(w, "result", s.column_text(kAfterHeadline));
  if (!result) return result.error();
  p.result = std::move(*result);
  p.artifacts_dir = s.column_text(kAfterHeadline + 1);
  p.created_at = s.column_int(kAfterHeadline + 2);
  boost::system::error_code ec;
  auto validity = boost::json::parse(s.column_text(kAfterHeadline + 3), ec);
  if (!ec) p.validity = metrics::Validity::from_json(validity);
  return p;
}

constexpr std::string_view kFailureColumns =
    "id, run_id, server_config_id, point_id, kind, message, log_tail, at";

FailureRecord read_failure(const Statement& s) {
  FailureRecord f;
  f.id = s.column_int(0);
  f.run_id = s.column_int(1);
  f.server_config_id = s.column_optional_int(2);
  f.point_id = s.column_optional_int(3);
  f.kind = s.column_text(4);
  f.message = s.column_text(5);
  f.log_tail = s.column_text(6);
  f.at = s.column_int(7);
  return f;
}

// Steps `stmt` to the end, decoding every row with `read`.
template <class Record, class Read>
Expected<std::vector<Record>> read_all(Statement& stmt, Read read) {
  std::vector<Record> out;
  for (;;) {
    auto row = stmt.step();
    if (!row) return row.error();
    if (!*row) return out;
    Expected<Record> rec = read(stmt);
    if (!rec) return rec.error();
    out.push_back(std::move(*rec));
  }
}

template <class Record, class Read>
Expected<std::optional<Record>> read_one(Statement& stmt, Read read) {
  auto row = stmt.step();
  if (!row) return row.error();
  if (!*row) return std::optional<Record>();
  Expected<Record> rec = read(stmt);
  if (!rec) return rec.error();
  return std::optional<Record>(std::move(*rec));
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 19 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

void set_headline_from_result(PointRecord& p) {
  const metrics::Headline from = metrics::Headline::from_json(p.result);
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    if (!std::isnan(from.at(i))) p.headline.set_at(i, from.at(i));
  }
}

// ---------------------------------------------------------------------------------------------
// Store

struct Store::Impl {
  explicit Impl(Database d) : db(std::move(d)) {}
  // Serializes every use of db; recursive so that import_run's one transaction may hold it
  // across the writes it is made of.
  std::recursive_mutex mu;
  Database db;
  int depth = 0;  // writes open inside one transaction (import_run)

  // Runs `body(db)` in one transaction; commits when it returns ok. Inside another write, the
  // body joins that write's transaction.
  template <class Body>
  auto write(Body body) -> decltype(body(db)) {
    if (depth > 0) return body(db);
    auto txn = Transaction::begin(db);
    if (!txn) return txn.error();
    ++depth;
    auto result = body(db);
    --depth;
    if (!result) return result;  // the transaction's destructor rolls back
    if (auto st = txn->commit(); !st) return st.error();
    return result;
  }

  Status update_run(int64_t run_id, RunStatus status, std::optional<int64_t> ended_at) {
    return write([&](Database& d) -> Status {
      auto stmt = d.prepare("UPDATE runs SET status = ?1, ended_at = ?2 WHERE id = ?3");
      if (!stmt) return stmt.error();
      stmt->bind(1, std::string(status_name(status))).bind(2, ended_at.value_or(0)).bind(3, run_id);
      if (auto st = stmt->run(); !st) return st;
      if (d.changes() == 0) {
        return Error{fmt::format("{}: no run with id {}", d.file().string(), run_id)};
      }
      return {};
    });
  }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

namespace {

Expected<Database> open_database(const fs::path& file, bool create) {
  DatabaseOptions options;
  options.create = create;
  auto db = is_postgres_url(file.string()) ? Database::connect(file.string(), false)
                                           : Database::open(file, options);
  if (!db) return db.error();
  if (auto st = migrate(*db, kMigrations); !st) return st.error();
  return db;
}

}  // namespace

Expected<Store> Store::open(const fs::path& file) {
  auto db = open_database(file, true);
  if (!db) return db.error();
  return Store(std::make_unique<Impl>(std::move(*db)));
}

Expected<Store> Store::open_read_only(const fs::path& file) {
  DatabaseOptions options;
  options.read_only = true;
  const bool server = is_postgres_url(file.string());
  auto db = server ? Database::connect(file.string(), true) : Database::open(file, options);
  if (!db) return db.error();
  const std::string name = db->file().string();  // a server's URL without its password
  const auto latest = static_cast<int64_t>(kMigrations.size());
  auto version = db->user_version();
  if (!version) return version.error();
  if (*version == 0) {
    return Error{
        fmt::format("{}: not an inferbench results database (it has no inferbench "
                    "schema; a sweep creates one, or choose another with --db)",
                    name)};
  }
  if (*version > latest) {
    return Error{
        fmt::format("{}: database schema version {} is newer than this inferbench supports ({}); "
                    "use a newer inferbench or another --db file",
                    name, *version, latest)};
  }
  if (*version < latest && server) {
    return Error{fmt::format(
        "{}: made by an older inferbench (schema version {}; this one uses {}); a writer "
        "upgrades it: run any `inferbench sweep --db URL` against it",
        name, *version, latest)};
  }
  if (*version < latest) {
    // Older: read a migrated copy; the file itself is left as it is.
    constexpr int64_t kMaxCopy = int64_t{256} << 20;
    auto copy = db->copy_to_memory(kMaxCopy);
    if (!copy) {
      return Error{fmt::format(
          "{}: made by an older inferbench (schema version {}; this one uses {}) and {}; "
          "upgrade the file by running any `inferbench sweep --db {}` (it migrates the schema "
          "in place)",
          name, *version, latest, copy.error().message, name)};
    }
    if (auto st = migrate(*copy, kMigrations); !st) return st.error();
    if (auto st = copy->exec("PRAGMA query_only = 1"); !st) return st.error();
    return Store(std::make_unique<Impl>(std::move(*copy)));
  }
  return Store(std::make_unique<Impl>(std::move(*db)));
}

Expected<Store> Store::open_existing(const fs::path& file) {
  auto db = open_database(file, false);
  if (!db) return db.error();
  return Store(std::make_unique<Impl>(std::move(*db)));
}

const fs::path& Store::file() const {
  return impl_->db.file();
}

Expected<int64_t> Store::begin_run(RunRecord r) {
  if (r.name.empty()) return Error{"store: a run needs a name"};
  if (r.started_at == 0) r.started_at = now_s();
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Expected<int64_t> {
    auto dup = d.prepare("SELECT id FROM runs WHERE name = ?1");
    if (!dup) return dup.error();
    dup->bind(1, r.name);
    auto row = dup->step();
    if (!row) return row.error();
    if (*row) {
      return Error{fmt::format("{}: a run named '{}' already exists (run {})", d.file().string(),
                               r.name, dup->column_int(0))};
    }
    auto stmt = d.prepare(
        "INSERT INTO runs (name, tool_version, git_revision, host, command_line, labels, options, "
        "started_at, ended_at, status, owner_pid, owner_host, owner_boot_id, owner_pid_namespace, "
        "owner_start_ticks, heartbeat_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, 'running', "
        "?9, ?10, ?11, ?12, ?13, ?14)");
    if (!stmt) return stmt.error();
    stmt->bind(1, r.name)
        .bind(2, r.tool_version)
        .bind(3, r.git_revision)
        .bind(4, r.host)
        .bind(5, r.command_line)
        .bind(6, to_text(r.labels))
        .bind(7, to_text(r.options))
        .bind(8, r.started_at)
        .bind(9, r.owner.pid)
        .bind(10, r.owner.host)
        .bind(11, r.owner.boot_id)
        .bind(12, r.owner.pid_namespace)
        .bind(13, r.owner.start_ticks)
        .bind(14, now_s());
    if (auto st = stmt->run(); !st) return st.error();
    return d.last_insert_rowid();
  });
}

std::string_view status_name(RunStatus s) {
  return kRunStatuses[static_cast<size_t>(s)];
}
std::string_view status_name(ConfigStatus s) {
  return kConfigStatuses[static_cast<size_t>(s)];
}
std::optional<RunStatus> parse_run_status(std::string_view name) {
  return parse_enum<RunStatus>(kRunStatuses, name);
}
std::optional<ConfigStatus> parse_config_status(std::string_view name) {
  return parse_enum<ConfigStatus>(kConfigStatuses, name);
}

Status Store::finish_run(int64_t run_id, RunStatus status) {
  if (status == RunStatus::kRunning) {
    return Error{"store: finish_run needs a final status (ok|failed|interrupted), not 'running'"};
  }
  std::lock_guard lock(impl_->mu);
  return impl_->update_run(run_id, status, now_s());
}

Status Store::set_run_status(int64_t run_id, RunStatus status) {
  std::lock_guard lock(impl_->mu);
  if (status == RunStatus::kRunning) return impl_->update_run(run_id, status, std::nullopt);
  return impl_->update_run(run_id, status, now_s());
}

namespace {

// Why `owner` may not take run `r`, or nothing when it may.
std::optional<std::string> claim_refusal(const RunRecord& r, const ProcessIdentity& owner) {
  const bool self = r.owner.pid == owner.pid && r.owner.host == owner.host &&
                    r.owner.start_ticks == owner.start_ticks;
  if (r.owner_state == "alive" && !self) {
    const bool here = r.owner.host == owner.host;
    return fmt::format(
        "run {} ({}) is still being measured by pid {} on {}{}; wait for it to finish, or stop "
        "it (Ctrl-C, or kill {}{}) and resume then",
        r.id, r.name, r.owner.pid, r.owner.host,
        here ? "" : fmt::format(" (heard from {} ago)", duration_text(now_s() - r.heartbeat_at)),
        r.owner.pid, here ? "" : " there");
  }
  if (r.owner_state == "unknown" && r.owner.pid > 0) {
    return fmt::format(
        "run {} ({}) is stored as running by pid {} on {}, which cannot be checked from here "
        "(another host or container); resume it there, where a dead owner is detected",
        r.id, r.name, r.owner.pid, r.owner.host);
  }
  return std::nullopt;
}

Expected<RunRecord> select_run(Database& d, int64_t run_id) {
  auto sel = d.prepare(fmt::format("SELECT {} FROM runs r WHERE r.id = ?1", kRunColumns));
  if (!sel) return sel.error();
  sel->bind(1, run_id);
  auto current =
      read_one<RunRecord>(*sel, [&](const Statement& s) { return read_run(s, d.file()); });
  if (!current) return current.error();
  if (!*current) return Error{fmt::format("{}: no run with id {}", d.file().string(), run_id)};
  return std::move(**current);
}

}  // namespace

Status Store::claim_run(int64_t run_id, const ProcessIdentity& owner) {
  std::lock_guard lock(impl_->mu);
  // A plain read first: it never waits for a writer, so a living owner that holds the write
  // lock (busy, or stopped mid-commit) is named at once instead of timing out as "locked".
  if (auto seen = select_run(impl_->db, run_id); !seen) {
    return seen.error();
  } else if (auto why = claim_refusal(*seen, owner)) {
    return Error{*why};
  }
  return impl_->write([&](Database& d) -> Status {
    // Read again under the write lock: two sweeps resuming the same dead run cannot both take it.
    auto current = select_run(d, run_id);
    if (!current) return current.error();
    if (auto why = claim_refusal(*current, owner)) return Error{*why};
    auto up = d.prepare(
        "UPDATE runs SET status = 'running', ended_at = 0, owner_pid = ?1, owner_host = ?2, "
        "owner_boot_id = ?3, owner_pid_namespace = ?4, owner_start_ticks = ?5, heartbeat_at = ?6 "
        "WHERE id = ?7");
    if (!up) return up.error();
    up->bind(1, owner.pid)
        .bind(2, owner.host)
        .bind(3, owner.boot_id)
        .bind(4, owner.pid_namespace)
        .bind(5, owner.start_ticks)
        .bind(6, now_s())
        .bind(7, run_id);
    return up->run();
  });
}

Expected<bool> Store::heartbeat(int64_t run_id, const ProcessIdentity& owner) {
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Expected<bool> {
    auto up = d.prepare(
        "UPDATE runs SET heartbeat_at = ?1 WHERE id = ?2 AND status = 'running' AND "
        "owner_pid = ?3 AND owner_host = ?4 AND owner_start_ticks = ?5");
    if (!up) return up.error();
    up->bind(1, now_s())
        .bind(2, run_id)
        .bind(3, owner.pid)
        .bind(4, owner.host)
        .bind(5, owner.start_ticks);
    if (auto st = up->run(); !st) return st.error();
    return d.changes() > 0;
  });
}

metrics::Identity ServerConfigRecord::identity() const {
  static const boost::json::object none;
  const auto* settings = effective_config.if_contains("settings");
  return metrics::config_identity(
      row, settings && settings->is_object() ? settings->get_object() : none);
}

Expected<int64_t> Store::add_server_config(const ServerConfigRecord& c) {
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Expected<int64_t> {
    auto stmt = d.prepare(
        "INSERT INTO server_configs (run_id, config_key, fingerprint, launcher, row_json, "
        "effective_config, env_reads, log_path, status, error) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    if (!stmt) return stmt.error();
    stmt->bind(1, c.run_id)
        .bind(2, c.config_key)
        .bind(3, c.fingerprint)
        .bind(4, c.launcher)
        .bind(5, to_text(c.row))
        .bind(6, to_text(c.effective_config))
        .bind(7, to_text(c.env_reads))
        .bind(8, c.log_path)
        .bind(9, std::string(status_name(c.status)))
        .bind(10, c.error);
    if (auto st = stmt->run(); !st) return st.error();
    return d.last_insert_rowid();
  });
}

Status Store::update_server_config(const ServerConfigRecord& c) {
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Status {
    auto stmt = d.prepare(
        "UPDATE server_configs SET effective_config = ?1, env_reads = ?2, log_path = ?3, "
        "status = ?4, error = ?5 WHERE id = ?6");
    if (!stmt) return stmt.error();
    stmt->bind(1, to_text(c.effective_config))
        .bind(2, to_text(c.env_reads))
        .bind(3, c.log_path)
        .bind(4, std::string(status_name(c.status)))
        .bind(5, c.error)
        .bind(6, c.id);
    if (auto st = stmt->run(); !st) return st;
    if (d.changes() == 0) {
      return Error{fmt::format("{}: no server configuration with id {}", d.file().string(), c.id)};
    }
    return {};
  });
}

Expected<int64_t> Store::add_point(const PointRecord& p) {
  if (!storable(p.status)) {
    return Error{fmt::format("store: point status '{}' is not one of ok|failed|reused|invalid",
                             metrics::status_name(p.status))};
  }
  if (p.status == metrics::PointStatus::kReused && !p.reused_from_run) {
    return Error{"store: a reused point needs reused_from_run"};
  }
  const int64_t created_at = p.created_at != 0 ? p.created_at : now_s();
  static const std::string sql = [] {
    std::string cols =
        "run_id, server_config_id, fingerprint, workload_key, concurrency, status, error, "
        "reused_from_run";
    for (const auto& k : metrics::kHeadlineMetrics) cols += fmt::format(", {}", k.key);
    cols += ", result, artifacts_dir, created_at, validity";
    std::string params;
    for (int i = 1; i <= kAfterHeadline + 4 - 1; ++i)
      params += fmt::format("{}?{}", i > 1 ? ", " : "", i);
    return fmt::format("INSERT INTO points ({}) VALUES ({})", cols, params);
  }();
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Expected<int64_t> {
    auto stmt = d.prepare(sql);
    if (!stmt) return stmt.error();
    stmt->bind(1, p.run_id)
        .bind(2, p.server_config_id != 0 ? std::optional(p.server_config_id) : std::nullopt)
        .bind(3, p.fingerprint)
        .bind(4, p.workload_key)
        .bind(5, p.concurrency)
        .bind(6, std::string(metrics::status_name(p.status)))
        .bind(7, p.error)
        .bind(8, p.reused_from_run);
    for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
      const int param = kFirstHeadlineColumn + static_cast<int>(i);  // 1-based: column + 0
      const double v = p.headline.at(i);
      if (metrics::kHeadlineMetrics[i].integer) {
        stmt->bind(param, std::isnan(v) ? int64_t{0} : static_cast<int64_t>(v));
      } else {
        stmt->bind(param, v);
      }
    }
    stmt->bind(kAfterHeadline, to_text(p.result))
        .bind(kAfterHeadline + 1, p.artifacts_dir)
        .bind(kAfterHeadline + 2, created_at)
        .bind(kAfterHeadline + 3, json_text(p.validity.to_json()));
    if (auto st = stmt->run(); !st) return st.error();
    return d.last_insert_rowid();
  });
}

namespace {

constexpr std::string_view kTimesliceColumns =
    "source, slice, start_s, end_s, running, waiting, kv_usage, prefix_hit_rate, preemptions, "
    "prompt_tps, generation_tps, spec_acceptance, started, finished, output_tokens, "
    "mean_ttft_ms, mean_intvty, data";

double or_nan(const std::optional<double>& v) {
  return v ? *v : std::nan("");
}

}  // namespace

// Rows of one INSERT of timeslices: on a server, many (one round trip for them all); in a file,
// one, its statement compiled once and run for each row (compiling a long statement costs more
// than it saves there).
size_t slices_per_insert(const Database& d) {
  return d.is_postgres() ? 64 : 1;
}

// "INSERT INTO timeslices (point_id, ...) VALUES (?1, ?2, ... ?19), (?20, ...)" for `rows` rows.
constexpr int kSliceParams = 19;
std::string timeslice_insert(size_t rows) {
  std::string sql = fmt::format("INSERT INTO timeslices (point_id, {}) VALUES ", kTimesliceColumns);
  for (size_t r = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ", (";
    for (int c = 1; c <= kSliceParams; ++c) {
      sql += fmt::format("{}?{}", c == 1 ? "" : ", ", static_cast<int>(r) * kSliceParams + c);
    }
    sql += ")";
  }
  return sql;
}

void bind_slice(Statement& stmt, int b, int64_t point_id, const TimesliceRecord& r) {
  stmt.bind(b + 1, point_id)
      .bind(b + 2, r.source)
      .bind(b + 3, r.slice)
      .bind(b + 4, r.start_s)
      .bind(b + 5, r.end_s)
      .bind(b + 6, or_nan(r.running))
      .bind(b + 7, or_nan(r.waiting))
      .bind(b + 8, or_nan(r.kv_usage))
      .bind(b + 9, or_nan(r.prefix_hit_rate))
      .bind(b + 10, or_nan(r.preemptions))
      .bind(b + 11, or_nan(r.prompt_tps))
      .bind(b + 12, or_nan(r.generation_tps))
      .bind(b + 13, or_nan(r.spec_acceptance))
      .bind(b + 14, r.started)
      .bind(b + 15, r.finished)
      .bind(b + 16, r.output_tokens)
      .bind(b + 17, or_nan(r.mean_ttft_ms))
      .bind(b + 18, or_nan(r.mean_intvty))
      .bind(b + 19, to_text(r.data));
}

Status Store::add_timeslices(int64_t point_id, const std::vector<TimesliceRecord>& rows) {
  if (rows.empty()) return {};
  for (const auto& r : rows) {
    if (r.source != "server" && r.source != "client") {
      return Error{fmt::format("store: timeslice source '{}' is not server|client", r.source)};
    }
  }
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Status {
    const size_t per = slices_per_insert(d);
    std::optional<Statement> full;  // the statement of `per` rows, compiled once
    for (size_t first = 0; first < rows.size(); first += per) {
      const size_t n = std::min(per, rows.size() - first);
      std::optional<Statement> last;
      if (n == per && !full) {
        auto stmt = d.prepare(timeslice_insert(n));
        if (!stmt) return stmt.error();
        full.emplace(std::move(*stmt));
      } else if (n != per) {
        auto stmt = d.prepare(timeslice_insert(n));
        if (!stmt) return stmt.error();
        last.emplace(std::move(*stmt));
      }
      Statement& stmt = n == per ? *full : *last;
      stmt.reset();
      for (size_t i = 0; i < n; ++i) {
        bind_slice(stmt, static_cast<int>(i) * kSliceParams, point_id, rows[first + i]);
      }
      if (auto st = stmt.run(); !st) return st;
    }
    return {};
  });
}

namespace {

// The origin a copied run keeps: its own, when it was copied before, else `given`.
boost::json::object origin_of(const RunDetails& run, boost::json::object given) {
  const auto* o = run.run.options.if_contains("origin");
  return o && o->is_object() ? o->as_object() : std::move(given);
}

}  // namespace

Expected<ImportedRun> Store::import_run(const RunDetails& run, boost::json::object origin,
                                        const PointFilesOf& files) {
  origin = origin_of(run, std::move(origin));
  std::lock_guard lock(impl_->mu);
  ImportedRun out;
  // Already here: a run of the same start whose origin is this one.
  {
    auto same = impl_->db.prepare("SELECT id, name, options FROM runs WHERE started_at = ?1");
    if (!same) return same.error();
    same->bind(1, run.run.started_at);
    for (;;) {
      auto row = same->step();
      if (!row) return row.error();
      if (!*row) break;
      boost::system::error_code ec;
      auto o = boost::json::parse(same->column_text(2), ec);
      const auto* known = !ec && o.is_object() ? o.as_object().if_contains("origin") : nullptr;
      if (known && known->is_object() && known->as_object() == origin) {
        out.id = same->column_int(0);
        out.name = same->column_text(1);
        out.existed = true;
        return out;
      }
    }
  }
  auto written = impl_->write(
      [&](Database&) -> Expected<int64_t> { return import_records(run, origin, files, out); });
  if (!written) return written.error();
  out.id = *written;
  return out;
}

Expected<int64_t> Store::import_records(const RunDetails& run, const boost::json::object& origin,
                                        const PointFilesOf& files, ImportedRun& out) {
  // A reused point's source run, by origin: it must have been copied here before. The runs
  // here that came from the same database, by their id there (read once, and only when needed).
  std::map<int64_t, int64_t> reused_here;
  const bool reuses = std::any_of(run.points.begin(), run.points.end(), [](const PointRecord& p) {
    return p.reused_from_run.has_value();
  });
  if (const auto* from_db = origin.if_contains("db"); reuses && from_db) {
    auto list = list_runs();
    if (!list) return list.error();
    for (const auto& r : *list) {
      const auto* o = r.run.options.if_contains("origin");
      if (!o || !o->is_object()) continue;
      const auto* db = o->as_object().if_contains("db");
      const auto* rid = o->as_object().if_contains("run_id");
      if (db && rid && *db == *from_db && rid->is_int64()) reused_here[rid->as_int64()] = r.run.id;
    }
  }
  for (const auto& p : run.points) {
    if (p.reused_from_run && !reused_here.count(*p.reused_from_run)) {
      return Error{
          fmt::format("run {} reuses points of run {}, which is not here: copy that run first",
                      run.run.name, *p.reused_from_run)};
    }
  }
  RunRecord r = run.run;
  r.options["origin"] = origin;
  r.owner = {};
  for (int i = 0; i < 1000; ++i) {
    r.name = i == 0 ? run.run.name : fmt::format("{}-{}", run.run.name, i);
    auto taken = find_run(r.name);
    if (!taken) return taken.error();
    if (!*taken) break;
  }
  auto id = begin_run(r);
  if (!id) return id.error();
  out.name = r.name;
  if (run.run.status != RunStatus::kRunning) {
    if (auto st = impl_->update_run(*id, run.run.status, run.run.ended_at); !st) return st.error();
  }
  std::map<int64_t, int64_t> config_id, point_id;
  for (auto c : run.configs) {
    const int64_t old = c.id;
    c.run_id = *id;
    auto nid = add_server_config(c);
    if (!nid) return nid.error();
    c.id = *nid;
    if (auto st = update_server_config(c); !st) return st.error();
    config_id[old] = *nid;
    ++out.configs;
  }
  for (const auto& source : run.points) {
    PointRecord p = source;
    const int64_t old = p.id;
    p.run_id = *id;
    p.server_config_id = p.server_config_id != 0 ? config_id[p.server_config_id] : 0;
    if (p.reused_from_run) p.reused_from_run = reused_here.at(*p.reused_from_run);
    auto nid = add_point(p);
    if (!nid) return nid.error();
    point_id[old] = *nid;
    ++out.points;
    if (auto ts = run.timeslices.find(old); ts != run.timeslices.end()) {
      if (auto st = add_timeslices(*nid, ts->second); !st) return st.error();
      out.timeslices += ts->second.size();
    }
    if (files) {
      auto kept = files(source);
      if (!kept) return kept.error();
      for (const auto& f : *kept) {
        if (auto st = add_point_file(*nid, f); !st) return st.error();
        ++out.files;
      }
    }
  }
  for (auto f : run.failures) {
    f.run_id = *id;
    if (f.server_config_id) f.server_config_id = config_id[*f.server_config_id];
    if (f.point_id) f.point_id = point_id[*f.point_id];
    auto nid = add_failure(f);
    if (!nid) return nid.error();
    ++out.failures;
  }
  return *id;
}

Expected<std::vector<TimesliceRecord>> Store::timeslices(int64_t point_id,
                                                         const std::string& source) {
  std::lock_guard lock(impl_->mu);
  auto stmt = impl_->db.prepare(
      fmt::format("SELECT {} FROM timeslices WHERE point_id = ?1 AND (?2 = '' OR source = ?2) "
                  "ORDER BY source DESC, slice",
                  kTimesliceColumns));
  if (!stmt) return stmt.error();
  stmt->bind(1, point_id).bind(2, source);
  return read_all<TimesliceRecord>(*stmt, [](const Statement& s) -> Expected<TimesliceRecord> {
    auto opt = [&](int c) {
      return s.column_is_null(c) ? std::nullopt : std::optional<double>(s.column_double(c));
    };
    TimesliceRecord r;
    r.source = s.column_text(0);
    r.slice = s.column_int(1);
    r.start_s = s.column_double(2);
    r.end_s = s.column_double(3);
    r.running = opt(4);
    r.waiting = opt(5);
    r.kv_usage = opt(6);
    r.prefix_hit_rate = opt(7);
    r.preemptions = opt(8);
    r.prompt_tps = opt(9);
    r.generation_tps = opt(10);
    r.spec_acceptance = opt(11);
    r.started = s.column_optional_int(12);
    r.finished = s.column_optional_int(13);
    r.output_tokens = s.column_optional_int(14);
    r.mean_ttft_ms = opt(15);
    r.mean_intvty = opt(16);
    boost::system::error_code ec;
    auto v = boost::json::parse(s.column_text(17), ec);
    if (!ec && v.is_object()) r.data = std::move(v.as_object());
    return r;
  });
}

Expected<int64_t> Store::add_point_whole(const PointRecord& p,
                                         const std::vector<TimesliceRecord>& slices,
                                         std::optional<FailureRecord> failure,
                                         const std::vector<PointFile>& files) {
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database&) -> Expected<int64_t> {
    auto id = add_point(p);
    if (!id) return id.error();
    if (auto st = add_timeslices(*id, slices); !st) return st.error();
    for (const auto& f : files) {
      if (auto st = add_point_file(*id, f); !st) return st.error();
    }
    if (failure) {
      failure->point_id = *id;
      if (auto f = add_failure(*failure); !f) return f.error();
    }
    return *id;
  });
}

std::string records_file_name(int64_t concurrency) {
  return fmt::format("records_conc_{}.jsonl", concurrency);
}

Status Store::add_point_file(int64_t point_id, const PointFile& f) {
  if (f.name.empty() || f.name.find('/') != std::string::npos) {
    return Error{fmt::format("store: '{}' is not a file name", printable(f.name, 80))};
  }
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Status {
    auto stmt =
        d.prepare("INSERT INTO point_files (point_id, name, sha256, body) VALUES (?1, ?2, ?3, ?4)");
    if (!stmt) return stmt.error();
    stmt->bind(1, point_id).bind(2, f.name).bind(3, sha256_hex(f.body)).bind(4, f.body);
    return stmt->run();
  });
}

Expected<std::optional<PointFile>> Store::point_file(int64_t point_id, const std::string& name) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt =
      d.prepare("SELECT name, sha256, body FROM point_files WHERE point_id = ?1 AND name = ?2");
  if (!stmt) return stmt.error();
  stmt->bind(1, point_id).bind(2, name);
  return read_one<PointFile>(*stmt, [](const Statement& s) -> Expected<PointFile> {
    return PointFile{s.column_text(0), s.column_text(1), s.column_text(2)};
  });
}

Expected<std::vector<PointFile>> Store::point_files(int64_t point_id) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt =
      d.prepare("SELECT name, sha256, body FROM point_files WHERE point_id = ?1 ORDER BY name");
  if (!stmt) return stmt.error();
  stmt->bind(1, point_id);
  return read_all<PointFile>(*stmt, [](const Statement& s) -> Expected<PointFile> {
    return PointFile{s.column_text(0), s.column_text(1), s.column_text(2)};
  });
}

bool Store::is_server() const {
  return impl_->db.is_postgres();
}

bool Store::reachable() {
  std::lock_guard lock(impl_->mu);
  return impl_->db.reachable();
}

Expected<int64_t> Store::add_failure(const FailureRecord& f) {
  if (f.kind.empty()) return Error{"store: a failure needs a kind"};
  const int64_t at = f.at != 0 ? f.at : now_s();
  std::lock_guard lock(impl_->mu);
  return impl_->write([&](Database& d) -> Expected<int64_t> {
    auto stmt = d.prepare(
        "INSERT INTO failures (run_id, server_config_id, point_id, kind, message, log_tail, at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!stmt) return stmt.error();
    stmt->bind(1, f.run_id)
        .bind(2, f.server_config_id)
        .bind(3, f.point_id)
        .bind(4, f.kind)
        .bind(5, f.message)
        .bind(6, f.log_tail)
        .bind(7, at);
    if (auto st = stmt->run(); !st) return st.error();
    return d.last_insert_rowid();
  });
}

Expected<std::optional<PointRecord>> Store::completed_point(int64_t run_id,
                                                            const std::string& fingerprint,
                                                            int64_t concurrency,
                                                            const std::string& workload_key) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(fmt::format(
      "SELECT {} FROM points p WHERE p.run_id = ?1 AND p.fingerprint = ?2 AND p.concurrency = ?3 "
      "AND p.workload_key = ?4 AND p.status IN ('ok', 'reused') ORDER BY p.id DESC LIMIT 1",
      point_columns()));
  if (!stmt) return stmt.error();
  stmt->bind(1, run_id).bind(2, fingerprint).bind(3, concurrency).bind(4, workload_key);
  return read_one<PointRecord>(*stmt, [&](const Statement& s) { return read_point(s, d.file()); });
}

Expected<bool> Store::point_stored(const PointRecord& p) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(
      "SELECT id FROM points WHERE run_id = ?1 AND fingerprint = ?2 AND concurrency = ?3 AND "
      "workload_key = ?4 AND status = ?5 AND created_at = ?6 AND artifacts_dir = ?7 LIMIT 1");
  if (!stmt) return stmt.error();
  stmt->bind(1, p.run_id)
      .bind(2, p.fingerprint)
      .bind(3, p.concurrency)
      .bind(4, p.workload_key)
      .bind(5, std::string(metrics::status_name(p.status)))
      .bind(6, p.created_at)
      .bind(7, p.artifacts_dir);
  auto row = stmt->step();
  if (!row) return row.error();
  return *row;
}

Expected<std::optional<PointRecord>> Store::reusable_point(const std::string& fingerprint,
                                                           int64_t concurrency,
                                                           const std::string& workload_key,
                                                           const std::string& tool_version) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(fmt::format(
      "SELECT {} FROM points p JOIN runs r ON r.id = p.run_id WHERE p.fingerprint = ?1 AND "
      "p.concurrency = ?2 AND p.workload_key = ?3 AND p.status = 'ok' AND r.status = 'ok' AND "
      "r.tool_version = ?4 ORDER BY r.started_at DESC, p.id DESC LIMIT 1",
      point_columns()));
  if (!stmt) return stmt.error();
  stmt->bind(1, fingerprint).bind(2, concurrency).bind(3, workload_key).bind(4, tool_version);
  return read_one<PointRecord>(*stmt, [&](const Statement& s) { return read_point(s, d.file()); });
}

Expected<std::vector<RunSummary>> Store::list_runs(int limit) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(
      fmt::format("SELECT {}, "
                  "(SELECT count(*) FROM points p WHERE p.run_id = r.id AND p.status = 'ok'), "
                  "(SELECT count(*) FROM points p WHERE p.run_id = r.id AND p.status = 'failed'), "
                  "(SELECT count(*) FROM points p WHERE p.run_id = r.id AND p.status = 'reused'), "
                  "(SELECT count(*) FROM points p WHERE p.run_id = r.id AND p.status = 'invalid') "
                  "FROM runs r ORDER BY r.id DESC LIMIT ?1",
                  kRunColumns));
  if (!stmt) return stmt.error();
  // No limit: the largest one (both stores take it; SQLite's -1 is not PostgreSQL's).
  stmt->bind(1, limit > 0 ? static_cast<int64_t>(limit) : std::numeric_limits<int64_t>::max());
  return read_all<RunSummary>(*stmt, [&](const Statement& s) -> Expected<RunSummary> {
    auto r = read_run(s, d.file());
    if (!r) return r.error();
    RunSummary sum{std::move(*r), {}};
    sum.points.ok = s.column_int(kRunColumnCount);
    sum.points.failed = s.column_int(kRunColumnCount + 1);
    sum.points.reused = s.column_int(kRunColumnCount + 2);
    sum.points.invalid = s.column_int(kRunColumnCount + 3);
    return sum;
  });
}

Expected<std::optional<RunRecord>> Store::run(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(fmt::format("SELECT {} FROM runs r WHERE r.id = ?1", kRunColumns));
  if (!stmt) return stmt.error();
  stmt->bind(1, run_id);
  return read_one<RunRecord>(*stmt, [&](const Statement& s) { return read_run(s, d.file()); });
}

Expected<std::optional<RunRecord>> Store::find_run(const std::string& id_or_name) {
  if (all_digits(id_or_name)) {
    auto by_id = run(std::stoll(id_or_name));
    if (!by_id || *by_id) return by_id;
  }
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(fmt::format("SELECT {} FROM runs r WHERE r.name = ?1", kRunColumns));
  if (!stmt) return stmt.error();
  stmt->bind(1, id_or_name);
  return read_one<RunRecord>(*stmt, [&](const Statement& s) { return read_run(s, d.file()); });
}

Expected<PointCounts> Store::point_counts(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  auto stmt =
      impl_->db.prepare("SELECT status, count(*) FROM points WHERE run_id = ?1 GROUP BY status");
  if (!stmt) return stmt.error();
  stmt->bind(1, run_id);
  PointCounts c;
  for (;;) {
    auto row = stmt->step();
    if (!row) return row.error();
    if (!*row) return c;
    const std::string status = stmt->column_text(0);
    const int64_t n = stmt->column_int(1);
    if (status == "ok") c.ok = n;
    if (status == "failed") c.failed = n;
    if (status == "reused") c.reused = n;
    if (status == "invalid") c.invalid = n;
  }
}

Expected<std::vector<ServerConfigRecord>> Store::server_configs(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(
      fmt::format("SELECT {} FROM server_configs WHERE run_id = ?1 ORDER BY id", kConfigColumns));
  if (!stmt) return stmt.error();
  stmt->bind(1, run_id);
  return read_all<ServerConfigRecord>(*stmt,
                                      [&](const Statement& s) { return read_config(s, d.file()); });
}

Expected<std::vector<PointRecord>> Store::points(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  auto& d = impl_->db;
  auto stmt = d.prepare(
      fmt::format("SELECT {} FROM points p WHERE p.run_id = ?1 ORDER BY p.id", point_columns()));
  if (!stmt) return stmt.error();
  stmt->bind(1, run_id);
  return read_all<PointRecord>(*stmt, [&](const Statement& s) { return read_point(s, d.file()); });
}

Expected<std::vector<FailureRecord>> Store::failures(int64_t run_id) {
  std::lock_guard lock(impl_->mu);
  auto stmt = impl_->db.prepare(
      fmt::format("SELECT {} FROM failures WHERE run_id = ?1 ORDER BY id", kFailureColumns));
  if (!stmt) return stmt.error();
  stmt->bind(1, run_id);
  return read_all<FailureRecord>(
      *stmt, [](const Statement& s) -> Expected<FailureRecord> { return read_failure(s); });
}

Expected<RunDetails> Store::run_details(RunRecord run, WithTimeslices with) {
  RunDetails d;
  d.run = std::move(run);
  auto counts = point_counts(d.run.id);
  if (!counts) return counts.error();
  d.counts = *counts;
  auto configs = server_configs(d.run.id);
  if (!configs) return configs.error();
  d.configs = std::move(*configs);
  auto run_points = points(d.run.id);
  if (!run_points) return run_points.error();
  d.points = std::move(*run_points);
  auto run_failures = failures(d.run.id);
  if (!run_failures) return run_failures.error();
  d.failures = std::move(*run_failures);
  if (with == WithTimeslices::kNo) return d;
  for (const auto& p : d.points) {
    auto slices = timeslices(p.id);
    if (!slices) return slices.error();
    if (!slices->empty()) d.timeslices[p.id] = std::move(*slices);
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// JSON forms

boost::json::object to_json(const RunRecord& r) {
  boost::json::array labels;
  for (const auto& l : r.labels) labels.emplace_back(l);
  return {{"id", r.id},
          {"name", r.name},
          {"tool_version", r.tool_version},
          {"git_revision", r.git_revision},
          {"host", r.host},
          {"command_line", r.command_line},
          {"labels", std::move(labels)},
          {"options", r.options},
          {"started_at", r.started_at},
          {"ended_at", r.ended_at},
          {"status", status_name(r.status)},
          {"owner",
           {{"pid", r.owner.pid},
            {"host", r.owner.host},
            {"boot_id", r.owner.boot_id},
            {"pid_namespace", r.owner.pid_namespace},
            {"start_ticks", r.owner.start_ticks},
            {"state", r.owner_state}}},
          {"heartbeat_at", r.heartbeat_at},
          {"status_note", r.status_note}};
}

std::string resume_command(const RunRecord& r) {
  // A block of `inferbench tune` (its screening passes and confirmation repeats) is continued by
  // resuming the tuning, which decides what comes after the block.
  if (const auto* t = r.options.if_contains("tune"); t && t->is_object()) {
    if (const auto* dir = t->as_object().if_contains("dir"); dir && dir->is_string()) {
      return fmt::format("inferbench tune --resume {}", printable(dir->as_string(), 200));
    }
  }
  // The run's own command (recorded since the plan digest was), so that resuming it measures
  // what it measured: the same recipes, options and workload.
  if (const auto* argv = r.options.if_contains("argv"); argv && argv->is_array()) {
    std::string command;
    for (const auto& a : argv->as_array()) {
      if (a.is_string()) command += shell_quote(printable(a.as_string(), 400)) + " ";
    }
    if (!command.empty()) return command + "--resume " + shell_quote(printable(r.name));
  }
  std::string recipes;
  if (const auto* files = r.options.if_contains("recipes"); files && files->is_array()) {
    for (const auto& f : files->as_array()) {
      if (f.is_string()) recipes += fmt::format(" {}", printable(f.as_string(), 200));
    }
  }
  return fmt::format("inferbench sweep{} --resume {}", recipes.empty() ? " RECIPE..." : recipes,
                     printable(r.name));
}

boost::json::object to_json(const PointCounts& c) {
  return {{"ok", c.ok}, {"failed", c.failed}, {"reused", c.reused}, {"invalid", c.invalid}};
}

boost::json::object to_json(const RunSummary& s) {
  auto o = to_json(s.run);
  o["points"] = to_json(s.points);
  return o;
}

boost::json::object to_json(const ServerConfigRecord& c) {
  return {{"id", c.id},
          {"run_id", c.run_id},
          {"config_key", c.config_key},
          {"fingerprint", c.fingerprint},
          {"launcher", c.launcher},
          {"row", c.row},
          {"effective_config", c.effective_config},
          {"env_reads", c.env_reads},
          {"log_path", c.log_path},
          {"status", status_name(c.status)},
          {"error", c.error}};
}

boost::json::object to_json(const PointRecord& p) {
  boost::json::object o{
      {"id", p.id},
      {"run_id", p.run_id},
      {"server_config_id",
       optional_id(p.server_config_id != 0 ? std::optional(p.server_config_id) : std::nullopt)},
      {"fingerprint", p.fingerprint},
      {"workload_key", p.workload_key},
      {"concurrency", p.concurrency},
      {"status", metrics::status_name(p.status)},
      {"error", p.error},
      {"reused_from_run", optional_id(p.reused_from_run)}};
  for (const auto& kv : p.headline.to_json()) o[kv.key()] = kv.value();
  o["validity"] = p.validity.to_json();
  o["result"] = p.result;
  o["artifacts_dir"] = p.artifacts_dir;
  o["created_at"] = p.created_at;
  return o;
}

boost::json::object to_json(const FailureRecord& f) {
  return {{"id", f.id},
          {"run_id", f.run_id},
          {"server_config_id", optional_id(f.server_config_id)},
          {"point_id", optional_id(f.point_id)},
          {"kind", f.kind},
          {"message", f.message},
          {"log_tail", f.log_tail},
          {"at", f.at}};
}

}  // namespace ib::store
