#include "tune/blocks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "core/files.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "recipe/matrix.h"
#include "store/store.h"
#include "sweep/server_spec.h"

namespace ib::tune {

namespace json = boost::json;

int64_t requests_sent(const metrics::PointResult& p) {
  if (p.status != metrics::PointStatus::kOk && p.status != metrics::PointStatus::kInvalid) return 0;
  int64_t n = 0;
  for (const char* k : {"num_prompts", "num_warmups"}) {
    if (const auto* v = p.result.if_contains(k); v && v->is_int64()) n += v->as_int64();
  }
  return n;
}

BlockRunner::BlockRunner(sweep::SweepOptions sweep, std::string tune_id, std::string tune_dir,
                         std::map<std::string, const recipe::ConfigEntry*> by_key, bool resume,
                         std::FILE* points_out)
    : sweep_(std::move(sweep)),
      tune_id_(std::move(tune_id)),
      tune_dir_(std::move(tune_dir)),
      by_key_(std::move(by_key)),
      resume_(resume),
      points_out_(points_out) {}

Expected<std::string> BlockRunner::earlier_run(const std::string& name) {
  if (!resume_) return std::string();
  if (!looked_up_) {
    looked_up_ = true;
    const auto db = sweep_.database();
    std::error_code ec;
    if (!std::filesystem::exists(db, ec)) return std::string();
    auto st = store::Store::open_existing(db);
    if (!st) return st.error();
    auto runs = st->list_runs(0);
    if (!runs) return runs.error();
    for (const auto& r : *runs) {
      const auto* t = r.run.options.if_contains("tune");
      if (t == nullptr || !t->is_object()) continue;
      const auto* id = t->as_object().if_contains("id");
      const auto* block = t->as_object().if_contains("block");
      if (id && id->is_string() && block && block->is_string() && id->as_string() == tune_id_) {
        earlier_[std::string(block->as_string())] = r.run.name;
      }
    }
  }
  auto it = earlier_.find(name);
  return it == earlier_.end() ? std::string() : it->second;
}

namespace {

bool file_state(const std::string& path, uintmax_t& size, int64_t& mtime_ns) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  size = std::filesystem::file_size(path, ec);
  if (ec) return false;
  const auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return false;
  mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return true;
}

std::string resolve_program(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (const auto& dir : split(path, ':')) {
    if (dir.empty()) continue;
    const auto candidate = std::filesystem::path(std::string(dir)) / argv0;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

}  // namespace

std::string ServerBuild::describe() const {
  if (!recorded()) return "";
  return fmt::format("sha256:{} ({})", sha256.substr(0, 12), program);
}

ServerBuild server_build(const recipe::ConfigEntry& entry, const RowSelector& sel,
                         const sweep::SweepOptions& so) {
  ServerBuild b;
  auto row = tuned_row(entry, sel);
  if (!row) return b;
  auto spec = sweep::server_spec_for_row(*row, so.extra_server_args, so.inferbench_exe);
  if (!spec || spec->argv.empty()) return b;
  const std::string name = std::filesystem::path(spec->argv[0]).filename().string();
  for (const char* runtime : {"docker", "podman", "nerdctl", "srun", "sbatch", "apptainer",
                              "singularity", "enroot", "env", "bash", "sh", "python", "python3"}) {
    if (name == runtime) return b;
  }
  b.program = resolve_program(spec->argv[0]);
  if (b.program.empty() || !file_state(b.program, b.size, b.mtime_ns)) return ServerBuild{};
  auto bytes = read_file(b.program);
  if (!bytes) return ServerBuild{};
  b.sha256 = sha256_hex(*bytes);
  return b;
}

Expected<BlockOutcome> BlockRunner::run(const std::string& stage, const std::string& name,
                                        const std::vector<sweep::ConfigPlan>& configs) {
  if (build_.recorded()) {
    uintmax_t size = 0;
    int64_t mtime = 0;
    if (!file_state(build_.program, size, mtime) || size != build_.size ||
        mtime != build_.mtime_ns) {
      return Error{
          fmt::format("the server program {} changed during the tuning (it was {} at "
                      "the start): its measurements would mix two builds; start a new "
                      "tune",
                      build_.program, build_.describe())};
    }
  }
  auto earlier = earlier_run(name);
  if (!earlier) return earlier.error();
  sweep::SweepPlanned planned;
  planned.groups.push_back(sweep::GroupPlan{"tune-" + stage, false, configs});
  sweep::SweepOptions so = sweep_;
  so.resume = *earlier;
  so.extra_run_options["tune"] =
      json::object{{"id", tune_id_}, {"dir", tune_dir_}, {"stage", stage}, {"block", name}};
  so.command_line = fmt::format("inferbench tune --resume {} (block {})", tune_dir_, name);
  std::FILE* out = points_out_;
  std::FILE* sink = nullptr;
  if (out == nullptr) out = sink = std::fopen("/dev/null", "w");
  auto outcome = sweep::run_planned(so, planned, by_key_, {}, out);
  if (sink) std::fclose(sink);
  if (!outcome) return outcome.error();
  BlockOutcome b;
  b.run = outcome->run_name;
  b.interrupted = outcome->interrupted;
  b.points = std::move(outcome->points);
  for (const auto& p : b.points) b.requests += requests_sent(p);
  return b;
}

Expected<recipe::RecipeRow> tuned_row(const recipe::ConfigEntry& entry, const RowSelector& sel) {
  const auto rows = recipe::expand({entry}, nullptr);
  std::vector<std::string> seen;
  for (const auto& r : rows) {
    if (r.scenario != recipe::Scenario::kFixedSeqLen) continue;
    auto field = [&](const char* k) -> int64_t {
      const auto* v = r.fields.if_contains(k);
      return v && v->is_int64() ? v->as_int64() : 0;
    };
    const std::string label =
        fmt::format("isl {} osl {} tp {}", field("isl"), field("osl"), field("tp"));
    if (std::find(seen.begin(), seen.end(), label) == seen.end()) seen.push_back(label);
    if ((sel.isl == 0 || field("isl") == sel.isl) && (sel.osl == 0 || field("osl") == sel.osl) &&
        (sel.tp == 0 || field("tp") == sel.tp)) {
      return r;
    }
  }
  if (seen.empty()) {
    return Error{
        fmt::format("{}: no fixed-seq-len row to tune (agentic rows are not tuned in "
                    "this version)",
                    entry.key)};
  }
  return Error{fmt::format("{}: no row with{}{}{} (its rows: {})", entry.key,
                           sel.isl ? fmt::format(" isl {}", sel.isl) : "",
                           sel.osl ? fmt::format(" osl {}", sel.osl) : "",
                           sel.tp ? fmt::format(" tp {}", sel.tp) : "", fmt::join(seen, "; "))};
}

Expected<sweep::ConfigPlan> side_config(const recipe::ConfigEntry& entry, const RowSelector& sel,
                                        const std::vector<int64_t>& concs,
                                        const sweep::SweepOptions& so, bool eval,
                                        int64_t eval_conc) {
  auto row = tuned_row(entry, sel);
  if (!row) return row.error();
  std::map<std::string, const recipe::ConfigEntry*> by_key{{entry.key, &entry}};
  sweep::PlanOptions po;
  po.concurrencies = concs;
  po.extra_server_args = so.extra_server_args;
  po.launcher = so.launcher.empty() ? "local" : so.launcher;
  po.workload = so.workload;
  po.workload.api = std::string(openai::api_name(so.api));
  auto configs = sweep::group_configs({*row}, by_key, po);
  if (!configs) return configs.error();
  if (configs->empty() || !configs->front().unsupported.empty()) {
    return Error{fmt::format("{}: cannot be measured here: {}", entry.key,
                             configs->empty() ? "no configuration" : configs->front().unsupported)};
  }
  sweep::ConfigPlan c = std::move(configs->front());
  if (eval) {
    recipe::RecipeRow er = *row;
    er.fields["conc"] = eval_conc;
    er.fields["run-eval"] = true;
    c.eval = sweep::eval_workload_for_row(er, po.workload);
    c.eval_concs = {eval_conc};
  }
  for (int64_t conc : c.concs) {
    if (auto s = c.workload->check_point(conc); !s) {
      return Error{fmt::format("{} at concurrency {}: {}", entry.key, conc, s.error().message)};
    }
  }
  return c;
}

}  // namespace ib::tune
