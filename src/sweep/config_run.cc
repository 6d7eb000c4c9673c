#include "sweep/config_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "core/interrupt.h"
#include "core/process.h"
#include "core/redact.h"
#include "http/client.h"
#include "launch/local.h"
#include "launch/session.h"
#include "load/bench.h"
#include "sweep/server_spec.h"
#include "verify/env_trace.h"

namespace ib::sweep {

namespace fs = std::filesystem;
namespace json = boost::json;

metrics::PointIdentity ConfigRunner::identity(const ConfigPlan& cfg, const Point& point) const {
  metrics::PointIdentity id;
  id.config_key = cfg.row.config_key;
  id.fingerprint = cfg.fingerprint;
  id.concurrency = point.conc;
  id.tool_version = INFERBENCH_VERSION;
  const workload::Workload* w = point.eval ? cfg.eval.get() : cfg.workload.get();
  if (w != nullptr) {
    id.workload_key = w->key(point.conc);
    id.workload_label = w->label();
  } else if (point.eval) {
    id.workload_key = "gsm8k";
    id.workload_label = "gsm8k";
  } else {
    id.workload_key = recipe::scenario_name(cfg.row.scenario);
    id.workload_label = id.workload_key;
  }
  return id;
}

void ConfigRunner::emit(metrics::PointResult p) {
  const std::string row = sweep_table_row(p);
  std::fputs(row.c_str(), out_);
  std::fflush(out_);
  outcome_->points.push_back(std::move(p));
}

void ConfigRunner::note(const std::string& n) {
  if (std::find(outcome_->notes.begin(), outcome_->notes.end(), n) != outcome_->notes.end()) return;
  outcome_->notes.push_back(n);
  if (o_.show_progress) fmt::print(stderr, "note: {}\n", redact_text(n));
}

void ConfigRunner::skip_all(const ConfigPlan& cfg, const std::vector<Point>& points,
                            const std::string& why) {
  for (const Point& point : points) {
    metrics::PointResult p;
    p.id = identity(cfg, point);
    p.status = metrics::PointStatus::kSkipped;
    p.error = why;
    emit(std::move(p));
  }
}

bool ConfigRunner::fail_config(const ConfigPlan& cfg, const std::vector<Point>& points,
                               store::ServerConfigRecord& rec, const std::string& kind,
                               const std::string& why) {
  const std::string first = why.substr(0, why.find('\n'));
  const std::string tail =
      why.find('\n') == std::string::npos ? "" : why.substr(why.find('\n') + 1);
  rec.status = store::ConfigStatus::kFailed;
  rec.error = why;
  rec_->update_config(rec);
  rec_->record_failure(rec.id, kind, first, tail);
  for (const Point& point : points) {
    metrics::PointResult p;
    p.id = identity(cfg, point);
    p.status = metrics::PointStatus::kFailed;
    p.error = first;
    rec_->record_point(p, rec.id, "");
    emit(std::move(p));
  }
  outcome_->errors.push_back(fmt::format("{}: {}", cfg.row.config_key, why));
  return false;
}

Expected<launch::Launcher*> ConfigRunner::launcher(const std::string& name) {
  if (auto it = launchers_.find(name); it != launchers_.end()) return it->second.get();
  std::unique_ptr<launch::Launcher> l;
  if (name == "local") {
    l = launch::make_local_launcher();
  } else if (name == "endpoint") {
    if (o_.endpoint_url.empty()) return Error{"the endpoint launcher needs --endpoint URL"};
    l = launch::make_endpoint_launcher(o_.endpoint_url);
  } else if (name == "slurm") {
    launch::SlurmOptions so = o_.slurm;
    if (so.work_dir.empty()) so.work_dir = rec_->run_dir() / "slurm";
    l = launch::make_slurm_launcher(so);
  } else {
    return Error{fmt::format("unknown launcher '{}' (local, slurm, endpoint)", name)};
  }
  auto* raw = l.get();
  launchers_[name] = std::move(l);
  return raw;
}

std::vector<ConfigRunner::Point> ConfigRunner::pending_points(const ConfigPlan& cfg,
                                                              store::ServerConfigRecord& rec) {
  std::vector<Point> pending;
  for (const Point& point : cfg.points()) {
    const metrics::PointIdentity id = identity(cfg, point);
    if (!o_.resume.empty()) {
      if (auto done = rec_->resumed(id)) {
        emit(std::move(*done));
        continue;
      }
    }
    if (o_.reuse) {
      if (auto src = rec_->reusable(id)) {
        rec_->record_point(*src, rec.id);
        emit(std::move(*src));
        continue;
      }
    }
    pending.push_back(point);
  }
  return pending;
}

std::unique_ptr<launch::ServerSession> ConfigRunner::start_session(
    const ConfigPlan& cfg, const fs::path& dir, const std::vector<Point>& pending,
    store::ServerConfigRecord& rec) {
  const recipe::RecipeRow& row = cfg.row;
  auto l = launcher(cfg.launcher);
  if (!l) {
    fail_config(cfg, pending, rec, "server-start", l.error().message);
    return nullptr;
  }
  // An endpoint runs no command of the recipe's: a row without one is still measured there.
  auto spec = server_spec_for_row(row, o_.extra_server_args, o_.inferbench_exe);
  if (!spec && (*l)->caps().starts_server) {
    fail_config(cfg, pending, rec, "server-start", spec.error().message);
    return nullptr;
  }
  launch::SessionOptions so;
  so.dir = dir;
  so.env_trace = o_.env_trace;
  so.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o_.startup_timeout_s));
  if (spec) {
    for (const auto& [k, v] : spec->env) so.watch.push_back(k);
    for (const auto& r : spec->roles) {
      for (const auto& [k, v] : r.env) {
        if (std::find(so.watch.begin(), so.watch.end(), k) == so.watch.end()) so.watch.push_back(k);
      }
    }
  }
  if (o_.check_expect && cfg.expect) {
    so.expect = *cfg.expect;
    // The variables `expect` asks about are watched too, set or not: a read of one the recipe
    // does not set is still a read (env-not-read must see it).
    auto watch = [&](const verify::ExpectSpec& e) {
      for (const auto* names : {&e.env_read, &e.env_not_read}) {
        for (const auto& k : *names) {
          if (std::find(so.watch.begin(), so.watch.end(), k) == so.watch.end()) {
            so.watch.push_back(k);
          }
        }
      }
    };
    watch(*cfg.expect);
    for (const auto& [role, e] : cfg.expect->roles) watch(e);
  }
  if (o_.show_progress) {
    const auto* sd = row.fields.if_contains("spec-decoding");
    const std::string spec_text = sd && sd->is_string() && sd->as_string() != "none"
                                      ? fmt::format(", spec-decoding {}", sd->as_string().c_str())
                                      : "";
    fmt::print(stderr, "starting {} ({}{}, {} point{})...\n", row.config_key, cfg.launcher,
               spec_text, pending.size(), pending.size() == 1 ? "" : "s");
  }
  auto started = launch::ServerSession::start(**l, spec ? *spec : launch::ServerSpec{}, so);
  if (!started) {
    if (interrupt_requested()) {
      skip_all(cfg, pending, "interrupted");
    } else {
      fail_config(cfg, pending, rec, "server-start", started.error().message);
    }
    return nullptr;
  }
  std::unique_ptr<launch::ServerSession> session = std::move(*started);
  for (const auto& n : session->notes()) note(n);
  if (session->log_available()) rec.log_path = session->log_path().string();
  rec.effective_config = session->effective().to_json();
  role_metrics_urls_.clear();
  role_metrics_labels_.clear();
  if (!session->roles().empty()) {
    // The deployment's roles: each one's address, GPUs and effective configuration.
    boost::json::object roles;
    for (const auto& r : session->roles()) {
      boost::json::object o{{"role", r.role}, {"url", r.url}, {"gpus", r.gpus}};
      if (!r.node.empty()) o["node"] = r.node;
      if (auto it = session->role_effective().find(r.label);
          it != session->role_effective().end()) {
        o["effective_config"] = it->second.to_json();
      }
      roles[r.label] = std::move(o);
      if (r.url.empty()) continue;  // a worker's rank on another node: served by its rank 0
      role_metrics_urls_.push_back(r.url + "/metrics");
      role_metrics_labels_[r.url + "/metrics"] = r.label;
    }
    rec.effective_config["roles"] = std::move(roles);
  }
  if (session->expect().checked()) rec.effective_config["expect"] = session->expect().to_json();
  rec_->update_config(rec);
  return session;
}

bool ConfigRunner::refuse_other_model(const ConfigPlan& cfg, launch::ServerSession& session,
                                      const std::vector<Point>& pending,
                                      store::ServerConfigRecord& rec) {
  // Only an endpoint can serve another model than the recipe's: say so instead of measuring 404s.
  if (session.caps().starts_server) return false;
  const recipe::RecipeRow& row = cfg.row;
  const std::string model(row.fields.at("model").as_string());
  std::vector<std::string> models;
  if (auto endpoint = http::parse_endpoint(session.url())) {
    if (auto listed = load::list_models(*endpoint)) models = std::move(*listed);
  }
  // An endpoint that lists nothing (or no /v1/models) is measured; its requests say the rest.
  if (models.empty() || std::find(models.begin(), models.end(), model) != models.end()) {
    return false;
  }
  fail_config(cfg, pending, rec, "server-start",
              fmt::format("the endpoint {} serves {}, not the recipe's model '{}' ({}.model)",
                          session.url(), fmt::join(models, ", "), model, row.config_key));
  return true;
}

bool ConfigRunner::refuse_failed_expect(const ConfigPlan& cfg, launch::ServerSession& session,
                                        const std::vector<Point>& pending,
                                        const store::ServerConfigRecord& rec) {
  // A failed assertion invalidates every point: nothing is measured on a server that is not what
  // the recipe says.
  if (!session.expect().failure) return false;
  const std::string why = *session.expect().failure;
  rec_->record_failure(rec.id, "assertion", why);
  for (const Point& point : pending) {
    metrics::PointResult p;
    p.id = identity(cfg, point);
    p.status = metrics::PointStatus::kInvalid;
    p.validity.add(metrics::InvalidKind::kExpectFailed, why);
    p.error = why;
    rec_->record_point(p, rec.id, "");
    emit(std::move(p));
  }
  return true;
}

metrics::Validity ConfigRunner::unverified(const ConfigPlan& cfg, launch::ServerSession& session,
                                           const store::ServerConfigRecord& rec) {
  // Assertions this launcher cannot observe mark the points unverified, said once.
  metrics::Validity v;
  const auto& u = session.expect().unobservable;
  if (u.empty()) return v;
  v.add(metrics::InvalidKind::kExpectUnobservable,
        fmt::format("expect unverified ({} launcher)", cfg.launcher),
        "--no-expect measures without the recipe's expect block");
  note(
      fmt::format("{}: expect cannot be checked here ({} assertion{}: {}); its points are "
                  "measured but marked invalid (unverified); run with --no-expect to measure "
                  "without it, or use the local or slurm launcher",
                  cfg.row.config_key, u.size(), u.size() == 1 ? "" : "s", fmt::join(u, "; ")));
  rec_->record_failure(rec.id, "assertion",
                       fmt::format("expect cannot be checked: {}", fmt::join(u, "; ")));
  return v;
}

void ConfigRunner::measure_points(const ConfigPlan& cfg, const fs::path& dir,
                                  launch::ServerSession& session, const std::vector<Point>& pending,
                                  const metrics::Validity& before, store::ServerConfigRecord& rec,
                                  Tally& tally) {
  for (size_t i = 0; i < pending.size(); ++i) {
    const std::vector<Point> rest(pending.begin() + static_cast<std::ptrdiff_t>(i), pending.end());
    if (interrupt_requested()) {
      outcome_->interrupted = true;
      skip_all(cfg, rest, "interrupted");
      return;
    }
    if (auto gone = session.check_alive()) {
      const std::string tail = file_tail(session.log_path(), 2048);
      fail_config(cfg, rest, rec, "server-exit", *gone + (tail.empty() ? "" : "\n" + tail));
      tally.all_ok = false;
      return;
    }
    const Point& point = pending[i];
    flush_.reset();
    if (!cfg.flush_path.empty() && !point.eval) flush_before_point(cfg, session);
    metrics::PointResult p =
        measure(cfg, point, dir, session.url(), before, session.server().power_dir());
    std::string failure_kind = before.valid() ? "point" : "";
    std::string tail;
    if (p.status == metrics::PointStatus::kFailed) {
      if (auto gone = session.check_alive()) {
        p.error += "; " + *gone;
        p.validity.add(metrics::InvalidKind::kServerExited, *gone);
        failure_kind = "server-exit";
        tail = file_tail(session.log_path(), 2048);
        outcome_->errors.push_back(
            fmt::format("{} (conc {}): {}{}", cfg.row.config_key, point.conc, *gone,
                        tail.empty() ? ""
                                     : fmt::format("\n--- {} (tail) ---\n{}",
                                                   session.log_path().filename().string(), tail)));
      }
    }
    if (p.fails_run()) {
      // A failed eval fails the sweep (its point is not ok) but stops no other configuration.
      if (!point.eval) tally.all_ok = false;
      ++tally.not_ok;
    }
    rec_->record_point(p, rec.id, failure_kind, tail);
    emit(std::move(p));
    if (outcome_->interrupted) {
      skip_all(cfg, {pending.begin() + static_cast<std::ptrdiff_t>(i) + 1, pending.end()},
               "interrupted");
      return;
    }
  }
}

// Every worker's prefix cache emptied (each worker directly: a router does not pass the flush
// on), or the single server's.
void ConfigRunner::flush_before_point(const ConfigPlan& cfg, launch::ServerSession& session) {
  std::vector<FlushTarget> targets;
  for (const auto& r : session.roles()) {
    if (r.role != "router" && !r.url.empty()) targets.push_back({r.label, r.url});
  }
  if (targets.empty()) targets.push_back({"server", session.url()});
  fmt::print(stderr, "{}: emptying the prefix cache of {} worker{} (POST {})\n", cfg.row.config_key,
             targets.size(), targets.size() == 1 ? "" : "s", cfg.flush_path);
  FlushOptions fo;
  fo.path = cfg.flush_path;
  fo.timeout_s = cfg.flush_timeout_s;
  flush_ = flush_caches(targets, fo);
  for (const auto& w : flush_->warnings) fmt::print(stderr, "warning: {}\n", w);
}

bool ConfigRunner::finish(launch::ServerSession& session, store::ServerConfigRecord& rec,
                          const Tally& tally) {
  const std::string ended = session.stop();
  if (session.env_reads()) rec.env_reads = session.env_reads()->to_json();
  if (session.role_reads()) rec.env_reads["by_role"] = session.role_reads()->to_json();
  for (const auto& e : session.write_errors()) outcome_->errors.push_back(e);
  rec.status =
      tally.all_ok && tally.not_ok == 0 ? store::ConfigStatus::kOk : store::ConfigStatus::kFailed;
  if (rec.status != store::ConfigStatus::kOk && rec.error.empty()) {
    rec.error = fmt::format("{} of {} points not ok (failed or invalid); server {}", tally.not_ok,
                            tally.points, ended);
  }
  rec_->update_config(rec);
  return tally.all_ok;
}

bool ConfigRunner::run(const ConfigPlan& cfg, size_t index) {
  const recipe::RecipeRow& row = cfg.row;
  const fs::path dir = rec_->config_dir(index, row.config_key, cfg.fingerprint);
  store::ServerConfigRecord rec;
  rec.config_key = row.config_key;
  rec.fingerprint = cfg.fingerprint;
  rec.row = row.to_json();
  rec.row.erase("conc");
  // Credentials a recipe passes to its server never reach the database: the recorder hides
  // them (core/redact.h) in everything it stores.
  rec.launcher = cfg.launcher;
  if (!rec_->add_config(rec)) {
    skip_all(cfg, cfg.points(), "not run: the database refused its server configuration");
    return false;
  }
  // Points already done: resumed from this run, or reused from an earlier one.
  const std::vector<Point> pending = pending_points(cfg, rec);
  if (pending.empty()) {
    rec.status = store::ConfigStatus::kSkipped;
    rec_->update_config(rec);
    return true;
  }
  if (interrupt_requested()) {
    skip_all(cfg, pending, "interrupted");
    return false;
  }
  // What this version cannot run is said before any server is started.
  if (!cfg.unsupported.empty())
    return fail_config(cfg, pending, rec, "unsupported", cfg.unsupported);
  auto session = start_session(cfg, dir, pending, rec);
  if (!session) return false;
  Tally tally;
  tally.points = pending.size();
  if (refuse_other_model(cfg, *session, pending, rec) ||
      refuse_failed_expect(cfg, *session, pending, rec)) {
    tally.all_ok = false;
  } else {
    measure_points(cfg, dir, *session, pending, unverified(cfg, *session, rec), rec, tally);
  }
  return finish(*session, rec, tally);
}

}  // namespace ib::sweep
