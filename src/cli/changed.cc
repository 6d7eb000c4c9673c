// `inferbench changed --base REV [--head REV] [PATHS...]`: the config keys a change affects, with
// the reason for each (docs/governance.md).
#include "govern/changed.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/strings.h"

namespace ib::cli {

namespace {

struct ChangedCliOptions {
  std::string base;
  std::string head;
  std::vector<std::string> paths;
  std::string runners;
  std::string repo = ".";
  bool json = false;
  bool exit_code = false;
};

int run(const ChangedCliOptions& o) {
  auto base = govern::TreeView::open(o.repo, o.base);
  if (!base) {
    return fail("changed", with_kind(base.error(), ErrorKind::kUsage));
  }
  auto head = govern::TreeView::open(o.repo, o.head);
  if (!head) {
    return fail("changed", with_kind(head.error(), ErrorKind::kUsage));
  }
  govern::ChangedOptions co;
  // Relative paths are taken from the repository directory (-C), as git -C does.
  for (const auto& p : o.paths.empty() ? default_recipe_paths() : o.paths) {
    auto rel = head->relative(in_repo(o.repo, p));
    if (!rel) {
      return fail("changed", with_kind(rel.error(), ErrorKind::kUsage));
    }
    co.recipe_paths.push_back(*rel);
  }
  if (!o.runners.empty()) {
    auto rel = head->relative(in_repo(o.repo, o.runners));
    if (!rel) {
      return fail("changed", with_kind(rel.error(), ErrorKind::kUsage));
    }
    co.runners_path = *rel;
  }
  auto report = govern::changed_keys(*base, *head, co);
  if (!report) {
    return fail("changed", with_kind(report.error(), ErrorKind::kUsage));
  }
  std::string text;
  if (o.json) {
    text = json_text(report->to_json()) + "\n";
  } else {
    text = fmt::format("base {}, head {}: {} recipe file{} read\n", report->base, report->head,
                       report->files.size(), report->files.size() == 1 ? "" : "s");
    if (report->keys.empty()) {
      text += "no config key is affected\n";
    } else {
      text += fmt::format("{} config key{} affected:\n", report->keys.size(),
                          report->keys.size() == 1 ? "" : "s");
      // Keys, file names and reasons come from the repository: escaped for the terminal.
      for (const auto& k : report->keys) {
        text += fmt::format("  {} ({}, {})\n", printable(k.key, 400), k.status,
                            printable(k.file, 400));
        if (k.status != "modified") continue;
        for (const auto& r : k.reasons) text += fmt::format("    {}\n", printable(r.detail, 2000));
      }
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return o.exit_code && !report->keys.empty() ? kExitFailure : kExitOk;
}

}  // namespace

std::vector<std::string> default_recipe_paths() {
  return {"recipes", "examples/recipes"};
}

RunFn register_changed(CLI::App& root) {
  auto o = std::make_shared<ChangedCliOptions>();
  CLI::App* app = root.add_subcommand(
      "changed", "List the config keys a change affects between two git revisions, and why");
  app->add_option("--base", o->base, "Base revision (branch, tag or commit)")->required();
  app->add_option("--head", o->head, "Head revision (default: the working tree)");
  app->add_option("paths", o->paths,
                  "Recipe files or directories (default: recipes/ and examples/recipes/)");
  app->add_option("--runners", o->runners, "Runners file (a change affects keys on its labels)");
  app->add_option("-C,--repo", o->repo, "Repository directory")->capture_default_str();
  app->add_flag("--json", o->json, "Print the report as JSON");
  app->add_flag("--exit-code", o->exit_code, "Exit 1 when any key is affected");
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
