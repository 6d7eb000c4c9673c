// `inferbench gate --base REV [--head REV]`: the merge checklist of a recipe pull request, one
// verdict per check with its evidence (docs/gate.md); markdown for the pull request, JSON for
// tools.
#include "govern/gate.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/files.h"
#include "core/json_text.h"

namespace ib::cli {

namespace {

struct GateCliOptions {
  std::string base, head;
  std::string changelog = "perf-changelog.yaml";
  std::vector<std::string> recipes;
  std::string runners;
  std::vector<std::string> labels;
  std::string pr_url;
  bool main = false;
  std::string repo = ".";
  std::string policy = "gate-policy.yaml";
  std::string date;
  std::string markdown;
  bool json = false;
  bool exit_code = false;
};

constexpr int kExitUndecided = 3;

std::string text_report(const govern::GateReport& r) {
  std::string verdict(govern::gate_verdict_name(r.overall()));
  for (auto& ch : verdict) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  std::string out =
      fmt::format("inferbench gate: {} (base {}, head {}; {} config key{} changed)\n", verdict,
                  r.base, r.head, r.keys.size(), r.keys.size() == 1 ? "" : "s");
  for (const auto& c : r.checks) {
    out += fmt::format("{:>2}  {:<13}  {}: {}\n", c.number, govern::gate_verdict_name(c.verdict),
                       c.title, c.summary);
    for (const auto& e : c.evidence) {
      out += fmt::format("      {}{}{}{}\n", e.where().empty() ? "" : e.where() + ": ",
                         e.text.empty() ? "" : e.text + ": ", e.what, e.waived ? " (waived)" : "");
    }
    if (c.verdict == govern::GateVerdict::kFail && !c.todo.empty()) {
      out += fmt::format("      to do: {}\n", c.todo);
    }
  }
  return out;
}

int run_gate_cli(const GateCliOptions& o) {
  if (o.main && !o.pr_url.empty())
    return fail("gate", usage_error("--main and --pr-url exclude each other"));
  auto base = govern::TreeView::open(o.repo, o.base);
  if (!base) return fail("gate", usage_error(base.error().message));
  auto head = govern::TreeView::open(o.repo, o.head);
  if (!head) return fail("gate", usage_error(head.error().message));
  govern::GateOptions go;
  auto file = head->relative(in_repo(o.repo, o.changelog));
  if (!file) return fail("gate", usage_error(file.error().message));
  go.changelog.file = *file;
  for (const auto& p : o.recipes.empty() ? default_recipe_paths() : o.recipes) {
    auto rel = head->relative(in_repo(o.repo, p));
    if (!rel) return fail("gate", usage_error(rel.error().message));
    go.changelog.changed.recipe_paths.push_back(*rel);
  }
  if (!o.runners.empty()) {
    auto rel = head->relative(in_repo(o.repo, o.runners));
    if (!rel) return fail("gate", usage_error(rel.error().message));
    go.changelog.changed.runners_path = *rel;
  }
  auto policy = head->relative(in_repo(o.repo, o.policy));
  if (!policy) return fail("gate", usage_error(policy.error().message));
  go.policy_file = *policy;
  if (!o.date.empty() && !govern::is_iso_date(o.date)) {
    return fail("gate",
                usage_error(fmt::format("--date: expected YYYY-MM-DD, got \"{}\"", o.date)));
  }
  go.date = o.date;
  go.changelog.labels = o.labels;
  go.changelog.main = o.main;
  if (!o.pr_url.empty()) go.changelog.pr_url = o.pr_url;

  auto report = govern::run_gate(*base, *head, go);
  if (!report) return fail("gate", report.error());
  if (!o.markdown.empty()) {
    if (auto st = write_file_atomic(o.markdown, report->to_markdown()); !st) {
      return fail("gate", st.error());
    }
  }
  const std::string text = o.json ? json_text(report->to_json()) + "\n" : text_report(*report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!o.exit_code) return kExitOk;
  switch (report->overall()) {
    case govern::GateVerdict::kFail:
      return kExitFailure;
    case govern::GateVerdict::kCannotDecide:
      return kExitUndecided;
    default:
      return kExitOk;
  }
}

}  // namespace

RunFn register_gate(CLI::App& root) {
  auto o = std::make_shared<GateCliOptions>();
  CLI::App* app = root.add_subcommand(
      "gate",
      "A recipe pull request's merge checklist as code: one verdict per check (pass, fail, n/a, "
      "cannot decide) with its evidence (docs/gate.md)");
  app->add_option("--base", o->base, "Base revision (branch, tag or commit)")->required();
  app->add_option("--head", o->head, "Head revision (default: the working tree)");
  app->add_option("--changelog", o->changelog, "The changelog file")->capture_default_str();
  app->add_option("--recipes", o->recipes,
                  "Recipe files or directories (default: recipes/ and examples/recipes/)");
  app->add_option("--runners", o->runners, "Runners file");
  app->add_option("--labels", o->labels, "Pull-request labels, comma-separated")->delimiter(',');
  app->add_option("--pr-url", o->pr_url,
                  "This pull request's URL: new changelog entries must link it or use XXX");
  app->add_flag("--main", o->main, "Checking a push to main: new links must be canonical");
  app->add_option("--policy", o->policy,
                  "The gate policy, read at head: upstream images per engine, deprecated models "
                  "and scenarios (docs/gate.md)")
      ->capture_default_str();
  app->add_option("--date", o->date,
                  "The review date for deprecations, YYYY-MM-DD (default: today, UTC)");
  app->add_option("-C,--repo", o->repo, "Repository directory")->capture_default_str();
  app->add_option("--markdown", o->markdown,
                  "Also write the verdict as a pull-request comment (markdown) to this file");
  app->add_flag("--json", o->json, "Print the report as JSON");
  app->add_flag("--exit-code", o->exit_code,
                "Exit 1 when a check fails and 3 when one cannot be decided (default: 0 whenever "
                "the gate ran)");
  return [o]() { return run_gate_cli(*o); };
}

}  // namespace ib::cli
