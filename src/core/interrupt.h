// Ctrl-C and SIGTERM as a flag: long operations poll it, stop scheduling new work, keep what they
// measured and clean up (servers stopped, partial results written) instead of dying mid-write.
#pragma once

namespace ib {

/// Installs SIGINT and SIGTERM handlers that set the flag. A second SIGINT restores the default
/// action, so a stuck process can still be killed from the keyboard.
void install_interrupt_handlers();

/// True once SIGINT or SIGTERM arrived (or request_interrupt() was called).
bool interrupt_requested();

/// Sets the flag (tests, and callers that want the same clean stop).
void request_interrupt();

/// Clears the flag (tests).
void clear_interrupt();

}  // namespace ib
