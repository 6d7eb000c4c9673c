#include "core/interrupt.h"

#include <atomic>
#include <csignal>

namespace ib {
namespace {

std::atomic<bool> g_flag{false};

extern "C" void on_signal(int sig) {
  if (g_flag.exchange(true) && sig == SIGINT) {
    std::signal(SIGINT, SIG_DFL);
  }
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_flag.load(std::memory_order_relaxed); }
void request_interrupt() { g_flag.store(true); }
void clear_interrupt() { g_flag.store(false); }

}  // namespace ib
