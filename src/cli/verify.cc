// `inferbench verify`: did a recipe change take effect? (docs/verify.md)
//   inferbench verify --base REV [--head REV] [PATHS...]   changed keys between git revisions
//   inferbench verify BASE.yaml HEAD.yaml                 two recipe files
//   inferbench verify RUN_A RUN_B                         two stored runs
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/server_options.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "govern/changed.h"
#include "store/store.h"
#include "sweep/verify_change.h"

namespace ib::cli {

namespace {

struct VerifyCliOptions {
  std::string base;
  std::string head;
  std::vector<std::string> args;
  std::string runners;
  std::string repo = ".";
  std::string db = store::default_database();
  std::string work_dir;
  std::string markdown;
  ServerOptions server;
  std::vector<std::string> ignore;
  bool json = false;
  bool exit_code = false;
};

bool looks_like_recipe(const std::string& a) {
  auto ext = std::filesystem::path(a).extension();
  return ext == ".yaml" || ext == ".yml";
}

bool is_recipe_file(const std::string& a) {
  std::error_code ec;
  return looks_like_recipe(a) && std::filesystem::is_regular_file(a, ec);
}

std::string default_work_dir() {
  return utc_time_text("runs/verify-%Y%m%d-%H%M%S");
}

int report_and_exit(const VerifyCliOptions& o, const sweep::VerifyReport& report,
                    const std::filesystem::path& work_dir = {}) {
  // Where the started servers' logs and traces went (the folder is made only when one started).
  std::error_code ec;
  if (!work_dir.empty() && std::filesystem::exists(work_dir, ec)) {
    fmt::print(stderr, "inferbench verify: server logs and environment traces are in {}{}\n",
               work_dir.string(), o.work_dir.empty() ? " (choose with --work-dir)" : "");
  }
  const std::string md = report.markdown();
  if (!o.markdown.empty()) {
    if (auto s = write_file_atomic(o.markdown, md); !s) {
      return fail("verify", with_kind(s.error(), ErrorKind::kUsage));
    }
  }
  std::string text = o.json ? json_text(report.to_json()) + "\n" : md;
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (interrupt_requested()) return interrupted_exit_code();
  if (o.exit_code) {
    for (const auto& k : report.keys) {
      if (k.no_op()) return kExitFailure;
    }
  }
  return kExitOk;
}

// The library's options from the command line's; registers --server-arg's secrets
// (core/redact.h) on the way.
sweep::VerifyOptions verify_options(const VerifyCliOptions& o) {
  sweep::VerifyOptions vo;
  vo.work_dir = o.work_dir.empty() ? default_work_dir() : o.work_dir;
  vo.inferbench_exe = self_executable();
  register_server_secrets(o.server);
  vo.extra_server_args = o.server.args;
  vo.startup_timeout = std::chrono::seconds(static_cast<int64_t>(o.server.startup_timeout_s));
  vo.env_trace = !o.server.no_env_trace;
  vo.ignore_settings.insert(o.ignore.begin(), o.ignore.end());
  vo.show_progress = true;  // plain lines, terminal or log
  return vo;
}

// Git mode (--base REV [--head REV] [PATHS...]): the keys `changed` reports.
int verify_git_revisions(const VerifyCliOptions& o, const sweep::VerifyOptions& vo) {
  auto base = govern::TreeView::open(o.repo, o.base);
  if (!base) return fmt::print(stderr, "inferbench verify: {}\n", base.error().message), kExitUsage;
  auto head = govern::TreeView::open(o.repo, o.head);
  if (!head) return fmt::print(stderr, "inferbench verify: {}\n", head.error().message), kExitUsage;
  govern::ChangedOptions co;
  // Relative paths are taken from the repository directory (-C), as git -C does.
  for (const auto& p : o.args.empty() ? default_recipe_paths() : o.args) {
    auto rel = head->relative(in_repo(o.repo, p));
    if (!rel) return fmt::print(stderr, "inferbench verify: {}\n", rel.error().message), kExitUsage;
    co.recipe_paths.push_back(*rel);
  }
  if (!o.runners.empty()) {
    auto rel = head->relative(in_repo(o.repo, o.runners));
    if (!rel) return fmt::print(stderr, "inferbench verify: {}\n", rel.error().message), kExitUsage;
    co.runners_path = *rel;
  }
  auto changed = govern::changed_keys(*base, *head, co);
  if (!changed)
    return fmt::print(stderr, "inferbench verify: {}\n", changed.error().message), kExitUsage;
  auto be = govern::load_configs_at(*base, co);
  auto he = govern::load_configs_at(*head, co);
  if (!be || !he) {
    return fail("verify", with_kind(!be ? be.error() : he.error(), ErrorKind::kUsage));
  }
  auto report = sweep::verify_changes(*be, *he, *changed, vo);
  if (!report)
    return fmt::print(stderr, "inferbench verify: {}\n", report.error().message), kExitFailure;
  return report_and_exit(o, *report, vo.work_dir);
}

// The two arguments are two recipe files or two runs, not one of each (nullopt: go on; else the
// exit code).
std::optional<int> check_verify_pair(const VerifyCliOptions& o) {
  if (o.args.size() != 2) {
    return fail("verify",
                usage_error("give --base REV [--head REV], two recipe files, or two runs"));
  }
  // A name ending in .yaml/.yml is meant as a recipe file: say what is wrong with it rather than
  // look it up as a run.
  for (const auto& a : o.args) {
    if (!looks_like_recipe(a) || is_recipe_file(a)) continue;
    std::error_code ec;
    return fail("verify",
                usage_error(fmt::format("{}: {}", printable(a),
                                        std::filesystem::is_directory(a, ec)
                                            ? "a folder, not a recipe file (give two recipe files)"
                                            : "no such recipe file")));
  }
  if (is_recipe_file(o.args[0]) != is_recipe_file(o.args[1])) {
    return fail("verify",
                usage_error(fmt::format(
                    "{} is a recipe file but {} is not; give two recipe files or two runs",
                    printable(o.args[is_recipe_file(o.args[0]) ? 0 : 1]),
                    printable(o.args[is_recipe_file(o.args[0]) ? 1 : 0]))));
  }
  return std::nullopt;
}

// BASE.yaml HEAD.yaml: the keys that differ between two recipe files.
int verify_recipe_files(const VerifyCliOptions& o, const sweep::VerifyOptions& vo) {
  auto be = recipe::load_master_configs({o.args[0]});
  if (!be) return fmt::print(stderr, "{}\n", be.error().message), kExitUsage;
  auto he = recipe::load_master_configs({o.args[1]});
  if (!he) return fmt::print(stderr, "{}\n", he.error().message), kExitUsage;
  // Two files with one key each under different names: compare them with each other.
  if (be->size() == 1 && he->size() == 1) he->front().key = be->front().key;
  govern::ChangedReport changed = govern::diff_entries(*be, *he);
  changed.base = o.args[0];
  changed.head = o.args[1];
  auto report = sweep::verify_changes(*be, *he, changed, vo);
  if (!report)
    return fmt::print(stderr, "inferbench verify: {}\n", report.error().message), kExitFailure;
  return report_and_exit(o, *report, vo.work_dir);
}

// RUN_A RUN_B: two runs stored in --db.
int verify_stored_runs(const VerifyCliOptions& o, const sweep::VerifyOptions& vo) {
  auto db = store::Store::open_read_only(o.db);
  if (!db) return fmt::print(stderr, "inferbench verify: {}\n", db.error().message), kExitUsage;
  std::vector<store::RunRecord> runs;
  for (const auto& id : o.args) {
    auto r = db->find_run(id);
    if (!r) return fmt::print(stderr, "inferbench verify: {}\n", r.error().message), kExitUsage;
    if (!*r) {
      return fail("verify", usage_error(fmt::format("{}: neither a recipe file nor a run in {}", id,
                                                    store::database_name(o.db))));
    }
    runs.push_back(**r);
  }
  auto report = sweep::verify_runs(*db, runs[0], runs[1], vo.ignore_settings);
  if (!report)
    return fmt::print(stderr, "inferbench verify: {}\n", report.error().message), kExitUsage;
  return report_and_exit(o, *report);
}

int run(const VerifyCliOptions& o) {
  if (auto same = same_output_files({{"--db", o.db}, {"--markdown", o.markdown}})) {
    return fail("verify", usage_error(*same));
  }
  install_interrupt_handlers();
  const sweep::VerifyOptions vo = verify_options(o);
  if (!o.base.empty()) return verify_git_revisions(o, vo);
  if (auto rc = check_verify_pair(o)) return *rc;
  if (is_recipe_file(o.args[0]) && is_recipe_file(o.args[1])) return verify_recipe_files(o, vo);
  return verify_stored_runs(o, vo);
}

}  // namespace

RunFn register_verify(CLI::App& root) {
  auto o = std::make_shared<VerifyCliOptions>();
  CLI::App* app = root.add_subcommand(
      "verify",
      "Check that a recipe change takes effect: effective configuration and environment "
      "reads of the base and head servers, verdict per changed key");
  app->add_option("--base", o->base, "Base git revision (then PATHS are recipe files or folders)");
  app->add_option("--head", o->head, "Head git revision (default: the working tree)");
  app->add_option("args", o->args, "PATHS with --base; or BASE.yaml HEAD.yaml; or RUN_A RUN_B");
  app->add_option("--runners", o->runners, "Runners file");
  app->add_option("-C,--repo", o->repo, "Repository directory")->capture_default_str();
  app->add_option("--db", o->db, "Results database (RUN_A RUN_B)")
      ->check(database_file())
      ->default_str(store::database_name(o->db));
  app->add_option("--work-dir", o->work_dir,
                  "Where server logs and traces go (default runs/verify-<time>)")
      ->check(folder_to_write());
  app->add_option("--markdown", o->markdown, "Also write the markdown summary to this file")
      ->check(output_file());
  add_server_options(app, o->server, ServerOptionSet::kServers);
  app->add_option("--ignore-setting", o->ignore, "Effective setting to ignore when diffing");
  app->add_flag("--json", o->json, "Print the report as JSON (default: markdown)");
  app->add_flag("--exit-code", o->exit_code, "Exit 1 when any changed key is a no-op");
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
