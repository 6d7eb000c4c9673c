// Environment-read tracing (issue 7, docs/env-trace.md): which of a recipe's environment
// variables the server's processes actually read. The launcher injects an LD_PRELOAD library
// (getenv/secure_getenv) and a Python startup hook (os.environ/os.getenv) into the server; both
// append JSON lines to a trace folder, which collect_env_trace() turns into a report.
#pragma once

#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace ib::verify {

/// Where the tracer's run-time files are.
struct EnvTraceAssets {
  std::filesystem::path preload_library;  // libib_envtrace.so, absolute
  std::filesystem::path python_hook_dir;  // the folder holding sitecustomize.py, absolute
};

/// Finds the assets. With INFERBENCH_ENVTRACE_DIR set, only there: either a flat folder
/// (libib_envtrace.so and sitecustomize.py side by side) or a prefix with the layout below.
/// Otherwise relative to the running executable: <bin>/../lib/libib_envtrace.so and
/// <bin>/../share/inferbench/envtrace/sitecustomize.py (build tree and install prefix alike).
/// Error lists every path looked at, or says why a found path is unusable (LD_PRELOAD cannot
/// carry a path containing a space or a colon).
Expected<EnvTraceAssets> find_env_trace_assets();

/// Adds the tracer to `env`, the variables the launcher sets on top of the inherited environment:
/// LD_PRELOAD and PYTHONPATH get the tracer prepended to the value the child would otherwise see
/// (the recipe's own value in `env`, else the inherited one), never clobbered and never added
/// twice; IB_ENVTRACE_DIR = trace_dir (absolute; created if missing) and IB_ENVTRACE_WATCH = the
/// names, comma-separated (names that are empty or contain ',' or '=' are skipped);
/// IB_ENVTRACE_WRITE_PREFIXES = write_prefixes, colon-separated: folders whose files count as the
/// engine's installed files besides any site-packages or dist-packages (docs/env-trace.md, "Writes
/// into the engine's files"; relative ones, "/" and any holding a ':' are skipped).
void add_env_trace(const EnvTraceAssets& a, const std::filesystem::path& trace_dir,
                   const std::vector<std::string>& watch, std::map<std::string, std::string>* env,
                   const std::vector<std::string>& write_prefixes = {});

/// The install prefix of the program `program` (a server's argv[0]) when it is a virtual
/// environment's or a conda-like prefix: the program, found on `path` (a PATH value; a name with a
/// '/' is taken as it is, relative to the working folder), lies in <P>/bin/ and P is not "/",
/// "/usr" or "/usr/local": P. Symbolic links are not followed. Empty otherwise.
std::string program_install_prefix(const std::string& program, const std::string& path);

/// One process's first read of one variable.
struct EnvRead {
  int pid = 0;
  int ppid = 0;
  std::string exe;       // /proc/<pid>/exe of the reader
  std::string function;  // getenv | secure_getenv | os.environ | os.getenv
  bool was_set = false;  // whether the variable existed at that moment
  std::string cmdline;   // its command line, space-joined, possibly cut
  std::string value;     // the value it saw (when was_set), possibly cut
};

/// Whether a variable name looks like a credential: ib::is_secret_name() (core/redact.h), the one
/// policy; its value is never written to a report or the database.
bool looks_secret(std::string_view name);

/// One process of the server: as the tracer saw it start (traced), or as the launcher saw it
/// running without a trace of its own (a static or setuid binary, a process that lost
/// LD_PRELOAD).
struct TracedProcess {
  int pid = 0, ppid = 0;
  std::string exe, cmdline;
  bool traced = false;       // the C library or the Python hook ran in it
  bool shell = false;        // sh, bash, ...: expands $VARIABLES without getenv
  std::string shell_exe;     // the shell's program (the process may have exec'd another since)
  bool cleared_env = false;  // called clearenv(): its children ran without the tracer
  std::string enumerated;    // how it copied or iterated os.environ ("" when it did not)
};

/// A traced process's open for writing of one of the engine's installed files, or its rename of a
/// file onto one: how a serve script patches the engine before starting it (sed -i, patch,
/// git apply, cat > .../site-packages/x.py).
struct EngineWrite {
  int pid = 0;
  std::string exe, cmdline;
  std::string function;  // open, open64, openat, openat64, creat, fopen, rename, renameat, ...
  std::string path;      // absolute, symbolic links not resolved
  bool operator==(const EngineWrite&) const = default;
};

/// Why "no process read it" cannot be claimed while this process ran (docs/env-trace.md,
/// "What it cannot see").
struct BlindSpot {
  int pid = 0;
  std::string exe;
  std::string what;
  std::string text() const;  // "pid 12 (/bin/bash): a shell, which expands ..."
};

struct EnvTraceReport {
  std::map<std::string, std::vector<EnvRead>> reads;  // variable -> reads (only watched vars)
  std::map<int, TracedProcess> processes;             // by pid
  /// The processes whose reads the tracer could not see in full, in pid order.
  std::vector<BlindSpot> blind_spots() const;
  std::vector<std::string> never_read;                // watched vars no process read
  std::vector<std::string> warnings;                  // malformed lines, unreadable files
  bool c_tracer_loaded = false;                       // some process loaded the LD_PRELOAD library
  bool python_tracer_loaded = false;                  // some Python process ran the startup hook
  /// The engine's installed files the processes opened for writing, sorted by path then pid, one
  /// per (pid, path).
  std::vector<EngineWrite> engine_writes;
  /// {"variables": {"X": {"read": true, "readers": [{pid, ppid, exe, cmdline, function,
  ///  was_set, value?}]}}, "never_read": [...], "tracer_loaded": {"c": b, "python": b},
  ///  "processes": [{pid, ppid, exe, cmdline, traced, shell, cleared_env, enumerated}],
  ///  "blind_spots": [{pid, exe, what}], "engine_writes": [{pid, exe, cmdline, function, path}],
  ///  "warnings": [...]} ("engine_writes" always present, possibly empty)
  boost::json::object to_json() const;
};

/// EnvTraceReport::to_json's "engine_writes", read back from a stored report; entries without a
/// path are skipped. nullopt when the key is absent: a run stored before writes were traced.
std::optional<std::vector<EngineWrite>> engine_writes_from_json(
    const boost::json::object& env_reads);

/// "/x/site-packages/vllm/a.py (pid 12 sed, rename)": one line of a report.
std::string engine_write_text(const EngineWrite& w);

/// A disaggregated deployment's reads by role (docs/env-trace.md, "Roles"): a process belongs to
/// the role whose top process it descends from (the launcher's snapshot, else the trace's parent
/// links).
struct RoleReads {
  /// role -> watched variable -> read by some process of that role.
  std::map<std::string, std::map<std::string, bool>> read;
  /// role -> where its tracer was blind (BlindSpot::text). A process of no known role (it read a
  /// variable, or was blind) counts against every role: no role may then claim "not read".
  std::map<std::string, std::vector<std::string>> blind_spots;
  /// role -> the engine files its processes wrote (engine_write_text). A write by a process of no
  /// known role counts for every role.
  std::map<std::string, std::vector<std::string>> engine_writes;
  /// {"prefill": {"read": {"X": true}, "blind_spots": [...], "engine_writes": [...]}, ...}
  boost::json::object to_json() const;
  /// The same, read back (a stored run's); roles or fields that are not there are skipped.
  static RoleReads from_json(const boost::json::object& o);
};

/// The reads and blind spots of `report` by role; `role_of`: pid -> role of the processes the
/// launcher saw (each role's process group).
RoleReads reads_by_role(const EnvTraceReport& report, const std::vector<std::string>& watch,
                        const std::map<int, std::string>& role_of);

/// `report` narrowed to one role's processes (their reads, writes and records), for a role's own
/// `expect` (env-read, env-not-read).
EnvTraceReport only_role(const EnvTraceReport& report, const std::map<int, std::string>& role_of,
                         const std::string& role);

/// Reads every *.jsonl trace file in trace_dir and its subfolders (one per role where each role is
/// traced where it runs), and rewrites a file that holds a secret (a command
/// line's --api-key X, a value a recipe marked secret) with it hidden (core/redact.h). Never fails:
/// a missing folder, an unreadable file or a malformed line becomes a warning naming the file and
/// line; a partial last line (a process killed mid-write) is skipped with a warning. Readers are
/// sorted by pid, function. `running`: the server's processes the launcher saw (a snapshot of its
/// process group); one that left no trace record of its own is a blind spot.
EnvTraceReport collect_env_trace(const std::filesystem::path& trace_dir,
                                 const std::vector<std::string>& watch,
                                 const std::vector<TracedProcess>& running = {});

/// Hides the secrets (core/redact.h) in every file of a trace folder, in place, without reading
/// the records: for a server that never got far enough to be collected (it failed to start), so
/// that no artifact keeps a command line's --api-key. Returns warnings (a file it could not
/// rewrite). collect_env_trace() scrubs what it reads as well.
std::vector<std::string> scrub_env_trace(const std::filesystem::path& trace_dir);

/// One trace file's text (`name` for warnings), parsed as collect_env_trace() parses each file:
/// the reads and process events it holds, and a warning per malformed line. The files are written
/// by the server's processes, so this is a parser of outside input (fuzz/env_trace_fuzz.cc).
EnvTraceReport parse_env_trace_text(std::string_view text, const std::string& name,
                                    const std::vector<std::string>& watch);

}  // namespace ib::verify
