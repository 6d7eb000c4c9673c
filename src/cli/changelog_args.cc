#include "cli/changelog_args.h"

#include "cli/commands.h"
#include "cli/options.h"

namespace ib::cli {

void add_changelog_args(CLI::App* app, ChangelogArgs& a) {
  app->add_option("--base", a.base, "Base revision (branch, tag or commit)")->required();
  app->add_option("--head", a.head, "Head revision (default: the working tree)");
  app->add_option("--changelog", a.changelog, "The changelog file")->capture_default_str();
  app->add_option("--recipes", a.recipes,
                  "Recipe files or directories (default: recipes/ and examples/recipes/)");
  app->add_option("--runners", a.runners, "Runners file");
  app->add_option("--labels", a.labels, "Pull-request labels, comma-separated")->delimiter(',');
  app->add_option("--pr-url", a.pr_url,
                  "This pull request's URL: new changelog entries must link it or use XXX");
  app->add_flag("--main", a.main, "Checking a push to main: new links must be canonical");
  app->add_option("-C,--repo", a.repo, "Repository directory")->capture_default_str();
}

Expected<OpenedRevisions> open_revisions(const ChangelogArgs& a) {
  if (a.main && !a.pr_url.empty()) return usage_error("--main and --pr-url exclude each other");
  auto base = govern::TreeView::open(a.repo, a.base);
  if (!base) return usage_error(base.error().message);
  auto head = govern::TreeView::open(a.repo, a.head);
  if (!head) return usage_error(head.error().message);
  return OpenedRevisions{std::move(*base), std::move(*head)};
}

Expected<govern::ChangelogInputs> changelog_inputs(const govern::TreeView& head,
                                                   const ChangelogArgs& a) {
  govern::ChangelogInputs in;
  auto file = head.relative(in_repo(a.repo, a.changelog));
  if (!file) return usage_error(file.error().message);
  in.file = *file;
  for (const auto& p : a.recipes.empty() ? default_recipe_paths() : a.recipes) {
    auto rel = head.relative(in_repo(a.repo, p));
    if (!rel) return usage_error(rel.error().message);
    in.changed.recipe_paths.push_back(*rel);
  }
  if (!a.runners.empty()) {
    auto rel = head.relative(in_repo(a.repo, a.runners));
    if (!rel) return usage_error(rel.error().message);
    in.changed.runners_path = *rel;
  }
  in.labels = a.labels;
  in.main = a.main;
  if (!a.pr_url.empty()) in.pr_url = a.pr_url;
  return in;
}

}  // namespace ib::cli
