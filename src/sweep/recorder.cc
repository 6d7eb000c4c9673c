#include "sweep/recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "core/files.h"
#include "core/gzip.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/strings.h"
#include "metrics/result.h"

namespace ib::sweep {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

int64_t now_s() {
  return static_cast<int64_t>(std::time(nullptr));
}

// "3 writes (2 points)", "1 write (1 point)".
std::string writes_text(size_t writes, size_t points) {
  return fmt::format("{} write{} ({} point{})", writes, writes == 1 ? "" : "s", points,
                     points == 1 ? "" : "s");
}

std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s) {
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  }
  return out.substr(0, 80);
}

// A new run: its folder and its row, under the first name of this second that neither the runs
// folder nor the database has. Sweeps on other machines (a team's shared database) may take a name
// at the same moment: a name the database refuses is given up (its empty folder removed) for the
// next.
Expected<std::pair<fs::path, int64_t>> begin_named_run(store::Store& st, const fs::path& runs_dir,
                                                       store::RunRecord& fresh) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create: {}", runs_dir.string(), ec.message())};
  const std::string base = utc_time_text("%Y%m%d-%H%M%S");
  for (int i = 0; i < 1000; ++i) {
    std::string n = i == 0 ? base : fmt::format("{}-{}", base, i);
    fs::path p = runs_dir / n;
    if (!fs::create_directory(p, ec)) {
      if (ec) return Error{fmt::format("{}: cannot create: {}", p.string(), ec.message())};
      continue;  // this folder's name is taken
    }
    auto known = st.find_run(n);
    if (!known) return known.error();
    if (!*known) {
      fresh.name = n;
      auto id = st.begin_run(fresh);
      if (id) return std::make_pair(p, *id);
      auto again = st.find_run(n);  // taken by another writer since: try the next name
      if (!again || !*again) return id.error();
    }
    fs::remove(p, ec);
  }
  return Error{fmt::format("{}: too many runs with the same timestamp", runs_dir.string())};
}

}  // namespace

store::PointRecord to_record(const metrics::PointResult& p, int64_t run_id, int64_t config_id) {
  store::PointRecord r;
  r.run_id = run_id;
  r.server_config_id = config_id;
  r.fingerprint = p.id.fingerprint;
  r.workload_key = p.id.workload_key;
  r.concurrency = p.id.concurrency;
  r.status = p.status;
  r.error = redact_text(
      p.status == metrics::PointStatus::kInvalid && p.error.empty() ? p.validity.text() : p.error);
  r.reused_from_run = p.reused_from_run;
  r.headline = p.headline;
  r.validity = p.validity;
  r.result = redacted(p.result);
  r.artifacts_dir = p.artifacts_dir;
  return r;
}

metrics::PointResult from_record(const store::PointRecord& r, const std::string& config_key) {
  metrics::PointResult p;
  p.id.config_key = config_key;
  p.id.fingerprint = r.fingerprint;
  p.id.concurrency = r.concurrency;
  p.id.workload_key = r.workload_key;
  if (const auto* w = r.result.if_contains("workload_label"); w && w->is_string()) {
    p.id.workload_label = std::string(w->as_string());
  }
  if (const auto* v = r.result.if_contains("tool_version"); v && v->is_string()) {
    p.id.tool_version = std::string(v->as_string());
  }
  p.status = r.status;
  p.error = r.error;
  p.validity = r.validity;
  p.headline = r.headline;
  p.result = r.result;
  p.reused_from_run = r.reused_from_run;
  p.artifacts_dir = r.artifacts_dir;
  return p;
}

namespace {

// A resumed run must go on measuring what it measured: the same plan (recipes, --keys, --labels,
// --concurrency: the digest of its points) and the same options. Keys an older run did not record
// are not compared; the recipe files' paths are not (the plan covers their content), nor what a
// repeat or a tuning records about itself.
Status same_measurement(const store::RunRecord& run, const json::object& now) {
  std::vector<std::string> differ;
  for (const auto& [key, was] : run.options) {
    if (key == "argv" || key == "recipes" || key == "repeat" || key == "tune") continue;
    const auto* is = now.if_contains(key);
    if (key == "plan") {
      if (is == nullptr || *is != was) {
        differ.push_back(
            "the points: the recipes, --keys, --labels or --concurrency select other "
            "configurations or workloads than the run's");
      }
      continue;
    }
    if (is == nullptr || *is != was) {
      differ.push_back(fmt::format("{}: {} (the run) vs {} (now)", std::string(key),
                                   printable(json_text(was), 80),
                                   is ? printable(json_text(*is), 80) : std::string("unset")));
    }
  }
  if (differ.empty()) return Status::Ok();
  return Error{fmt::format(
      "run {} was measured otherwise: {}. Continue it with its own command: `{}`; or start a new "
      "run without --resume",
      run.name, fmt::join(differ, "; "), store::resume_command(run))};
}

}  // namespace

// The heartbeat (store.h, "Dead runs"): a thread with its own connection, so that neither a long
// write nor a database that went away holds it up, and readers on other hosts can tell this
// sweep's run from a dead one's.
struct RunRecorder::Heartbeat {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool taken = false;  // the run is no longer this sweep's (another sweep resumed it)
  std::thread thread;

  Heartbeat(fs::path db, int64_t run_id, ProcessIdentity owner) {
    thread = std::thread([this, db = std::move(db), run_id, owner = std::move(owner)] {
      std::optional<store::Store> st;
      std::unique_lock lock(mu);
      while (!cv.wait_for(lock, std::chrono::seconds(store::kHeartbeatSeconds),
                          [this] { return stop; })) {
        lock.unlock();
        if (!st) {
          if (auto opened = store::Store::open_existing(db)) st.emplace(std::move(*opened));
        }
        // A beat that fails (the database away) is tried at the next.
        auto alive = st ? st->heartbeat(run_id, owner) : Expected<bool>(true);
        lock.lock();
        if (alive && !*alive) taken = true;
      }
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
};

RunRecorder::RunRecorder(store::Store s) : store_(std::move(s)) {}
RunRecorder::RunRecorder(RunRecorder&&) noexcept = default;
RunRecorder& RunRecorder::operator=(RunRecorder&&) noexcept = default;
RunRecorder::~RunRecorder() = default;

void RunRecorder::start_heartbeat() {
  heartbeat_ = std::make_unique<Heartbeat>(db_path_, run_id_, self_identity());
}

Expected<RunRecorder> RunRecorder::open(const fs::path& db_path, const fs::path& runs_dir,
                                        const std::string& resume, store::RunRecord fresh) {
  auto db = store::Store::open(db_path);
  if (!db) return db.error();
  RunRecorder rec(std::move(*db));
  rec.db_path_ = db_path;
  if (!resume.empty()) {
    auto run = rec.store_.find_run(resume);
    if (!run) return run.error();
    if (!*run)
      return Error{fmt::format("--resume {}: no such run in {}", resume,
                               store::database_name(db_path.string()))};
    if (auto same = same_measurement(**run, redacted(fresh.options)); !same) {
      return usage_error(fmt::format("--resume {}: {}", resume, same.error().message));
    }
    rec.run_id_ = (*run)->id;
    rec.run_name_ = (*run)->name;
    rec.run_dir_ = runs_dir / rec.run_name_;
    std::error_code ec;
    fs::create_directories(rec.run_dir_, ec);
    if (ec) {
      return Error{fmt::format("{}: cannot create: {}", rec.run_dir_.string(), ec.message())};
    }
    // What a sweep of it could not store is read (and refused when malformed) before the run is
    // taken: a bad file leaves the run as it was.
    auto kept = rec.read_held();
    if (!kept) return kept.error();
    // Refused while another live sweep measures it; a dead owner's run is taken over.
    if (auto s = rec.store_.claim_run(rec.run_id_, self_identity()); !s.ok()) {
      return Error{fmt::format("--resume {}: {}", resume, s.error().message)};
    }
    rec.resume_command_ = store::resume_command(**run);
    if (*kept) rec.take_held(std::move(**kept));
    rec.start_heartbeat();
    return rec;
  }
  fresh.command_line = redact_text(fresh.command_line);
  fresh.options = redacted(std::move(fresh.options));
  auto begun = begin_named_run(rec.store_, runs_dir, fresh);
  if (!begun) return begun.error();
  rec.run_dir_ = begun->first;
  rec.run_name_ = fresh.name;
  rec.run_id_ = begun->second;
  rec.resume_command_ = store::resume_command(fresh);
  rec.start_heartbeat();
  return rec;
}

fs::path RunRecorder::config_dir(size_t index, const std::string& config_key,
                                 const std::string& fingerprint) const {
  return run_dir_ /
         fmt::format("{:02}-{}-{}", index, safe_name(config_key), fingerprint.substr(0, 8));
}

void RunRecorder::db_error(const std::string& what, const Error& e) {
  errors_.push_back(
      fmt::format("database {}: {}: {}", store::database_name(db_path_.string()), what, e.message));
}

void RunRecorder::write_file(const fs::path& file, const std::string& text) {
  if (auto s = write_file_atomic(file, text); !s) errors_.push_back(s.error().message);
}

namespace {

// What the database keeps of a server configuration: every credential hidden (core/redact.h).
store::ServerConfigRecord stored_form(const store::ServerConfigRecord& c) {
  store::ServerConfigRecord r = c;
  r.row = redacted(std::move(r.row));
  r.effective_config = redacted(std::move(r.effective_config));
  r.env_reads = redacted(std::move(r.env_reads));
  r.error = redact_text(r.error);
  return r;
}

}  // namespace

bool RunRecorder::add_config(store::ServerConfigRecord& c) {
  c.run_id = run_id_;
  HeldWrite w;
  w.kind = HeldWrite::Kind::kConfig;
  w.config = stored_form(c);
  w.config.id = next_provisional_--;
  const int64_t provisional = w.config.id;
  switch (submit(std::move(w), fmt::format("server configuration {}", c.config_key))) {
    case Submitted::kStored:
      c.id = stored_id(provisional);
      return true;
    case Submitted::kHeld:
      c.id = provisional;  // the records that name it are stored with its id, once it has one
      return true;
    case Submitted::kRefused:
      return false;
  }
  return false;
}

void RunRecorder::update_config(const store::ServerConfigRecord& c) {
  HeldWrite w;
  w.kind = HeldWrite::Kind::kConfigUpdate;
  w.config = stored_form(c);
  submit(std::move(w), fmt::format("server configuration {}", c.config_key));
}

std::optional<metrics::PointResult> RunRecorder::held_completed(
    const metrics::PointIdentity& id) const {
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
    const auto& p = it->point;
    if (it->kind != HeldWrite::Kind::kPoint || p.fingerprint != id.fingerprint ||
        p.concurrency != id.concurrency || p.workload_key != id.workload_key ||
        (p.status != metrics::PointStatus::kOk && p.status != metrics::PointStatus::kReused)) {
      continue;
    }
    metrics::PointResult r = from_record(p, id.config_key);
    r.id = id;
    r.status = metrics::PointStatus::kResumed;
    return r;
  }
  return std::nullopt;
}

std::optional<metrics::PointResult> RunRecorder::resumed(const metrics::PointIdentity& id) {
  // Held for the database (kept in unstored.json by the sweep this one resumes): done.
  if (auto held = held_completed(id)) return held;
  auto done = store_.completed_point(run_id_, id.fingerprint, id.concurrency, id.workload_key);
  if (!done) {
    // Measured again; its result is stored only when the run turns out to have none.
    unsure_.insert({id.fingerprint, id.concurrency, id.workload_key});
    if (store_.reachable()) {
      db_error("resume lookup", done.error());
    } else {
      note(
          fmt::format("database {} is away: {} conc {} is measured again, and stored only if the "
                      "run has no result for it",
                      store::database_name(db_path_.string()), id.config_key, id.concurrency));
    }
    return std::nullopt;
  }
  if (!*done) return std::nullopt;
  metrics::PointResult p = from_record(**done, id.config_key);
  p.id = id;
  p.status = metrics::PointStatus::kResumed;
  return p;
}

std::optional<metrics::PointResult> RunRecorder::reusable(const metrics::PointIdentity& id) {
  auto src =
      store_.reusable_point(id.fingerprint, id.concurrency, id.workload_key, id.tool_version);
  if (!src) {
    // Measuring is never wrong: the point is measured instead of copied.
    if (store_.reachable()) {
      db_error("reuse lookup", src.error());
    } else {
      note(fmt::format("database {} is away: {} conc {} is measured (not reused)",
                       store::database_name(db_path_.string()), id.config_key, id.concurrency));
    }
    return std::nullopt;
  }
  if (!*src) return std::nullopt;
  metrics::PointResult p = from_record(**src, id.config_key);
  p.id = id;
  p.status = metrics::PointStatus::kReused;
  p.reused_from_run = (*src)->run_id;
  return p;
}

void RunRecorder::write_point_files(const metrics::PointResult& p, const json::object& aggregate,
                                    const std::vector<metrics::RequestRecord>& records,
                                    int64_t origin_ns) {
  const fs::path dir = p.artifacts_dir;
  const std::string stem = fmt::format("conc_{}", p.id.concurrency);
  write_file(dir / (stem + ".json"), json_text(redacted(p.result)) + "\n");
  write_file(dir / ("agg_" + stem + ".json"), json_text(redacted(aggregate)) + "\n");
  std::string lines;
  for (const auto& r : records) {
    json::object o = metrics::record_to_json(r, origin_ns);
    // The one text a server chose (its error message) may repeat a credential it was sent; the
    // records go to the run folder and, for a team's store, into the database.
    if (!r.error.empty()) o["error"] = redact_text(r.error);
    lines += json_text(o);
    lines += '\n';
  }
  write_file(dir / store::records_file_name(p.id.concurrency), lines);
}

void RunRecorder::write_eval_files(const metrics::PointResult& p,
                                   const std::vector<json::object>& samples) {
  const fs::path dir = p.artifacts_dir;
  const std::string stem = fmt::format("eval_gsm8k_conc_{}", p.id.concurrency);
  write_file(dir / (stem + ".json"), json_text(redacted(p.result)) + "\n");
  std::string lines;
  for (const auto& s : samples) {
    lines += json_text(redacted(s));
    lines += '\n';
  }
  write_file(dir / (stem + "_samples.jsonl"), lines);
}

void RunRecorder::write_scrapes(const metrics::PointResult& p,
                                const std::vector<load::RawScrape>& scrapes) {
  if (scrapes.empty()) return;
  std::string lines;
  for (const auto& s : scrapes) {
    json::object o{{"t_unix", s.t_unix},   {"url", s.url},     {"status", s.status},
                   {"took_ms", s.took_ms}, {"error", s.error}, {"text", s.body}};
    lines += json_text(o);
    lines += '\n';
  }
  auto gz = gzip_compress(lines);
  if (!gz) {
    errors_.push_back(gz.error().message);
    return;
  }
  const fs::path file =
      fs::path(p.artifacts_dir) / fmt::format("server_metrics_conc_{}.jsonl.gz", p.id.concurrency);
  if (auto st = write_file_atomic(file, *gz); !st) errors_.push_back(st.error().message);
}

void RunRecorder::record_point(const metrics::PointResult& p, int64_t config_id,
                               const std::string& failure_kind, const std::string& log_tail) {
  if (p.status == metrics::PointStatus::kSkipped || p.status == metrics::PointStatus::kResumed)
    return;
  HeldWrite w;
  w.kind = HeldWrite::Kind::kPoint;
  w.point = to_record(p, run_id_, config_id);
  w.timeslices = p.timeslices;
  w.check_stored = unsure_.count({p.id.fingerprint, p.id.concurrency, p.id.workload_key}) > 0;
  if (!metrics::is_success(p.status) && !failure_kind.empty()) {
    store::FailureRecord f;
    f.run_id = run_id_;
    f.server_config_id = config_id == 0 ? std::nullopt : std::optional<int64_t>(config_id);
    f.kind = p.status == metrics::PointStatus::kInvalid ? "assertion" : failure_kind;
    const std::string why =
        p.status == metrics::PointStatus::kInvalid ? p.validity.text() : p.error;
    f.message = redact_text(first_line(why));
    f.log_tail = redact_text(log_tail);
    f.at = now_s();
    w.failure = std::move(f);
  }
  w.point.created_at = now_s();
  submit(std::move(w), fmt::format("point {} conc {}", p.id.config_key, p.id.concurrency));
}

void RunRecorder::record_failure(int64_t config_id, const std::string& kind,
                                 const std::string& message, const std::string& log_tail) {
  HeldWrite w;
  w.kind = HeldWrite::Kind::kFailure;
  store::FailureRecord f;
  f.run_id = run_id_;
  f.server_config_id = config_id == 0 ? std::nullopt : std::optional<int64_t>(config_id);
  f.kind = kind;
  f.message = redact_text(message);
  f.log_tail = redact_text(log_tail);
  f.at = now_s();
  w.failure = std::move(f);
  submit(std::move(w), "failure");
}

void RunRecorder::finish(const json::object& summary, store::RunStatus status) {
  write_file(run_dir_ / "summary.json", json_text(redacted(summary)) + "\n");
  bool taken = false;
  if (heartbeat_) {
    {
      std::lock_guard lock(heartbeat_->mu);
      taken = heartbeat_->taken;
    }
    heartbeat_.reset();
  }
  if (taken) {
    // Another sweep took the run for dead (no heartbeat for 10 minutes: this machine's clock, or
    // a database away that long) and resumed it: both measured into it.
    errors_.push_back(fmt::format(
        "run {} was resumed by another sweep while this one measured it (it had not heard from "
        "this one for {} s): points measured by both are stored twice; compare them with "
        "`inferbench show {}`",
        run_name_, store::kHeartbeatStaleSeconds, run_name_));
  }
  if (!held_.empty() && !flush()) wait_for_database();
  if (!held_.empty()) {
    // The run stays stored as running: once this sweep has ended, readers see it interrupted,
    // and --resume stores what the file keeps.
    errors_.push_back(fmt::format(
        "database {} is unreachable: {} are not stored; they are kept in {}, and `{}` stores "
        "them once it is back (it does not measure them again)",
        store::database_name(db_path_.string()), writes_text(held_.size(), held_points(held_)),
        held_file().string(), resume_command_));
    return;
  }
  if (auto s = store_.finish_run(run_id_, status); !s) db_error("finishing the run", s.error());
}

// --- held writes --------------------------------------------------------------------------

void RunRecorder::note(std::string text) {
  notes_.push_back(std::move(text));
  if (on_note_) on_note_(notes_.back());
}

void RunRecorder::set_on_note(std::function<void(const std::string&)> on_note) {
  on_note_ = std::move(on_note);
  if (on_note_) {
    for (const auto& n : notes_) on_note_(n);
  }
}

int64_t RunRecorder::stored_id(int64_t id) const {
  if (id >= 0) return id;
  auto it = stored_ids_.find(id);
  return it == stored_ids_.end() ? 0 : it->second;  // never stored (refused): none
}

std::string RunRecorder::describe(const HeldWrite& w) const {
  switch (w.kind) {
    case HeldWrite::Kind::kConfig:
    case HeldWrite::Kind::kConfigUpdate:
      return fmt::format("server configuration {}", w.config.config_key);
    case HeldWrite::Kind::kPoint:
      return fmt::format("point conc {} ({})", w.point.concurrency,
                         w.point.fingerprint.substr(0, 12));
    case HeldWrite::Kind::kFailure:
      return "failure";
  }
  return "write";
}

Status RunRecorder::apply(HeldWrite& w, bool retry) {
  switch (w.kind) {
    case HeldWrite::Kind::kConfig: {
      store::ServerConfigRecord c = w.config;
      c.run_id = run_id_;
      auto id = store_.add_server_config(c);
      if (!id) return id.error();
      stored_ids_[w.config.id] = *id;
      return {};
    }
    case HeldWrite::Kind::kConfigUpdate: {
      store::ServerConfigRecord c = w.config;
      c.id = stored_id(c.id);
      if (c.id == 0) return {};  // its configuration was refused: reported then
      return store_.update_server_config(c);
    }
    case HeldWrite::Kind::kPoint: {
      store::PointRecord p = w.point;
      p.run_id = run_id_;  // (a kept file's records are this run's, whatever they say)
      p.server_config_id = stored_id(p.server_config_id);
      if (retry) {
        // Its first try may have been stored all the same (the connection lost around its
        // COMMIT), or the held write stored by a sweep killed before it rewrote unstored.json.
        auto same = store_.point_stored(p);
        if (!same) return same.error();
        if (*same) return {};
      }
      if (w.check_stored) {
        auto there = store_.completed_point(run_id_, p.fingerprint, p.concurrency, p.workload_key);
        if (!there) return there.error();
        if (*there) return {};  // the run has its result already
      }
      auto f = w.failure;
      if (f) f->run_id = run_id_;
      if (f && f->server_config_id) f->server_config_id = stored_id(*f->server_config_id);
      if (f && f->server_config_id == 0) f->server_config_id.reset();
      // A server's store is read on machines without this run folder: the point's request
      // records go with it (compare resamples them), read from its folder when it is stored.
      std::vector<store::PointFile> files;
      if (store_.is_server() && !p.artifacts_dir.empty()) {
        const std::string name = store::records_file_name(p.concurrency);
        if (auto body = read_file(fs::path(p.artifacts_dir) / name)) {
          files.push_back({name, "", std::move(*body)});
        }
      }
      auto id = store_.add_point_whole(p, w.timeslices, std::move(f), files);
      if (!id) return id.error();
      return {};
    }
    case HeldWrite::Kind::kFailure: {
      if (!w.failure) return {};
      store::FailureRecord f = *w.failure;
      f.run_id = run_id_;
      if (f.server_config_id) f.server_config_id = stored_id(*f.server_config_id);
      if (f.server_config_id == 0) f.server_config_id.reset();
      auto id = store_.add_failure(f);
      if (!id) return id.error();
      return {};
    }
  }
  return {};
}

RunRecorder::Submitted RunRecorder::submit(HeldWrite w, const std::string& what) {
  if (held_.empty() || flush()) {
    auto st = apply(w, false);
    if (st) return Submitted::kStored;
    if (store_.reachable()) {
      db_error(what, st.error());
      return Submitted::kRefused;
    }
    away_since_ = std::chrono::steady_clock::now();
    stored_since_away_ = points_since_away_ = 0;
    // The store's message names the database first; said once here.
    const std::string db = store::database_name(db_path_.string());
    std::string why = first_line(st.error().message);
    if (why.rfind(db + ": ", 0) == 0) why.erase(0, db.size() + 2);
    note(fmt::format(
        "database {} went away (storing {}: {}); the sweep goes on measuring and holds its "
        "writes, in order, in {} until it is back",
        db, what, why, held_file().string()));
  }
  held_.push_back(std::move(w));
  save_held();
  return Submitted::kHeld;
}

bool RunRecorder::flush() {
  size_t done = 0, points = 0;
  for (; done < held_.size(); ++done) {
    if (auto st = apply(held_[done], true); !st) {
      if (!store_.reachable()) break;
      db_error(describe(held_[done]), st.error());  // refused, not away: it is not held again
    }
    if (held_[done].kind == HeldWrite::Kind::kPoint) ++points;
  }
  if (done == 0) return held_.empty();
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(done));
  save_held();
  stored_since_away_ += done;
  points_since_away_ += points;
  if (held_.empty() && !away_since_) {
    note(fmt::format("database {}: stored what {} kept: {}",
                     store::database_name(db_path_.string()), held_file().string(),
                     writes_text(stored_since_away_, points_since_away_)));
  } else if (held_.empty()) {
    const double away = seconds_since(*away_since_);
    note(fmt::format("database {} is back after {:.1f} s: stored the held writes, {}",
                     store::database_name(db_path_.string()), away,
                     writes_text(stored_since_away_, points_since_away_)));
    away_since_.reset();
  }
  return held_.empty();
}

void RunRecorder::save_held() {
  const fs::path file = held_file();
  if (held_.empty()) {
    std::error_code ec;
    fs::remove(file, ec);
    return;
  }
  HeldWrites h;
  h.database = store::database_name(db_path_.string());
  h.run_id = run_id_;
  h.run_name = run_name_;
  h.writes = held_;
  write_file(file, json_text(to_json(h)) + "\n");
}

Expected<std::optional<HeldWrites>> RunRecorder::read_held() {
  const fs::path file = held_file();
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::optional<HeldWrites>();
  auto text = read_file(file);
  if (!text) return text.error();
  auto h = held_writes_from_json(*text, file.string());
  if (!h) return h.error();
  const std::string db = store::database_name(db_path_.string());
  if (h->run_id != run_id_ || h->database != db) {
    return usage_error(fmt::format(
        "{}: holds writes of run {} in database {}, not of run {} in {}: resume against that "
        "database, or move the file away",
        file.string(), h->run_id, h->database, run_id_, db));
  }
  // Every server configuration it names is this run's: stored before (its id) or held (negative).
  auto configs = store_.server_configs(run_id_);
  if (!configs) return configs.error();
  std::set<int64_t> ours;
  for (const auto& c : *configs) ours.insert(c.id);
  for (size_t i = 0; i < h->writes.size(); ++i) {
    const auto& w = h->writes[i];
    std::vector<int64_t> named;
    if (w.kind == HeldWrite::Kind::kConfigUpdate) named.push_back(w.config.id);
    if (w.kind == HeldWrite::Kind::kPoint) named.push_back(w.point.server_config_id);
    if (w.failure && w.failure->server_config_id) named.push_back(*w.failure->server_config_id);
    for (int64_t id : named) {
      if (id > 0 && !ours.count(id)) {
        return input_error(
            fmt::format("{}: writes[{}]: server configuration {} is not one of run {}'s",
                        file.string(), i, id, run_id_));
      }
    }
  }
  return std::optional<HeldWrites>(std::move(*h));
}

void RunRecorder::take_held(HeldWrites h) {
  for (const auto& w : h.writes) {
    if (w.kind == HeldWrite::Kind::kConfig) {
      next_provisional_ = std::min(next_provisional_, w.config.id - 1);
    }
  }
  const size_t writes = h.writes.size(), points = held_points(h.writes);
  held_ = std::move(h.writes);
  away_since_.reset();
  stored_since_away_ = points_since_away_ = 0;
  if (flush()) return;
  note(fmt::format(
      "database {}: what {} keeps ({}) is not all stored yet; it is tried again with "
      "each write",
      store::database_name(db_path_.string()), held_file().string(), writes_text(writes, points)));
  away_since_ = std::chrono::steady_clock::now();
}

bool RunRecorder::wait_for_database() {
  note(fmt::format("waiting up to {:g} s (--db-wait) for database {} to take the held {}",
                   db_wait_s_, store::database_name(db_path_.string()),
                   writes_text(held_.size(), held_points(held_))));
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(db_wait_s_));
  while (std::chrono::steady_clock::now() < deadline && !interrupt_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (flush()) return true;
  }
  return false;
}

}  // namespace ib::sweep
