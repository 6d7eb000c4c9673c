// `inferbench runs` and `inferbench show RUN`: read the results database (src/store/) and print
// its runs as tables or JSON.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/clock.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "metrics/eval_result.h"
#include "metrics/keys.h"
#include "report/table.h"
#include "store/store.h"
#include "sweep/recorder.h"
#include "sweep/sweep.h"

namespace ib::cli {

namespace {

namespace fs = std::filesystem;

using Row = std::vector<std::string>;

// rows[0] is the header; left-aligned columns (report/table.h).
std::string table_text(const std::vector<Row>& rows) {
  if (rows.empty()) return "";
  std::vector<report::Column> cols;
  for (const auto& title : rows.front()) cols.push_back({title, report::Align::kLeft, 0, 0});
  report::Table t(std::move(cols));
  for (size_t i = 1; i < rows.size(); ++i) t.add_row(rows[i]);
  return t.render();
}

// "2026-11-30 10:45:00Z" (UTC); "-" for 0.
std::string time_text(int64_t unix_s) {
  if (unix_s == 0) return "-";
  return utc_time_text("%Y-%m-%d %H:%M:%SZ", static_cast<std::time_t>(unix_s));
}

std::string duration_text(int64_t s) {
  if (s >= 3600) return fmt::format("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

// First line of `s`, at most `max` characters.
std::string one_line(const std::string& s, size_t max = 100) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max) line = line.substr(0, max - 3) + "...";
  return line;
}

std::string labels_text(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& l : labels) {
    if (!out.empty()) out += ',';
    out += l;
  }
  return out.empty() ? "-" : out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

std::string or_dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

// One write; a reader that stops early (`| head`) is not an error worth reporting.
void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// Opens the database read-only (never created, migrated or changed); a missing file is a usage
// error, not a new empty database.
Expected<store::Store> open_store(const std::string& command, const std::string& db) {
  if (!store::database_exists(db)) {
    return Error{
        fmt::format("inferbench {}: no results database at {} (a sweep creates it; "
                    "choose another with --db)",
                    command, db)};
  }
  auto s = store::Store::open_read_only(db);
  if (!s) return Error{fmt::format("inferbench {}: {}", command, s.error().message)};
  return s;
}

// ---------------------------------------------------------------------------------------------
// inferbench runs

struct RunsOptions {
  std::string db = store::default_database();
  bool json = false;
  int limit = 20;
};

std::string runs_table(const std::vector<store::RunSummary>& runs) {
  std::vector<Row> rows;
  rows.push_back(
      {"ID", "NAME", "STARTED", "STATUS", "OK", "FAILED", "REUSED", "INVALID", "LABELS", "GIT"});
  for (const auto& s : runs) {
    const auto& r = s.run;
    rows.push_back({std::to_string(r.id), r.name, time_text(r.started_at),
                    std::string(store::status_name(r.status)), std::to_string(s.points.ok),
                    std::to_string(s.points.failed), std::to_string(s.points.reused),
                    std::to_string(s.points.invalid), labels_text(r.labels),
                    or_dash(r.git_revision.substr(0, 12))});
  }
  std::string out = table_text(rows);
  // Runs stored as running: whether their sweep is alive, gone (shown interrupted) or unknown.
  for (const auto& s : runs) {
    if (!s.run.status_note.empty()) {
      out += fmt::format("run {} {}: {}\n", s.run.id, store::status_name(s.run.status),
                         s.run.status_note);
    }
  }
  return out;
}

int run_runs(const RunsOptions& o) {
  auto st = open_store("runs", o.db);
  if (!st) {
    fmt::print(stderr, "{}\n", st.error().message);
    return kExitUsage;
  }
  auto runs = st->list_runs(o.limit);
  if (!runs) {
    return fail("runs", runs.error());
  }
  if (o.json) {
    boost::json::array out;
    for (const auto& s : *runs) out.push_back(store::to_json(s));
    print(json_text(out) + "\n");
  } else {
    print(runs_table(*runs));
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------
// inferbench show RUN

struct ShowOptions {
  std::string run;
  std::string db = store::default_database();
  bool json = false;
  int64_t timeslices_point = 0;  // --timeslices POINT: that point's time series
  std::string format = "table";  // table | csv | json
  CLI::Option* format_option = nullptr;
};

// `sweep --repeat N`: which repeat this run is (compare reads the group's runs together); empty
// for a run that is not one of a group.
std::string repeat_text(const boost::json::object& options) {
  const auto* rep = options.if_contains("repeat");
  if (!rep || !rep->is_object()) return "";
  const auto& ro = rep->as_object();
  const auto* index = ro.if_contains("index");
  const auto* count = ro.if_contains("count");
  const auto* group = ro.if_contains("group");
  if (index && index->is_int64() && count && count->is_int64() && group && group->is_string()) {
    return fmt::format("  repeat {} of {} (group {})\n", index->as_int64(), count->as_int64(),
                       std::string(group->as_string()));
  }
  return "";
}

// The lines above the tables: the run's identity, times, labels, repeat, command and point counts.
std::string run_header_text(const store::RunDetails& d) {
  const auto& r = d.run;
  std::string out = fmt::format("run {}  {}  {}\n", r.id, r.name, store::status_name(r.status));
  if (!r.status_note.empty()) out += fmt::format("  {}\n", r.status_note);
  out += fmt::format("  tool {}  git {}  host {}\n", or_dash(r.tool_version),
                     or_dash(r.git_revision), or_dash(r.host));
  out += fmt::format("  started {}  ended {}", time_text(r.started_at), time_text(r.ended_at));
  if (r.ended_at >= r.started_at && r.ended_at != 0) {
    out += fmt::format(" ({})", duration_text(r.ended_at - r.started_at));
  }
  out += '\n';
  out += fmt::format("  labels {}\n", labels_text(r.labels));
  out += repeat_text(r.options);
  if (!r.command_line.empty()) out += fmt::format("  command {}\n", r.command_line);
  out += fmt::format("  points {} ok, {} failed, {} reused, {} invalid\n", d.counts.ok,
                     d.counts.failed, d.counts.reused, d.counts.invalid);
  return out;
}

// The key of one of the run's server configurations by its id, for the tables that name a
// point's or a failure's configuration: "-" for none, "#ID" for an id the run does not have.
class ConfigKeys {
 public:
  explicit ConfigKeys(const std::vector<store::ServerConfigRecord>& configs) {
    for (const auto& c : configs) by_id_[c.id] = &c;
  }
  std::string operator()(std::optional<int64_t> id) const {
    if (!id || *id == 0) return "-";
    auto it = by_id_.find(*id);
    return it == by_id_.end() ? fmt::format("#{}", *id) : it->second->config_key;
  }

 private:
  std::map<int64_t, const store::ServerConfigRecord*> by_id_;
};

std::string configs_section(const store::RunDetails& d) {
  std::vector<Row> rows;
  rows.push_back({"ID", "KEY", "FINGERPRINT", "LAUNCHER", "STATUS", "LOG / ERROR"});
  for (const auto& c : d.configs) {
    rows.push_back({std::to_string(c.id), c.config_key, c.fingerprint.substr(0, 12),
                    or_dash(c.launcher), std::string(store::status_name(c.status)),
                    c.error.empty() ? or_dash(c.log_path) : one_line(c.error)});
  }
  return "\nSERVER CONFIGURATIONS\n" + table_text(rows);
}

// Who read one of the recipe's environment variables: "exe (function), ..." or "never read".
std::string readers_text(const boost::json::value& variable) {
  const auto* readers = variable.as_object().if_contains("readers");
  if (!readers || !readers->is_array() || readers->as_array().empty()) return "never read";
  std::vector<std::string> names;
  for (const auto& reader : readers->as_array()) {
    std::string exe(reader.at("exe").as_string());
    names.push_back(fmt::format("{} ({})", exe.substr(exe.rfind('/') + 1),
                                std::string(reader.at("function").as_string())));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// What each server showed: its engine, how many effective settings were captured, and which of
// the recipe's environment variables its processes read (docs/env-trace.md).
// A disaggregated deployment: the roles whose processes read `var` (" [roles: decode]").
std::string roles_reading(const boost::json::object& env_reads, const std::string& var) {
  const auto* by_role = env_reads.if_contains("by_role");
  if (by_role == nullptr || !by_role->is_object()) return "";
  std::vector<std::string> roles;
  for (const auto& r : by_role->as_object()) {
    const auto* read = r.value().is_object() ? r.value().as_object().if_contains("read") : nullptr;
    const auto* v = read && read->is_object() ? read->as_object().if_contains(var) : nullptr;
    if (v && v->is_bool() && v->as_bool()) roles.emplace_back(r.key());
  }
  return fmt::format(" [roles: {}]", roles.empty() ? std::string("none") : join(roles, ", "));
}

// The engine's installed files a server's processes wrote while it ran (a run-time patch:
// env_reads' "engine_writes", docs/env-trace.md): one line each, at most ten a server.
std::string engine_writes_text(const store::RunDetails& d) {
  std::string out;
  for (const auto& c : d.configs) {
    const auto* writes = c.env_reads.if_contains("engine_writes");
    if (writes == nullptr || !writes->is_array()) continue;
    size_t shown = 0;
    for (const auto& w : writes->as_array()) {
      const auto* o = w.if_object();
      const auto* path = o ? o->if_contains("path") : nullptr;
      if (path == nullptr || !path->is_string()) continue;
      if (++shown > 10) continue;
      auto text = [&](const char* key) {
        const auto* v = o->if_contains(key);
        return v && v->is_string() ? std::string(v->as_string()) : std::string("?");
      };
      const std::string exe = text("exe");
      const auto* pid = o->if_contains("pid");
      // Written by the server's processes: outside input, shown escaped.
      out += fmt::format(
          "  {}: {} (pid {} {}, {})\n", c.config_key, printable(path->as_string(), 300),
          pid && pid->is_int64() ? pid->as_int64() : 0,
          printable(exe.substr(exe.rfind('/') + 1), 60), printable(text("function"), 20));
    }
    if (shown > 10) out += fmt::format("  {}: and {} more\n", c.config_key, shown - 10);
  }
  return out.empty() ? "" : "\nENGINE FILES WRITTEN AT RUN TIME\n" + out;
}

std::string server_observation_section(const store::RunDetails& d) {
  std::vector<Row> rows;
  rows.push_back({"KEY", "ENGINE", "SETTINGS", "VARIABLE", "READ BY"});
  for (const auto& c : d.configs) {
    const auto* engine = c.effective_config.if_contains("engine");
    const auto* settings = c.effective_config.if_contains("settings");
    std::string engine_text =
        engine && engine->is_string() ? std::string(engine->as_string()) : "-";
    std::string count =
        settings && settings->is_object() ? std::to_string(settings->as_object().size()) : "-";
    const auto* vars = c.env_reads.if_contains("variables");
    if (!vars || !vars->is_object() || vars->as_object().empty()) {
      rows.push_back({c.config_key, engine_text, count, "-", "-"});
      continue;
    }
    for (const auto& kv : vars->as_object()) {
      rows.push_back(
          {c.config_key, engine_text, count, std::string(kv.key()),
           one_line(readers_text(kv.value())) + roles_reading(c.env_reads, std::string(kv.key()))});
    }
  }
  if (rows.size() <= 1) return "";
  return "\nEFFECTIVE CONFIGURATION AND ENVIRONMENT READS\n" + table_text(rows) +
         engine_writes_text(d);
}

// The run's points as the sweep reports them (status, validity, workload label).
std::vector<metrics::PointResult> point_results(const store::RunDetails& d,
                                                const ConfigKeys& key_of) {
  std::vector<metrics::PointResult> results;
  for (const auto& p : d.points) {
    results.push_back(sweep::from_record(p, key_of(p.server_config_id)));
  }
  return results;
}

// One row of the POINTS table: identity, status, the headline metrics (metrics/keys.h) and a note.
Row point_row(const store::PointRecord& p, const metrics::PointResult& pr) {
  std::string note =
      p.reused_from_run
          ? fmt::format("reused from run {}", *p.reused_from_run)
          : one_line(pr.status == metrics::PointStatus::kInvalid ? p.validity.text() : p.error, 80);
  Row row = {pr.id.config_key, p.fingerprint.substr(0, 12),
             or_dash(pr.id.workload_label.empty() ? p.workload_key : pr.id.workload_label),
             std::to_string(p.concurrency), std::string(metrics::status_name(p.status))};
  for (size_t i = 0; i < metrics::kHeadlineMetrics.size(); ++i) {
    if (metrics::kHeadlineMetrics[i].table) row.push_back(p.headline.cell(i));
  }
  row.push_back(or_dash(note));
  return row;
}

// `results[i]` is `d.points[i]` as point_results made it.
std::string points_section(const store::RunDetails& d,
                           const std::vector<metrics::PointResult>& results) {
  Row header = {"KEY", "FINGERPRINT", "WORKLOAD", "CONC", "STATUS"};
  for (const auto& k : metrics::kHeadlineMetrics) {
    if (k.table) header.push_back(upper(k.title));
  }
  header.push_back("NOTE");
  std::vector<Row> rows;
  rows.push_back(std::move(header));
  for (size_t i = 0; i < d.points.size(); ++i) rows.push_back(point_row(d.points[i], results[i]));
  return "\nPOINTS\n" + table_text(rows);
}

// Accuracy evals (docs/evals.md): exact match of both filters with their standard errors, and
// the gate.
std::string accuracy_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  std::vector<Row> rows;
  rows.push_back({"POINT", "KEY", "CONC", "TASK", "STRICT-MATCH", "FLEXIBLE-EXTRACT", "N",
                  "THRESHOLD", "GATE"});
  for (const auto& p : d.points) {
    auto e = metrics::eval_summary(p.result);
    if (!e) continue;
    rows.push_back({std::to_string(p.id), key_of(p.server_config_id), std::to_string(p.concurrency),
                    e->task, metrics::EvalSummary::cell(e->em_strict, e->em_strict_se),
                    metrics::EvalSummary::cell(e->em_flexible, e->em_flexible_se),
                    std::to_string(e->n_eff),
                    std::isnan(e->threshold) ? "-" : fmt::format("{:.2f}", e->threshold),
                    !e->gate_passed   ? "-"
                    : *e->gate_passed ? "passed"
                                      : "FAILED"});
  }
  if (rows.size() <= 1) return "";
  return "\nACCURACY\n" + table_text(rows);
}

// `o[k]` times `scale`, formatted by `f`; "-" when absent or not a number.
std::string scaled_cell(const boost::json::object& o, const char* k, double scale, const char* f) {
  const auto* v = o.if_contains(k);
  return v && v->is_number() ? fmt::format(fmt::runtime(f), v->to_number<double>() * scale)
                             : std::string("-");
}

// The power column of a point whose power is valid: "valid", unless InferenceX's accumulator
// cross-check missed. The check is advisory; a miss is worth seeing here.
std::string valid_power_text(const boost::json::object& ev) {
  const auto* acc = ev.if_contains("accumulator_check");
  if (!acc || !acc->is_object()) return "valid";
  const auto& a = acc->as_object();
  const auto* within = a.if_contains("within_tolerance");
  const auto* err = a.if_contains("relative_error");
  if (a.contains("available") && a.at("available") == true && within && *within == false && err &&
      err->is_number()) {
    return fmt::format("valid; energy counter differs {:.0f}%*", err->to_number<double>() * 100);
  }
  return "valid";
}

// The power column: valid, the reasons it is not, or "-" when nothing sampled.
std::string power_text(const boost::json::object& ev) {
  const auto* valid = ev.if_contains("power_valid");
  if (!valid || !valid->is_bool()) return "-";
  if (valid->as_bool()) return valid_power_text(ev);
  const auto* reasons = ev.if_contains("reasons");
  if (!reasons || !reasons->is_array() || reasons->as_array().empty()) return "-";
  std::vector<std::string> names;
  for (const auto& reason : reasons->as_array()) {
    const auto* name = reason.is_object() ? reason.as_object().if_contains("reason") : nullptr;
    names.push_back(name && name->is_string() ? std::string(name->as_string()) : "?");
  }
  return "invalid: " + fmt::format("{}", fmt::join(names, ","));
}

// One TELEMETRY row: the point's server metrics and GPU energy; nullopt when it has neither.
// A result's `telemetry.server` block (the server's metrics over the point); null without one.
const boost::json::object* server_summary(const boost::json::object& result) {
  const auto* t = result.if_contains("telemetry");
  const auto* server = t && t->is_object() ? t->as_object().if_contains("server") : nullptr;
  return server && server->is_object() ? &server->as_object() : nullptr;
}

std::optional<Row> telemetry_row(const store::PointRecord& p, const ConfigKeys& key_of) {
  const auto* server = server_summary(p.result);
  const auto* energy = p.result.if_contains("energy");
  const bool has_energy = energy != nullptr && energy->is_object();
  if (server == nullptr && !has_energy) return std::nullopt;
  static const boost::json::object kNone;
  const auto& sv = server != nullptr ? *server : kNone;
  const auto& ev = has_energy ? energy->as_object() : kNone;
  const auto* engine = sv.if_contains("engine");
  return Row{std::to_string(p.id),
             key_of(p.server_config_id),
             std::to_string(p.concurrency),
             engine && engine->is_string() ? std::string(engine->as_string()) : "-",
             scaled_cell(sv, "slices", 1, "{:.0f}"),
             scaled_cell(sv, "peak_kv_usage", 100, "{:.1f}"),
             scaled_cell(sv, "mean_running", 1, "{:.1f}"),
             scaled_cell(sv, "mean_waiting", 1, "{:.1f}"),
             scaled_cell(sv, "preemptions", 1, "{:.0f}"),
             scaled_cell(sv, "prefix_hit_rate", 100, "{:.1f}"),
             scaled_cell(sv, "spec_acceptance_length", 1, "{:.2f}"),
             scaled_cell(ev, "avg_power_w", 1, "{:.0f}"),
             scaled_cell(ev, "joules_per_output_token", 1, "{:.3f}"),
             power_text(ev)};
}

// A point's stream in tokens, not events (docs/metrics.md, "Tokens per event"): shown when its
// events carried several tokens, or a golden acceptance length was checked.
std::optional<Row> stream_row(const store::PointRecord& p, const ConfigKeys& key_of) {
  const auto& r = p.result;
  const auto* tpe = r.if_contains("mean_tokens_per_event");
  const auto* golden = r.if_contains("spec_acceptance");
  const bool several = tpe && tpe->is_number() && tpe->to_number<double>() > 1.0001;
  const bool uncounted = r.contains("itl_note");
  if (!several && !uncounted && !(golden && golden->is_object())) return std::nullopt;
  std::string check = "-";
  if (golden && golden->is_object()) {
    const auto& g = golden->as_object();
    const auto* passed = g.if_contains("passed");
    check = fmt::format("{} {}", passed && passed->is_bool() && passed->as_bool() ? "ok" : "MISS",
                        scaled_cell(g, "golden", 1, "{:.2f}"));
  }
  static const boost::json::object kNone;
  const auto* server = server_summary(r);
  const auto& sv = server != nullptr ? *server : kNone;
  return Row{std::to_string(p.id),
             key_of(p.server_config_id),
             std::to_string(p.concurrency),
             scaled_cell(r, "mean_tokens_per_event", 1, "{:.2f}"),
             scaled_cell(r, "median_itl_ms", 1, "{:.3f}"),
             scaled_cell(r, "median_icl_ms", 1, "{:.3f}"),
             scaled_cell(r, "max_stall_ms", 1, "{:.1f}"),
             scaled_cell(r, "client_acceptance_length", 1, "{:.2f}"),
             scaled_cell(sv, "spec_acceptance_length", 1, "{:.2f}"),
             scaled_cell(r, "response_acceptance_length", 1, "{:.2f}"),
             check};
}

std::string stream_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  std::vector<Row> rows;
  rows.push_back({"POINT", "KEY", "CONC", "TOK/EVENT", "P50 ITL MS", "P50 ICL MS", "MAX STALL MS",
                  "CLIENT AL", "SERVER AL", "RESPONSE AL", "GOLDEN AL"});
  bool uncounted = false;
  for (const auto& p : d.points) {
    if (auto row = stream_row(p, key_of)) rows.push_back(std::move(*row));
    uncounted = uncounted || p.result.contains("itl_note");
  }
  if (rows.size() <= 1) return "";
  std::string text =
      "\nSTREAMS (several tokens an event: ITL per token, ICL per event; docs/metrics.md)\n" +
      table_text(rows);
  if (uncounted) {
    text +=
        "- : some points' tokens per event were not counted (the server gave no usage on every "
        "event): their ITL is not computed; sweep or bench with --continuous-usage\n";
  }
  return text;
}

// A disaggregated deployment's time to first token by part (docs/metrics.md, "TTFT
// attribution"): the medians, one line per point that has them.
std::string attribution_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  std::vector<Row> rows;
  Row header{"POINT", "KEY", "CONC", "P50 TTFT MS"};
  for (const char* part : metrics::kTtftPartKeys) header.push_back(upper(part));
  header.push_back("UNATTRIBUTED");
  rows.push_back(header);
  for (const auto& p : d.points) {
    const auto* att = p.result.if_contains("ttft_attribution");
    if (att == nullptr || !att->is_object()) continue;
    const auto* parts = att->as_object().if_contains("parts");
    const auto* rest = att->as_object().if_contains("unattributed");
    Row row{std::to_string(p.id), key_of(p.server_config_id), std::to_string(p.concurrency),
            scaled_cell(p.result, "median_ttft_ms", 1, "{:.2f}")};
    for (const char* part : metrics::kTtftPartKeys) {
      const auto* one =
          parts && parts->is_object() ? parts->as_object().if_contains(part) : nullptr;
      row.push_back(one && one->is_object()
                        ? scaled_cell(one->as_object(), "median_ms", 1, "{:.2f}")
                        : std::string("-"));
    }
    row.push_back(rest && rest->is_object()
                      ? scaled_cell(rest->as_object(), "median_ms", 1, "{:.2f}")
                      : std::string("-"));
    rows.push_back(std::move(row));
  }
  if (rows.size() <= 1) return "";
  return std::string(
             "\nTTFT ATTRIBUTION (disaggregated: median ms by part, as the workers "
             "report them; UNATTRIBUTED is TTFT minus the parts: network and HTTP "
             "between the processes)\n") +
         table_text(rows);
}

// The engine's own timing of each request (docs/metrics.md, "Server timing"): medians, one line per
// point whose responses carried it.
std::string server_timing_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  std::vector<Row> rows;
  rows.push_back({"POINT", "KEY", "CONC", "REQUESTS", "P50 TTFT MS", "QUEUE", "ENGINE TTFT",
                  "OUTSIDE ENGINE", "GENERATION"});
  for (const auto& p : d.points) {
    const auto* st = p.result.if_contains("server_timing");
    if (st == nullptr || !st->is_object()) continue;
    const auto& o = st->as_object();
    auto median = [&](const char* k) {
      const auto* v = o.if_contains(k);
      return v && v->is_object() ? scaled_cell(v->as_object(), "median_ms", 1, "{:.2f}")
                                 : std::string("-");
    };
    rows.push_back({std::to_string(p.id), key_of(p.server_config_id), std::to_string(p.concurrency),
                    scaled_cell(o, "requests", 1, "{:.0f}"),
                    scaled_cell(p.result, "median_ttft_ms", 1, "{:.2f}"), median("queue"),
                    median("engine_ttft"), median("outside_engine"), median("generation")});
  }
  if (rows.size() <= 1) return "";
  return std::string(
             "\nSERVER TIMING (median ms per request, as the engine reported each: vLLM's "
             "--enable-per-request-metrics; OUTSIDE ENGINE is TTFT minus queue and engine TTFT: "
             "the frontend, tokenization, network and HTTP)\n") +
         table_text(rows);
}

// o[k] when it is an object, else an empty one.
boost::json::object sub_object(const boost::json::object& o, const char* k) {
  const auto* v = o.if_contains(k);
  return v && v->is_object() ? v->as_object() : boost::json::object{};
}

// A timed trace's replay (docs/trace-replay.md, "Fidelity"): how faithful each point was.
std::string trace_fidelity_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  std::vector<Row> rows;
  rows.push_back({"POINT", "KEY", "CAP", "SENT", "RATE ×", "LAG P50 MS", "LAG P99 MS",
                  "INPUTS EXACT", "OUTPUTS EXACT", "HIT % THEORY", "HIT % SERVER", "VALID"});
  std::vector<std::string> reasons;
  for (const auto& p : d.points) {
    const auto* f = p.result.if_contains("trace_fidelity");
    if (f == nullptr || !f->is_object()) continue;
    const auto& o = f->as_object();
    const auto a = sub_object(o, "arrivals"), in = sub_object(o, "input_tokens"),
               out = sub_object(o, "output_tokens"), c = sub_object(o, "prefix_cache");
    const auto ratio = [](const boost::json::object& x) {
      return scaled_cell(x, "exact", 1, "{:.0f}") + "/" +
             scaled_cell(x, "server_counted", 1, "{:.0f}");
    };
    const bool valid = o.contains("valid") && o.at("valid").is_bool() && o.at("valid").as_bool();
    rows.push_back(
        {std::to_string(p.id), key_of(p.server_config_id),
         p.concurrency > 0 ? std::to_string(p.concurrency) : "none",
         scaled_cell(a, "sent", 1, "{:.0f}") + "/" + scaled_cell(a, "scheduled", 1, "{:.0f}"),
         scaled_cell(a, "rate_factor", 1, "{:g}"), scaled_cell(a, "lag_p50_ms", 1, "{:.2f}"),
         scaled_cell(a, "lag_p99_ms", 1, "{:.2f}"), ratio(in), ratio(out),
         scaled_cell(c, "theoretical_hit_pct", 1, "{:.1f}"),
         scaled_cell(c, "server_hit_pct", 1, "{:.1f}"), valid ? "yes" : "NO"});
    if (const auto* rs = o.if_contains("invalid_reasons"); rs && rs->is_array()) {
      for (const auto& r : rs->as_array()) {
        const auto* m = r.is_object() ? r.as_object().if_contains("message") : nullptr;
        if (m == nullptr || !m->is_string()) continue;
        reasons.push_back(fmt::format("  point {}: {}", p.id, std::string(m->as_string())));
      }
    }
  }
  if (rows.size() <= 1) return "";
  std::string text =
      "\nTRACE FIDELITY (timed trace replay: inputs and outputs as the server counted them vs "
      "the trace; the theoretical hit is an unbounded cache's)\n" +
      table_text(rows);
  for (const auto& r : reasons) text += r + "\n";
  return text;
}

// A disaggregated deployment's roles side by side (docs/telemetry.md, "Disaggregated
// deployments"): which side requests wait for, each side's token rate per GPU and energy.
std::string rate_match_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  const auto json_str = [](const boost::json::object& o, const char* k) {
    const auto* v = o.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string("-");
  };
  std::vector<Row> rows;
  rows.push_back({"POINT", "KEY", "CONC", "P:D", "P IN TOK/S/GPU", "D OUT TOK/S/GPU", "P QUEUE MS",
                  "D QUEUE MS", "KV MS", "BOUND", "PREFILL J/IN TOK", "DECODE J/OUT TOK"});
  std::vector<std::string> whys;
  for (const auto& p : d.points) {
    const auto* t = p.result.if_contains("telemetry");
    const auto* rm = t && t->is_object() ? t->as_object().if_contains("rate_match") : nullptr;
    if (rm == nullptr || !rm->is_object()) continue;
    const auto& r = rm->as_object();
    const auto pre = sub_object(r, "prefill"), dec = sub_object(r, "decode");
    const auto energy = sub_object(p.result, "energy");
    rows.push_back(
        {std::to_string(p.id), key_of(p.server_config_id), std::to_string(p.concurrency),
         scaled_cell(pre, "workers", 1, "{:.0f}") + ":" + scaled_cell(dec, "workers", 1, "{:.0f}"),
         scaled_cell(pre, "input_tokens_per_s_per_gpu", 1, "{:.0f}"),
         scaled_cell(dec, "output_tokens_per_s_per_gpu", 1, "{:.0f}"),
         scaled_cell(pre, "queue_ms_p50", 1, "{:.2f}"),
         scaled_cell(dec, "queue_ms_p50", 1, "{:.2f}"),
         scaled_cell(r, "kv_transfer_ms_p50", 1, "{:.2f}"), json_str(r, "bound"),
         scaled_cell(energy, "prefill_joules_per_input_token", 1, "{:.5f}"),
         scaled_cell(energy, "decode_joules_per_output_token", 1, "{:.4f}")});
    whys.push_back(fmt::format("- point {}: {}", p.id, json_str(r, "why")));
  }
  if (rows.size() <= 1) return "";
  std::string text =
      "\nROLES (disaggregated: input tokens/s over the prefill GPUs, output over the decode GPUs; "
      "queue medians from the TTFT attribution; energy from each role's GPUs; "
      "docs/telemetry.md)\n" +
      table_text(rows);
  for (const auto& w : whys) text += w + "\n";
  return text;
}

// What the server did meanwhile (docs/telemetry.md): one line per point with server metrics.
std::string telemetry_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  std::vector<Row> rows;
  rows.push_back({"POINT", "KEY", "CONC", "ENGINE", "SLICES", "PEAK KV %", "MEAN RUNNING",
                  "MEAN WAITING", "PREEMPTIONS", "PREFIX HIT %", "ACCEPT LEN", "W/GPU", "J/OUT TOK",
                  "POWER"});
  for (const auto& p : d.points) {
    if (auto row = telemetry_row(p, key_of)) rows.push_back(std::move(*row));
  }
  if (rows.size() <= 1) return "";
  std::string text =
      "\nTELEMETRY (server metrics and GPU energy during each point; `show RUN --timeslices "
      "POINT`)\n" +
      table_text(rows);
  const bool counter_note = std::any_of(rows.begin(), rows.end(), [](const Row& r) {
    return r.back().find("energy counter differs") != std::string::npos;
  });
  if (counter_note) {
    text +=
        "* the GPUs' own energy counters (the driver's accumulator, counting continuously) and "
        "the integral of the once-a-second power samples disagree by that much over the point, "
        "beyond the check's 5% tolerance: the samples missed what happened between them (on A100 "
        "and H100 a power reading covers only part of its second). W/GPU and J/OUT TOK use the "
        "samples; the check is advisory, as in InferenceX (docs/telemetry.md, \"Accumulator "
        "cross-check\")\n";
  }
  return text;
}

std::string failures_section(const store::RunDetails& d, const ConfigKeys& key_of) {
  if (d.failures.empty()) return "\nFAILURES\nnone\n";
  std::vector<Row> rows;
  rows.push_back({"AT", "KIND", "KEY", "POINT", "MESSAGE"});
  for (const auto& f : d.failures) {
    rows.push_back({time_text(f.at), f.kind, key_of(f.server_config_id),
                    f.point_id ? std::to_string(*f.point_id) : "-", one_line(f.message)});
  }
  return "\nFAILURES\n" + table_text(rows);
}

// `inferbench show RUN`: the header, then one section per table.
std::string show_text(const store::RunDetails& d) {
  const ConfigKeys key_of(d.configs);
  const std::vector<metrics::PointResult> results = point_results(d, key_of);
  std::string out = run_header_text(d);
  out += configs_section(d);
  out += server_observation_section(d);
  out += points_section(d, results);
  out += accuracy_section(d, key_of);
  out += stream_section(d, key_of);
  out += attribution_section(d, key_of);
  out += rate_match_section(d, key_of);
  out += server_timing_section(d, key_of);
  out += trace_fidelity_section(d, key_of);
  out += telemetry_section(d, key_of);
  // Why each point that is not a success failed, in full (the first error of each cause).
  if (const std::string why = sweep::not_measured_text(results); !why.empty()) {
    out += "\nNOT MEASURED OR INVALID\n" + why;
  }
  out += failures_section(d, key_of);
  return out;
}

boost::json::object show_json(const store::RunDetails& d) {
  boost::json::object o;
  o["run"] = store::to_json(store::RunSummary{d.run, d.counts});
  boost::json::array configs, points, failures;
  for (const auto& c : d.configs) configs.push_back(store::to_json(c));
  for (const auto& p : d.points) points.push_back(store::to_json(p));
  for (const auto& f : d.failures) failures.push_back(store::to_json(f));
  o["server_configs"] = std::move(configs);
  o["points"] = std::move(points);
  o["failures"] = std::move(failures);
  return o;
}

// CSV of JSON rows: the columns of the first row, in its order; arrays joined by ';'.
std::string rows_csv(const std::vector<boost::json::object>& rows) {
  if (rows.empty()) return "";
  std::vector<std::string> cols;
  for (const auto& kv : rows.front()) cols.emplace_back(kv.key());
  std::string out = fmt::format("{}\n", fmt::join(cols, ","));
  for (const auto& r : rows) {
    std::vector<std::string> cells;
    for (const auto& c : cols) {
      const auto* v = r.if_contains(c);
      std::string cell;
      if (v == nullptr || v->is_null()) {
        cell = "";
      } else if (v->is_string()) {
        cell = std::string(v->as_string());
      } else if (v->is_double()) {
        cell = fmt::format("{}", v->as_double());  // shortest form ("1", "0.25"), not "1E0"
      } else if (v->is_int64()) {
        cell = std::to_string(v->as_int64());
      } else if (v->is_array()) {
        std::vector<std::string> parts;
        for (const auto& x : v->as_array()) {
          parts.push_back(x.is_string() ? std::string(x.as_string()) : json_text(x));
        }
        cell = fmt::format("{}", fmt::join(parts, ";"));
      } else {
        cell = json_text(*v);
      }
      if (cell.find_first_of(",\"\n") != std::string::npos) {
        std::string q = "\"";
        for (char ch : cell) {
          if (ch == '"') q += '"';
          q += ch;
        }
        cell = q + "\"";
      }
      cells.push_back(std::move(cell));
    }
    out += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return out;
}

int run_timeslices(store::Store& st, const ShowOptions& o, const store::RunRecord& run) {
  auto points = st.points(run.id);
  if (!points) {
    return fail("show", points.error());
  }
  bool in_run = false;
  for (const auto& p : *points) in_run |= p.id == o.timeslices_point;
  if (!in_run) {
    return fail("show", usage_error(fmt::format("--timeslices: run {} has no point {} (the POINT "
                                                "column of `inferbench show {}` lists them)",
                                                run.name, o.timeslices_point, run.name)));
  }
  auto slices = st.timeslices(o.timeslices_point);
  if (!slices) {
    return fail("show", slices.error());
  }
  std::vector<boost::json::object> server, client;
  for (const auto& t : *slices) (t.source == "server" ? server : client).push_back(t.data);
  if (o.format == "json") {
    boost::json::array sv(server.begin(), server.end()), cl(client.begin(), client.end());
    print(
        json_text(boost::json::object{
            {"point", o.timeslices_point}, {"server", std::move(sv)}, {"client", std::move(cl)}}) +
        "\n");
    return kExitOk;
  }
  if (o.format == "csv") {
    std::string out = "# server\n" + rows_csv(server) + "# client\n" + rows_csv(client);
    print(out);
    return kExitOk;
  }
  std::vector<Row> rows;
  rows.push_back({"SLICE", "START S", "RUNNING", "WAITING", "KV %", "PREFIX HIT %", "PREEMPT",
                  "PROMPT TOK/S", "GEN TOK/S"});
  auto cell = [](const std::optional<double>& v, double scale, int digits) {
    return v ? fmt::format("{:.{}f}", *v * scale, digits) : std::string("-");
  };
  for (const auto& t : *slices) {
    if (t.source != "server") continue;
    rows.push_back({std::to_string(t.slice), fmt::format("{:.1f}", t.start_s),
                    cell(t.running, 1, 0), cell(t.waiting, 1, 0), cell(t.kv_usage, 100, 1),
                    cell(t.prefix_hit_rate, 100, 1), cell(t.preemptions, 1, 0),
                    cell(t.prompt_tps, 1, 0), cell(t.generation_tps, 1, 0)});
  }
  std::string out = fmt::format("point {}: server timeslices\n", o.timeslices_point);
  out += rows.size() > 1 ? table_text(rows) : "none (no server metrics were read)\n";
  rows.clear();
  rows.push_back(
      {"SLICE", "START S", "STARTED", "FINISHED", "OUTPUT TOKENS", "MEAN TTFT MS", "MEAN 1/TPOT"});
  for (const auto& t : *slices) {
    if (t.source != "client") continue;
    auto count = [](const std::optional<int64_t>& v) {
      return v ? std::to_string(*v) : std::string("-");
    };
    rows.push_back({std::to_string(t.slice), fmt::format("{:.1f}", t.start_s), count(t.started),
                    count(t.finished), count(t.output_tokens), cell(t.mean_ttft_ms, 1, 1),
                    cell(t.mean_intvty, 1, 1)});
  }
  out += fmt::format("\npoint {}: client timeslices\n", o.timeslices_point);
  out += rows.size() > 1 ? table_text(rows) : "none\n";
  print(out);
  return kExitOk;
}

int run_show(const ShowOptions& o) {
  auto st = open_store("show", o.db);
  if (!st) {
    fmt::print(stderr, "{}\n", st.error().message);
    return kExitUsage;
  }
  auto found = st->find_run(o.run);
  if (!found) return fail("show", found.error());
  if (!*found) {
    return fail("show",
                usage_error(fmt::format("no run '{}' in {} (see `inferbench runs --db {}`)", o.run,
                                        store::database_name(o.db), store::database_name(o.db))));
  }
  if (o.timeslices_point == 0 && o.format_option->count() > 0) {
    return fail("show", usage_error("--format applies to --timeslices POINT only"));
  }
  if (o.timeslices_point != 0) {
    if (o.format != "table" && o.format != "csv" && o.format != "json") {
      return fail("show", usage_error(fmt::format("--format must be table, csv or json (got '{}')",
                                                  o.format)));
    }
    return run_timeslices(*st, o, **found);
  }
  auto d = st->run_details(std::move(**found));
  if (!d) return fail("show", d.error());
  print(o.json ? json_text(show_json(*d)) + "\n" : show_text(*d));
  return kExitOk;
}

}  // namespace

RunFn register_runs(CLI::App& root) {
  auto o = std::make_shared<RunsOptions>();
  CLI::App* app = root.add_subcommand("runs", "List the runs in the results database");
  app->add_option("--db", o->db, "Results database file")
      ->check(database_file())
      ->default_str(store::database_name(o->db));
  app->add_flag("--json", o->json, "Print the runs as a JSON array");
  add_integer(app, "--limit", o->limit, "Newest N runs (0: all)", 0,
              std::numeric_limits<int>::max())
      ->capture_default_str();
  return [o]() { return run_runs(*o); };
}

RunFn register_show(CLI::App& root) {
  auto o = std::make_shared<ShowOptions>();
  CLI::App* app =
      root.add_subcommand("show", "Print one run: its server configurations, points and failures");
  app->add_option("run", o->run, "Run id or name")->required();
  app->add_option("--db", o->db, "Results database file")
      ->check(database_file())
      ->default_str(store::database_name(o->db));
  app->add_flag("--json", o->json,
                "Print everything (full result JSON of each point included) as one JSON object");
  add_integer(app, "--timeslices", o->timeslices_point,
              "Print the telemetry time series of point POINT (its id: the POINT column)", 1,
              std::numeric_limits<int64_t>::max());
  o->format_option = app->add_option("--format", o->format, "With --timeslices: table | csv | json")
                         ->capture_default_str();
  return [o]() { return run_show(*o); };
}

}  // namespace ib::cli
