// `inferbench tune` (issue 19, docs/tune.md): the knobs a tuning varies and the candidate recipe
// entries they make. A knob is an environment variable, a server argument or a search-space field
// with the values to try; a candidate is the base entry with one change (or, later, a pair),
// applied to both the typed entry and its raw form, so `govern::diff_fields` of the raw entries
// is the recipe diff a reviewer reads, and the row fingerprint is what a sweep of the patched
// recipe computes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "recipe/recipe.h"

namespace ib::tune {

enum class KnobKind { kEnv, kArg, kField };
std::string_view to_string(KnobKind kind);  // "env" | "arg" | "field"

/// The search-space fields a `field:` knob may set. A disaggregated entry's worker pools are set
/// by role ("prefill.num-worker", "decode.tp"), and "pd" sets both pools' worker counts at once
/// (P:D, "2:1").
inline constexpr std::string_view kTunableFields[] = {"tp",
                                                      "pp",
                                                      "ep",
                                                      "dcp-size",
                                                      "pcp-size",
                                                      "dp-attn",
                                                      "spec-decoding",
                                                      "pd",
                                                      "prefill.num-worker",
                                                      "decode.num-worker",
                                                      "prefill.tp",
                                                      "decode.tp",
                                                      "prefill.ep",
                                                      "decode.ep",
                                                      "prefill.dp-attn",
                                                      "decode.dp-attn"};

/// One `--knob SPEC`:
///   env:NAME=a,b,c        the variable set to each value; "(unset)" removes it
///   arg:--flag=a,b        the server argument's value ("--flag a" or "--flag=a" where the base
///                         command has it, else appended to serve.extra-args); "(absent)" removes
///                         it
///   arg:--flag            a toggle: removed where the base has it, else added
///   field:tp=1,2          a search-space field of every scenario row
///   field:pd=1:1,2:1      a disaggregated entry's prefill:decode worker counts
///   env:decode.NAME=a,b   an entry whose serve block is by role: that role's variable (and
///   arg:decode.--flag=a   argument); every role of the entry that names it is the role's own
struct Knob {
  std::string spec;  // as given
  KnobKind kind = KnobKind::kEnv;
  std::string name;  // NAME, --flag or the field
  /// The values to try; nullopt removes the variable or the argument.
  std::vector<std::optional<std::string>> values;
  bool toggle = false;  // arg:--flag without values
};

/// Parses one spec. Errors name the option and the spec: `--knob 'env:1X=a': '1X' is not an
/// environment variable name`.
Expected<Knob> parse_knob(std::string_view spec);

/// One change of a candidate, with what the base had (nullopt: absent).
struct Change {
  KnobKind kind = KnobKind::kEnv;
  std::string name;
  std::optional<std::string> value;  // nullopt: removed (or a toggle switched off)
  std::optional<std::string> base_value;
  bool toggle = false;
  /// "env SIM_X=1", "env SIM_X unset", "arg --max-num-seqs=32", "arg --flag added", "field tp=2".
  std::string describe() const;
};

/// `base` with `change` applied (typed fields and `raw`). Errors: no serve block for env and arg
/// knobs, an argument given twice in the base command, a field value out of its range.
Expected<recipe::ConfigEntry> apply_change(const recipe::ConfigEntry& base, const Change& change);

/// What the base entry has for a knob (the variable's value, the argument's value; for a toggle
/// "present"), nullopt when it has none.
std::optional<std::string> base_value(const recipe::ConfigEntry& base, const Knob& knob);

struct Candidate {
  std::string id;          // 10 hex digits of sha256 over the base key and the changes
  std::string config_key;  // "KEY~<id>": its rows and points in the store
  std::vector<Change> changes;
  recipe::ConfigEntry entry;  // the patched entry (its key is config_key)
  std::string describe() const;  // the changes, joined with " + "
};

struct CandidateSet {
  std::vector<Candidate> candidates;
  /// Values that were not candidates: equal to the base's, or the same entry as another.
  std::vector<std::string> notes;
};

/// Every single change: one candidate per (knob, value), in knob order, at most `max_candidates`
/// (an error beyond it, naming the count). A value equal to the base's is a note, not a
/// candidate.
Expected<CandidateSet> single_candidates(const recipe::ConfigEntry& base,
                                         const std::vector<Knob>& knobs,
                                         size_t max_candidates = 64);

/// The candidate with both `a`'s and `b`'s changes (knobs of different names).
Expected<Candidate> pair_candidate(const recipe::ConfigEntry& base, const Candidate& a,
                                   const Candidate& b);

}  // namespace ib::tune
