#include "verify/env_trace.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>

#include "core/files.h"
#include "core/redact.h"
#include "core/strings.h"

namespace ib::verify {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLibraryName = "libib_envtrace.so";
constexpr const char* kHookName = "sitecustomize.py";

// Absolute, with "." and ".." resolved where the path exists.
fs::path absolute_clean(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  fs::path canon = fs::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal() : canon;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The candidates under one root: flat (both files in `root`) when `flat`, then the prefix layout.
void add_candidates(const fs::path& root, bool flat,
                    std::vector<std::pair<fs::path, fs::path>>* out) {
  if (flat) out->emplace_back(root / kLibraryName, root);
  out->emplace_back(root / "lib" / kLibraryName, root / "share" / "inferbench" / "envtrace");
}

// Prepends `first` to a list split on any of `separators` (joined with the first of them),
// unless it is already there.
std::string prepend(const std::string& first, const std::string& existing,
                    std::string_view separators) {
  std::string_view rest(existing);
  bool empty = true;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find_first_of(separators, start);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view item = rest.substr(start, end - start);
    if (item == first) return existing;
    if (!item.empty()) empty = false;
    start = end + 1;
  }
  return empty ? first : first + separators[0] + existing;
}

// The value a child would see for `name`: the launcher's own setting, else the inherited one.
std::string effective(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  if (it != env.end()) return it->second;
  const char* inherited = std::getenv(name.c_str());
  return inherited != nullptr ? inherited : "";
}

bool valid_name(const std::string& name) {
  return !name.empty() && name.find_first_of(",=") == std::string::npos;
}

const boost::json::value* field(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->value();
}

// One record line; Error names the offending field.
Expected<std::pair<std::string, EnvRead>> parse_record(std::string_view line) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  if (ec) return Error{fmt::format("not JSON ({})", ec.message())};
  if (!v.is_object()) return Error{"not a JSON object"};
  const auto& o = v.get_object();
  auto integer = [&](std::string_view key, bool required, int* out) -> Status {
    const auto* f = field(o, key);
    if (f == nullptr) {
      return required ? Status(Error{fmt::format("missing field '{}'", key)}) : Status::Ok();
    }
    if (!f->is_int64()) return Error{fmt::format("field '{}' is not an integer", key)};
    *out = static_cast<int>(f->get_int64());
    return Status::Ok();
  };
  auto text = [&](std::string_view key, bool required, std::string* out) -> Status {
    const auto* f = field(o, key);
    if (f == nullptr) {
      return required ? Status(Error{fmt::format("missing field '{}'", key)}) : Status::Ok();
    }
    if (!f->is_string()) return Error{fmt::format("field '{}' is not a string", key)};
    *out = std::string(f->get_string());
    return Status::Ok();
  };
  EnvRead read;
  std::string variable;
  for (Status s : {integer("pid", true, &read.pid), integer("ppid", false, &read.ppid),
                   text("variable", true, &variable), text("function", true, &read.function),
                   text("exe", false, &read.exe), text("cmdline", false, &read.cmdline),
                   text("value", false, &read.value)}) {
    if (!s.ok()) return s.error();
  }
  const auto* was_set = field(o, "was_set");
  if (was_set == nullptr) return Error{"missing field 'was_set'"};
  if (!was_set->is_bool()) return Error{"field 'was_set' is not a boolean"};
  read.was_set = was_set->get_bool();
  return std::make_pair(std::move(variable), std::move(read));
}

// A write line ({"event": "write", "path": ..., "function": ...}) into `writes`.
Status parse_write(const boost::json::object& o, std::vector<EngineWrite>* writes) {
  EngineWrite w;
  w.pid = static_cast<int>(field(o, "pid")->get_int64());
  const auto* path = field(o, "path");
  const auto* function = field(o, "function");
  if (path == nullptr || !path->is_string() || path->get_string().empty()) {
    return Error{"write record: field 'path' is missing or not a string"};
  }
  if (function == nullptr || !function->is_string()) {
    return Error{"write record: field 'function' is missing or not a string"};
  }
  w.path = std::string(path->get_string());
  w.function = std::string(function->get_string());
  if (const auto* v = field(o, "exe"); v && v->is_string()) w.exe = std::string(v->get_string());
  if (const auto* v = field(o, "cmdline"); v && v->is_string()) {
    w.cmdline = std::string(v->get_string());
  }
  writes->push_back(std::move(w));
  return Status::Ok();
}

// A process event line ({"event": "start" | "clearenv" | "enumerated", ...}) into
// report->processes; a write ("write") into report->engine_writes.
Status parse_event(const boost::json::object& o, EnvTraceReport* report) {
  const auto* pid = field(o, "pid");
  const auto* event = field(o, "event");
  if (pid == nullptr || !pid->is_int64()) return Error{"field 'pid' is not an integer"};
  if (!event->is_string()) return Error{"field 'event' is not a string"};
  if (event->get_string() == "write") return parse_write(o, &report->engine_writes);
  TracedProcess& p = report->processes[static_cast<int>(pid->get_int64())];
  p.pid = static_cast<int>(pid->get_int64());
  p.traced = true;
  if (const auto* v = field(o, "ppid"); v && v->is_int64())
    p.ppid = static_cast<int>(v->get_int64());
  // A process that exec'd another program reports each: the last one names it.
  if (const auto* v = field(o, "exe"); v && v->is_string()) p.exe = std::string(v->get_string());
  if (const auto* v = field(o, "cmdline"); v && v->is_string()) {
    p.cmdline = std::string(v->get_string());
  }
  const std::string_view e = event->get_string();
  if (e == "start") {
    if (const auto* v = field(o, "shell"); v && v->is_bool() && v->get_bool()) {
      p.shell = true;
      p.shell_exe = p.exe;
    }
  } else if (e == "clearenv") {
    p.cleared_env = true;
  } else if (e == "enumerated") {
    const auto* how = field(o, "how");
    p.enumerated = how && how->is_string() ? std::string(how->get_string()) : "enumerated";
  } else {
    return Error{fmt::format("unknown event '{}'", printable(e, 40))};
  }
  return Status::Ok();
}

// The tracer runs inside the server and knows only its own list of credential names; the
// command lines it records (--api-key X) and values a recipe marked secret are hidden here, in the
// file too, so that no artifact of the run keeps them (core/redact.h).
void scrub(const fs::path& path, std::string* content, EnvTraceReport* report) {
  std::string clean = redact_text(*content);
  if (clean == *content) return;
  if (auto st = write_file_atomic(path, clean); !st) report->warnings.push_back(st.error().message);
  *content = std::move(clean);
}

// Sorted by path then pid, one per (pid, path): the first record of each.
void merge_writes(std::vector<EngineWrite>* writes) {
  std::stable_sort(writes->begin(), writes->end(), [](const EngineWrite& x, const EngineWrite& y) {
    return std::tie(x.path, x.pid) < std::tie(y.path, y.pid);
  });
  auto same = [](const EngineWrite& x, const EngineWrite& y) {
    return x.path == y.path && x.pid == y.pid;
  };
  writes->erase(std::unique(writes->begin(), writes->end(), same), writes->end());
}

// The lines of one trace file (`path` names it in warnings).
void collect_text(std::string_view content, const fs::path& path,
                  const std::set<std::string>& watched, EnvTraceReport* report) {
  std::string_view rest(content);
  int line_no = 0;
  while (!rest.empty()) {
    ++line_no;
    size_t nl = rest.find('\n');
    bool complete = nl != std::string_view::npos;
    std::string_view line = rest.substr(0, complete ? nl : rest.size());
    rest.remove_prefix(complete ? nl + 1 : rest.size());
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.find("\"event\"") != std::string_view::npos) {
      // A process event (the key appears unescaped only as a key: a value's quotes are escaped).
      boost::system::error_code ec;
      const boost::json::value v = boost::json::parse(line, ec);
      if (!ec && v.is_object() && v.get_object().contains("event")) {
        if (Status s = parse_event(v.get_object(), report); !s.ok()) {
          report->warnings.push_back(
              fmt::format("{}:{}: {}", path.string(), line_no, s.error().message));
        }
        continue;
      }
    }
    auto record = parse_record(line);
    if (!record.ok()) {
      report->warnings.push_back(
          complete ? fmt::format("{}:{}: {}", path.string(), line_no, record.error().message)
                   : fmt::format("{}:{}: incomplete last line ignored (process killed while "
                                 "writing?)",
                                 path.string(), line_no));
      continue;
    }
    auto& [variable, read] = *record;
    if (watched.count(variable) != 0) report->reads[variable].push_back(std::move(read));
  }
}

}  // namespace

Expected<EnvTraceAssets> find_env_trace_assets() {
  std::vector<std::pair<fs::path, fs::path>> candidates;
  const char* override_dir = std::getenv("INFERBENCH_ENVTRACE_DIR");
  std::string origin;
  if (override_dir != nullptr && *override_dir != '\0') {
    add_candidates(absolute_clean(override_dir), true, &candidates);
    origin = "INFERBENCH_ENVTRACE_DIR";
  } else {
    fs::path bin = self_executable().parent_path();
    add_candidates(absolute_clean(bin / ".."), false, &candidates);
    origin = fmt::format("the executable's folder {}", bin.string());
  }
  std::vector<std::string> looked;
  for (const auto& [lib, hook_dir] : candidates) {
    if (is_file(lib) && is_file(hook_dir / kHookName)) {
      EnvTraceAssets assets{absolute_clean(lib), absolute_clean(hook_dir)};
      if (assets.preload_library.string().find_first_of(" :") != std::string::npos) {
        return Error{fmt::format(
            "environment tracer {}: LD_PRELOAD cannot carry a path containing a space or a colon",
            assets.preload_library.string())};
      }
      return assets;
    }
    looked.push_back(fmt::format("{} + {}", lib.string(), (hook_dir / kHookName).string()));
  }
  return Error{fmt::format("environment tracer not found (relative to {}); looked for: {}", origin,
                           fmt::join(looked, "; "))};
}

void add_env_trace(const EnvTraceAssets& a, const fs::path& trace_dir,
                   const std::vector<std::string>& watch, std::map<std::string, std::string>* env,
                   const std::vector<std::string>& write_prefixes) {
  // ld.so splits LD_PRELOAD on spaces and colons; PYTHONPATH is colon-separated. An empty
  // PYTHONPATH entry would add the working folder to sys.path, so none is created.
  std::string preload = effective(*env, "LD_PRELOAD");
  (*env)["LD_PRELOAD"] = prepend(a.preload_library.string(), preload, ": ");
  std::string pythonpath = effective(*env, "PYTHONPATH");
  (*env)["PYTHONPATH"] = prepend(a.python_hook_dir.string(), pythonpath, ":");

  fs::path dir = absolute_clean(trace_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);  // a failure shows as "no process wrote a record"
  (*env)["IB_ENVTRACE_DIR"] = dir.string();
  std::vector<std::string> names;
  for (const auto& n : watch) {
    if (valid_name(n) && std::find(names.begin(), names.end(), n) == names.end()) {
      names.push_back(n);
    }
  }
  (*env)["IB_ENVTRACE_WATCH"] = fmt::format("{}", fmt::join(names, ","));
  std::vector<std::string> prefixes;
  for (const auto& p : write_prefixes) {
    if (p.size() > 1 && p[0] == '/' && p.find(':') == std::string::npos &&
        std::find(prefixes.begin(), prefixes.end(), p) == prefixes.end()) {
      prefixes.push_back(p);
    }
  }
  (*env)["IB_ENVTRACE_WRITE_PREFIXES"] = fmt::format("{}", fmt::join(prefixes, ":"));
}

std::string program_install_prefix(const std::string& program, const std::string& path) {
  if (program.empty()) return "";
  fs::path found;
  std::error_code ec;
  if (program.find('/') != std::string::npos) {
    found = fs::absolute(program, ec);
  } else {
    for (const std::string& dir : split(path, ':')) {
      if (dir.empty()) continue;
      const fs::path candidate = fs::path(dir) / program;
      if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate, ec)) {
        found = fs::absolute(candidate, ec);
        break;
      }
    }
  }
  if (found.empty() || ec) return "";
  found = found.lexically_normal();
  const fs::path bin = found.parent_path();
  if (bin.filename() != "bin") return "";
  const std::string prefix = bin.parent_path().string();
  if (prefix.empty() || prefix == "/" || prefix == "/usr" || prefix == "/usr/local") return "";
  return prefix;
}

namespace {

void collect_file(const fs::path& path, const std::set<std::string>& watched,
                  EnvTraceReport* report) {
  auto content = read_file(path);
  if (!content.ok()) {
    report->warnings.push_back(content.error().message);
    return;
  }
  scrub(path, &*content, report);
  collect_text(*content, path, watched, report);
}

}  // namespace

std::vector<std::string> scrub_env_trace(const fs::path& trace_dir) {
  EnvTraceReport report;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(trace_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (auto text = read_file(it->path()); text) scrub(it->path(), &*text, &report);
  }
  return report.warnings;
}

EnvTraceReport parse_env_trace_text(std::string_view text, const std::string& name,
                                    const std::vector<std::string>& watch) {
  EnvTraceReport report;
  collect_text(text, name, std::set<std::string>(watch.begin(), watch.end()), &report);
  merge_writes(&report.engine_writes);
  return report;
}

EnvTraceReport collect_env_trace(const fs::path& trace_dir, const std::vector<std::string>& watch,
                                 const std::vector<TracedProcess>& running) {
  EnvTraceReport report;
  std::set<std::string> watched(watch.begin(), watch.end());
  std::error_code ec;
  std::vector<fs::path> files;
  if (!fs::is_directory(trace_dir, ec)) {
    report.warnings.push_back(fmt::format(
        "{}: trace folder missing: no process wrote a trace record", trace_dir.string()));
  } else {
    // Recursive: a deployment traced where it runs has a folder per role.
    for (fs::recursive_directory_iterator it(trace_dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      const fs::path& p = it->path();
      std::string name = p.filename().string();
      if (name == "loaded-c.json") report.c_tracer_loaded = true;
      if (name == "loaded-py.json") report.python_tracer_loaded = true;
      if (name == "loaded-c.json" || name == "loaded-py.json") {
        if (auto text = read_file(p); text) scrub(p, &*text, &report);
      }
      if (p.extension() == ".jsonl") files.push_back(p);
    }
    if (ec) {
      report.warnings.push_back(
          fmt::format("{}: cannot list trace folder: {}", trace_dir.string(), ec.message()));
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) collect_file(f, watched, &report);
  for (auto& [variable, reads] : report.reads) {
    std::stable_sort(reads.begin(), reads.end(), [](const EnvRead& x, const EnvRead& y) {
      return std::tie(x.pid, x.function, x.exe) < std::tie(y.pid, y.function, y.exe);
    });
  }
  merge_writes(&report.engine_writes);
  // What the launcher saw running and the tracer never heard from.
  for (const auto& p : running) {
    if (report.processes.count(p.pid) != 0) continue;
    TracedProcess untraced = p;
    untraced.traced = false;
    report.processes[p.pid] = std::move(untraced);
  }
  std::set<std::string> listed;
  for (const auto& n : watch) {
    if (report.reads.count(n) == 0 && listed.insert(n).second) report.never_read.push_back(n);
  }
  if (!watch.empty() && !report.c_tracer_loaded && !report.python_tracer_loaded) {
    report.warnings.push_back(
        fmt::format("{}: the tracer was never loaded (static binary, setuid program, LD_PRELOAD or "
                    "PYTHONPATH dropped?): 'never read' proves nothing here",
                    trace_dir.string()));
  }
  return report;
}

bool looks_secret(std::string_view name) { return is_secret_name(name); }

std::string BlindSpot::text() const {
  return fmt::format("pid {} ({}): {}", pid, exe.empty() ? std::string("?") : exe, what);
}

namespace {

// The role of process `pid`: its own, else its nearest ancestor's (the trace's parent links, at
// most 64 up); empty when none is known.
std::string role_of_pid(int pid, const EnvTraceReport& report,
                        const std::map<int, std::string>& role_of) {
  for (int step = 0; step < 64 && pid > 1; ++step) {
    if (auto it = role_of.find(pid); it != role_of.end()) return it->second;
    auto p = report.processes.find(pid);
    if (p == report.processes.end() || p->second.ppid == pid) break;
    pid = p->second.ppid;
  }
  return {};
}

}  // namespace

RoleReads reads_by_role(const EnvTraceReport& report, const std::vector<std::string>& watch,
                        const std::map<int, std::string>& role_of) {
  RoleReads out;
  std::set<std::string> roles;
  for (const auto& [pid, role] : role_of) roles.insert(role);
  for (const std::string& role : roles) {
    for (const std::string& var : watch) out.read[role][var] = false;
    out.blind_spots[role];
  }
  auto blind_everywhere = [&](const std::string& text) {
    for (const std::string& role : roles) out.blind_spots[role].push_back(text);
  };
  for (const auto& [var, reads] : report.reads) {
    for (const EnvRead& r : reads) {
      const std::string role = role_of_pid(r.pid, report, role_of);
      if (role.empty()) {
        blind_everywhere(fmt::format("pid {} ({}) read {} but belongs to no role of the deployment",
                                     r.pid, r.exe, var));
      } else {
        out.read[role][var] = true;
      }
    }
  }
  for (const BlindSpot& b : report.blind_spots()) {
    const std::string role = role_of_pid(b.pid, report, role_of);
    if (role.empty()) {
      blind_everywhere(b.text());
    } else {
      out.blind_spots[role].push_back(b.text());
    }
  }
  for (const EngineWrite& w : report.engine_writes) {
    const std::string role = role_of_pid(w.pid, report, role_of);
    for (const std::string& r : roles) {
      if (role.empty() || role == r) out.engine_writes[r].push_back(engine_write_text(w));
    }
  }
  return out;
}

EnvTraceReport only_role(const EnvTraceReport& report, const std::map<int, std::string>& role_of,
                         const std::string& role) {
  EnvTraceReport out;
  out.c_tracer_loaded = report.c_tracer_loaded;
  out.python_tracer_loaded = report.python_tracer_loaded;
  out.warnings = report.warnings;
  for (const auto& [var, reads] : report.reads) {
    auto& mine = out.reads[var];
    for (const EnvRead& r : reads) {
      if (role_of_pid(r.pid, report, role_of) == role) mine.push_back(r);
    }
  }
  for (const auto& [pid, p] : report.processes) {
    if (role_of_pid(pid, report, role_of) == role) out.processes.emplace(pid, p);
  }
  for (const EngineWrite& w : report.engine_writes) {
    if (role_of_pid(w.pid, report, role_of) == role) out.engine_writes.push_back(w);
  }
  return out;
}

boost::json::object RoleReads::to_json() const {
  boost::json::object o;
  for (const auto& [role, vars] : read) {
    boost::json::object r, v;
    for (const auto& [name, was] : vars) v[name] = was;
    r["read"] = std::move(v);
    boost::json::array spots;
    if (auto it = blind_spots.find(role); it != blind_spots.end()) {
      for (const auto& s : it->second) spots.emplace_back(s);
    }
    r["blind_spots"] = std::move(spots);
    boost::json::array writes;
    if (auto it = engine_writes.find(role); it != engine_writes.end()) {
      for (const auto& w : it->second) writes.emplace_back(w);
    }
    r["engine_writes"] = std::move(writes);
    o[role] = std::move(r);
  }
  return o;
}

RoleReads RoleReads::from_json(const boost::json::object& o) {
  RoleReads out;
  for (const auto& kv : o) {
    if (!kv.value().is_object()) continue;
    const std::string role(kv.key());
    const auto& r = kv.value().get_object();
    if (const auto* v = r.if_contains("read"); v && v->is_object()) {
      for (const auto& var : v->get_object()) {
        if (var.value().is_bool()) out.read[role][std::string(var.key())] = var.value().get_bool();
      }
    }
    auto& spots = out.blind_spots[role];
    if (const auto* b = r.if_contains("blind_spots"); b && b->is_array()) {
      for (const auto& s : b->get_array()) {
        if (s.is_string()) spots.emplace_back(s.get_string());
      }
    }
    if (const auto* w = r.if_contains("engine_writes"); w && w->is_array()) {
      auto& writes = out.engine_writes[role];
      for (const auto& s : w->get_array()) {
        if (s.is_string()) writes.emplace_back(s.get_string());
      }
    }
  }
  return out;
}

std::vector<BlindSpot> EnvTraceReport::blind_spots() const {
  std::vector<BlindSpot> out;
  for (const auto& [pid, p] : processes) {
    auto add = [&](std::string what) { out.push_back({pid, p.exe, std::move(what)}); };
    if (!p.traced) {
      add("not traced (a static or setuid binary, or started without the tracer's LD_PRELOAD)");
      continue;
    }
    if (p.shell) {
      out.push_back({pid, p.shell_exe, "a shell, which expands $VARIABLES without asking getenv"});
    }
    if (p.cleared_env) add("cleared its environment, so its children ran untraced");
    if (!p.enumerated.empty()) {
      add(
          fmt::format("copied or enumerated its environment ({}): a variable read from the copy, "
                      "or matched by prefix, is not seen",
                      p.enumerated));
    }
  }
  return out;
}

boost::json::object EnvTraceReport::to_json() const {
  boost::json::object variables;
  for (const auto& [name, list] : reads) {
    boost::json::array readers;
    for (const auto& r : list) {
      boost::json::object o{{"pid", r.pid},           {"ppid", r.ppid},
                            {"exe", r.exe},           {"cmdline", r.cmdline},
                            {"function", r.function}, {"was_set", r.was_set}};
      if (r.was_set) o["value"] = redact_value(name, r.value);
      o["cmdline"] = redact_text(r.cmdline);
      readers.push_back(std::move(o));
    }
    variables[name] = boost::json::object{{"read", true}, {"readers", std::move(readers)}};
  }
  boost::json::array never;
  for (const auto& n : never_read) {
    variables[n] = boost::json::object{{"read", false}, {"readers", boost::json::array{}}};
    never.push_back(boost::json::string(n));
  }
  boost::json::array warn;
  for (const auto& w : warnings) warn.push_back(boost::json::string(w));
  boost::json::array procs, blind;
  for (const auto& [pid, p] : processes) {
    procs.push_back(boost::json::object{{"pid", p.pid},
                                        {"ppid", p.ppid},
                                        {"exe", p.exe},
                                        {"cmdline", redact_text(p.cmdline)},
                                        {"traced", p.traced},
                                        {"shell", p.shell},
                                        {"cleared_env", p.cleared_env},
                                        {"enumerated", p.enumerated}});
  }
  for (const auto& b : blind_spots()) {
    blind.push_back(boost::json::object{{"pid", b.pid}, {"exe", b.exe}, {"what", b.what}});
  }
  boost::json::array writes;
  for (const auto& w : engine_writes) {
    writes.push_back(boost::json::object{{"pid", w.pid},
                                         {"exe", w.exe},
                                         {"cmdline", redact_text(w.cmdline)},
                                         {"function", w.function},
                                         {"path", w.path}});
  }
  return boost::json::object{
      {"variables", std::move(variables)},
      {"never_read", std::move(never)},
      {"tracer_loaded",
       boost::json::object{{"c", c_tracer_loaded}, {"python", python_tracer_loaded}}},
      {"processes", std::move(procs)},
      {"blind_spots", std::move(blind)},
      {"engine_writes", std::move(writes)},
      {"warnings", std::move(warn)}};
}

std::optional<std::vector<EngineWrite>> engine_writes_from_json(
    const boost::json::object& env_reads) {
  const auto* a = env_reads.if_contains("engine_writes");
  if (a == nullptr) return std::nullopt;
  std::vector<EngineWrite> out;
  if (!a->is_array()) return out;
  for (const auto& e : a->get_array()) {
    if (!e.is_object()) continue;
    const auto& o = e.get_object();
    const auto* path = o.if_contains("path");
    if (path == nullptr || !path->is_string() || path->get_string().empty()) continue;
    EngineWrite w;
    w.path = std::string(path->get_string());
    if (const auto* v = o.if_contains("pid"); v && v->is_int64()) {
      w.pid = static_cast<int>(v->get_int64());
    }
    auto text = [&](const char* key, std::string* out_text) {
      if (const auto* v = o.if_contains(key); v && v->is_string()) {
        *out_text = std::string(v->get_string());
      }
    };
    text("exe", &w.exe);
    text("cmdline", &w.cmdline);
    text("function", &w.function);
    out.push_back(std::move(w));
  }
  return out;
}

std::string engine_write_text(const EngineWrite& w) {
  const std::string exe = w.exe.substr(w.exe.rfind('/') + 1);
  // Written by the server's processes: shown with control characters escaped.
  return fmt::format("{} (pid {} {}, {})", printable(w.path, 300), w.pid,
                     exe.empty() ? std::string("?") : printable(exe, 60),
                     w.function.empty() ? std::string("?") : printable(w.function, 20));
}

}  // namespace ib::verify
