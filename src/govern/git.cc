#include "govern/git.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/command.h"
#include "core/files.h"
#include "core/strings.h"

namespace ib::govern {

namespace fs = std::filesystem;

namespace {

Expected<CommandResult> run_git(const fs::path& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-C", repo.string(), "-c", "core.quotePath=false"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandOptions o;
  // Constructed in place, not assigned through operator[]: GCC 12 at -O3 reports a false
  // -Wrestrict when a one-character literal is assigned to a std::string (GCC bug 105329).
  o.env_set.emplace("GIT_TERMINAL_PROMPT", "0");
  o.env_set.emplace("LC_ALL", "C");
  return run_command(argv, o);
}

}  // namespace

Expected<std::string> git(const fs::path& repo, const std::vector<std::string>& args) {
  auto r = run_git(repo, args);
  if (!r) return r.error();
  if (!r->ok()) {
    std::vector<std::string> shown = {"git"};
    shown.insert(shown.end(), args.begin(), args.end());
    return Error{
        fmt::format("{} failed ({}): {}", describe_argv(shown), r->exit.describe(), rtrim(r->err))};
  }
  return std::move(r->out);
}

Expected<TreeView> TreeView::open(const fs::path& dir, const std::string& rev) {
  auto top = git(dir, {"rev-parse", "--show-toplevel"});
  if (!top) return Error{fmt::format("{}: not inside a git repository", dir.string())};
  TreeView v;
  v.root_ = rtrim(*top);
  v.rev_ = rev;
  if (!rev.empty()) {
    auto r = run_git(v.root_, {"rev-parse", "--verify", "--quiet", rev + "^{commit}"});
    if (!r) return r.error();
    if (!r->ok())
      return Error{fmt::format("unknown git revision '{}' in {}", rev, v.root_.string())};
    v.commit_ = rtrim(r->out);
  }
  return v;
}

std::string TreeView::describe() const {
  if (commit_.empty()) return "working tree";
  return fmt::format("{} ({})", rev_, commit_.substr(0, 12));
}

Expected<std::optional<std::string>> TreeView::read(const std::string& path) const {
  if (commit_.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(root_ / path, ec)) return std::optional<std::string>{};
    auto text = read_file(root_ / path);
    if (!text) return text.error();
    return std::optional<std::string>{std::move(*text)};
  }
  // `cat-file -e` distinguishes "absent" from other failures.
  auto exists = run_git(root_, {"cat-file", "-e", commit_ + ":" + path});
  if (!exists) return exists.error();
  if (!exists->ok()) return std::optional<std::string>{};
  auto blob = git(root_, {"cat-file", "blob", commit_ + ":" + path});
  if (!blob) return blob.error();
  return std::optional<std::string>{std::move(*blob)};
}

Expected<std::vector<std::string>> TreeView::list(const std::string& dir) const {
  std::vector<std::string> args;
  if (commit_.empty()) {
    args = {"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"};
  } else {
    args = {"ls-tree", "-r", "-z", "--name-only", commit_, "--"};
  }
  if (!dir.empty()) args.push_back(dir);
  auto out = git(root_, args);
  if (!out) return out.error();
  std::vector<std::string> files;
  for (std::string& name : split(*out, '\0')) {
    if (name.empty()) continue;
    std::error_code ec;
    if (commit_.empty() && !fs::is_regular_file(root_ / name, ec)) continue;  // deleted
    files.push_back(std::move(name));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

Expected<std::string> TreeView::relative(const fs::path& p) const {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(p), ec);
  fs::path root = fs::weakly_canonical(root_, ec);
  fs::path rel = abs.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") {
    return Error{fmt::format("{}: outside the repository {}", p.string(), root_.string())};
  }
  if (rel == ".") return std::string();
  return rel.generic_string();
}

}  // namespace ib::govern
