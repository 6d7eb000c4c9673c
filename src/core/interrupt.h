// Terminating signals as a flag: long operations poll it, stop scheduling new work, keep what they
// measured and clean up (servers stopped, partial results written, the run marked interrupted)
// instead of dying mid-write.
#pragma once

namespace ib {

/// Installs handlers that set the flag for every signal whose default action ends the process
/// and that can be caught without giving up correctness: SIGINT (Ctrl-C), SIGTERM, SIGHUP (the
/// terminal went away), SIGQUIT (Ctrl-\), SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU (CPU
/// limit), SIGXFSZ (file-size limit; the write then fails with EFBIG and is reported), SIGPWR,
/// SIGSTKFLT, SIGIO and the real-time signals. Not handled: SIGPIPE (main() ignores it: a closed
/// socket or stdout is an error return, not a reason to lose a sweep), SIGPROF (profilers own
/// it), faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS: the process cannot
/// safely go on), and SIGKILL/SIGSTOP (cannot be caught; a run so killed is detected by its
/// readers, store.h). A second signal of the same kind restores its default action, so a stuck
/// process can still be killed from the keyboard.
void install_interrupt_handlers();

/// True once one of those signals arrived (or request_interrupt() was called).
bool interrupt_requested();

/// The first signal that arrived; 0 when none did (or only request_interrupt() was called).
int interrupt_signal();

/// The exit status of a process that stopped because of the interrupt: 128 + the signal (130
/// for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), as a shell reports a process the signal killed;
/// 130 when request_interrupt() set the flag.
int interrupted_exit_code();

/// Sets the flag (tests, and callers that want the same clean stop).
void request_interrupt();

/// Clears the flag and the signal (tests).
void clear_interrupt();

}  // namespace ib
