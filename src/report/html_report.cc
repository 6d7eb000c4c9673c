#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "core/clock.h"
#include "core/json_text.h"
#include "metrics/eval_result.h"
#include "report/report_assets.h"  // generated from src/report/assets/ (src/CMakeLists.txt)

namespace ib::report {

namespace json = boost::json;

namespace {

std::string str_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_bool()) return v->as_bool() ? "true" : "false";
  return json_text(*v);
}

std::optional<double> num_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

const json::object* obj_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}

json::value num_or_null(std::optional<double> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

bool is_agentic(const json::object& result) {
  return result.contains("agentic") || str_at(result, "load_shape") == "agentic_replay";
}

// The workload a point ran, as the panel title shows it.
std::string workload_label(const store::PointRecord& p) {
  std::string label = str_at(p.result, "workload_label");
  if (!label.empty()) return label;
  // A point that measured nothing has no result: its workload key ("fixed-seq-len:{...}") still
  // says the lengths, in the sweep's own label form.
  const size_t colon = p.workload_key.find(':');
  if (colon != std::string::npos) {
    json::error_code ec;
    auto key = json::parse(std::string_view(p.workload_key).substr(colon + 1), ec);
    if (!ec && key.is_object()) {
      const auto isl = num_at(key.as_object(), "isl");
      const auto osl = num_at(key.as_object(), "osl");
      if (isl && osl) return fmt::format("isl {:g} / osl {:g}", *isl, *osl);
    }
  }
  return p.workload_key.empty() ? "unknown workload" : p.workload_key;
}

// The replay's time scale (agentic --time-scale, or the workload key's), 1 when not scaled.
double time_scale_of(const store::PointRecord& p) {
  if (const auto* a = obj_at(p.result, "agentic")) {
    if (const auto* replay = obj_at(*a, "replay")) {
      if (auto ts = num_at(*replay, "time_scale")) return *ts;
    }
  }
  json::error_code ec;
  auto key = json::parse(p.workload_key, ec);
  if (!ec && key.is_object()) {
    for (const char* k : {"time_scale", "time-scale"}) {
      if (auto ts = num_at(key.as_object(), k)) return *ts;
    }
  }
  return 1;
}

// A statistic block {p50, p75, ...} of the agentic result, or null.
json::object agentic_stats(const json::object& agentic, std::string_view key, double scale) {
  json::object out;
  const auto* block = obj_at(agentic, key);
  for (const char* p : {"p50", "p75", "p90", "p95"}) {
    std::optional<double> v = block ? num_at(*block, p) : std::nullopt;
    out[p] = num_or_null(v ? std::optional(*v * scale) : std::nullopt);
  }
  return out;
}

// A fixed-sequence statistic: median_<name>, p90_<name>, p99_<name> as p50, p90, p99.
json::object fixed_stats(const json::object& r, std::string_view name, double scale) {
  json::object out;
  for (auto [prefix, pct] : {std::pair{"median", "p50"}, {"p90", "p90"}, {"p99", "p99"}}) {
    auto v = num_at(r, fmt::format("{}_{}", prefix, name));
    // 0 is the result JSON's "undefined" for an inverse (no TPOT): not a measurement.
    if (v && *v == 0 && name.find("intvty") != std::string_view::npos) v.reset();
    out[pct] = num_or_null(v ? std::optional(*v * scale) : std::nullopt);
  }
  return out;
}

// The point's metrics, flat and in one shape for both workloads: m.x[statistic][pXX].
json::object point_metrics(const store::PointRecord& p) {
  const json::object& r = p.result;
  json::object m;
  if (is_agentic(r)) {
    const json::object* a = obj_at(r, "agentic");
    static const json::object kNone;
    const json::object& ag = a ? *a : kNone;
    m["tput_per_gpu"] = num_or_null(num_at(ag, "tput_per_gpu"));
    m["output_tput_per_gpu"] = num_or_null(num_at(ag, "output_tput_per_gpu"));
    m["input_tput_per_gpu"] = num_or_null(num_at(ag, "input_tput_per_gpu"));
    m["intvty"] = agentic_stats(ag, "intvty", 1);
    m["e2e_norm_intvty"] = agentic_stats(ag, "e2e_norm_intvty", 1);
    m["ttft_ms"] = agentic_stats(ag, "ttft_ms", 1);
    m["e2el_ms"] = agentic_stats(ag, "e2el_ms", 1);
    m["percentiles"] = json::array{"p50", "p75", "p90", "p95"};
  } else {
    m["tput_per_gpu"] = num_or_null(num_at(r, "tput_per_gpu"));
    m["output_tput_per_gpu"] = num_or_null(num_at(r, "output_tput_per_gpu"));
    m["input_tput_per_gpu"] = num_or_null(num_at(r, "input_tput_per_gpu"));
    m["intvty"] = fixed_stats(r, "intvty", 1);
    m["e2e_norm_intvty"] = fixed_stats(r, "e2e_norm_intvty", 1);
    m["ttft_ms"] = fixed_stats(r, "ttft_ms", 1);
    m["e2el_ms"] = fixed_stats(r, "e2el_ms", 1);
    // Tokens, not events (docs/metrics.md): per-token ITL beside the gap between events, and
    // what a speculating server's stream carried.
    m["itl_ms"] = fixed_stats(r, "itl_ms", 1);
    m["icl_ms"] = fixed_stats(r, "icl_ms", 1);
    m["tokens_per_event"] = num_or_null(num_at(r, "mean_tokens_per_event"));
    m["client_acceptance_length"] = num_or_null(num_at(r, "client_acceptance_length"));
    m["response_acceptance_length"] = num_or_null(num_at(r, "response_acceptance_length"));
    m["percentiles"] = json::array{"p50", "p90", "p99"};
  }
  // The server's acceptance length over the point, and the golden check when a recipe asked.
  const json::object* tel = obj_at(r, "telemetry");
  const json::object* server = tel ? obj_at(*tel, "server") : nullptr;
  m["spec_acceptance_length"] =
      num_or_null(server ? num_at(*server, "spec_acceptance_length") : std::nullopt);
  if (const json::object* sa = obj_at(r, "spec_acceptance")) m["spec_acceptance"] = *sa;
  m["completed"] = num_or_null(num_at(r, "completed"));
  m["failed"] = num_or_null(num_at(r, "failed"));
  m["num_gpus"] = num_or_null(num_at(r, "num_gpus"));
  m["duration_s"] = num_or_null(num_at(r, "duration"));
  // Energy only when the measurement is valid (docs/telemetry.md); the block itself goes along.
  if (const auto* e = obj_at(r, "energy");
      e && e->contains("power_valid") && e->at("power_valid") == true) {
    m["j_per_output_token"] = num_or_null(num_at(*e, "joules_per_output_token"));
    m["j_per_total_token"] = num_or_null(num_at(*e, "joules_per_total_token"));
    m["avg_power_w"] = num_or_null(num_at(*e, "avg_power_w"));
  } else {
    m["j_per_output_token"] = nullptr;
    m["j_per_total_token"] = nullptr;
    m["avg_power_w"] = nullptr;
  }
  return m;
}

// The server's own slice rows, with the columns the detail charts draw.
json::array slice_rows(const std::vector<store::TimesliceRecord>& rows, const std::string& source) {
  static const std::vector<std::string_view> kServer = {"start_s",
                                                        "end_s",
                                                        "running_mean",
                                                        "waiting_mean",
                                                        "kv_usage",
                                                        "kv_usage_max",
                                                        "prefix_hit_rate",
                                                        "prompt_tokens_per_s",
                                                        "generation_tokens_per_s",
                                                        "preemptions",
                                                        "spec_acceptance_length"};
  static const std::vector<std::string_view> kClient = {
      "start_s", "end_s",         "started",      "finished",
      "failed",  "output_tokens", "mean_ttft_ms", "mean_inverse_tpot"};
  const auto& keys = source == "server" ? kServer : kClient;
  json::array out;
  for (const auto& t : rows) {
    if (t.source != source) continue;
    json::object row;
    for (auto k : keys) {
      const auto* v = t.data.if_contains(k);
      row[k] = v != nullptr ? *v : json::value(nullptr);
    }
    if (!t.data.contains("start_s")) row["start_s"] = t.start_s;
    out.push_back(std::move(row));
  }
  return out;
}

// Which of the recipe's variables each server process read (names and readers; never values,
// which the store may hold for variables that are not secrets: the page shows names only).
json::object env_reads_summary(const json::object& env_reads) {
  json::object out;
  json::array read, never;
  if (const auto* vars = obj_at(env_reads, "variables")) {
    for (const auto& kv : *vars) {
      json::array readers;
      if (kv.value().is_object()) {
        if (const auto* rs = kv.value().as_object().if_contains("readers"); rs && rs->is_array()) {
          for (const auto& reader : rs->as_array()) {
            if (!reader.is_object()) continue;
            std::string exe = str_at(reader.as_object(), "exe");
            exe = exe.substr(exe.rfind('/') + 1);
            readers.emplace_back(
                fmt::format("{} ({})", exe, str_at(reader.as_object(), "function")));
          }
        }
      }
      json::object v{{"name", kv.key()}, {"readers", readers}};
      (readers.empty() ? never : read).push_back(std::move(v));
    }
  }
  if (const auto* nr = env_reads.if_contains("never_read"); nr && nr->is_array() && never.empty()) {
    for (const auto& n : nr->as_array()) {
      if (n.is_string()) never.push_back(json::object{{"name", n}, {"readers", json::array{}}});
    }
  }
  out["read"] = std::move(read);
  out["never_read"] = std::move(never);
  out["traced"] = !env_reads.empty();
  return out;
}

// A disaggregated deployment's point (docs/telemetry.md, "Disaggregated deployments"): where
// TTFT went, which side requests waited for, each role's energy, and each role's queue and token
// rate over time. Empty for one server.
json::object disagg_view(const json::object& result) {
  json::object out;
  if (const auto* att = obj_at(result, "ttft_attribution")) out["ttft_attribution"] = *att;
  const auto* t = obj_at(result, "telemetry");
  if (t != nullptr) {
    if (const auto* rm = obj_at(*t, "rate_match")) out["rate_match"] = *rm;
    if (const auto* by_role = obj_at(*t, "by_role")) {
      static const std::vector<std::string_view> kColumns = {"start_s",
                                                             "running_mean",
                                                             "waiting_mean",
                                                             "prompt_tokens_per_s",
                                                             "generation_tokens_per_s",
                                                             "kv_usage"};
      json::object roles;
      for (const auto& kv : *by_role) {
        if (!kv.value().is_object()) continue;
        const auto& r = kv.value().as_object();
        json::array slices;
        if (const auto* sl = r.if_contains("slices"); sl && sl->is_array()) {
          for (const auto& row : sl->as_array()) {
            if (!row.is_object()) continue;
            json::object keep;
            for (auto k : kColumns) {
              const auto* v = row.as_object().if_contains(k);
              keep[k] = v != nullptr ? *v : json::value(nullptr);
            }
            slices.push_back(std::move(keep));
          }
        }
        json::object role{{"slices", std::move(slices)}};
        if (const auto* w = r.if_contains("workers")) role["workers"] = *w;
        if (const auto* g = r.if_contains("gpus")) role["gpus"] = *g;
        roles[kv.key()] = std::move(role);
      }
      out["roles"] = std::move(roles);
    }
  }
  if (const auto* e = obj_at(result, "energy")) {
    json::object energy;
    for (const char* k :
         {"prefill_gpu_energy_j", "prefill_avg_power_w", "prefill_joules_per_input_token",
          "decode_gpu_energy_j", "decode_avg_power_w", "decode_joules_per_output_token"}) {
      if (auto v = num_at(*e, k)) energy[k] = *v;
    }
    if (!energy.empty()) out["energy"] = std::move(energy);
  }
  if (out.size() == 1 && out.contains("energy")) return {};
  return out;
}

// An accuracy eval's figures as the page shows them (docs/evals.md).
json::object eval_view(const metrics::EvalSummary& summary) {
  const metrics::EvalSummary* ev = &summary;
  auto num = [](double v) { return std::isfinite(v) ? json::value(v) : json::value(nullptr); };
  json::object e{{"task", ev->task},
                 {"em_strict", num(ev->em_strict)},
                 {"em_strict_se", num(ev->em_strict_se)},
                 {"em_flexible", num(ev->em_flexible)},
                 {"em_flexible_se", num(ev->em_flexible_se)},
                 {"n_eff", ev->n_eff},
                 {"problems", ev->problems},
                 {"threshold", num(ev->threshold)},
                 {"threshold_source", ev->threshold_source}};
  e["gate_passed"] = ev->gate_passed ? json::value(*ev->gate_passed) : json::value(nullptr);
  return e;
}

std::string time_text(int64_t unix_s) {
  if (unix_s == 0) return "";
  return utc_time_text("%Y-%m-%d %H:%M:%SZ", static_cast<std::time_t>(unix_s));
}

void add_run(json::array& runs, json::array& configs, json::array& points, const ReportRun& rr,
             const std::string& role) {
  const std::string prefix = role == "base" ? "b" : "h";
  json::object run = store::to_json(store::RunSummary{rr.run, rr.counts});
  run["role"] = role;
  run["uid"] = fmt::format("{}{}", prefix, rr.run.id);
  run["started_text"] = time_text(rr.run.started_at);
  run["ended_text"] = time_text(rr.run.ended_at);
  json::array failures;
  for (const auto& f : rr.failures) {
    failures.push_back(json::object{{"kind", f.kind},
                                    {"message", f.message},
                                    {"at", time_text(f.at)},
                                    {"point_id", f.point_id ? json::value(*f.point_id) : nullptr}});
  }
  run["failures"] = std::move(failures);
  const std::string run_uid = fmt::format("{}{}", prefix, rr.run.id);

  std::map<int64_t, const store::ServerConfigRecord*> by_id;
  for (const auto& c : rr.configs) {
    by_id[c.id] = &c;
    const metrics::Identity id = c.identity();
    json::object row = c.row;
    json::object o{{"uid", fmt::format("{}c{}", prefix, c.id)},
                   {"run", run_uid},
                   {"id", c.id},
                   {"config_key", c.config_key},
                   {"fingerprint", c.fingerprint},
                   {"launcher", c.launcher},
                   {"status", store::status_name(c.status)},
                   {"error", c.error},
                   {"identity", id.to_json(/*unknown=*/true)},
                   {"series", series_name(id)},
                   {"row", std::move(row)},
                   {"effective_config", c.effective_config},
                   {"env_reads", env_reads_summary(c.env_reads)}};
    configs.push_back(std::move(o));
  }
  for (const auto& p : rr.points) {
    const auto it = by_id.find(p.server_config_id);
    const metrics::Identity id = it != by_id.end() ? it->second->identity() : metrics::Identity{};
    json::object o;
    o["uid"] = fmt::format("{}p{}", prefix, p.id);
    o["id"] = p.id;
    o["run"] = run_uid;
    o["role"] = role;
    o["config"] = it != by_id.end() ? json::value(fmt::format("{}c{}", prefix, p.server_config_id))
                                    : json::value(nullptr);
    o["config_key"] = it != by_id.end() ? it->second->config_key : str_at(p.result, "config_key");
    o["series"] = series_name(id);
    const std::string& model = id.get(metrics::IdentityField::kModel);
    o["model"] = model.empty() ? str_at(p.result, "model_id") : model;
    o["workload"] = workload_label(p);
    o["agentic"] = is_agentic(p.result);
    o["time_scale"] = time_scale_of(p);
    o["concurrency"] = p.concurrency;
    o["status"] = metrics::status_name(p.status);
    // A point's numbers may join a frontier only when it was measured and is valid.
    const bool valid = metrics::is_success(p.status) && p.validity.valid();
    o["valid"] = valid;
    o["validity"] = p.validity.to_json();
    o["error"] = p.error;
    o["reused_from_run"] = p.reused_from_run ? json::value(*p.reused_from_run) : nullptr;
    o["measured"] = !p.result.empty() && !p.headline.empty();
    o["m"] = point_metrics(p);
    if (const auto* t = obj_at(p.result, "telemetry")) {
      if (const auto* sv = obj_at(*t, "server")) o["telemetry"] = *sv;
    }
    if (const auto* e = obj_at(p.result, "energy")) o["energy"] = *e;
    // An accuracy eval (docs/evals.md): shown in the Accuracy section, not on throughput charts.
    if (auto ev = metrics::eval_summary(p.result)) o["eval"] = eval_view(*ev);
    if (const auto* w = p.result.if_contains("warnings")) o["warnings"] = *w;
    if (const auto* a = obj_at(p.result, "agentic")) {
      if (const auto* sc = obj_at(*a, "server_prefix_cache")) o["server_prefix_cache"] = *sc;
      if (auto th = num_at(*a, "theoretical_prefix_cache_hit_pct")) o["theoretical_hit_pct"] = *th;
    }
    if (auto dis = disagg_view(p.result); !dis.empty()) o["disagg"] = std::move(dis);
    // A timed trace replay's fidelity (docs/trace-replay.md): a few dozen numbers, kept whole.
    if (const auto* tf = obj_at(p.result, "trace_fidelity")) o["trace_fidelity"] = *tf;
    if (const auto* st = obj_at(p.result, "server_timing")) o["server_timing"] = *st;
    const auto ts = rr.timeslices.find(p.id);
    if (ts != rr.timeslices.end()) {
      o["slices"] = json::object{{"server", slice_rows(ts->second, "server")},
                                 {"client", slice_rows(ts->second, "client")}};
    }
    points.push_back(std::move(o));
  }
  runs.push_back(std::move(run));
}

// A run's identities: one per configuration and one per point (with what the point adds: its
// workload, time scale and the tool version that measured it).
std::vector<metrics::Identity> identities_of(const ReportRun& r) {
  using F = metrics::IdentityField;
  std::vector<metrics::Identity> out;
  std::map<int64_t, metrics::Identity> by_config;
  for (const auto& c : r.configs) {
    metrics::Identity id = c.identity();
    id.set(F::kToolVersion, r.run.tool_version);
    id.set(F::kHost, r.run.host);
    by_config[c.id] = id;
    out.push_back(id);
  }
  for (const auto& p : r.points) {
    const auto it = by_config.find(p.server_config_id);
    metrics::Identity id = it != by_config.end() ? it->second : metrics::Identity{};
    const std::string tool = str_at(p.result, "tool_version");
    id.set(F::kToolVersion, tool.empty() ? r.run.tool_version : tool);
    id.set(F::kHost, r.run.host);
    id.set(F::kWorkload, workload_label(p));
    id.set(F::kTimeScale, fmt::format("{:g}", time_scale_of(p)));
    out.push_back(std::move(id));
  }
  return out;
}

}  // namespace

std::string series_name(const metrics::Identity& id) {
  using F = metrics::IdentityField;
  auto shown = [&](F f) { return id.get(f).empty() ? std::string("?") : id.get(f); };
  std::string out = shown(F::kHardware);
  out.append(" \u00b7 ").append(shown(F::kEngine));
  out.append(" \u00b7 ").append(shown(F::kPrecision));
  const std::string& spec = id.get(F::kSpecDecoding);
  if (!spec.empty() && spec != "none" && spec != "false") out.append(" \u00b7 spec ").append(spec);
  return out;
}

std::vector<metrics::Confounder> confounders(const ReportRun& base, const ReportRun& head) {
  return metrics::confounders(identities_of(base), identities_of(head));
}

boost::json::object report_data(const ReportInput& in) {
  json::array runs, configs, points;
  for (const auto& r : in.runs) add_run(runs, configs, points, r, "head");
  if (in.baseline) add_run(runs, configs, points, *in.baseline, "base");
  json::object o;
  o["schema"] = "inferbench-report/1";
  o["tool_version"] = INFERBENCH_VERSION;
  o["generated_at"] = time_text(in.generated_at);
  o["command_line"] = in.command_line;
  o["comparison"] = in.baseline.has_value();
  o["runs"] = std::move(runs);
  o["configs"] = std::move(configs);
  o["points"] = std::move(points);
  json::array conf;
  if (in.baseline) {
    // Against every head run together: a report may show several.
    std::vector<metrics::Identity> head;
    for (const auto& h : in.runs) {
      auto ids = identities_of(h);
      head.insert(head.end(), ids.begin(), ids.end());
    }
    for (const auto& c : metrics::confounders(identities_of(*in.baseline), head)) {
      conf.push_back(c.to_json());
    }
  }
  o["confounders"] = std::move(conf);
  o["trends"] = in.trends;
  return o;
}

std::string script_safe_json(const boost::json::value& v) {
  const std::string text = json_text(v);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '<') {
      out.append("\\u003c");
    } else if (ch == '>') {
      out.append("\\u003e");
    } else if (ch == '&') {
      out.append("\\u0026");
    } else if (ch == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      // U+2028 / U+2029: valid in JSON strings, line terminators to older JavaScript parsers.
      out.append(text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029");
      i += 2;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&quot;");
        break;
      case '\'':
        out.append("&#39;");
        break;
      default:
        out.push_back(ch);
    }
  }
  return out;
}

std::string render_html(const ReportInput& in) {
  const json::object data = report_data(in);
  std::string title = "inferbench report";
  for (size_t i = 0; i < in.runs.size(); ++i) {
    title.append(i == 0 ? ": " : ", ").append(in.runs[i].run.name);
  }
  if (in.baseline) title.append(" vs ").append(in.baseline->run.name);
  // One pass over the template; each placeholder appears once (report_assets.h).
  std::string out;
  std::string_view page = kReportHtml;
  const std::pair<std::string_view, std::string> fills[] = {
      {"@@TITLE@@", html_escape(title)},
      {"/*@@CSS@@*/", std::string(kReportCss)},
      {"@@DATA@@", script_safe_json(data)},
      {"/*@@JS@@*/", std::string(kReportJs)}};
  for (const auto& [marker, text] : fills) {
    const size_t at = page.find(marker);
    if (at == std::string_view::npos) continue;  // a test checks that every marker is there
    out.append(page.substr(0, at)).append(text);
    page.remove_prefix(at + marker.size());
  }
  out.append(page);
  return out;
}

}  // namespace ib::report
