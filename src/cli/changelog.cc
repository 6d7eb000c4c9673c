// `inferbench changelog check --base REV [--head REV]`: the perf-changelog.yaml rules of
// InferenceX plus our coverage rule, between two git revisions (docs/governance.md).
#include "govern/changelog.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/json_text.h"
#include "govern/changed.h"
#include "govern/gate.h"

namespace ib::cli {

namespace {

struct ChangelogCliOptions {
  std::string base;
  std::string head;
  std::string changelog = "perf-changelog.yaml";
  std::vector<std::string> recipes;
  std::string runners;
  std::vector<std::string> labels;
  std::string pr_url;
  bool main = false;
  std::string repo = ".";
  bool json = false;
};

int run_check(const ChangelogCliOptions& o) {
  if (o.main && !o.pr_url.empty())
    return fail("changelog check", usage_error("--main and --pr-url exclude each other"));
  auto base = govern::TreeView::open(o.repo, o.base);
  if (!base) return fail("changelog check", usage_error(base.error().message));
  auto head = govern::TreeView::open(o.repo, o.head);
  if (!head) return fail("changelog check", usage_error(head.error().message));

  // Relative paths are taken from the repository directory (-C), absolute ones as they are.
  auto repo_path = [&](const std::string& p) {
    std::filesystem::path path(p);
    return head->relative(path.is_absolute() ? path : std::filesystem::path(o.repo) / path);
  };
  auto file = repo_path(o.changelog);
  if (!file) return fail("changelog check", usage_error(file.error().message));
  govern::ChangelogInputs in;
  in.file = *file;
  for (const auto& p : o.recipes.empty() ? default_recipe_paths() : o.recipes) {
    auto rel = repo_path(p);
    if (!rel) return fail("changelog check", usage_error(rel.error().message));
    in.changed.recipe_paths.push_back(*rel);
  }
  if (!o.runners.empty()) {
    auto rel = repo_path(o.runners);
    if (!rel) return fail("changelog check", usage_error(rel.error().message));
    in.changed.runners_path = *rel;
  }
  in.main = o.main;
  if (!o.pr_url.empty()) in.pr_url = o.pr_url;
  in.labels = o.labels;
  auto run = govern::changelog_between(*base, *head, in);
  if (!run) return fail("changelog check", usage_error(run.error().message));
  if (!run->note.empty()) fmt::print(stderr, "inferbench changelog check: {}\n", run->note);
  const govern::ChangelogContext& ctx = run->context;
  const govern::ChangelogReport& report = run->report;
  std::string text;
  if (o.json) {
    auto j = report.to_json();
    j["file"] = *file;
    j["base"] = base->describe();
    j["head"] = head->describe();
    if (ctx.affected_keys) {
      boost::json::array keys;
      for (const auto& k : *ctx.affected_keys) keys.emplace_back(k);
      j["affected-keys"] = std::move(keys);
    }
    text = json_text(j) + "\n";
  } else {
    for (const auto& v : report.violations) text += v.str(*file) + "\n";
    if (report.ok()) {
      text += fmt::format(
          "{}: OK ({} appended entr{}, {} pr-link correction{}; base {}, head {})\n", *file,
          report.additions.size(), report.additions.size() == 1 ? "y" : "ies", report.corrections,
          report.corrections == 1 ? "" : "s", base->describe(), head->describe());
    } else {
      text +=
          fmt::format("{}: {} violation{} (base {}, head {})\n", *file, report.violations.size(),
                      report.violations.size() == 1 ? "" : "s", base->describe(), head->describe());
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return report.ok() ? kExitOk : kExitFailure;
}

}  // namespace

RunFn register_changelog(CLI::App& root) {
  auto o = std::make_shared<ChangelogCliOptions>();
  CLI::App* app = root.add_subcommand("changelog", "Perf-changelog governance");
  app->require_subcommand(1);
  CLI::App* check = app->add_subcommand(
      "check",
      "Check perf-changelog.yaml between two git revisions (history, format, keys, "
      "labels, coverage of the changed keys)");
  check->add_option("--base", o->base, "Base revision (branch, tag or commit)")->required();
  check->add_option("--head", o->head, "Head revision (default: the working tree)");
  check->add_option("--changelog", o->changelog, "The changelog file")->capture_default_str();
  check->add_option("--recipes", o->recipes,
                    "Recipe files or directories (default: recipes/ and examples/recipes/)");
  check->add_option("--runners", o->runners, "Runners file");
  check->add_option("--labels", o->labels, "Pull-request labels, comma-separated")->delimiter(',');
  check->add_option("--pr-url", o->pr_url,
                    "This pull request's URL: new entries must link it or use XXX");
  check->add_flag("--main", o->main, "Checking a push to main: new links must be canonical");
  check->add_option("-C,--repo", o->repo, "Repository directory")->capture_default_str();
  check->add_flag("--json", o->json, "Print the report as JSON");
  return [o]() { return run_check(*o); };
}

}  // namespace ib::cli
