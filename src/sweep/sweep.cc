#include "sweep/sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>

#include "core/command.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/strings.h"
#include "govern/labels.h"
#include "metrics/eval_result.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "report/table.h"
#include "sweep/config_run.h"
#include "sweep/recorder.h"
#include "sweep/server_spec.h"
#include "verify/expect.h"

namespace ib::sweep {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string SweepOutcome::nothing_measured() const {
  if (points.empty()) {
    return "the plan has no points (no recipe row or concurrency was selected: check the "
           "recipe files, --keys, --labels and --concurrency)";
  }
  std::map<metrics::PointStatus, int> by_status;
  for (const auto& p : points) {
    // Measured as the user chose (a time-scaled replay): not_submission() says what they are.
    if (!p.fails_run()) return "";
    ++by_status[p.status];
  }
  if (by_status.size() == 1) {
    const auto status = by_status.begin()->first;
    if (status == metrics::PointStatus::kSkipped) {
      return fmt::format("every point was skipped ({})",
                         points.front().error.substr(0, points.front().error.find('\n')));
    }
    if (status == metrics::PointStatus::kFailed) return "every point failed";
    return fmt::format("every point was {}", metrics::status_name(status));
  }
  std::string counts;
  for (const auto& [status, n] : by_status) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, metrics::status_name(status));
  }
  return fmt::format("no point succeeded ({})", counts);
}

std::string SweepOutcome::not_submission() const {
  size_t n = 0;
  std::vector<std::string> why;
  for (const auto& p : points) {
    if (metrics::is_success(p.status)) return "";
    if (p.status != metrics::PointStatus::kInvalid || !p.validity.only_chosen()) continue;
    ++n;
    for (const auto& r : p.validity.reasons) {
      // The rule's name (AgentX's "time_scaled"), as a person reads it: "time-scaled".
      std::string name = r.rule.empty() ? std::string(metrics::invalid_kind_name(r.kind)) : r.rule;
      std::replace(name.begin(), name.end(), '_', '-');
      if (std::find(why.begin(), why.end(), name) == why.end()) why.push_back(name);
    }
  }
  if (n == 0) return "";
  return fmt::format("measured {} point{}, none submission-valid: {}", n, n == 1 ? "" : "s",
                     fmt::join(why, ", "));
}

bool SweepOutcome::all_resumed() const {
  return !points.empty() && std::all_of(points.begin(), points.end(), [](const auto& p) {
    return p.status == metrics::PointStatus::kResumed;
  });
}

store::RunStatus SweepOutcome::status() const {
  using store::RunStatus;
  if (interrupted) return RunStatus::kInterrupted;
  if (points.empty()) return RunStatus::kFailed;
  for (const auto& p : points) {
    if (p.fails_run()) return RunStatus::kFailed;
  }
  return errors.empty() ? RunStatus::kOk : RunStatus::kFailed;
}

json::object SweepOutcome::to_json() const {
  json::object o;
  o["run_id"] = run_id;
  o["run"] = run_name;
  o["run_dir"] = run_dir.string();
  o["db"] = store::database_name(db.string());
  o["status"] = store::status_name(status());
  if (!interrupted) {
    o["nothing_measured"] = nothing_measured();
    o["not_submission"] = not_submission();
  }
  json::array ps;
  for (const auto& p : points) {
    json::object po = p.headline.empty() ? json::object() : p.headline.to_json();
    po["config_key"] = p.id.config_key;
    po["fingerprint"] = p.id.fingerprint;
    po["concurrency"] = p.id.concurrency;
    po["workload"] = p.id.workload_label;
    po["workload_key"] = p.id.workload_key;
    po["status"] = metrics::status_name(p.status);
    po["error"] = p.error;
    po["validity"] = p.validity.to_json();
    if (p.reused_from_run) po["reused_from_run"] = *p.reused_from_run;
    if (!p.artifacts_dir.empty() && p.measured()) {
      po["result"] = (fs::path(p.artifacts_dir) / fmt::format("conc_{}.json", p.id.concurrency))
                         .lexically_relative(run_dir)
                         .string();
    } else {
      po["result"] = "";
    }
    ps.push_back(std::move(po));
  }
  o["points"] = std::move(ps);
  json::array ns, es;
  for (const auto& n : notes) ns.emplace_back(n);
  for (const auto& e : errors) es.emplace_back(e);
  o["notes"] = std::move(ns);
  o["errors"] = std::move(es);
  return o;
}

namespace {

// The streamed point table: identity, then the headline metrics marked for tables, then status.
const report::Table& point_table() {
  static const report::Table t = [] {
    std::vector<report::Column> cols = {
        // Never cut: keys differ in their last characters as often as not (…-mtp, …-agentic),
        // and a cut key would name two configurations alike. A longer one pushes its row right.
        {"config", report::Align::kLeft, 28, 0},
        {"workload", report::Align::kLeft, 23, 0},
        {"conc", report::Align::kRight, 5, 0},
    };
    for (const auto& k : metrics::kHeadlineMetrics) {
      if (k.table) {
        cols.push_back(
            {std::string(k.title), report::Align::kRight, std::max<size_t>(k.title.size(), 8), 0});
      }
    }
    cols.push_back({"status", report::Align::kLeft, 0, 0});
    return report::Table(std::move(cols));
  }();
  return t;
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string git_revision_of(const std::vector<fs::path>& recipes) {
  if (recipes.empty()) return "";
  fs::path dir = fs::absolute(recipes.front()).parent_path();
  CommandOptions co;
  co.timeout = std::chrono::seconds(10);
  auto r = run_command({"git", "-C", dir.string(), "rev-parse", "HEAD"}, co);
  if (!r || !r->ok()) return "";
  std::string out = r->out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string sweep_table_header() {
  return point_table().header_line();
}

std::string sweep_table_row(const metrics::PointResult& p) {
  std::vector<std::string> cells = {p.id.config_key, p.id.workload_label,
                                    std::to_string(p.id.concurrency)};
  for (size_t i = 0; i < metrics::kHeadlineMetrics.size(); ++i) {
    if (metrics::kHeadlineMetrics[i].table) cells.push_back(p.headline.cell(i));
  }
  std::string status = first_line(p.status_text());
  // An eval's scores, where the throughput columns have none.
  if (auto e = metrics::eval_summary(p.result)) {
    status += fmt::format(" (strict-match {:.4f}, flexible-extract {:.4f}, n {})", e->em_strict,
                          e->em_flexible, e->n_eff);
  }
  cells.push_back(status);
  return point_table().format_row(cells);
}

std::string not_measured_text(const std::vector<metrics::PointResult>& points) {
  struct Group {
    std::string head;  // key, workload
    std::string status;
    std::vector<int64_t> concs;
  };
  std::vector<Group> groups;
  for (const auto& p : points) {
    // Measured as the user chose (a time-scaled replay): not_submission() says so.
    if (!p.fails_run()) continue;
    std::string head = fmt::format("{} {}", p.id.config_key, p.id.workload_label);
    std::string status = first_line(p.status_text());
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.head == head && g.status == status; });
    if (it == groups.end()) {
      groups.push_back({head, status, {p.id.concurrency}});
    } else {
      it->concs.push_back(p.id.concurrency);
    }
  }
  std::string out;
  for (const auto& g : groups) {
    out += fmt::format("  {} conc {}: {}\n", g.head, fmt::join(g.concs, ","), g.status);
  }
  return out;
}

Expected<SweepOutcome> run_sweep(const SweepOptions& o, std::FILE* table_out) {
  // 1. Recipes → rows → plan.
  if (o.recipes.empty()) return Error{"no recipe files given"};
  auto entries = recipe::load_master_configs(o.recipes);
  if (!entries) return entries.error();
  std::optional<recipe::RunnersFile> runners;
  if (!o.runners.empty()) {
    auto r = recipe::load_runners(o.runners);
    if (!r) return r.error();
    runners = std::move(*r);
  }
  auto selected = recipe::select_keys(*entries, o.keys);
  if (!selected) return selected.error();
  *entries = std::move(*selected);
  std::map<std::string, const recipe::ConfigEntry*> by_key;
  for (const auto& e : *entries) by_key.emplace(e.key, &e);
  auto rows = recipe::expand(*entries, runners ? &*runners : nullptr);
  if (o.stand_in == "serve-sim") stand_in_serve_sim(rows);
  govern::Labels labels;
  labels.primary = "non-canary-full-sweep-enabled";
  if (!o.labels.empty()) {
    // Modifiers alone (`--labels agentx-fast`) keep the default primary label.
    std::vector<std::string> given = o.labels;
    bool has_primary = false;
    for (const auto& l : given) {
      for (const auto& part : split(l, ',')) {
        for (const auto& p : govern::primary_labels()) has_primary |= trim(part) == p;
      }
    }
    if (!has_primary) given.insert(given.begin(), labels.primary);
    auto parsed = govern::parse_labels(given);
    if (!parsed) return parsed.error();
    labels = *parsed;
  }
  PlanOptions po;
  po.concurrencies = o.concurrencies;
  po.extra_server_args = o.extra_server_args;
  po.launcher = o.launcher;
  po.runners = runners ? &*runners : nullptr;
  po.fail_fast = o.fail_fast;
  // `expect` blocks are parsed (and a malformed one refused) now, not after a server started.
  po.check_expect = o.check_expect;
  po.workload = o.workload;
  po.workload.api = std::string(openai::api_name(o.api));
  po.workload.agentx_fast = labels.agentx_fast;
  auto planned = plan_sweep(govern::make_sweep_plan(rows, labels), by_key, po);
  if (!planned) return planned.error();
  if (planned->points() == 0) {
    return Error{
        "the recipes (with --keys, --labels and --concurrency as given) select no points; "
        "nothing would be measured (inferbench plan shows the rows)"};
  }
  return run_planned(o, *planned, std::move(by_key),
                     o.labels.empty() ? std::vector<std::string>{} : labels.all(), table_out);
}

Expected<SweepOutcome> run_planned(const SweepOptions& o, const SweepPlanned& planned,
                                   std::map<std::string, const recipe::ConfigEntry*> by_key,
                                   std::vector<std::string> labels, std::FILE* table_out) {
  // 2. Database and run folder.
  store::RunRecord fresh;
  fresh.tool_version = INFERBENCH_VERSION;
  fresh.git_revision = git_revision_of(o.recipes);
  fresh.host = host_name();
  fresh.owner = self_identity();  // how readers tell a killed sweep's run from a running one
  fresh.command_line = o.command_line;
  fresh.labels = std::move(labels);
  json::array files;
  for (const auto& f : o.recipes) files.emplace_back(f.string());
  fresh.options["recipes"] = std::move(files);
  fresh.options["reuse"] = o.reuse;
  fresh.options["launcher"] = o.launcher;
  if (o.workload.prompts_per_conc) fresh.options["prompts_per_conc"] = *o.workload.prompts_per_conc;
  if (o.workload.min_prompts) fresh.options["min_prompts"] = *o.workload.min_prompts;
  if (o.workload.warmups_per_conc) fresh.options["warmups_per_conc"] = *o.workload.warmups_per_conc;
  fresh.options["api"] = api_name(o.api);
  fresh.options["check_expect"] = o.check_expect;
  fresh.options["plan"] = planned.digest();
  if (!o.argv.empty()) fresh.options["argv"] = json::array(o.argv.begin(), o.argv.end());
  for (const auto& kv : o.extra_run_options) fresh.options[kv.key()] = kv.value();
  if (o.repeat_count > 1) {
    fresh.options["repeat"] = json::object{
        {"group", o.repeat_group}, {"index", o.repeat_index}, {"count", o.repeat_count}};
  }
  const fs::path db_path = o.database();
  auto recorder = RunRecorder::open(db_path, o.runs_dir, o.resume, std::move(fresh));
  if (!recorder) return recorder.error();

  SweepOutcome outcome;
  outcome.notes = planned.notes;
  outcome.run_id = recorder->run_id();
  outcome.run_name = recorder->run_name();
  outcome.run_dir = recorder->run_dir();
  outcome.db = db_path;

  // 3. Execute: canary first (a failure stops everything), then the groups; a failure in a
  // fail-fast group stops the rest of that group only.
  ConfigRunner runner(o, table_out, &*recorder, &outcome, std::move(by_key));
  // The plan's notes are said before anything runs (with progress on; the others as they arise),
  // each once: the command prints no summary of them at the end then.
  if (o.show_progress) {
    for (const auto& n : outcome.notes) fmt::print(stderr, "note: {}\n", redact_text(n));
  }
  // What is said of the database as the run goes on (it went away; it is back) is a note of the
  // run, said when it arises with progress on.
  recorder->set_db_wait(o.db_wait_s);
  recorder->set_on_note([&outcome, &o](const std::string& n) {
    outcome.notes.push_back(n);
    if (o.show_progress) fmt::print(stderr, "note: {}\n", redact_text(n));
  });
  std::fputs(sweep_table_header().c_str(), table_out);
  std::fflush(table_out);
  size_t index = 0;
  bool canary_failed = false;
  for (const GroupPlan& g : planned.groups) {
    bool stop_group = false;
    for (const ConfigPlan& cfg : g.configs) {
      ++index;
      if (outcome.interrupted || interrupt_requested()) {
        outcome.interrupted = true;
        runner.skip_all(cfg, cfg.points(), "interrupted");
        continue;
      }
      if (canary_failed) {
        runner.skip_all(cfg, cfg.points(), "the canary failed");
        continue;
      }
      if (stop_group) {
        runner.skip_all(cfg, cfg.points(), fmt::format("fail-fast ({} had a failure)", g.name));
        continue;
      }
      const bool ok = runner.run(cfg, index);
      if (!ok && g.name == "canary") canary_failed = true;
      if (!ok && g.fail_fast) stop_group = true;
    }
  }
  if (interrupt_requested()) outcome.interrupted = true;

  // 4. Summary. Write errors so far are part of it; the last writes' errors are reported too.
  for (const auto& e : recorder->errors()) outcome.errors.push_back(e);
  const size_t before = recorder->errors().size();
  recorder->finish(outcome.to_json(), outcome.status());
  for (size_t i = before; i < recorder->errors().size(); ++i) {
    outcome.errors.push_back(recorder->errors()[i]);
  }
  return outcome;
}

}  // namespace ib::sweep
