// `inferbench gate`: a recipe pull request's merge checklist as code (docs/gate.md), in place of
// InferenceX's language-model sign-off (.github/codeowner-signoff-verify-prompt.md, Checks 0-12).
// Each check gives one verdict with its evidence: the file and line of the change, the run and
// point, the effective value. A check never claims more than it saw: what it could not see is
// "cannot decide", with what is missing.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/changed.h"
#include "govern/changelog.h"
#include "govern/gate_policy.h"
#include "govern/git.h"
#include "govern/git_diff.h"
#include "recipe/matrix.h"

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

/// What the gate read of the change, for the checks that read stored runs (decided above this
/// module: sweep/gate_runs.h).
struct GateContext {
  const ChangedReport* changed = nullptr;
  std::vector<recipe::ConfigEntry> base_configs, head_configs;
  /// Every row of both sides (recipe::expand with each side's runners file): fingerprints and
  /// points. A row's fingerprint is its server configuration's (conc excluded).
  std::vector<recipe::RecipeRow> base_rows, head_rows;
  /// The commits a run must be measured at to count as "in the range": base..head, and the
  /// working tree's HEAD when head is the working tree (a run records the commit it was checked
  /// out at).
  std::vector<std::string> range;
  std::vector<std::string> labels;  // --labels
  /// The keys of the appended `append-only: true` changelog entries (resolved), in order.
  std::vector<std::string> append_only_keys;
  std::vector<std::string> waivers;  // the text of every docs/waiver/*.md at head
  /// The head rows of `key` (added or modified); the base rows of `key`.
  std::vector<const recipe::RecipeRow*> head_rows_of(const std::string& key) const;
  std::vector<const recipe::RecipeRow*> base_rows_of(const std::string& key) const;
  bool in_range(const std::string& revision) const;
};

struct GateOptions {
  ChangelogInputs changelog;
  std::string policy_file = "gate-policy.yaml";  // repository-relative, read at head
  bool policy_named = false;  // named by the user: missing at head is an error, not "no policy"
  std::string date;           // YYYY-MM-DD for deprecations; "" = today (UTC)
  /// Decides the checks that read stored runs (1, 3, 6, 10, and the run halves of 5, 7, 8 and
  /// 9) in `report`, which holds every check by then. Unset: they say that no results database
  /// was given. An error stops the gate.
  std::function<Status(const GateContext&, GateReport&)> run_checks;
};

/// Runs every check between `base` and `head`.
Expected<GateReport> run_gate(const TreeView& base, const TreeView& head, const GateOptions& o);

// The checks that read the change's text, for tests.
GateCheck check_flop_overrides(const std::vector<FileDiff>& diff);
GateCheck check_engine_patches(const std::vector<FileDiff>& diff, const TreeView& head);
/// The text of every docs/waiver/*.md at `head` (InferenceX's waivers for engine patches).
std::vector<std::string> waiver_texts(const TreeView& head);
/// Check 8's recipe half over the changed keys' entries at head.
GateCheck check_golden_acceptance(const std::vector<const recipe::ConfigEntry*>& changed);
/// A row as a point is named: its exp-name with what exp-name leaves out (tp, ep, dp-attn,
/// spec-decoding, the workers, and conc when `with_conc`): "m_1k1k tp 8 conc 4".
std::string point_name(const recipe::RecipeRow& r, bool with_conc);
/// Check 9's recipe half: every point of an append-only key that existed at base keeps its
/// fingerprint at head (the same exp-name, the same server configuration).
GateCheck check_append_only_points(const GateContext& ctx);
/// The check numbered `number` in `report` (every report has all ten).
GateCheck& check_of(GateReport& report, int number);
/// Check 4 over the changed keys' entries at head; `policy` nullopt: the repository keeps none.
GateCheck check_images(const std::vector<const recipe::ConfigEntry*>& changed,
                       const std::optional<GatePolicy>& policy, const std::string& date);

}  // namespace ib::govern
