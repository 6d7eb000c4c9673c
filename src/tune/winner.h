// What `inferbench tune` hands a reviewer for its winner (docs/tune.md, "Outputs"): the recipe
// diff in the words `inferbench changed` uses, the winning entry as a recipe file, and a ready
// perf-changelog entry for the key that `inferbench changelog check` accepts.
#pragma once

#include <string>
#include <vector>

#include "govern/changed.h"
#include "recipe/recipe.h"

namespace ib::tune {

/// The winner's fields that differ from the base's (govern::diff_fields of the raw entries).
std::vector<govern::FieldChange> recipe_diff(const recipe::ConfigEntry& base,
                                             const recipe::ConfigEntry& winner);

/// A recipe file holding the winning entry under the base's key (block YAML, every string
/// double-quoted so nothing changes type on the way back).
std::string winner_recipe_yaml(const std::string& key, const recipe::ConfigEntry& winner);

/// One perf-changelog entry (govern/changelog.h's format) for `key`: `what` and `evidence` as
/// its description lines, pr-link XXX (the placeholder a pull request fills in). It starts with
/// the empty line that separates appended entries, so `cat ENTRY >> perf-changelog.yaml` is right.
std::string changelog_entry(const std::string& key, const std::vector<std::string>& description);

}  // namespace ib::tune
