#include "core/interrupt.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "core/process.h"

namespace ib {
namespace {

// Every terminating signal that can be caught stops the process the way Ctrl-C does: a flag, the
// signal remembered for the exit status 128 + signal.
TEST(Interrupt, EveryCatchableTerminatingSignalSetsTheFlagAndItsExitCode) {
  install_interrupt_handlers();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPWR,
                  SIGRTMIN, SIGRTMAX}) {
    SCOPED_TRACE(sig);
    clear_interrupt();
    install_interrupt_handlers();
    ASSERT_FALSE(interrupt_requested());
    ASSERT_EQ(::raise(sig), 0);
    EXPECT_TRUE(interrupt_requested());
    EXPECT_EQ(interrupt_signal(), sig);
    EXPECT_EQ(interrupted_exit_code(), 128 + sig);
  }
  clear_interrupt();
  request_interrupt();  // no signal: as Ctrl-C
  EXPECT_EQ(interrupted_exit_code(), 130);
  clear_interrupt();
}

TEST(Interrupt, TheFirstSignalIsTheOneReportedAndTheSecondOfAKindRestoresTheDefault) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    install_interrupt_handlers();
    ::raise(SIGHUP);
    ::raise(SIGTERM);  // first of its kind: caught
    if (interrupt_signal() != SIGHUP) ::_exit(3);
    ::raise(SIGTERM);  // the second SIGTERM is caught too, and restores the default
    ::raise(SIGTERM);  // ... so this one kills
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(ProcessIdentity, ThisProcessIsAliveAndAnExitedOneOrARecycledPidIsGone) {
  const ProcessIdentity self = self_identity();
  EXPECT_EQ(self.pid, ::getpid());
  EXPECT_FALSE(self.host.empty());
  EXPECT_GT(self.start_ticks, 0);
  EXPECT_EQ(process_state(self), ProcessState::kAlive);

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ProcessIdentity c = identity_of(child);
  EXPECT_GT(c.start_ticks, 0);
  EXPECT_EQ(process_state(c), ProcessState::kAlive);
  ProcessIdentity recycled = c;
  recycled.start_ticks += 1;  // the same pid, another process
  EXPECT_EQ(process_state(recycled), ProcessState::kGone);
  ::kill(child, SIGKILL);
  // A zombie (exited, not yet reaped) is gone too.
  for (int i = 0; i < 500 && process_state(c) != ProcessState::kGone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(process_state(c), ProcessState::kGone);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(process_state(c), ProcessState::kGone);

  ProcessIdentity elsewhere = self;
  elsewhere.host = "another-host.example";
  EXPECT_EQ(process_state(elsewhere), ProcessState::kUnknown);
  ProcessIdentity container = self;
  container.pid_namespace = "pid:[1]";
  EXPECT_EQ(process_state(container), ProcessState::kUnknown);
  ProcessIdentity rebooted = self;
  rebooted.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(process_state(rebooted), ProcessState::kGone);
  EXPECT_EQ(process_state(ProcessIdentity{}), ProcessState::kUnknown);
}

}  // namespace
}  // namespace ib
