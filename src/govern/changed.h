// `inferbench changed`: which config keys a change affects, and why. Recipes are read at two
// revisions through git (TreeView), loaded with the strict loader, and compared field by field.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/git.h"
#include "recipe/recipe.h"

namespace ib::govern {

/// One reason a key is affected.
struct FieldChange {
  std::string path;         // field path inside the key, e.g. "serve.env.SGLANG_USE_AITER", "image"
  std::string kind;         // "added" | "removed" | "changed" | "shared-file" | "runner"
  std::string detail;       // human text: "environment variable SGLANG_USE_AITER set to \"1\""
  boost::json::value base;  // null when absent
  boost::json::value head;  // null when absent
};

struct KeyChange {
  std::string key;
  std::string status;  // "added" | "removed" | "modified"
  std::string file;    // master-config file (head side, or base for removed keys)
  std::vector<FieldChange> reasons;
};

struct ChangedOptions {
  /// Repository-relative recipe files or directories (every *.yaml / *.yml below a directory).
  std::vector<std::string> recipe_paths;
  /// Repository-relative runners file; empty: none.
  std::string runners_path;
};

struct ChangedReport {
  std::string base;  // TreeView::describe()
  std::string head;
  std::vector<std::string> files;  // recipe files read (union of both sides)
  std::vector<KeyChange> keys;     // in head file order, removed keys last
  /// Keys only, in order.
  std::vector<std::string> key_names() const;
  boost::json::object to_json() const;
};

/// Loads the master configs of one side. Error lists every validation problem (file:line:col),
/// naming the revision.
Expected<std::vector<recipe::ConfigEntry>> load_configs_at(const TreeView& tree,
                                                           const ChangedOptions& options);

/// Field-level differences between two JSON values (objects by field, lists of mappings by
/// index, anything else as a whole); paths as in FieldChange.
std::vector<FieldChange> diff_fields(const boost::json::value& base,
                                     const boost::json::value& head);

/// Keys added, removed or modified between two sets of loaded entries, by their raw fields only
/// (no shared files, no runners): what `verify` uses for two recipe files.
ChangedReport diff_entries(const std::vector<recipe::ConfigEntry>& base,
                           const std::vector<recipe::ConfigEntry>& head);

/// The runners file at `tree` (`path` repository-relative); nullopt when `path` is empty or the
/// file does not exist there. Error names the revision, file and line.
Expected<std::optional<recipe::RunnersFile>> runners_at(const TreeView& tree,
                                                        const std::string& path);

Expected<ChangedReport> changed_keys(const TreeView& base, const TreeView& head,
                                     const ChangedOptions& options);

}  // namespace ib::govern
