// The simulator's only door to the process environment. Every environment variable serve-sim
// consults goes through sim_getenv(), which calls ::getenv at the moment the value is needed, so an
// environment tracer (e.g. an LD_PRELOAD shim recording getenv calls) sees exactly the variables a
// code path reads, and a variable on a path that never consults it is genuinely not read
// (docs/serve-sim.md "Effective configuration").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ib::sim {

/// The value of environment variable `name` (via ::getenv), or nullopt when it is unset. Records
/// the name in env_reads(). Thread-safe with respect to other sim_getenv calls.
std::optional<std::string> sim_getenv(const char* name);

/// Names passed to sim_getenv so far in this process, in first-read order, without duplicates.
std::vector<std::string> env_reads();

/// True when sim_getenv(name) was called in this process.
bool env_was_read(const std::string& name);

/// Forgets the recorded reads (tests resolve configurations several times in one process).
void clear_env_reads();

}  // namespace ib::sim
