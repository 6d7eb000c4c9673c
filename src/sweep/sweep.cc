#include "sweep/sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>
#include <set>

#include "core/clock.h"
#include "core/command.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "govern/labels.h"
#include "launch/local.h"
#include "load/bench.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "store/store.h"
#include "sweep/server_spec.h"
#include "verify/effective_config.h"
#include "verify/env_trace.h"
#include "verify/expect.h"

namespace ib {

namespace fs = std::filesystem;
namespace json = boost::json;
using recipe::RecipeRow;

std::string SweepOutcome::status() const {
  if (interrupted) return "interrupted";
  if (points.empty() && !errors.empty()) return "failed";
  for (const auto& p : points) {
    if (p.status != "ok" && p.status != "reused" && p.status != "resumed") return "failed";
  }
  return errors.empty() ? "ok" : "failed";
}

json::object SweepOutcome::to_json() const {
  json::object o;
  o["run_id"] = run_id;
  o["run"] = run_name;
  o["run_dir"] = run_dir.string();
  o["db"] = db.string();
  o["status"] = status();
  json::array ps;
  for (const auto& p : points) {
    json::object po = p.headline;
    po["config_key"] = p.config_key;
    po["fingerprint"] = p.fingerprint;
    po["concurrency"] = p.concurrency;
    po["status"] = p.status;
    po["error"] = p.error;
    if (p.reused_from_run) po["reused_from_run"] = p.reused_from_run;
    po["result"] = p.result_file;
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

std::string sweep_table_header() {
  return fmt::format("{:<28} {:>5} {:>9} {:>11} {:>11} {:>11} {:>10} {:>8}  {}\n", "config", "conc",
                     "req/s", "out tok/s", "p50 TTFT ms", "p50 TPOT ms", "tok/s/user", "tput/gpu",
                     "status");
}

namespace {

double hnum(const json::object& h, const char* k) {
  const auto* v = h.if_contains(k);
  if (!v) return 0;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  return 0;
}

}  // namespace

std::string sweep_table_row(const SweepPointOutcome& p) {
  std::string key = p.config_key.size() > 28 ? p.config_key.substr(0, 27) + "~" : p.config_key;
  std::string status = p.status;
  if (p.status == "reused") status += fmt::format(" (run {})", p.reused_from_run);
  if (!p.error.empty()) {
    std::string first = p.error.substr(0, p.error.find('\n'));
    status += ": " + first;
  }
  if (p.headline.empty()) {
    return fmt::format("{:<28} {:>5} {:>9} {:>11} {:>11} {:>11} {:>10} {:>8}  {}\n", key,
                       p.concurrency, "-", "-", "-", "-", "-", "-", status);
  }
  const auto& h = p.headline;
  return fmt::format("{:<28} {:>5} {:>9.2f} {:>11.1f} {:>11.2f} {:>11.2f} {:>10.1f} {:>8.1f}  {}\n",
                     key, p.concurrency, hnum(h, "request_throughput"),
                     hnum(h, "output_throughput"), hnum(h, "median_ttft_ms"),
                     hnum(h, "median_tpot_ms"), hnum(h, "median_intvty"), hnum(h, "tput_per_gpu"),
                     status);
}

namespace {

constexpr const char* kHeadlineKeys[] = {"request_throughput",
                                         "output_throughput",
                                         "total_token_throughput",
                                         "median_ttft_ms",
                                         "p99_ttft_ms",
                                         "median_tpot_ms",
                                         "p99_tpot_ms",
                                         "median_itl_ms",
                                         "median_e2el_ms",
                                         "median_intvty",
                                         "tput_per_gpu",
                                         "output_tput_per_gpu",
                                         "completed",
                                         "failed"};

json::object headline_of(const json::object& result) {
  json::object h;
  for (const char* k : kHeadlineKeys) {
    if (const auto* v = result.if_contains(k)) h[k] = *v;
  }
  return h;
}

std::string timestamp_name() {
  return utc_time_text("%Y%m%d-%H%M%S");
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.substr(0, 80);
}

// InferenceX's aggregate (inferencex-spec §4.2): identity fields, per-GPU throughput, every *_ms
// key also in seconds without the suffix, every tpot key also as intvty.
json::object aggregate_json(const RecipeRow& row, int64_t conc, const json::object& result,
                            int gpus) {
  const auto& f = row.fields;
  json::object a;
  auto copy = [&](const char* from, const char* to) {
    if (const auto* v = f.if_contains(from)) a[to] = *v;
  };
  copy("runner", "hw");
  a["conc"] = conc;
  copy("image", "image");
  copy("model", "model");
  copy("model-prefix", "infmax_model_prefix");
  copy("framework", "framework");
  copy("precision", "precision");
  copy("spec-decoding", "spec_decoding");
  copy("disagg", "disagg");
  a["recipe_fingerprint"] = row.fingerprint;
  copy("isl", "isl");
  copy("osl", "osl");
  a["is_multinode"] = row.multinode;
  copy("tp", "tp");
  copy("pp", "pp");
  copy("dcp-size", "dcp_size");
  copy("pcp-size", "pcp_size");
  copy("ep", "ep");
  copy("dp-attn", "dp_attention");
  a["num_gpus"] = gpus;
  for (const auto& kv : result) {
    std::string k(kv.key());
    const json::value& v = kv.value();
    if (!v.is_number()) continue;
    a[k] = v;
    if (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0) {
      a[k.substr(0, k.size() - 3)] = v.to_number<double>() / 1000.0;
    }
    if (auto pos = k.find("tpot"); pos != std::string::npos) {
      std::string name = k.substr(0, pos) + "intvty" + k.substr(pos + 4);
      if (name.size() > 3 && name.compare(name.size() - 3, 3, "_ms") == 0) {
        name = name.substr(0, name.size() - 3);
      }
      double t = v.to_number<double>();
      a[name] = t > 0 ? 1000.0 / t : 0.0;
    }
  }
  return a;
}

std::string workload_key(const RecipeRow& row, const SweepOptions& o, int num_prompts,
                         int warmups) {
  const auto& f = row.fields;
  if (row.scenario != "fixed-seq-len") return fmt::format("{}", row.scenario);
  return fmt::format("random:isl={},osl={},ratio=0.8,seed=0,api={},prompts={},warmups={}",
                     f.at("isl").as_int64(), f.at("osl").as_int64(), api_name(o.api), num_prompts,
                     warmups);
}

// One server configuration: rows equal but for concurrency.
struct ConfigPlan {
  RecipeRow row;  // the first row (conc of that row is irrelevant)
  std::string fingerprint;
  std::vector<int64_t> concs;
};

struct GroupPlan {
  std::string name;
  bool fail_fast = false;
  std::vector<ConfigPlan> configs;
};

std::vector<ConfigPlan> group_configs(const std::vector<RecipeRow>& rows, const SweepOptions& o) {
  std::vector<ConfigPlan> out;
  std::map<std::string, size_t> index;
  for (const RecipeRow& row : rows) {
    // A command that uses {conc} is a different server at each concurrency.
    bool per_conc =
        json::serialize(row.fields.contains("serve") ? row.fields.at("serve") : json::value())
            .find("{conc}") != std::string::npos;
    std::string fp = config_fingerprint(row, o.extra_server_args);
    std::string key = per_conc ? fp + json::serialize(row.fields.at("conc")) : fp;
    auto it = index.find(key);
    if (it == index.end()) {
      index[key] = out.size();
      out.push_back({row, fp, {}});
      it = index.find(key);
    }
    auto& concs = out[it->second].concs;
    const json::value& c = row.fields.at("conc");
    if (c.is_int64()) {
      concs.push_back(c.as_int64());
    } else {
      for (const auto& v : c.as_array()) concs.push_back(v.as_int64());
    }
  }
  for (auto& c : out) {
    if (!o.concurrencies.empty()) c.concs = o.concurrencies;
    std::sort(c.concs.begin(), c.concs.end());
    c.concs.erase(std::unique(c.concs.begin(), c.concs.end()), c.concs.end());
  }
  return out;
}

class SweepRun {
 public:
  SweepRun(const SweepOptions& o, std::FILE* out, store::Store* db, SweepOutcome* outcome,
           std::map<std::string, recipe::ConfigEntry> entries,
           std::optional<recipe::RunnersFile> runners)
      : o_(o),
        out_(out),
        db_(db),
        outcome_(outcome),
        entries_(std::move(entries)),
        runners_(std::move(runners)) {}

  // Runs one configuration; returns false when anything in it failed.
  bool run_config(const ConfigPlan& cfg, size_t index) {
    const RecipeRow& row = cfg.row;
    const int gpus = row_gpus(row.fields);
    const fs::path dir =
        outcome_->run_dir /
        fmt::format("{:02}-{}-{}", index, safe_name(row.config_key), cfg.fingerprint.substr(0, 8));
    store::ServerConfigRecord rec;
    rec.run_id = outcome_->run_id;
    rec.config_key = row.config_key;
    rec.fingerprint = cfg.fingerprint;
    rec.row = row.to_json();
    rec.row.erase("conc");
    // Credentials a recipe passes to its server never reach the database.
    if (auto* serve = rec.row.if_contains("serve"); serve && serve->is_object()) {
      if (auto* env = serve->as_object().if_contains("env"); env && env->is_object()) {
        for (auto& kv : env->as_object()) {
          if (verify::looks_secret(kv.key())) kv.value() = "(redacted)";
        }
      }
    }
    std::string launcher_name = launcher_for(row);
    rec.launcher = launcher_name;
    auto id = db_->add_server_config(rec);
    if (!id) return fail_all(cfg, "database: " + id.error().message);
    rec.id = *id;

    // Points already done: resumed from this run, or reused from an earlier one.
    std::vector<int64_t> pending;
    for (int64_t conc : cfg.concs) {
      auto [prompts, warmups] = prompt_counts(conc);
      const std::string wk = workload_key(row, o_, prompts, warmups);
      if (!o_.resume.empty()) {
        auto done = db_->completed_point(outcome_->run_id, cfg.fingerprint, conc, wk);
        if (done && *done) {
          SweepPointOutcome p = outcome_of(row, cfg, **done);
          p.status = "resumed";
          emit(std::move(p));
          continue;
        }
      }
      if (o_.reuse) {
        auto src = db_->reusable_point(cfg.fingerprint, conc, wk, INFERBENCH_VERSION);
        if (src && *src) {
          store::PointRecord p = **src;
          p.id = 0;
          p.run_id = outcome_->run_id;
          p.server_config_id = rec.id;
          p.status = "reused";
          p.reused_from_run = (*src)->run_id;
          p.created_at = 0;
          if (auto added = db_->add_point(p); !added) {
            outcome_->errors.push_back("database: " + added.error().message);
          }
          SweepPointOutcome po = outcome_of(row, cfg, p);
          emit(std::move(po));
          continue;
        }
      }
      pending.push_back(conc);
    }
    if (pending.empty()) {
      rec.status = "skipped";
      (void)db_->update_server_config(rec);
      return true;
    }
    if (interrupt_requested()) return skip_all(cfg, pending, "interrupted");
    // What this version cannot run is said before any server is started.
    if (row.scenario != "fixed-seq-len") {
      return fail_config(
          cfg, pending, rec, "unsupported",
          fmt::format("{} rows are not run by the sweep yet (no trace replay)", row.scenario));
    }
    if (row.multinode && launcher_name != "endpoint") {
      return fail_config(cfg, pending, rec, "unsupported",
                         "multi-node rows need a multi-node launch (prefill and decode workers), "
                         "which the sweep does not do yet; use --launcher endpoint with a running "
                         "deployment");
    }
    std::error_code ec;
    fs::create_directories(dir, ec);

    auto spec = server_spec_for_row(row, o_.extra_server_args, o_.inferbench_exe);
    if (!spec && launcher_name != "endpoint")
      return fail_config(cfg, pending, rec, "server-start", spec.error().message);
    launch::ServerSpec server_spec = spec ? *spec : launch::ServerSpec{};
    server_spec.log_path = dir / "server.log";
    server_spec.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o_.startup_timeout_s));
    // Environment tracing: which of the recipe's variables the server processes read.
    std::vector<std::string> watch;
    for (const auto& [k, v] : server_spec.env) watch.push_back(k);
    const fs::path trace_dir = dir / "envtrace";
    bool tracing = false;
    if (o_.env_trace && launcher_name == "local" && !watch.empty()) {
      auto assets = verify::find_env_trace_assets();
      if (assets) {
        verify::add_env_trace(*assets, trace_dir, watch, &server_spec.env);
        tracing = true;
      } else {
        note(fmt::format("environment tracing off: {}", assets.error().message));
      }
    }
    if (launcher_name != "endpoint") rec.log_path = server_spec.log_path.string();
    auto launcher = make_launcher(launcher_name);
    if (!launcher) return fail_config(cfg, pending, rec, "server-start", launcher.error().message);
    if (o_.show_progress && isatty(STDERR_FILENO)) {
      fmt::print(stderr, "starting {} ({}, {} point{})...\n", row.config_key, launcher_name,
                 pending.size(), pending.size() == 1 ? "" : "s");
    }
    auto server = (*launcher)->start(server_spec);
    if (!server) {
      if (interrupt_requested()) return skip_all(cfg, pending, "interrupted");
      return fail_config(cfg, pending, rec, "server-start", server.error().message);
    }

    // Effective configuration and the recipe's assertions, from the startup log.
    auto log_text = read_file(server_spec.log_path);
    std::string log = log_text ? *log_text : std::string();
    std::optional<verify::ExpectSpec> expect;
    std::vector<verify::RegexProbe> probes;
    if (auto it = entries_.find(row.config_key); it != entries_.end() && it->second.expect) {
      auto parsed = verify::parse_expect(*it->second.expect, row.config_key + ".expect");
      if (!parsed) {
        (*server)->stop();
        return fail_config(cfg, pending, rec, "assertion", parsed.error().message);
      }
      expect = std::move(*parsed);
      probes = expect->probes;
    }
    verify::EffectiveConfig effective = verify::probe_effective_config(log, probes);
    rec.effective_config = effective.to_json();
    std::string invalid;
    if (expect) {
      auto results = verify::check_expect(*expect, log, effective);
      if (!expect->env_read.empty() || !expect->env_not_read.empty()) {
        std::optional<verify::EnvTraceReport> trace;
        if (tracing) trace = verify::collect_env_trace(trace_dir, watch);
        auto env_results = verify::check_env_expect(*expect, trace ? &*trace : nullptr);
        results.insert(results.end(), env_results.begin(), env_results.end());
      }
      json::array arr;
      for (const auto& r : results) {
        arr.push_back(r.to_json());
        if (!r.passed && invalid.empty()) {
          invalid = fmt::format("expect failed: {} ({})", r.assertion, r.evidence);
        }
      }
      rec.effective_config["expect"] = std::move(arr);
      (void)write_file_atomic(dir / "expect.json",
                              json::serialize(rec.effective_config["expect"]) + "\n");
    }
    (void)write_file_atomic(dir / "effective_config.json",
                            json::serialize(effective.to_json()) + "\n");
    (void)db_->update_server_config(rec);

    bool all_ok = true;
    if (!invalid.empty()) {
      store::FailureRecord f{0,           outcome_->run_id, rec.id, std::nullopt,
                             "assertion", invalid,          "",     0};
      (void)db_->add_failure(f);
      for (int64_t conc : pending) {
        store::PointRecord p = base_point(cfg, rec.id, conc);
        p.status = "invalid";
        p.error = invalid;
        (void)db_->add_point(p);
        emit(outcome_of(row, cfg, p));
      }
      all_ok = false;
    } else {
      for (size_t i = 0; i < pending.size(); ++i) {
        if (interrupt_requested()) {
          outcome_->interrupted = true;
          skip_all(cfg, {pending.begin() + static_cast<std::ptrdiff_t>(i), pending.end()},
                   "interrupted");
          break;
        }
        if (auto gone = (*server)->check_alive()) {
          std::string why = *gone + "\n" + file_tail(server_spec.log_path, 2048);
          std::vector<int64_t> rest(pending.begin() + static_cast<std::ptrdiff_t>(i),
                                    pending.end());
          record_server_exit(cfg, rec, rest, why);
          all_ok = false;
          break;
        }
        if (!run_point(cfg, rec, dir, pending[i], **server, gpus)) all_ok = false;
        if (outcome_->interrupted) {
          skip_all(cfg, {pending.begin() + static_cast<std::ptrdiff_t>(i) + 1, pending.end()},
                   "interrupted");
          break;
        }
      }
    }
    std::string ended = (*server)->stop();
    if (tracing) {
      auto report = verify::collect_env_trace(trace_dir, watch);
      rec.env_reads = report.to_json();
    }
    rec.status = all_ok ? "ok" : "failed";
    if (!all_ok && rec.error.empty()) rec.error = fmt::format("server {}", ended);
    (void)db_->update_server_config(rec);
    return all_ok;
  }

  bool skip_all(const ConfigPlan& cfg, const std::vector<int64_t>& concs, const std::string& why) {
    for (int64_t conc : concs) {
      SweepPointOutcome p;
      p.config_key = cfg.row.config_key;
      p.fingerprint = cfg.fingerprint;
      p.concurrency = conc;
      p.status = "skipped";
      p.error = why;
      emit(std::move(p));
    }
    return false;
  }

 private:
  std::pair<int, int> prompt_counts(int64_t conc) const {
    int prompts = std::max<int>(o_.min_prompts, static_cast<int>(o_.prompts_per_conc * conc));
    int warmups = static_cast<int>(o_.warmups_per_conc * conc);
    return {prompts, warmups};
  }

  std::string launcher_for(const RecipeRow& row) const {
    if (!o_.launcher.empty()) return o_.launcher;
    if (runners_) {
      const auto& runner = row.fields.at("runner").as_string();
      if (auto it = runners_->hardware.find(std::string(runner)); it != runners_->hardware.end()) {
        return it->second.launcher;
      }
    }
    return "local";
  }

  Expected<launch::Launcher*> make_launcher(const std::string& name) {
    auto it = launchers_.find(name);
    if (it != launchers_.end()) return it->second.get();
    std::unique_ptr<launch::Launcher> l;
    if (name == "local") {
      l = launch::make_local_launcher();
    } else if (name == "endpoint") {
      if (o_.endpoint_url.empty()) return Error{"the endpoint launcher needs --endpoint URL"};
      l = launch::make_endpoint_launcher(o_.endpoint_url);
    } else if (name == "slurm") {
      launch::SlurmOptions so = o_.slurm;
      if (so.work_dir.empty()) so.work_dir = outcome_->run_dir / "slurm";
      l = launch::make_slurm_launcher(so);
    } else {
      return Error{fmt::format("unknown launcher '{}' (local, slurm, endpoint)", name)};
    }
    auto* raw = l.get();
    launchers_[name] = std::move(l);
    return raw;
  }

  store::PointRecord base_point(const ConfigPlan& cfg, int64_t config_id, int64_t conc) const {
    auto [prompts, warmups] = prompt_counts(conc);
    store::PointRecord p;
    p.run_id = outcome_->run_id;
    p.server_config_id = config_id;
    p.fingerprint = cfg.fingerprint;
    p.workload_key = workload_key(cfg.row, o_, prompts, warmups);
    p.concurrency = conc;
    return p;
  }

  SweepPointOutcome outcome_of(const RecipeRow& row, const ConfigPlan& cfg,
                               const store::PointRecord& p) const {
    SweepPointOutcome o;
    o.config_key = row.config_key;
    o.fingerprint = cfg.fingerprint;
    o.concurrency = p.concurrency;
    o.status = p.status;
    o.error = p.error;
    o.reused_from_run = p.reused_from_run.value_or(0);
    if (!p.result.empty()) o.headline = headline_of(p.result);
    if (!p.artifacts_dir.empty()) {
      o.result_file = (fs::path(p.artifacts_dir) / fmt::format("conc_{}.json", p.concurrency))
                          .lexically_relative(outcome_->run_dir)
                          .string();
    }
    return o;
  }

  bool run_point(const ConfigPlan& cfg, store::ServerConfigRecord& rec, const fs::path& dir,
                 int64_t conc, launch::Server& server, int gpus) {
    const RecipeRow& row = cfg.row;
    store::PointRecord p = base_point(cfg, rec.id, conc);
    p.artifacts_dir = dir.string();
    auto [prompts, warmups] = prompt_counts(conc);
    BenchSpec bs;
    bs.endpoint_url = server.url();
    bs.model = std::string(row.fields.at("model").as_string());
    bs.api = o_.api;
    bs.workload.isl = static_cast<int>(row.fields.at("isl").as_int64());
    bs.workload.osl = static_cast<int>(row.fields.at("osl").as_int64());
    bs.workload.range_ratio = 0.8;
    bs.workload.seed = 0;
    bs.workload.num_prompts = prompts;
    bs.shape.concurrency = static_cast<int>(conc);
    bs.warmups = warmups;
    bs.metrics.num_gpus = gpus;
    bs.timeout_s = o_.point_timeout_s;
    bs.show_progress = o_.show_progress;
    auto report = run_bench(bs);
    if (!report) {
      // The endpoint's model may be served under another name: ask the server.
      bs.model.clear();
      report = run_bench(bs);
    }
    if (!report) {
      p.status = "failed";
      p.error = report.error().message;
    } else {
      json::object& result = report->json;
      result["config_key"] = row.config_key;
      result["recipe_fingerprint"] = row.fingerprint;
      result["server_config_fingerprint"] = cfg.fingerprint;
      result["workload_key"] = p.workload_key;
      const std::string stem = fmt::format("conc_{}", conc);
      (void)write_file_atomic(dir / (stem + ".json"), json::serialize(result) + "\n");
      (void)write_file_atomic(dir / ("agg_" + stem + ".json"),
                              json::serialize(aggregate_json(row, conc, result, gpus)) + "\n");
      std::string records;
      for (const auto& r : report->run.measured) {
        records += json::serialize(record_to_json(r, report->run.origin_ns));
        records += '\n';
      }
      (void)write_file_atomic(dir / ("records_" + stem + ".jsonl"), records);
      p.result = result;
      store::set_headline_from_result(p);
      const BenchMetrics& m = report->metrics;
      if (report->timed_out) {
        p.status = "failed";
        p.error = fmt::format("point timeout after {} s (partial result kept)", o_.point_timeout_s);
      } else if (report->partial) {
        p.status = "failed";
        p.error = "interrupted (partial result kept)";
        outcome_->interrupted = true;
      } else if (m.num_requests == 0 || m.failure_rate() > kMaxFailureRate) {
        p.status = "failed";
        p.error = fmt::format("{} of {} requests failed", m.failed, m.num_requests);
      } else {
        p.status = "ok";
      }
    }
    bool server_died = false;
    if (p.status == "failed") {
      if (auto gone = server.check_alive()) {
        p.error += "; " + *gone;
        server_died = true;
        std::string tail = file_tail(server.log_path(), 2048);
        outcome_->errors.push_back(
            fmt::format("{} (conc {}): {}{}", row.config_key, conc, *gone,
                        tail.empty() ? "" : "\n--- server.log (tail) ---\n" + tail));
      }
    }
    auto point_id = db_->add_point(p);
    if (!point_id) outcome_->errors.push_back("database: " + point_id.error().message);
    if (p.status != "ok") {
      store::FailureRecord f{0,
                             outcome_->run_id,
                             rec.id,
                             point_id ? std::optional<int64_t>(*point_id) : std::nullopt,
                             server_died ? "server-exit" : "point",
                             p.error,
                             server_died ? file_tail(server.log_path(), 2048) : "",
                             0};
      (void)db_->add_failure(f);
    }
    emit(outcome_of(row, cfg, p));
    return p.status == "ok";
  }

  void record_server_exit(const ConfigPlan& cfg, const store::ServerConfigRecord& rec,
                          const std::vector<int64_t>& concs, const std::string& why) {
    store::FailureRecord f{0,
                           outcome_->run_id,
                           rec.id,
                           std::nullopt,
                           "server-exit",
                           why.substr(0, why.find('\n')),
                           why,
                           0};
    (void)db_->add_failure(f);
    for (int64_t conc : concs) {
      store::PointRecord p = base_point(cfg, rec.id, conc);
      p.status = "failed";
      p.error = why.substr(0, why.find('\n'));
      (void)db_->add_point(p);
      emit(outcome_of(cfg.row, cfg, p));
    }
    outcome_->errors.push_back(fmt::format("{}: {}", cfg.row.config_key, why));
  }

  bool fail_config(const ConfigPlan& cfg, const std::vector<int64_t>& concs,
                   store::ServerConfigRecord& rec, const std::string& kind,
                   const std::string& why) {
    rec.status = "failed";
    rec.error = why;
    (void)db_->update_server_config(rec);
    std::string first = why.substr(0, why.find('\n'));
    std::string tail = why.find('\n') == std::string::npos ? "" : why.substr(why.find('\n') + 1);
    store::FailureRecord f{0, outcome_->run_id, rec.id, std::nullopt, kind, first, tail, 0};
    (void)db_->add_failure(f);
    for (int64_t conc : concs) {
      store::PointRecord p = base_point(cfg, rec.id, conc);
      p.status = "failed";
      p.error = first;
      (void)db_->add_point(p);
      emit(outcome_of(cfg.row, cfg, p));
    }
    outcome_->errors.push_back(fmt::format("{}: {}", cfg.row.config_key, why));
    return false;
  }

  bool fail_all(const ConfigPlan& cfg, const std::string& why) {
    outcome_->errors.push_back(fmt::format("{}: {}", cfg.row.config_key, why));
    return skip_all(cfg, cfg.concs, why);
  }

  void emit(SweepPointOutcome p) {
    std::string row = sweep_table_row(p);
    std::fputs(row.c_str(), out_);
    std::fflush(out_);
    outcome_->points.push_back(std::move(p));
  }

  void note(const std::string& n) {
    if (std::find(outcome_->notes.begin(), outcome_->notes.end(), n) == outcome_->notes.end()) {
      outcome_->notes.push_back(n);
      if (o_.show_progress) fmt::print(stderr, "note: {}\n", n);
    }
  }

  const SweepOptions& o_;
  std::FILE* out_;
  store::Store* db_;
  SweepOutcome* outcome_;
  std::map<std::string, recipe::ConfigEntry> entries_;
  std::optional<recipe::RunnersFile> runners_;
  std::map<std::string, std::unique_ptr<launch::Launcher>> launchers_;
};

Expected<fs::path> make_run_dir(const fs::path& runs_dir, std::string* name) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create: {}", runs_dir.string(), ec.message())};
  const std::string base = timestamp_name();
  for (int i = 0; i < 1000; ++i) {
    std::string n = i == 0 ? base : fmt::format("{}-{}", base, i);
    fs::path p = runs_dir / n;
    if (fs::create_directory(p, ec)) {
      *name = n;
      return p;
    }
    if (ec) return Error{fmt::format("{}: cannot create: {}", p.string(), ec.message())};
  }
  return Error{fmt::format("{}: too many runs with the same timestamp", runs_dir.string())};
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
  {
    // `expect` blocks are checked now, not after a server started.
    std::string problems;
    for (const auto& e : *entries) {
      if (!e.expect) continue;
      auto parsed = verify::parse_expect(*e.expect, e.key + ".expect");
      if (!parsed) problems += fmt::format("{}:{}: {}\n", e.file, e.line, parsed.error().message);
    }
    if (!problems.empty()) {
      problems.pop_back();
      return Error{problems};
    }
  }
  for (int64_t c : o.concurrencies) {
    if (c < 1) return Error{fmt::format("--concurrency values must be at least 1 (got {})", c)};
  }
  auto rows = recipe::expand(*entries, runners ? &*runners : nullptr);
  govern::Labels labels;
  labels.primary = "non-canary-full-sweep-enabled";
  if (!o.labels.empty()) {
    auto parsed = govern::parse_labels(o.labels);
    if (!parsed) return parsed.error();
    labels = *parsed;
  }
  govern::SweepPlan plan = govern::make_sweep_plan(rows, labels);

  std::vector<GroupPlan> groups;
  SweepOutcome outcome;
  outcome.notes = plan.notes;
  if (plan.canary) {
    // One point: the row's concurrency, or the lowest of --concurrency.
    auto canary = group_configs({*plan.canary}, o);
    for (auto& c : canary) c.concs.resize(std::min<size_t>(c.concs.size(), 1));
    groups.push_back({"canary", true, std::move(canary)});
  }
  for (const auto& g : plan.groups) {
    if (g.eval) {
      outcome.notes.push_back(fmt::format(
          "{} eval rows planned; accuracy evals are not run by the sweep yet", g.rows.size()));
      continue;
    }
    GroupPlan gp{g.name, g.fail_fast || o.fail_fast, group_configs(g.rows, o)};
    // The canary's point is measured once, by the canary.
    if (plan.canary) {
      for (auto& c : gp.configs) {
        if (c.fingerprint != groups.front().configs.front().fingerprint) continue;
        const int64_t done = groups.front().configs.front().concs.front();
        std::erase(c.concs, done);
      }
      std::erase_if(gp.configs, [](const ConfigPlan& c) { return c.concs.empty(); });
    }
    if (!gp.configs.empty()) groups.push_back(std::move(gp));
  }

  // 2. Database and run.
  fs::path db_path = o.db.empty() ? o.runs_dir / "inferbench.db" : o.db;
  auto db = store::Store::open(db_path);
  if (!db) return db.error();
  outcome.db = db_path;
  if (!o.resume.empty()) {
    auto run = db->find_run(o.resume);
    if (!run) return run.error();
    if (!*run)
      return Error{fmt::format("--resume {}: no such run in {}", o.resume, db_path.string())};
    outcome.run_id = (*run)->id;
    outcome.run_name = (*run)->name;
    outcome.run_dir = o.runs_dir / outcome.run_name;
    std::error_code ec;
    fs::create_directories(outcome.run_dir, ec);
    if (auto s = db->set_run_status(outcome.run_id, "running"); !s.ok()) return s.error();
  } else {
    std::string name;
    auto dir = make_run_dir(o.runs_dir, &name);
    if (!dir) return dir.error();
    outcome.run_dir = *dir;
    outcome.run_name = name;
    store::RunRecord r;
    r.name = name;
    r.tool_version = INFERBENCH_VERSION;
    r.git_revision = git_revision_of(o.recipes);
    r.host = host_name();
    r.command_line = o.command_line;
    r.labels = o.labels.empty() ? std::vector<std::string>{} : labels.all();
    json::array files;
    for (const auto& f : o.recipes) files.emplace_back(f.string());
    r.options["recipes"] = std::move(files);
    r.options["reuse"] = o.reuse;
    r.options["launcher"] = o.launcher;
    r.options["prompts_per_conc"] = o.prompts_per_conc;
    r.options["min_prompts"] = o.min_prompts;
    r.options["api"] = api_name(o.api);
    auto id = db->begin_run(r);
    if (!id) return id.error();
    outcome.run_id = *id;
  }

  // 3. Execute: canary first (a failure stops everything), then the groups; a failure in a
  // fail-fast group stops the rest of that group only.
  std::map<std::string, recipe::ConfigEntry> by_key;
  for (const auto& e : *entries) by_key.emplace(e.key, e);
  SweepRun run(o, table_out, &*db, &outcome, std::move(by_key), std::move(runners));
  std::fputs(sweep_table_header().c_str(), table_out);
  std::fflush(table_out);
  size_t index = 0;
  bool canary_failed = false;
  for (const GroupPlan& g : groups) {
    bool stop_group = false;
    for (const ConfigPlan& cfg : g.configs) {
      ++index;
      if (outcome.interrupted || interrupt_requested()) {
        outcome.interrupted = true;
        run.skip_all(cfg, cfg.concs, "interrupted");
        continue;
      }
      if (canary_failed) {
        run.skip_all(cfg, cfg.concs, "skipped: the canary failed");
        continue;
      }
      if (stop_group) {
        run.skip_all(cfg, cfg.concs, fmt::format("skipped: fail-fast ({} had a failure)", g.name));
        continue;
      }
      bool ok = run.run_config(cfg, index);
      if (!ok && g.name == "canary") canary_failed = true;
      if (!ok && g.fail_fast) stop_group = true;
    }
  }
  if (interrupt_requested()) outcome.interrupted = true;

  // 4. Summary.
  if (auto s = write_file_atomic(outcome.run_dir / "summary.json",
                                 json::serialize(outcome.to_json()) + "\n");
      !s) {
    outcome.errors.push_back(s.error().message);
  }
  (void)db->finish_run(outcome.run_id, outcome.status());
  return outcome;
}

}  // namespace ib
