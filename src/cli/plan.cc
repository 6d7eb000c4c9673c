// `inferbench plan`: validate recipe files and print the benchmark rows they expand into
// (docs/recipes.md).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "govern/labels.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "report/table.h"
#include "sweep/planner.h"
#include "sweep/server_spec.h"

namespace ib::cli {

namespace {

struct PlanOptions {
  std::vector<std::string> files;
  std::string runners;
  std::vector<std::string> keys;
  std::vector<std::string> labels;
  bool json = false;
  std::string launcher = "local";  // slurm: each disaggregated topology's job and steps
  std::string stand_in;            // serve-sim: rows without a serve block get serve-sim
  int gpus_per_node = 8;
};

// Recipe files under the default directories, when none are named.
std::vector<std::string> default_files() {
  std::vector<std::string> files;
  for (const auto& dir : default_recipe_paths()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml"))
        files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string plan_text(const govern::SweepPlan& plan);

std::string conc_text(const boost::json::value& conc) {
  if (conc.is_int64()) return std::to_string(conc.as_int64());
  std::string out;
  for (const auto& c : conc.as_array()) {
    if (!out.empty()) out += ',';
    out += std::to_string(c.as_int64());
  }
  return out;
}

std::string field_text(const boost::json::object& f, const char* name) {
  if (!f.contains(name)) return "-";
  const auto& v = f.at(name);
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_int64()) return std::to_string(v.as_int64());
  return json_text(v);
}

// "tp" for single-node rows, "P<nw>x<tp>/D<nw>x<tp>" for multi-node ones; "/ep" when ep > 1; the
// spec-decoding (" mtp") when a single-node row speculates.
std::string parallelism_text(const recipe::RecipeRow& row) {
  const auto& f = row.fields;
  auto worker = [](const boost::json::object& w) {
    std::string t = fmt::format("{}x{}", w.at("num-worker").as_int64(), w.at("tp").as_int64());
    if (w.at("ep").as_int64() > 1) t += fmt::format("/ep{}", w.at("ep").as_int64());
    return t;
  };
  if (f.contains("prefill")) {
    return fmt::format("P{} D{}", worker(f.at("prefill").as_object()),
                       worker(f.at("decode").as_object()));
  }
  std::string t = fmt::format("tp{}", f.at("tp").as_int64());
  if (f.at("ep").as_int64() > 1) t += fmt::format("/ep{}", f.at("ep").as_int64());
  // Speculative decoding makes another server of the same key: said beside its parallelism.
  if (const auto* sd = f.if_contains("spec-decoding");
      sd && sd->is_string() && sd->as_string() != "none") {
    t += fmt::format(" {}", std::string_view(sd->as_string()));
  }
  return t;
}

std::string plan_table_text(const std::vector<recipe::RecipeRow>& rows) {
  using report::Align;
  report::Table table({{"KEY", Align::kLeft},
                       {"RUNNER", Align::kLeft},
                       {"ISL/OSL", Align::kLeft},
                       {"PARALLELISM", Align::kLeft},
                       {"CONC", Align::kLeft},
                       {"EXP-NAME", Align::kLeft},
                       {"EVAL", Align::kLeft},
                       {"FINGERPRINT", Align::kLeft}});
  for (const auto& row : rows) {
    const auto& f = row.fields;
    std::string seq = f.contains("isl")
                          ? fmt::format("{}/{}", f.at("isl").as_int64(), f.at("osl").as_int64())
                      : f.contains("trace") ? std::string("trace")
                                            : std::string("agentic");
    table.add_row({row.config_key, field_text(f, "runner"), seq, parallelism_text(row),
                   conc_text(f.at("conc")), field_text(f, "exp-name"),
                   f.at("run-eval").as_bool() ? "yes" : "", row.fingerprint.substr(0, 12)});
  }
  return table.render();
}

// The processes of each disaggregated server configuration (serve blocks by role), one line a
// role as the local launcher starts them: workers first, the router last.
std::string topology_text(const std::vector<recipe::RecipeRow>& rows, const PlanOptions& o) {
  std::string out;
  std::set<std::string> shown;
  for (const auto& row : rows) {
    const auto* serve = row.fields.if_contains("serve");
    if (serve == nullptr || !serve->is_object() || !serve->as_object().contains("router")) continue;
    if (!shown.insert(row.fingerprint).second) continue;
    auto spec = sweep::server_spec_for_row(row, {}, "inferbench");
    out += fmt::format("\ntopology of {} ({}):\n", row.config_key, parallelism_text(row));
    if (!spec) {
      out += fmt::format("  cannot start: {}\n", redact_text(spec.error().message));
      continue;
    }
    for (const auto& r : spec->roles) {
      std::vector<std::string> env;
      for (const auto& [k, v] : r.env) env.push_back(k + "=" + v);
      // The GPUs the role stands for (the row's tp x pp), also for the simulator, which asks for
      // none.
      int64_t gpus = 0;
      if (const auto* w = row.fields.if_contains(r.role);
          r.role != "router" && w && w->is_object()) {
        const auto* tp = w->as_object().if_contains("tp");
        const auto* pp = w->as_object().if_contains("pp");
        gpus = (tp && tp->is_int64() ? tp->as_int64() : 1) *
               (pp && pp->is_int64() ? pp->as_int64() : 1);
      }
      out += fmt::format("  {:<10} {:>2} GPU{} {}{}{}\n", r.label(), gpus, gpus == 1 ? " " : "s",
                         redact_text(fmt::format("{}", fmt::join(r.argv, " "))),
                         env.empty() ? "" : "  env ",
                         redact_text(fmt::format("{}", fmt::join(env, " "))));
    }
    if (o.launcher == "slurm") {
      // Where each role would run: the job, its nodes, each step's srun line.
      out += sweep::slurm_placement_text(*spec, o.gpus_per_node);
    }
  }
  return out;
}

int run(PlanOptions o) {
  if (o.files.empty()) o.files = default_files();
  if (o.files.empty()) {
    return fail(
        "plan",
        usage_error("give at least one recipe file (none under recipes/ or examples/recipes/)"));
  }
  std::optional<govern::Labels> labels;
  if (!o.labels.empty()) {
    auto parsed = govern::parse_labels(o.labels);
    if (!parsed) {
      return fail("plan", with_kind(parsed.error(), ErrorKind::kUsage));
    }
    labels = std::move(*parsed);
  }
  std::optional<recipe::RunnersFile> runners;
  if (!o.runners.empty()) {
    auto loaded = recipe::load_runners(o.runners);
    if (!loaded) {
      fmt::print(stderr, "{}\n", loaded.error().message);
      return kExitUsage;
    }
    runners = std::move(*loaded);
  }
  std::vector<std::filesystem::path> paths(o.files.begin(), o.files.end());
  // A directory stands for its YAML files; say which (on stderr: --json output stays JSON).
  for (const auto& line : recipe::describe_expansion(paths)) {
    fmt::print(stderr, "inferbench plan: {}\n", line);
  }
  auto entries = recipe::load_master_configs(paths);
  if (!entries) {
    fmt::print(stderr, "{}\n", entries.error().message);
    return kExitUsage;
  }
  // --keys: fnmatch globs as InferenceX's test-config; a glob that matches nothing is an error.
  auto selected = recipe::select_keys(*entries, o.keys);
  if (!selected) {
    return fail("plan", with_kind(selected.error(), ErrorKind::kUsage));
  }
  *entries = std::move(*selected);
  auto rows = recipe::expand(*entries, runners ? &*runners : nullptr);
  if (o.stand_in == "serve-sim") sweep::stand_in_serve_sim(rows);
  if (rows.empty()) {
    return fail("plan", usage_error("the recipes expand into no benchmark rows"));
  }
  // The expect blocks, golden acceptance files included, as the sweep reads them.
  if (auto st = sweep::validate_expect_blocks(rows, *entries); !st) {
    fmt::print(stderr, "{}\n", redact_text(st.error().message));
    return kExitUsage;
  }
  std::string text;
  if (labels) {
    auto plan = govern::make_sweep_plan(rows, *labels);
    if (plan.throughput_rows() + plan.eval_rows() == 0) {
      return fail("plan",
                  usage_error(fmt::format(
                      "--labels {} select{} no rows of these recipes; nothing would be measured",
                      printable(fmt::format("{}", fmt::join(o.labels, ","))),
                      o.labels.size() == 1 ? "s" : "")));
    }
    text = o.json ? json_text(redacted(plan.to_json())) + "\n" : plan_text(plan);
  } else if (o.json) {
    // Rows as they would be stored: credentials hidden (core/redact.h); the fingerprint is the
    // real values'.
    boost::json::array out;
    for (const auto& row : rows) out.push_back(redacted(row.to_json()));
    text = json_text(out) + "\n";
  } else {
    text = plan_table_text(rows) + topology_text(rows, o);
  }
  // One write; a reader that stops early (`| head`) is not an error worth reporting.
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

std::string plan_text(const govern::SweepPlan& plan) {
  std::string out = fmt::format("labels: {}\n", fmt::join(plan.labels.all(), ", "));
  for (const auto& n : plan.notes) out += fmt::format("  {}\n", n);
  out +=
      fmt::format("{} throughput rows, {} eval rows\n", plan.throughput_rows(), plan.eval_rows());
  if (plan.canary) out += "\ncanary (runs first):\n" + plan_table_text({*plan.canary});
  for (const auto& g : plan.groups) {
    out += fmt::format("\n{}{}{} ({} rows):\n", g.name, g.eval ? " [eval]" : "",
                       g.fail_fast ? " [fail-fast]" : "", g.rows.size());
    out += plan_table_text(g.rows);
  }
  return out;
}

}  // namespace

RunFn register_plan(CLI::App& root) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* app =
      root.add_subcommand("plan", "Validate recipe files and print their benchmark rows");
  app->add_option("files", o->files, "Recipe (master-config) YAML files")->check(existing_path());
  app->add_option("--runners", o->runners, "Runners file (labels, hardware)")->check(input_file());
  app->add_option("--keys", o->keys, "Only config keys matching these globs (fnmatch)");
  app->add_option("--labels", o->labels,
                  "Sweep labels (one primary: sweep-enabled, full-sweep-fail-fast, ...; modifiers: "
                  "all-evals, evals-only, agentx-fast): print the sweep plan")
      ->delimiter(',');
  app->add_flag("--json", o->json, "Print rows (or the sweep plan) as JSON");
  app->add_option("--launcher", o->launcher,
                  "slurm: also print each disaggregated topology's job, the node of each role and "
                  "its srun line")
      ->check(CLI::IsMember({"local", "slurm", "endpoint"}));
  app->add_option("--stand-in", o->stand_in,
                  "serve-sim: rows without a serve block are served by serve-sim standing in for "
                  "their engine (as sweep --stand-in)")
      ->check(CLI::IsMember({"serve-sim"}));
  add_integer(app, "--slurm-gpus-per-node", o->gpus_per_node,
              "With --launcher slurm: GPUs of one node (a worker spans ceil(its GPUs / this) "
              "nodes)",
              1, 1024);
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
