// The `local` and `endpoint` launchers (launcher.h).
#pragma once

#include <memory>
#include <string>

#include "launch/launcher.h"

namespace ib::launch {

/// fork/exec of the spec's argv on this machine (never through a shell), in its own process
/// group, output to spec.log_path, on a free loopback port; SIGTERM then SIGKILL on stop.
std::unique_ptr<Launcher> make_local_launcher(std::string host = "127.0.0.1");

/// An already-running server at `url`: start() only waits for health; stop() leaves it running.
std::unique_ptr<Launcher> make_endpoint_launcher(std::string url);

}  // namespace ib::launch
