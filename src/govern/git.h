// Reading files at git revisions without checking anything out (`git show REV:path`,
// `git ls-tree`), or from the working tree, through one interface.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"

namespace ib::govern {

/// A view of a repository's files at one revision, or of its working tree when `rev` is empty.
/// Paths are relative to the repository root, with '/' separators.
class TreeView {
 public:
  /// Opens the repository containing `dir`. `rev` is resolved to a commit id once (an error names
  /// the revision when git does not know it).
  static Expected<TreeView> open(const std::filesystem::path& dir, const std::string& rev);

  const std::filesystem::path& root() const { return root_; }
  /// The resolved commit id, or "" for the working tree.
  const std::string& commit() const { return commit_; }
  /// "REV (abc1234)" or "working tree", for messages.
  std::string describe() const;
  bool is_worktree() const { return commit_.empty(); }

  /// A file's bytes; nullopt when it does not exist at this revision.
  Expected<std::optional<std::string>> read(const std::string& path) const;

  /// Files under `dir` ("" for all), sorted; for the working tree, tracked and untracked files
  /// that git does not ignore and that exist.
  Expected<std::vector<std::string>> list(const std::string& dir) const;

  /// Converts a path given on the command line (absolute, or relative to the current directory)
  /// into a repository-relative path. Error when it is outside the repository.
  Expected<std::string> relative(const std::filesystem::path& p) const;

 private:
  std::filesystem::path root_;
  std::string rev_;
  std::string commit_;
};

/// Runs git in `repo` with `args`; error (with git's stderr) on a non-zero exit.
Expected<std::string> git(const std::filesystem::path& repo, const std::vector<std::string>& args);

}  // namespace ib::govern
