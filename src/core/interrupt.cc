#include "core/interrupt.h"

#include <atomic>
#include <csignal>
#include <vector>

namespace ib {
namespace {

std::atomic<bool> g_flag{false};
std::atomic<int> g_signal{0};
// Which signals arrived at least once, so that the second of a kind restores its default.
// Indexed by signal number; only async-signal-safe lock-free atomics are touched by the handler.
constexpr int kMaxSignal = 65;
std::atomic<bool> g_seen[kMaxSignal];

extern "C" void on_signal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
  g_flag.store(true);
  if (sig > 0 && sig < kMaxSignal && g_seen[sig].exchange(true)) {
    // The second of a kind: the next one acts as if no handler were installed.
    std::signal(sig, SIG_DFL);
  }
}

std::vector<int> handled_signals() {
  std::vector<int> s = {SIGINT,  SIGTERM,   SIGHUP,  SIGQUIT, SIGUSR1,   SIGUSR2, SIGALRM,
                        SIGVTALRM, SIGXCPU, SIGXFSZ, SIGPWR,  SIGSTKFLT, SIGIO};
  // The real-time signals (glibc keeps the first few for itself; SIGRTMIN is past them).
  for (int sig = SIGRTMIN; sig <= SIGRTMAX && sig < kMaxSignal; ++sig) s.push_back(sig);
  return s;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : handled_signals()) sigaction(sig, &sa, nullptr);
}

bool interrupt_requested() { return g_flag.load(std::memory_order_relaxed); }
int interrupt_signal() { return g_signal.load(); }
int interrupted_exit_code() {
  const int sig = g_signal.load();
  return sig > 0 ? 128 + sig : 130;
}
void request_interrupt() { g_flag.store(true); }
void clear_interrupt() {
  g_flag.store(false);
  g_signal.store(0);
  for (auto& s : g_seen) s.store(false);
}

}  // namespace ib
