// serve-sim's log: every role (worker, router) writes to stderr through one logger; stdout is
// for results.
#pragma once

#include <spdlog/logger.h>

namespace ib::sim {

spdlog::logger& sim_log();

}  // namespace ib::sim
