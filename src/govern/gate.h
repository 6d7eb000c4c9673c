// `inferbench gate`: a recipe pull request's merge checklist as code (docs/gate.md), in place of
// InferenceX's language-model sign-off (.github/codeowner-signoff-verify-prompt.md, Checks 0-12).
// Each check gives one verdict with its evidence: the file and line of the change, the run and
// point, the effective value. A check never claims more than it saw: what it could not see is
// "cannot decide", with what is missing.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/changed.h"
#include "govern/changelog.h"
#include "govern/gate_policy.h"
#include "govern/git.h"
#include "govern/git_diff.h"

namespace ib::govern {

enum class GateVerdict { kPass, kFail, kNotApplicable, kCannotDecide };
std::string_view gate_verdict_name(GateVerdict v);  // pass | fail | n/a | cannot decide

/// One piece of evidence: where (file and line of the head revision, or a run and point), what.
struct GateEvidence {
  std::string file;
  int line = 0;
  std::string text;  // the line, or the value seen
  std::string what;  // why it is evidence
  bool waived = false;
  boost::json::object to_json() const;
  std::string where() const;  // "file:line", "file", or ""
};

struct GateCheck {
  int number = 0;
  std::string id;          // stable: "sweep-and-evals", "changelog", "flop-overrides", ...
  std::string title;       // "No FLOP-removing overrides"
  std::string inferencex;  // the sign-off check it replaces: "Check 8"
  GateVerdict verdict = GateVerdict::kCannotDecide;
  std::string summary;  // one sentence: what was decided from what
  std::string todo;     // what to do when it fails or cannot decide
  std::vector<GateEvidence> evidence;
  boost::json::object to_json() const;
};

struct GateReport {
  std::string base, head;         // TreeView::describe()
  std::vector<std::string> keys;  // the config keys the change affects
  std::vector<GateCheck> checks;
  /// fail when any check fails; cannot decide when none fails and one could not decide; else pass
  /// (n/a counts as pass, as in InferenceX's sign-off).
  GateVerdict overall() const;
  boost::json::object to_json() const;
  /// A pull-request comment: the verdict, a table of the checks, each failing or undecided one
  /// with its evidence and what to do.
  std::string to_markdown() const;
};

/// The changelog check's inputs, as `changelog check` takes them.
struct ChangelogInputs {
  std::string file = "perf-changelog.yaml";  // repository-relative
  ChangedOptions changed;                    // repository-relative recipe paths and runners
  std::vector<std::string> labels;
  std::optional<std::string> pr_url;
  bool main = false;
};

struct ChangelogRun {
  ChangelogReport report;
  ChangelogContext context;
  std::optional<ChangedReport> changed;  // nullopt when no recipe file was found at head
  std::string note;                      // why keys were not resolved, when they were not
};

/// `changelog check` between two revisions: the file at both, the head's keys and the changed
/// keys for resolution and coverage. Error when the file is missing at head or a recipe does not
/// load (naming the revision, file and line).
Expected<ChangelogRun> changelog_between(const TreeView& base, const TreeView& head,
                                         const ChangelogInputs& in);

struct GateOptions {
  ChangelogInputs changelog;
  std::string policy_file = "gate-policy.yaml";  // repository-relative, read at head
  bool policy_named = false;  // named by the user: missing at head is an error, not "no policy"
  std::string date;           // YYYY-MM-DD for deprecations; "" = today (UTC)
};

/// Runs every check between `base` and `head`.
Expected<GateReport> run_gate(const TreeView& base, const TreeView& head, const GateOptions& o);

// The checks that read the change's text, for tests.
GateCheck check_flop_overrides(const std::vector<FileDiff>& diff);
GateCheck check_engine_patches(const std::vector<FileDiff>& diff, const TreeView& head);
/// Check 8's recipe half over the changed keys' entries at head.
GateCheck check_golden_acceptance(const std::vector<const recipe::ConfigEntry*>& changed);
/// Check 4 over the changed keys' entries at head; `policy` nullopt: the repository keeps none.
GateCheck check_images(const std::vector<const recipe::ConfigEntry*>& changed,
                       const std::optional<GatePolicy>& policy, const std::string& date);

}  // namespace ib::govern
