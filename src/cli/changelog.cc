// `inferbench changelog check --base REV [--head REV]`: the perf-changelog.yaml rules of
// InferenceX plus our coverage rule, between two git revisions (docs/governance.md).
#include "govern/changelog.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/changelog_args.h"
#include "cli/commands.h"
#include "core/json_text.h"
#include "govern/changed.h"
#include "govern/gate.h"

namespace ib::cli {

namespace {

struct ChangelogCliOptions {
  ChangelogArgs args;
  bool json = false;
};

int run_check(const ChangelogCliOptions& o) {
  auto revs = open_revisions(o.args);
  if (!revs) return fail("changelog check", revs.error());
  const govern::TreeView& base = revs->base;
  const govern::TreeView& head = revs->head;
  auto in = changelog_inputs(head, o.args);
  if (!in) return fail("changelog check", in.error());
  const std::string& file = in->file;
  auto run = govern::changelog_between(base, head, *in);
  if (!run) return fail("changelog check", usage_error(run.error().message));
  if (!run->note.empty()) fmt::print(stderr, "inferbench changelog check: {}\n", run->note);
  const govern::ChangelogContext& ctx = run->context;
  const govern::ChangelogReport& report = run->report;
  std::string text;
  if (o.json) {
    auto j = report.to_json();
    j["file"] = file;
    j["base"] = base.describe();
    j["head"] = head.describe();
    if (ctx.affected_keys) {
      boost::json::array keys;
      for (const auto& k : *ctx.affected_keys) keys.emplace_back(k);
      j["affected-keys"] = std::move(keys);
    }
    text = json_text(j) + "\n";
  } else {
    for (const auto& v : report.violations) text += v.str(file) + "\n";
    if (report.ok()) {
      text += fmt::format(
          "{}: OK ({} appended entr{}, {} pr-link correction{}; base {}, head {})\n", file,
          report.additions.size(), report.additions.size() == 1 ? "y" : "ies", report.corrections,
          report.corrections == 1 ? "" : "s", base.describe(), head.describe());
    } else {
      text +=
          fmt::format("{}: {} violation{} (base {}, head {})\n", file, report.violations.size(),
                      report.violations.size() == 1 ? "" : "s", base.describe(), head.describe());
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
  add_changelog_args(check, o->args);
  check->add_flag("--json", o->json, "Print the report as JSON");
  return [o]() { return run_check(*o); };
}

}  // namespace ib::cli
