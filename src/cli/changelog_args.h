// What `changelog check` and `gate` both take: two revisions of a repository, its changelog,
// recipes and runners, and the pull request's labels and link; registered alike on both and
// turned into the changelog check's inputs in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/gate.h"
#include "govern/git.h"

namespace ib::cli {

struct ChangelogArgs {
  std::string base, head;
  std::string changelog = "perf-changelog.yaml";
  std::vector<std::string> recipes;
  std::string runners;
  std::vector<std::string> labels;
  std::string pr_url;
  bool main = false;
  std::string repo = ".";
};

/// --base, --head, --changelog, --recipes, --runners, --labels, --pr-url, --main, -C/--repo.
void add_changelog_args(CLI::App* app, ChangelogArgs& a);

struct OpenedRevisions {
  govern::TreeView base, head;
};
/// Both revisions, after checking the options agree (--main without --pr-url). Usage errors.
Expected<OpenedRevisions> open_revisions(const ChangelogArgs& a);

/// The changelog check's inputs: paths taken from the repository directory (-C) unless
/// absolute, made relative to its root. Usage errors naming the path.
Expected<govern::ChangelogInputs> changelog_inputs(const govern::TreeView& head,
                                                   const ChangelogArgs& a);

}  // namespace ib::cli
