#include "cli/commands.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/interrupt.h"

namespace ib::cli {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
    case ErrorKind::kInput:
      return kExitUsage;
    case ErrorKind::kInterrupted:
      return interrupted_exit_code();
    case ErrorKind::kIo:
    case ErrorKind::kRun:
      break;
  }
  return kExitFailure;
}

int fail(std::string_view command, const Error& e) {
  fmt::print(stderr, "inferbench {}: {}\n", command, e.message);
  return exit_code(e.kind);
}

}  // namespace ib::cli
