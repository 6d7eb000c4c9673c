// The lines a change adds, from git's unified diff (`git diff --unified=0`): the gate's checks
// that read a change's text (architecture overrides, engine patches) name each finding by file
// and line in the head revision.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "govern/git.h"

namespace ib::govern {

struct AddedLine {
  int line = 0;  // 1-based, in the head revision's file
  std::string text;
};

/// One file of a diff.
struct FileDiff {
  std::string path;       // head side ("b/" removed); the base side's for a deleted file
  std::string base_path;  // base side ("" for an added file)
  bool added = false;     // new at head
  bool deleted = false;   // gone at head
  bool binary = false;    // git reported "Binary files ... differ": no lines
  std::vector<AddedLine> added_lines;
};

/// Parses `git diff --no-color --no-ext-diff --unified=0` output (any context width works). A
/// hunk header that does not parse, or an added line outside any hunk, is an error naming the
/// diff's line; paths git quoted ("a/with\ttab") are unquoted.
Expected<std::vector<FileDiff>> parse_unified_diff(std::string_view text);

/// The diff from `base` to `head` (a commit, or the working tree with untracked files that git
/// does not ignore), renames detected.
Expected<std::vector<FileDiff>> diff_between(const TreeView& base, const TreeView& head);

}  // namespace ib::govern
