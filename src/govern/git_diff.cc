#include "govern/git_diff.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace ib::govern {

namespace {

// A path as git prints it: bare, or in double quotes with C escapes (core.quotePath).
std::string unquote(std::string_view s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return std::string(s);
  s = s.substr(1, s.size() - 2);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    ++i;
    if (s[i] >= '0' && s[i] <= '7') {  // \ooo: one byte
      int v = 0;
      for (int k = 0; k < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k, ++i) {
        v = v * 8 + (s[i] - '0');
      }
      --i;
      out.push_back(static_cast<char>(v & 0xff));
      continue;
    }
    switch (s[i]) {
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'v':
        out.push_back('\v');
        break;
      default:
        out.push_back(s[i]);
    }
  }
  return out;
}

// "a/x" -> "x" (or "/dev/null" -> "").
std::string side_path(std::string_view s, char side) {
  std::string p = unquote(s);
  if (p == "/dev/null") return {};
  if (p.size() >= 2 && p[0] == side && p[1] == '/') return p.substr(2);
  return p;
}

std::optional<int> number(std::string_view s, size_t& i) {
  int v = 0;
  const auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
  if (r.ec != std::errc() || v < 0) return std::nullopt;
  i = static_cast<size_t>(r.ptr - s.data());
  return v;
}

// "@@ -a[,b] +c[,d] @@...": {b, c, d}.
struct Hunk {
  int old_count = 1, new_start = 0, new_count = 1;
};
std::optional<Hunk> parse_hunk(std::string_view s) {
  Hunk h;
  if (s.size() < 4 || s.substr(0, 4) != "@@ -") return std::nullopt;
  size_t i = 4;
  if (!number(s, i)) return std::nullopt;
  if (i < s.size() && s[i] == ',') {
    ++i;
    auto c = number(s, i);
    if (!c) return std::nullopt;
    h.old_count = *c;
  }
  if (s.substr(i, 2) != " +") return std::nullopt;
  i += 2;
  auto start = number(s, i);
  if (!start) return std::nullopt;
  h.new_start = *start;
  if (i < s.size() && s[i] == ',') {
    ++i;
    auto c = number(s, i);
    if (!c) return std::nullopt;
    h.new_count = *c;
  }
  if (s.substr(i, 3) != " @@") return std::nullopt;
  return h;
}

bool starts(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

Expected<std::vector<FileDiff>> parse_unified_diff(std::string_view text) {
  std::vector<FileDiff> files;
  int old_left = 0, new_left = 0, next_line = 0;
  int n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++n;
    if (old_left > 0 || new_left > 0) {  // inside a hunk: its counts say where it ends
      const char c = line.empty() ? ' ' : line[0];
      if (c == '+' && new_left > 0) {
        files.back().added_lines.push_back({next_line++, std::string(line.substr(1))});
        --new_left;
      } else if (c == '-' && old_left > 0) {
        --old_left;
      } else if (c == ' ' && old_left > 0 && new_left > 0) {
        --old_left;
        --new_left;
        ++next_line;
      } else if (c != '\\') {
        return Error{
            fmt::format("diff line {}: a hunk ends early (expected {} more base and {} "
                        "more head lines)",
                        n, old_left, new_left)};
      }
      continue;
    }
    if (starts(line, "diff --git ")) {
      FileDiff f;
      // Bare paths without spaces: "diff --git a/P b/P"; others come from the lines below.
      const std::string_view rest = line.substr(11);
      const size_t mid = rest.find(" b/");
      if (starts(rest, "a/") && mid != std::string_view::npos) {
        f.base_path = std::string(rest.substr(2, mid - 2));
        f.path = std::string(rest.substr(mid + 3));
      }
      files.push_back(std::move(f));
      continue;
    }
    if (line.empty() || line[0] == '\\') continue;
    if (files.empty()) {
      if (line[0] == '+' || line[0] == '@') {
        return Error{fmt::format("diff line {}: a change before any \"diff --git\" header", n)};
      }
      continue;  // a preamble (e.g. a commit message)
    }
    FileDiff& f = files.back();
    if (starts(line, "--- ")) {
      f.base_path = side_path(line.substr(4), 'a');
    } else if (starts(line, "+++ ")) {
      const std::string p = side_path(line.substr(4), 'b');
      if (p.empty()) {
        f.deleted = true;
        f.path = f.base_path;
      } else {
        f.path = p;
      }
    } else if (starts(line, "new file mode")) {
      f.added = true;
    } else if (starts(line, "deleted file mode")) {
      f.deleted = true;
    } else if (starts(line, "rename from ")) {
      f.base_path = unquote(line.substr(12));
    } else if (starts(line, "rename to ")) {
      f.path = unquote(line.substr(10));
    } else if (starts(line, "Binary files ")) {
      f.binary = true;
    } else if (starts(line, "@@")) {
      auto h = parse_hunk(line);
      if (!h)
        return Error{fmt::format("diff line {}: not a hunk header: {}", n, line.substr(0, 80))};
      old_left = h->old_count;
      new_left = h->new_count;
      next_line = h->new_start;
    } else if (line[0] == '+' || line[0] == '-' || line[0] == ' ') {
      return Error{fmt::format("diff line {}: a changed line outside any hunk", n)};
    }
  }
  if (old_left > 0 || new_left > 0) {
    return Error{
        fmt::format("diff: the last hunk ends early (expected {} more base and {} more "
                    "head lines)",
                    old_left, new_left)};
  }
  if (!files.empty() && files.back().path.empty() && files.back().base_path.empty()) {
    return Error{"diff: a \"diff --git\" header names no file"};
  }
  return files;
}

Expected<std::vector<FileDiff>> diff_between(const TreeView& base, const TreeView& head) {
  std::vector<std::string> args = {"-c",         "core.quotePath=true", "diff",
                                   "--no-color", "--no-ext-diff",       "--unified=0",
                                   "-M",         base.commit()};
  if (!head.is_worktree()) args.push_back(head.commit());
  auto out = git(base.root(), args);
  if (!out) return out.error();
  auto files = parse_unified_diff(*out);
  if (!files) return Error{fmt::format("git diff {}: {}", base.describe(), files.error().message)};
  if (!head.is_worktree()) return files;
  // The working tree's untracked files (not ignored) are wholly added.
  auto untracked = git(base.root(), {"ls-files", "--others", "--exclude-standard", "-z"});
  if (!untracked) return untracked.error();
  size_t pos = 0;
  while (pos < untracked->size()) {
    size_t end = untracked->find('\0', pos);
    if (end == std::string::npos) end = untracked->size();
    const std::string path = untracked->substr(pos, end - pos);
    pos = end + 1;
    if (path.empty()) continue;
    auto bytes = head.read(path);
    if (!bytes) return bytes.error();
    if (!*bytes) continue;
    FileDiff f;
    f.path = path;
    f.added = true;
    f.binary = (*bytes)->find('\0') != std::string::npos;
    if (!f.binary) {
      int line = 0;
      size_t p = 0;
      while (p < (*bytes)->size()) {
        size_t e = (*bytes)->find('\n', p);
        if (e == std::string::npos) e = (*bytes)->size();
        f.added_lines.push_back({++line, (*bytes)->substr(p, e - p)});
        p = e + 1;
      }
    }
    files->push_back(std::move(f));
  }
  return files;
}

}  // namespace ib::govern
