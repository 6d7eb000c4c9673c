#include "govern/changed.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "recipe/yaml_reader.h"

namespace ib::govern {

namespace json = boost::json;
using recipe::ConfigEntry;

namespace {

bool is_yaml(const std::string& path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

// The recipe files of one side: the named files that exist, and every YAML file below the named
// directories.
Expected<std::vector<std::string>> recipe_files(const TreeView& tree,
                                                const ChangedOptions& options) {
  std::vector<std::string> files;
  for (const std::string& p : options.recipe_paths) {
    auto listed = tree.list(p);
    if (!listed) return listed.error();
    for (const std::string& f : *listed) {
      if (f == p || is_yaml(f)) files.push_back(f);
    }
  }
  if (!options.runners_path.empty()) {
    std::erase(files, options.runners_path);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

// A value as JSON (control characters escaped), cut to a line's worth: a reason quotes it, and a
// 50 MB string must not be repeated whole (the report's base/head fields keep it exact).
std::string show(const json::value& v) {
  if (v.is_null()) return "(absent)";
  return printable(json_text(v), 200);
}

std::string path_join(const std::string& base, const std::string& name) {
  return base.empty() ? name : base + "." + name;
}

// Human text for one changed field.
std::string describe_change(const std::string& path, const std::string& kind,
                            const json::value& base, const json::value& head) {
  static const std::string kEnv = "serve.env.";
  for (const char* role : {"prefill", "decode", "router"}) {
    // A disaggregated serve block's variable: said with its role.
    const std::string prefix = fmt::format("serve.{}.env.", role);
    if (path.rfind(prefix, 0) != 0) continue;
    const std::string var = fmt::format("{} (the {} role's)", path.substr(prefix.size()), role);
    if (kind == "added") return fmt::format("environment variable {} set to {}", var, show(head));
    if (kind == "removed")
      return fmt::format("environment variable {} removed (was {})", var, show(base));
    return fmt::format("environment variable {} changed from {} to {}", var, show(base),
                       show(head));
  }
  if (path.rfind(kEnv, 0) == 0) {
    std::string var = path.substr(kEnv.size());
    if (kind == "added") return fmt::format("environment variable {} set to {}", var, show(head));
    if (kind == "removed")
      return fmt::format("environment variable {} removed (was {})", var, show(base));
    return fmt::format("environment variable {} changed from {} to {}", var, show(base),
                       show(head));
  }
  if (kind == "added") return fmt::format("{} added: {}", path, show(head));
  if (kind == "removed") return fmt::format("{} removed (was {})", path, show(base));
  return fmt::format("{} changed from {} to {}", path, show(base), show(head));
}

// Field `path`'s value as it may be shown (core/redact.h): a secret-named field's value, and a
// credential inside an argv list or a text, are hidden.
json::value shown(const std::string& path, const json::value& v) {
  std::string leaf = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  leaf = leaf.substr(0, leaf.find('['));
  if (is_secret_name(leaf) && ((v.is_string() && !v.get_string().empty()) || v.is_number())) {
    return json::string(kRedacted);
  }
  return redacted(v);
}

// One changed field, with what it shows hidden where it is a secret. Two different secrets both
// show as (redacted): the change is then named without its values.
FieldChange change(const std::string& path, const std::string& kind, const json::value& a,
                   const json::value& b) {
  json::value sa = shown(path, a);
  json::value sb = shown(path, b);
  std::string detail;
  if (kind == "changed" && sa == sb) {
    static const std::string kEnv = "serve.env.";
    detail = path.rfind(kEnv, 0) == 0
                 ? fmt::format("environment variable {} changed (secret value, not shown)",
                               path.substr(kEnv.size()))
                 : fmt::format("{} changed (secret value, not shown)", path);
  } else {
    detail = describe_change(path, kind, sa, sb);
  }
  return {path, kind, std::move(detail), std::move(sa), std::move(sb)};
}

void diff_values(const std::string& path, const json::value& a, const json::value& b,
                 std::vector<FieldChange>* out) {
  if (a == b) return;
  if (a.is_object() && b.is_object()) {
    const auto& ao = a.as_object();
    const auto& bo = b.as_object();
    std::set<std::string> names;
    for (const auto& kv : ao) names.insert(std::string(kv.key()));
    for (const auto& kv : bo) names.insert(std::string(kv.key()));
    for (const std::string& n : names) {
      const json::value* av = ao.if_contains(n);
      const json::value* bv = bo.if_contains(n);
      std::string p = path_join(path, n);
      if (av && bv) {
        diff_values(p, *av, *bv, out);
      } else if ((av && av->is_object()) || (bv && bv->is_object())) {
        // A whole mapping added or removed (e.g. serve.env): report each of its fields.
        const json::value empty = json::object();
        diff_values(p, av ? *av : empty, bv ? *bv : empty, out);
      } else if (av) {
        out->push_back(change(p, "removed", *av, nullptr));
      } else {
        out->push_back(change(p, "added", nullptr, *bv));
      }
    }
    return;
  }
  // Lists of mappings (scenarios, search-space entries) are compared element by element so the
  // reason names the entry; scalar lists (argv, conc-list) change as a whole.
  if (a.is_array() && b.is_array()) {
    const auto& aa = a.as_array();
    const auto& ba = b.as_array();
    bool structured =
        std::all_of(aa.begin(), aa.end(), [](const json::value& v) { return v.is_object(); }) &&
        std::all_of(ba.begin(), ba.end(), [](const json::value& v) { return v.is_object(); });
    if (structured && !aa.empty() && !ba.empty()) {
      for (size_t i = 0; i < std::max(aa.size(), ba.size()); ++i) {
        std::string p = fmt::format("{}[{}]", path, i);
        if (i < aa.size() && i < ba.size()) {
          diff_values(p, aa[i], ba[i], out);
        } else if (i < aa.size()) {
          out->push_back(change(p, "removed", aa[i], nullptr));
        } else {
          out->push_back(change(p, "added", nullptr, ba[i]));
        }
      }
      return;
    }
  }
  out->push_back(change(path, "changed", a, b));
}

// Strings in the serve block that name files of the repository (launch scripts, env files,
// chat templates): the key depends on those files' bytes too.
void referenced_paths(const json::value& v, std::set<std::string>* out) {
  if (v.is_string()) {
    std::string s(v.as_string());
    if (auto eq = s.find('='); eq != std::string::npos && s.rfind("--", 0) == 0)
      s = s.substr(eq + 1);
    if (s.find('/') != std::string::npos && s.find('{') == std::string::npos &&
        s.find(' ') == std::string::npos && s.front() != '/' && s.rfind("..", 0) != 0 &&
        s.find("://") == std::string::npos) {
      if (s.rfind("./", 0) == 0) s = s.substr(2);
      out->insert(s);
    }
  } else if (v.is_array()) {
    for (const auto& e : v.as_array()) referenced_paths(e, out);
  } else if (v.is_object()) {
    for (const auto& kv : v.as_object()) referenced_paths(kv.value(), out);
  }
}

std::set<std::string> serve_files(const ConfigEntry& e) {
  std::set<std::string> files;
  if (const auto* o = e.raw.if_object()) {
    if (const auto* serve = o->if_contains("serve")) referenced_paths(*serve, &files);
  }
  return files;
}

Expected<std::optional<recipe::RunnersFile>> load_runners_at(const TreeView& tree,
                                                             const std::string& path) {
  if (path.empty()) return std::optional<recipe::RunnersFile>{};
  auto text = tree.read(path);
  if (!text) return text.error();
  if (!*text) return std::optional<recipe::RunnersFile>{};
  recipe::RunnersFile runners;
  std::vector<recipe::Diagnostic> diagnostics;
  recipe::parse_runners(**text, path, &runners, &diagnostics);
  if (!diagnostics.empty()) {
    return Error{fmt::format("at {}:\n{}", tree.describe(), recipe::join_diagnostics(diagnostics))};
  }
  return std::optional<recipe::RunnersFile>{std::move(runners)};
}

json::value runner_json(const std::optional<recipe::RunnersFile>& r, const std::string& label) {
  if (!r) return nullptr;
  json::object o;
  if (auto it = r->labels.find(label); it != r->labels.end()) {
    json::array names;
    for (const auto& n : it->second) names.emplace_back(n);
    o["runners"] = std::move(names);
  }
  if (auto it = r->hardware.find(label); it != r->hardware.end()) {
    o["available-cpu-dram-mib"] = it->second.available_cpu_dram_mib;
    o["gpus-per-node"] = it->second.gpus_per_node;
    o["launcher"] = it->second.launcher;
  }
  if (o.empty()) return nullptr;
  return o;
}

}  // namespace

std::vector<FieldChange> diff_fields(const json::value& base, const json::value& head) {
  std::vector<FieldChange> out;
  diff_values("", base, head, &out);
  return out;
}

namespace {

// More reasons for a key present on both sides (shared files, runners); an error stops the diff.
using ExtraReasons =
    std::function<Status(const ConfigEntry& base, const ConfigEntry& head, KeyChange* change)>;

// Keys added, removed or modified, in head file order with removed keys last.
Expected<ChangedReport> diff_entries_with(const std::vector<ConfigEntry>& base,
                                          const std::vector<ConfigEntry>& head,
                                          const ExtraReasons& extra) {
  ChangedReport report;
  std::map<std::string, const ConfigEntry*> base_by_key;
  std::set<std::string> files;
  for (const auto& e : base) {
    base_by_key[e.key] = &e;
    files.insert(e.file);
  }
  std::set<std::string> head_keys;
  for (const auto& e : head) {
    files.insert(e.file);
    head_keys.insert(e.key);
    KeyChange kc{e.key, "modified", e.file, {}};
    auto it = base_by_key.find(e.key);
    if (it == base_by_key.end()) {
      kc.status = "added";
      kc.reasons.push_back(
          {"", "added", fmt::format("config key {} added in {}", e.key, e.file), nullptr, e.raw});
    } else {
      diff_values("", it->second->raw, e.raw, &kc.reasons);
      if (extra) {
        if (Status st = extra(*it->second, e, &kc); !st.ok()) return st.error();
      }
    }
    if (!kc.reasons.empty()) report.keys.push_back(std::move(kc));
  }
  for (const auto& e : base) {
    if (head_keys.count(e.key)) continue;
    report.keys.push_back(
        {e.key,
         "removed",
         e.file,
         {{"", "removed", fmt::format("config key {} removed from {}", e.key, e.file), e.raw,
           nullptr}}});
  }
  report.files.assign(files.begin(), files.end());
  return report;
}

}  // namespace

ChangedReport diff_entries(const std::vector<ConfigEntry>& base,
                           const std::vector<ConfigEntry>& head) {
  return *diff_entries_with(base, head, nullptr);  // no extra reasons: cannot fail
}

Expected<std::vector<ConfigEntry>> load_configs_at(const TreeView& tree,
                                                   const ChangedOptions& options) {
  auto files = recipe_files(tree, options);
  if (!files) return files.error();
  std::vector<std::pair<std::string, std::string>> texts;
  for (const std::string& f : *files) {
    auto text = tree.read(f);
    if (!text) return text.error();
    if (*text) texts.emplace_back(f, std::move(**text));
  }
  auto entries = recipe::load_master_texts(texts);
  if (!entries)
    return Error{
        fmt::format("recipes at {} are invalid:\n{}", tree.describe(), entries.error().message)};
  return entries;
}

std::vector<std::string> ChangedReport::key_names() const {
  std::vector<std::string> names;
  for (const auto& k : keys) names.push_back(k.key);
  return names;
}

json::object ChangedReport::to_json() const {
  json::object o;
  o["base"] = base;
  o["head"] = head;
  json::array fs;
  for (const auto& f : files) fs.emplace_back(f);
  o["files"] = std::move(fs);
  json::array ks;
  for (const auto& k : keys) {
    json::object ko;
    ko["config-key"] = k.key;
    ko["status"] = k.status;
    ko["file"] = k.file;
    json::array rs;
    for (const auto& r : k.reasons) {
      json::object ro;
      ro["field"] = r.path;
      ro["kind"] = r.kind;
      ro["detail"] = r.detail;
      ro["base"] = r.base;
      ro["head"] = r.head;
      rs.push_back(std::move(ro));
    }
    ko["reasons"] = std::move(rs);
    ks.push_back(std::move(ko));
  }
  o["affected"] = static_cast<int64_t>(keys.size());
  o["keys"] = std::move(ks);
  return o;
}

Expected<ChangedReport> changed_keys(const TreeView& base, const TreeView& head,
                                     const ChangedOptions& options) {
  auto base_entries = load_configs_at(base, options);
  if (!base_entries) return base_entries.error();
  auto head_entries = load_configs_at(head, options);
  if (!head_entries) return head_entries.error();
  auto base_runners = load_runners_at(base, options.runners_path);
  if (!base_runners) return base_runners.error();
  auto head_runners = load_runners_at(head, options.runners_path);
  if (!head_runners) return head_runners.error();

  // Which keys reference each shared file (for "used by N keys").
  std::map<std::string, std::vector<std::string>> users;
  for (const auto& e : *head_entries) {
    for (const auto& f : serve_files(e)) users[f].push_back(e.key);
  }
  std::map<std::string, bool> file_changed;  // memo: a file shared by many keys is read once
  auto extra = [&](const ConfigEntry& b, const ConfigEntry& h, KeyChange* kc) -> Status {
    for (const auto& f : serve_files(h)) {
      auto memo = file_changed.find(f);
      if (memo == file_changed.end()) {
        auto a = base.read(f);
        if (!a) return a.error();
        auto c = head.read(f);
        if (!c) return c.error();
        memo = file_changed.emplace(f, *a != *c).first;
      }
      if (!memo->second) continue;
      const auto& u = users[f];
      kc->reasons.push_back({f, "shared-file",
                             fmt::format("file {} changed (used by {} config key{})", f, u.size(),
                                         u.size() == 1 ? "" : "s"),
                             nullptr, nullptr});
    }
    json::value rb = runner_json(*base_runners, b.runner);
    json::value rh = runner_json(*head_runners, h.runner);
    if (b.runner == h.runner && rb != rh) {
      kc->reasons.push_back({"runner", "runner",
                             fmt::format("runner {} changed in {}", h.runner, options.runners_path),
                             rb, rh});
    }
    return Status::Ok();
  };
  auto report = diff_entries_with(*base_entries, *head_entries, extra);
  if (!report) return report.error();
  report->base = base.describe();
  report->head = head.describe();
  return report;
}

Expected<std::optional<recipe::RunnersFile>> runners_at(const TreeView& tree,
                                                        const std::string& path) {
  return load_runners_at(tree, path);
}

}  // namespace ib::govern
