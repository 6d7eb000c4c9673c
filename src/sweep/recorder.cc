#include "sweep/recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.h"
#include "core/files.h"
#include "core/gzip.h"
#include "core/json_text.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/strings.h"
#include "metrics/result.h"

namespace ib::sweep {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

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
    // Refused while another live sweep measures it; a dead owner's run is taken over.
    if (auto s = rec.store_.claim_run(rec.run_id_, self_identity()); !s.ok()) {
      return Error{fmt::format("--resume {}: {}", resume, s.error().message)};
    }
    return rec;
  }
  fresh.command_line = redact_text(fresh.command_line);
  fresh.options = redacted(std::move(fresh.options));
  auto begun = begin_named_run(rec.store_, runs_dir, fresh);
  if (!begun) return begun.error();
  rec.run_dir_ = begun->first;
  rec.run_name_ = fresh.name;
  rec.run_id_ = begun->second;
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
  auto id = store_.add_server_config(stored_form(c));
  if (!id) {
    db_error(fmt::format("server configuration {}", c.config_key), id.error());
    return false;
  }
  c.id = *id;
  return true;
}

void RunRecorder::update_config(const store::ServerConfigRecord& c) {
  if (auto s = store_.update_server_config(stored_form(c)); !s) {
    db_error(fmt::format("server configuration {}", c.config_key), s.error());
  }
}

std::optional<metrics::PointResult> RunRecorder::resumed(const metrics::PointIdentity& id) {
  auto done = store_.completed_point(run_id_, id.fingerprint, id.concurrency, id.workload_key);
  if (!done) {
    db_error("resume lookup", done.error());
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
    db_error("reuse lookup", src.error());
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
    lines += json_text(metrics::record_to_json(r, origin_ns));
    lines += '\n';
  }
  write_file(dir / ("records_" + stem + ".jsonl"), lines);
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
  auto id = store_.add_point(to_record(p, run_id_, config_id));
  if (!id) {
    db_error(fmt::format("point {} conc {}", p.id.config_key, p.id.concurrency), id.error());
  } else if (!p.timeslices.empty()) {
    if (auto st = store_.add_timeslices(*id, p.timeslices); !st) {
      db_error(fmt::format("timeslices of {} conc {}", p.id.config_key, p.id.concurrency),
               st.error());
    }
  }
  if (metrics::is_success(p.status) || failure_kind.empty()) return;
  store::FailureRecord f;
  f.run_id = run_id_;
  f.server_config_id = config_id == 0 ? std::nullopt : std::optional<int64_t>(config_id);
  if (id) f.point_id = *id;
  f.kind = p.status == metrics::PointStatus::kInvalid ? "assertion" : failure_kind;
  const std::string why = p.status == metrics::PointStatus::kInvalid ? p.validity.text() : p.error;
  f.message = redact_text(why.substr(0, why.find('\n')));
  f.log_tail = redact_text(log_tail);
  if (auto added = store_.add_failure(f); !added) db_error("failure", added.error());
}

void RunRecorder::record_failure(int64_t config_id, const std::string& kind,
                                 const std::string& message, const std::string& log_tail) {
  store::FailureRecord f;
  f.run_id = run_id_;
  f.server_config_id = config_id == 0 ? std::nullopt : std::optional<int64_t>(config_id);
  f.kind = kind;
  f.message = redact_text(message);
  f.log_tail = redact_text(log_tail);
  if (auto added = store_.add_failure(f); !added) db_error("failure", added.error());
}

void RunRecorder::finish(const json::object& summary, store::RunStatus status) {
  write_file(run_dir_ / "summary.json", json_text(redacted(summary)) + "\n");
  if (auto s = store_.finish_run(run_id_, status); !s) db_error("finishing the run", s.error());
}

}  // namespace ib::sweep
