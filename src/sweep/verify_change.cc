#include "sweep/verify_change.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>

#include "core/files.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "launch/local.h"
#include "launch/session.h"
#include "metrics/identity.h"
#include "recipe/matrix.h"
#include "sweep/planner.h"
#include "sweep/server_spec.h"
#include "verify/env_trace.h"
#include "verify/expect.h"

namespace ib::sweep {

namespace fs = std::filesystem;
namespace json = boost::json;

bool VerifyReport::all_no_op() const {
  for (const auto& k : keys) {
    if (!k.no_op() && k.status != "removed") return false;
  }
  return true;
}

json::object VerifyReport::to_json() const {
  json::object o;
  o["base"] = base;
  o["head"] = head;
  json::array ks;
  for (const auto& k : keys) ks.push_back(k.to_json());
  o["keys"] = std::move(ks);
  o["all-no-op"] = all_no_op();
  // A pull-request comment and CI logs: every credential hidden (core/redact.h).
  return redacted(std::move(o));
}

std::string VerifyReport::markdown() const {
  return redact_text(
      verify::verdicts_markdown(fmt::format("inferbench verify: {} → {}", base, head), keys));
}

namespace {

// The environment the recipe row gives its server (serve.env), values as text.
std::map<std::string, std::string> recipe_env(const json::object& row) {
  std::map<std::string, std::string> out;
  const auto* serve = row.if_contains("serve");
  const auto* env = serve && serve->is_object() ? serve->get_object().if_contains("env") : nullptr;
  if (env == nullptr || !env->is_object()) return out;
  for (const auto& kv : env->get_object()) {
    out[std::string(kv.key())] =
        kv.value().is_string() ? std::string(kv.value().get_string()) : json_text(kv.value());
  }
  return out;
}

metrics::Identity identity_of(const json::object& row, const verify::EffectiveConfig& config) {
  metrics::Identity id = metrics::config_identity(row, config.settings);
  id.set(metrics::IdentityField::kToolVersion, INFERBENCH_VERSION);
  return id;
}

std::vector<verify::ChangedField> fields_of(const govern::KeyChange& k) {
  std::vector<verify::ChangedField> out;
  for (const auto& r : k.reasons) out.push_back({r.path, r.kind, r.detail});
  return out;
}

// Whether judging these changes needs the servers at all.
bool needs_servers(const std::vector<verify::ChangedField>& fields) {
  for (const auto& f : fields) {
    if (f.path.rfind("scenarios", 0) != 0 && f.path.rfind("expect", 0) != 0 && f.kind != "runner") {
      return true;
    }
  }
  return false;
}

std::vector<std::string> env_names(const recipe::ConfigEntry& e) {
  std::vector<std::string> out;
  if (e.serve) {
    for (const auto& [k, v] : e.serve->env) out.push_back(k);
    for (const auto& [role, block] : e.serve->roles) {
      for (const auto& [k, v] : block.env) {
        if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
      }
    }
  }
  return out;
}

}  // namespace

verify::ServerObservation observe_server(const recipe::RecipeRow& row,
                                         const std::vector<std::string>& watch, const fs::path& dir,
                                         const VerifyOptions& o, const recipe::ConfigEntry* entry) {
  verify::ServerObservation obs;
  auto spec = server_spec_for_row(row, o.extra_server_args, o.inferbench_exe);
  if (!spec) {
    obs.error = spec.error().message;
    return obs;
  }
  launch::SessionOptions so;
  so.dir = dir;
  so.watch = watch;
  so.env_trace = o.env_trace;
  so.startup_timeout = o.startup_timeout;
  // The recipe's own probes widen the effective configuration that is compared; a malformed
  // `expect` block is said, not skipped.
  if (entry) {
    auto parsed = expect_of(*entry);
    if (!parsed) {
      obs.error = parsed.error().message;
      return obs;
    }
    if (*parsed) so.probes = (*parsed)->probes;
  }
  auto launcher = launch::make_local_launcher();
  auto session = launch::ServerSession::start(*launcher, *spec, so);
  if (!session) {
    obs.error = session.error().message;
    return obs;
  }
  obs.log_path = (*session)->log_path().string();
  obs.config = (*session)->effective();
  // A disaggregated deployment: every role's settings too, as "<label>.<setting>", so that a
  // change that moves only a prefill worker's configuration shows in the diff.
  for (const auto& [label, config] : (*session)->role_effective()) {
    for (const auto& kv : config.settings) {
      obs.config.settings[fmt::format("{}.{}", label, std::string_view(kv.key()))] = kv.value();
    }
  }
  // Reads that could not be traced are not observed: the verdict must not call them no-ops.
  if (o.env_trace && !watch.empty() && !(*session)->tracing()) {
    obs.error = (*session)->tracing_off();
  }
  (*session)->stop(std::chrono::milliseconds(10000));
  obs.env_read = (*session)->env_read_flags();
  obs.role_reads = (*session)->role_reads();
  if (const auto& trace = (*session)->env_reads()) {
    verify::read_trace_processes(trace->to_json(), &obs);
  }
  obs.env = recipe_env(row.fields);
  obs.identity = identity_of(row.fields, obs.config);
  obs.observed = true;
  return obs;
}

Expected<VerifyReport> verify_changes(const std::vector<recipe::ConfigEntry>& base,
                                      const std::vector<recipe::ConfigEntry>& head,
                                      const govern::ChangedReport& changed,
                                      const VerifyOptions& o) {
  VerifyReport report;
  report.base = changed.base;
  report.head = changed.head;
  std::map<std::string, const recipe::ConfigEntry*> base_by_key, head_by_key;
  for (const auto& e : base) base_by_key[e.key] = &e;
  for (const auto& e : head) head_by_key[e.key] = &e;
  size_t index = 0;
  for (const govern::KeyChange& k : changed.keys) {
    ++index;
    auto fields = fields_of(k);
    if (k.status != "modified" || !needs_servers(fields)) {
      report.keys.push_back(
          verify::judge_key(k.key, k.status, fields, nullptr, nullptr, o.ignore_settings));
      continue;
    }
    const recipe::ConfigEntry* b = base_by_key.at(k.key);
    const recipe::ConfigEntry* h = head_by_key.at(k.key);
    // The first server configuration of each side: environment and serve changes apply to all.
    auto brows = recipe::expand({*b}, nullptr);
    auto hrows = recipe::expand({*h}, nullptr);
    if (brows.empty() || hrows.empty()) {
      report.keys.push_back(
          verify::judge_key(k.key, k.status, fields, nullptr, nullptr, o.ignore_settings));
      continue;
    }
    // Watch every variable either side sets, on both sides.
    std::vector<std::string> watch = env_names(*b);
    for (const auto& n : env_names(*h)) {
      if (std::find(watch.begin(), watch.end(), n) == watch.end()) watch.push_back(n);
    }
    const fs::path dir = o.work_dir / fmt::format("{:02}-{}", index, k.key);
    if (o.show_progress) fmt::print(stderr, "verify {}: starting the base server...\n", k.key);
    auto bo = observe_server(brows.front(), watch, dir / "base", o, b);
    if (o.show_progress) fmt::print(stderr, "verify {}: starting the head server...\n", k.key);
    auto ho = observe_server(hrows.front(), watch, dir / "head", o, h);
    report.keys.push_back(verify::judge_key(k.key, k.status, fields, &bo, &ho, o.ignore_settings));
  }
  return report;
}

namespace {

verify::ServerObservation observation_from_store(const store::ServerConfigRecord& c,
                                                 const store::RunRecord& run) {
  verify::ServerObservation o;
  o.log_path = c.log_path;
  if (c.effective_config.empty()) {
    o.error =
        fmt::format("run {} stored no effective configuration for {}", run.name, c.config_key);
    return o;
  }
  o.observed = true;
  if (const auto* e = c.effective_config.if_contains("engine"); e && e->is_string()) {
    o.config.engine = std::string(e->as_string());
  }
  if (const auto* s = c.effective_config.if_contains("settings"); s && s->is_object()) {
    o.config.settings = s->as_object();
  }
  // A disaggregated deployment's roles, as a live observation names their settings.
  if (const auto* roles = c.effective_config.if_contains("roles"); roles && roles->is_object()) {
    for (const auto& role : roles->as_object()) {
      const auto* ec = role.value().is_object()
                           ? role.value().as_object().if_contains("effective_config")
                           : nullptr;
      const auto* s = ec && ec->is_object() ? ec->as_object().if_contains("settings") : nullptr;
      if (s == nullptr || !s->is_object()) continue;
      for (const auto& kv : s->as_object()) {
        o.config.settings[fmt::format("{}.{}", std::string_view(role.key()),
                                      std::string_view(kv.key()))] = kv.value();
      }
    }
  }
  if (const auto* vars = c.env_reads.if_contains("variables"); vars && vars->is_object()) {
    std::map<std::string, bool> read;
    for (const auto& kv : vars->as_object()) {
      const auto* r = kv.value().is_object() ? kv.value().as_object().if_contains("read") : nullptr;
      read[std::string(kv.key())] = r && r->is_bool() && r->as_bool();
    }
    o.env_read = std::move(read);
  }
  verify::read_trace_processes(c.env_reads, &o);
  if (const auto* by_role = c.env_reads.if_contains("by_role"); by_role && by_role->is_object()) {
    o.role_reads = verify::RoleReads::from_json(by_role->as_object());
  }
  o.env = recipe_env(c.row);
  o.identity = c.identity();
  o.identity.set(metrics::IdentityField::kToolVersion, run.tool_version);
  o.identity.set(metrics::IdentityField::kHost, run.host);
  return o;
}

}  // namespace

verify::KeyVerdict judge_stored(const store::ServerConfigRecord& x, const store::RunRecord& a,
                                const store::ServerConfigRecord& y, const store::RunRecord& b,
                                const std::set<std::string>& ignore_settings) {
  auto strip = [](json::object row) {
    for (const char* k : {"recipe-fingerprint", "exp-name", "conc", "run-eval"}) row.erase(k);
    return json::value(std::move(row));
  };
  std::vector<verify::ChangedField> fields;
  for (const auto& f : govern::diff_fields(strip(x.row), strip(y.row))) {
    fields.push_back({f.path, f.kind, f.detail});
  }
  auto bo = observation_from_store(x, a);
  auto ho = observation_from_store(y, b);
  std::string name =
      x.config_key == y.config_key ? x.config_key : x.config_key + " vs " + y.config_key;
  verify::KeyVerdict v;
  if (fields.empty() && x.fingerprint != y.fingerprint) {
    // The stored rows hide secrets, so two different ones look the same; the fingerprints,
    // computed from the real values, tell them apart.
    v = verify::judge_key(name, "modified", {{"", "", ""}}, &bo, &ho, ignore_settings);
    v.fields.front() = {
        "", "a value hidden as secret (or a --server-arg) differs: the fingerprints differ",
        "unverified", "its value is not stored, so its effect cannot be judged from the runs"};
    v.verdict = "effective: sweep (not every change could be verified)";
  } else if (fields.empty()) {
    v = verify::judge_key(name, "modified", {{"", "", "no recipe field differs"}}, &bo, &ho,
                          ignore_settings);
    v.fields.front().change = "the recipe rows are identical";
    if (v.effective_diff.empty()) {
      v.fields.front().verdict = "no effect";
      v.verdict = "no-op: skip the sweep";
    }
  } else {
    v = verify::judge_key(name, "modified", fields, &bo, &ho, ignore_settings);
  }
  // Stored runs: every identity difference is a confounder, even one the recipes made (a run
  // on another image or checkpoint cannot credit the change under test).
  v.confounders = verify::server_confounders(bo, ho);
  return v;
}

Expected<VerifyReport> verify_runs(store::Store& db, const store::RunRecord& a,
                                   const store::RunRecord& b,
                                   const std::set<std::string>& ignore_settings) {
  auto ca = db.server_configs(a.id);
  if (!ca) return ca.error();
  auto cb = db.server_configs(b.id);
  if (!cb) return cb.error();
  VerifyReport report;
  report.base = fmt::format("run {} ({})", a.id, a.name);
  report.head = fmt::format("run {} ({})", b.id, b.name);
  std::vector<std::pair<const store::ServerConfigRecord*, const store::ServerConfigRecord*>> pairs;
  if (ca->size() == 1 && cb->size() == 1) {
    pairs.emplace_back(&ca->front(), &cb->front());
  } else {
    std::map<std::string, const store::ServerConfigRecord*> by_key;
    for (const auto& c : *cb) by_key.emplace(c.config_key, &c);
    for (const auto& c : *ca) {
      if (auto it = by_key.find(c.config_key); it != by_key.end())
        pairs.emplace_back(&c, it->second);
    }
  }
  if (pairs.empty()) {
    return Error{fmt::format("runs {} and {} share no config key to compare", a.name, b.name)};
  }
  for (const auto& [x, y] : pairs) {
    report.keys.push_back(judge_stored(*x, a, *y, b, ignore_settings));
  }
  return report;
}

}  // namespace ib::sweep
