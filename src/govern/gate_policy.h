// The lists a recipe repository keeps for the merge gate's check 4 (docs/gate.md): which images
// are upstream releases of each engine, and which models and scenarios are deprecated from when.
// InferenceX keeps the same facts in its sign-off prompt (allowed image repositories) and
// MODELS.md (models and scenarios with their end dates).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/expected.h"

namespace ib::govern {

struct GatePolicy {
  std::string file;
  /// framework (the recipe's `framework:`) -> image patterns, `*` the only wildcard.
  std::map<std::string, std::vector<std::string>> upstream_images;
  std::map<std::string, int> upstream_lines;  // framework -> its line in the file
  struct Deprecation {
    std::string pattern;  // a model (`*` wildcard), or a scenario: "ISL/OSL", "agentic-coding",
                          // "timed-trace"
    std::string from;     // YYYY-MM-DD: deprecated on and after that day
    std::string why;
    int line = 0;
  };
  std::vector<Deprecation> models, scenarios;
};

/// Parses a gate policy file (YAML: `upstream-images: {FRAMEWORK: [PATTERN...]}`, `deprecated:
/// {models: [{model, from, why}], scenarios: [{scenario, from, why}]}`). Every problem is reported
/// with file:line:column and the field.
Expected<GatePolicy> parse_gate_policy(const std::string& text, const std::string& file);

/// Whether `date` (YYYY-MM-DD) is a valid calendar date.
bool is_iso_date(const std::string& date);

}  // namespace ib::govern
