#include "verify/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

#include "core/redact.h"
#include "core/strings.h"
#include "verify/env_trace.h"

namespace ib::verify {

namespace json = boost::json;

namespace {

bool starts_with(const std::string& s, std::string_view p) {
  return s.rfind(p, 0) == 0;
}

std::string describe_diff(const json::object& diff) {
  std::string out;
  size_t shown = 0;
  for (const auto& kv : diff) {
    if (shown++ == 4) {
      out += fmt::format(", ... ({} settings)", diff.size());
      break;
    }
    if (!out.empty()) out += ", ";
    const auto& o = kv.value().as_object();
    const std::string key(kv.key());
    if (is_secret_name(key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1))) {
      out += fmt::format("{} changed (secret value, not shown)", key);
      continue;
    }
    out += fmt::format("{}: {} -> {}", key, setting_text(o.at("base")),
                       setting_text(o.at("head")));
  }
  return out;
}

}  // namespace

const std::set<std::string>& volatile_settings() {
  static const std::set<std::string> kVolatile = {
      "port",           "host",        "pid",          "random_seed", "nccl_port", "dist_init_addr",
      "dist_init_port", "master_port", "metrics_port", "rpc_port",    "log_file",  "truth_log",
      "port_file",      "listen",      "url",          "address"};
  return kVolatile;
}

json::object stable_diff(const EffectiveConfig& a, const EffectiveConfig& b,
                         const std::set<std::string>& ignore) {
  json::object diff = diff_effective(a, b);
  json::object out;
  for (const auto& kv : diff) {
    std::string k(kv.key());
    std::string leaf = k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
    bool is_port = leaf.size() > 5 && leaf.compare(leaf.size() - 5, 5, "_port") == 0;
    if (volatile_settings().count(leaf) || is_port || ignore.count(k)) continue;
    out[k] = kv.value();
  }
  return out;
}

std::vector<metrics::Confounder> server_confounders(const ServerObservation& base,
                                                   const ServerObservation& head) {
  return metrics::confounders({base.identity}, {head.identity});
}

namespace {

// Variables the dynamic loader and the C library consume themselves, never through the exported
// getenv the tracer interposes (docs/env-trace.md, "What it cannot see").
bool consumed_by_loader_or_libc(const std::string& var) {
  for (std::string_view prefix : {"LD_", "MALLOC_", "LC_", "GCONV_", "NLS", "GLIBC_TUNABLES"}) {
    if (var.rfind(prefix, 0) == 0) return true;
  }
  for (std::string_view name : {"TZ", "TZDIR", "LANG", "LANGUAGE", "LOCPATH", "HOSTALIASES",
                                "RES_OPTIONS", "LOCALDOMAIN", "TMPDIR"}) {
    if (var == name) return true;
  }
  return false;
}

// Whether `value` is one of the arguments of `command` (alone, or after "=" in --opt=value).
bool has_argument(const std::string& command, const std::string& value) {
  size_t pos = 0;
  while (pos <= command.size()) {
    size_t end = command.find(' ', pos);
    if (end == std::string::npos) end = command.size();
    const std::string_view arg(command.data() + pos, end - pos);
    const size_t eq = arg.find('=');
    if (arg == value || (eq != std::string_view::npos && arg.substr(eq + 1) == value)) return true;
    pos = end + 1;
  }
  return false;
}

// Positive evidence that a variable took effect although nobody was seen reading it: its head
// value is an argument of a head process and of no base process (a shell or a launch script
// turned it into one).
std::optional<std::string> argument_evidence(const std::string& var, const ServerObservation& base,
                                             const ServerObservation& head) {
  const auto h = head.env.find(var);
  if (h == head.env.end() || h->second.empty()) return std::nullopt;
  const auto b = base.env.find(var);
  if (b != base.env.end() && b->second == h->second) return std::nullopt;
  for (const auto& c : base.commands) {
    if (has_argument(c, h->second)) return std::nullopt;
  }
  for (const auto& c : head.commands) {
    if (has_argument(c, h->second)) {
      return fmt::format(
          "no traced process read it, but its head value '{}' is an argument of "
          "the head server's process `{}`, and of no base process",
          redact_value(var, h->second), redact_text(printable(c, 200)));
    }
  }
  return std::nullopt;
}

}  // namespace

void judge_unread(const std::string& var, const ServerObservation& base,
                  const ServerObservation& head, FieldVerdict& v) {
  if (consumed_by_loader_or_libc(var)) {
    v.verdict = "unverified";
    v.evidence = fmt::format(
        "no traced process read it, but the dynamic loader and the C library read {} themselves, "
        "where the tracer cannot see",
        var);
    return;
  }
  std::vector<std::string> blind;
  for (const auto& b : base.blind_spots) blind.push_back("base " + b);
  for (const auto& b : head.blind_spots) blind.push_back("head " + b);
  if (blind.empty()) {
    // Whatever else differs, this variable cannot be the cause.
    v.verdict = "never read";
    v.evidence = "no process of the base or head server read it";
    return;
  }
  if (auto shown = argument_evidence(var, base, head)) {
    v.verdict = "effective";
    v.evidence = *shown;
    return;
  }
  const size_t shown = std::min<size_t>(blind.size(), 3);
  v.verdict = "unverified";
  v.evidence = fmt::format(
      "no traced process read it, but the tracer cannot see everything these servers did: {}{}",
      fmt::join(blind.begin(), blind.begin() + static_cast<std::ptrdiff_t>(shown), "; "),
      blind.size() > shown ? fmt::format("; and {} more", blind.size() - shown) : "");
}

void read_trace_processes(const json::object& env_reads, ServerObservation* obs) {
  if (const auto* b = env_reads.if_contains("blind_spots"); b && b->is_array()) {
    for (const auto& e : b->get_array()) {
      if (!e.is_object()) continue;
      const auto& o = e.get_object();
      const auto* pid = o.if_contains("pid");
      const auto* exe = o.if_contains("exe");
      const auto* what = o.if_contains("what");
      // The collector's own wording (BlindSpot::text), whatever the stored report holds.
      obs->blind_spots.push_back(
          BlindSpot{pid && pid->is_int64() ? static_cast<int>(pid->get_int64()) : 0,
                    exe && exe->is_string() ? std::string(exe->get_string()) : std::string(),
                    what && what->is_string() ? std::string(what->get_string()) : "?"}
              .text());
    }
  }
  if (const auto* p = env_reads.if_contains("processes"); p && p->is_array()) {
    for (const auto& e : p->get_array()) {
      const auto* c = e.is_object() ? e.get_object().if_contains("cmdline") : nullptr;
      if (c && c->is_string()) obs->commands.emplace_back(c->get_string());
    }
  }
  if (const auto writes = engine_writes_from_json(env_reads)) {
    for (const EngineWrite& w : *writes) obs->engine_writes.push_back(engine_write_text(w));
  }
}

namespace {

// "serve.prefill.env.X" -> ("prefill", "X"): a variable of one role of a disaggregated serve block.
std::optional<std::pair<std::string, std::string>> role_env_field(const std::string& path) {
  for (const char* role : {"prefill", "decode", "router"}) {
    const std::string prefix = fmt::format("serve.{}.env.", role);
    if (starts_with(path, prefix) && path.size() > prefix.size()) {
      return std::pair<std::string, std::string>(role, path.substr(prefix.size()));
    }
  }
  return std::nullopt;
}

// Whether `role`'s processes read `var` (nullopt: not traced by role).
std::optional<bool> role_read(const ServerObservation& o, const std::string& role,
                              const std::string& var) {
  if (!o.role_reads) return std::nullopt;
  auto it = o.role_reads->read.find(role);
  if (it == o.role_reads->read.end()) return std::nullopt;
  auto jt = it->second.find(var);
  if (jt == it->second.end()) return std::nullopt;
  return jt->second;
}

// A variable set in one role's environment, judged on that role's processes: read there, it may
// matter; read only by another role's processes, it is a no-op where it is set ("other role":
// set on prefill, read only by decode); read by no role's, it was never read. A role whose
// processes the tracer could not fully see never gets a "not read" verdict (unverified), and
// neither does any role while a process of no known role read or hid something.
void judge_role_env(const std::string& role, const std::string& var, const ServerObservation& base,
                    const ServerObservation& head, const KeyVerdict& kv,
                    const std::string& diff_text, FieldVerdict& v) {
  const auto own_b = role_read(base, role, var), own_h = role_read(head, role, var);
  const bool moved = !kv.effective_diff.empty();
  if (!own_b && !own_h) {
    v.verdict = moved ? "effective" : "unverified";
    v.evidence = moved ? "effective configuration differs: " + diff_text
                       : fmt::format(
                             "the reads of the {} processes were not traced, and the "
                             "effective configuration is identical",
                             role);
    return;
  }
  if (own_b.value_or(false) || own_h.value_or(false)) {
    v.verdict = moved ? "effective" : "read";
    v.evidence = moved
                     ? fmt::format("read by the {} processes; effective configuration differs: {}",
                                   role, diff_text)
                     : fmt::format(
                           "read by the {} processes of the {} deployment, but the "
                           "effective configuration is identical; its effect cannot be "
                           "ruled out",
                           role, own_h.value_or(false) ? "head" : "base");
    return;
  }
  std::set<std::string> readers;
  std::vector<std::string> blind;
  for (const ServerObservation* o : {&base, &head}) {
    if (!o->role_reads) continue;
    for (const auto& [other, vars] : o->role_reads->read) {
      if (auto it = vars.find(var); it != vars.end() && it->second) readers.insert(other);
    }
  }
  for (const ServerObservation* o : {&base, &head}) {
    if (!o->role_reads) continue;
    for (const auto& [r, spots] : o->role_reads->blind_spots) {
      // The role that was given the variable must be fully seen; so must every role, before
      // "no process read it" is said.
      if (r == role || readers.empty()) blind.insert(blind.end(), spots.begin(), spots.end());
    }
  }
  if (!blind.empty()) {
    v.verdict = moved ? "effective" : "unverified";
    v.evidence = fmt::format(
        "not seen read by the {} processes, but the tracer could not see "
        "everything: {}",
        role, fmt::join(blind, "; "));
    if (moved) v.evidence = "effective configuration differs: " + diff_text + "; " + v.evidence;
    return;
  }
  // Every process of the role was seen, and none read it: whatever else moved the configuration
  // (another field of the key), this variable did not (as judge_unread for one server).
  if (!readers.empty()) {
    v.verdict = "other role";
    v.evidence = fmt::format(
        "set on {0}, read only by {1}: no {0} process read it (a no-op where it is set; set it "
        "on {1} to change {1})",
        role, fmt::join(readers, " and "));
    return;
  }
  v.verdict = "never read";
  v.evidence = fmt::format(
      "set on {}; no process of any role read it, and every process was "
      "traced",
      role);
}

// A server whose processes wrote the engine's installed files while it ran (a run-time patch):
// one note a file, at most five.
void note_engine_writes(const char* side, const ServerObservation& o,
                        std::vector<std::string>* notes) {
  const size_t shown = std::min<size_t>(o.engine_writes.size(), 5);
  for (size_t i = 0; i < shown; ++i) {
    notes->push_back(
        fmt::format("{} server wrote an engine file at run time: {}", side, o.engine_writes[i]));
  }
  if (o.engine_writes.size() > shown) {
    notes->push_back(fmt::format("{} server wrote {} more engine files at run time", side,
                                 o.engine_writes.size() - shown));
  }
}

}  // namespace

KeyVerdict judge_key(const std::string& key, const std::string& status,
                     const std::vector<ChangedField>& fields, const ServerObservation* base,
                     const ServerObservation* head, const std::set<std::string>& ignore) {
  KeyVerdict kv;
  kv.key = key;
  kv.status = status;
  if (status == "removed") {
    kv.verdict = "removed: nothing to sweep";
    return kv;
  }
  if (status == "added") {
    kv.fields.push_back({"", "new config key", "effective", "a new key has no earlier results"});
    kv.verdict = "effective: sweep";
    return kv;
  }
  const bool observed = base && head && base->observed && head->observed;
  if (observed) kv.effective_diff = stable_diff(base->config, head->config, ignore);
  if (base && !base->observed) kv.notes.push_back("base server not observed: " + base->error);
  if (head && !head->observed) kv.notes.push_back("head server not observed: " + head->error);
  if (base) note_engine_writes("base", *base, &kv.notes);
  if (head) note_engine_writes("head", *head, &kv.notes);
  const std::string diff_text = describe_diff(kv.effective_diff);

  for (const ChangedField& f : fields) {
    FieldVerdict v{f.path, f.detail, "", ""};
    if (starts_with(f.path, "scenarios")) {
      v.verdict = "workload";
      v.evidence = "the benchmark matrix changed: these points have no results yet";
    } else if (starts_with(f.path, "expect")) {
      v.verdict = "no effect";
      v.evidence = "assertions only; the server is not affected";
    } else if (f.kind == "runner") {
      v.verdict = "unverified";
      v.evidence = "runner hardware cannot be observed from here";
    } else if (!observed) {
      v.verdict = "unverified";
      v.evidence = "the servers could not be observed";
    } else if (auto role_var = role_env_field(f.path)) {
      judge_role_env(role_var->first, role_var->second, *base, *head, kv, diff_text, v);
    } else if (starts_with(f.path, "serve.env.")) {
      const std::string var = f.path.substr(10);
      auto read_by = [&](const ServerObservation* o) -> std::optional<bool> {
        if (!o->env_read) return std::nullopt;
        auto it = o->env_read->find(var);
        if (it == o->env_read->end()) return std::nullopt;
        return it->second;
      };
      auto rb = read_by(base);
      auto rh = read_by(head);
      const bool traced = rb.has_value() || rh.has_value();
      const bool read = rb.value_or(false) || rh.value_or(false);
      if (traced && !read) {
        judge_unread(var, *base, *head, v);
        if (v.verdict == "unverified" && !kv.effective_diff.empty()) {
          // Not seen read, but not ruled out either: the configuration did move.
          v.verdict = "effective";
          v.evidence = "effective configuration differs: " + diff_text + "; " + v.evidence;
        }
      } else if (!kv.effective_diff.empty()) {
        v.verdict = "effective";
        v.evidence = "effective configuration differs: " + diff_text;
      } else if (read) {
        v.verdict = "read";
        v.evidence = fmt::format(
            "read by the {} server, but the effective configuration is identical; its effect "
            "cannot be ruled out",
            rh.value_or(false) ? "head" : "base");
      } else {
        v.verdict = "unverified";
        v.evidence =
            "environment reads were not traced and the effective configuration is identical";
      }
    } else if (!kv.effective_diff.empty()) {
      v.verdict = "effective";
      v.evidence = "effective configuration differs: " + diff_text;
    } else {
      v.verdict = "no effect";
      v.evidence = "the effective configuration is identical";
    }
    kv.fields.push_back(std::move(v));
  }
  bool no_op = !kv.fields.empty();
  bool unverified = false;
  for (const auto& f : kv.fields) {
    if (f.verdict != "no effect" && f.verdict != "never read" && f.verdict != "other role") {
      no_op = false;
    }
    if (f.verdict == "unverified") unverified = true;
  }
  if (no_op) {
    kv.verdict = "no-op: skip the sweep";
  } else if (unverified) {
    kv.verdict = "effective: sweep (not every change could be verified)";
  } else {
    kv.verdict = "effective: sweep";
  }
  if (observed) kv.confounders = server_confounders(*base, *head);
  return kv;
}

json::object KeyVerdict::to_json() const {
  json::object o;
  o["config-key"] = key;
  o["status"] = status;
  o["verdict"] = verdict;
  o["no-op"] = no_op();
  json::array fs;
  for (const auto& f : fields) {
    fs.push_back(json::object{{"field", f.field},
                              {"change", f.change},
                              {"verdict", f.verdict},
                              {"evidence", f.evidence}});
  }
  o["fields"] = std::move(fs);
  o["effective-diff"] = effective_diff;
  json::array cs, ns;
  for (const auto& c : confounders) cs.emplace_back(c.to_json());
  for (const auto& n : notes) ns.emplace_back(n);
  o["confounders"] = std::move(cs);
  o["notes"] = std::move(ns);
  return o;
}

std::string verdicts_markdown(const std::string& title, const std::vector<KeyVerdict>& verdicts) {
  std::string md = fmt::format("### {}\n\n", title);
  if (verdicts.empty()) return md + "No config key is affected: nothing to sweep.\n";
  size_t noop = 0;
  for (const auto& v : verdicts) noop += v.no_op() ? 1 : 0;
  md += fmt::format("{} config key{} checked: **{} no-op**, {} to sweep.\n\n", verdicts.size(),
                    verdicts.size() == 1 ? "" : "s", noop, verdicts.size() - noop);
  for (const auto& v : verdicts) {
    md += fmt::format("#### `{}`: {}\n\n", v.key,
                      v.no_op() ? "**no-op: skip the sweep**" : v.verdict);
    if (!v.fields.empty()) {
      md += "| field | change | verdict | evidence |\n|---|---|---|---|\n";
      for (const auto& f : v.fields) {
        md += fmt::format(
            "| `{}` | {} | {} | {} |\n", markdown_code(f.field.empty() ? "(key)" : f.field),
            markdown_cell(f.change), markdown_cell(f.verdict), markdown_cell(f.evidence));
      }
      md += "\n";
    }
    for (const auto& c : v.confounders) md += fmt::format("- confounder: {}\n", c.text());
    for (const auto& n : v.notes) md += fmt::format("- note: {}\n", n);
    if (!v.confounders.empty() || !v.notes.empty()) md += "\n";
  }
  return md;
}

}  // namespace ib::verify
