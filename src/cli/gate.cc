// `inferbench gate --base REV [--head REV]`: the merge checklist of a recipe pull request, one
// verdict per check with its evidence (docs/gate.md); markdown for the pull request, JSON for
// tools.
#include "govern/gate.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/changelog_args.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/files.h"
#include "core/json_text.h"
#include "store/store.h"
#include "sweep/gate_runs.h"

namespace ib::cli {

namespace {

struct GateCliOptions {
  ChangelogArgs args;
  std::string policy = "gate-policy.yaml";
  CLI::Option* policy_option = nullptr;
  bool policy_named = false;  // given on the command line: then it must exist
  std::string date;
  std::string markdown;
  bool json = false;
  bool exit_code = false;
  std::string db;     // "": the run checks cannot decide
  std::string reuse;  // --reuse RUN
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
  auto revs = open_revisions(o.args);
  if (!revs) return fail("gate", revs.error());
  govern::GateOptions go;
  auto in = changelog_inputs(revs->head, o.args);
  if (!in) return fail("gate", in.error());
  go.changelog = std::move(*in);
  auto policy = revs->head.relative(in_repo(o.args.repo, o.policy));
  if (!policy) return fail("gate", usage_error(policy.error().message));
  go.policy_file = *policy;
  go.policy_named = o.policy_named;
  if (!o.date.empty() && !govern::is_iso_date(o.date)) {
    return fail("gate",
                usage_error(fmt::format("--date: expected YYYY-MM-DD, got \"{}\"", o.date)));
  }
  go.date = o.date;
  std::optional<store::Store> db;
  if (!o.db.empty()) {
    auto opened = store::Store::open_read_only(o.db);
    if (!opened) return fail("gate", usage_error("--db: " + opened.error().message));
    db.emplace(std::move(*opened));
  } else if (!o.reuse.empty()) {
    return fail("gate", usage_error("--reuse needs the results database that holds it (--db)"));
  }
  sweep::GateRunOptions ro;
  ro.reuse = o.reuse;
  if (db) {
    go.run_checks = [&](const govern::GateContext& ctx, govern::GateReport& r) {
      return sweep::decide_gate_runs(ctx, *db, ro, r);
    };
  }

  auto report = govern::run_gate(revs->base, revs->head, go);
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
  add_changelog_args(app, o->args);
  o->policy_option =
      app->add_option(
             "--policy", o->policy,
             "The gate policy, read at head: upstream images per engine, deprecated models "
             "and scenarios (docs/gate.md)")
          ->capture_default_str();
  app->add_option("--db", o->db,
                  "The results database the sweeps of the change wrote: checks 1, 3, 6 and 10 and "
                  "the run halves of 5, 7, 8 and 9 read its runs (without it they cannot decide)");
  app->add_option("--reuse", o->reuse,
                  "The run (id or name) a merge would reuse instead of sweeping again: check 3 "
                  "decides whether it may");
  app->add_option("--date", o->date,
                  "The review date for deprecations, YYYY-MM-DD (default: today, UTC)");
  app->add_option("--markdown", o->markdown,
                  "Also write the verdict as a pull-request comment (markdown) to this file");
  app->add_flag("--json", o->json, "Print the report as JSON");
  app->add_flag("--exit-code", o->exit_code,
                "Exit 1 when a check fails and 3 when one cannot be decided (default: 0 whenever "
                "the gate ran)");
  return [o]() {
    o->policy_named = o->policy_option->count() > 0;
    return run_gate_cli(*o);
  };
}

}  // namespace ib::cli
