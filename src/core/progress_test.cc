#include "core/progress.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <thread>

namespace ib {
namespace {

// In a log (not a terminal) progress is a plain line every interval: nothing for an operation
// shorter than that, then one line per interval however often it is shown (issue 30).
TEST(Progress, PlainLinesComeOncePerInterval) {
  ::setenv("INFERBENCH_PROGRESS_INTERVAL", "0.5", 1);
  EXPECT_DOUBLE_EQ(plain_progress_interval_s(), 0.5);
  testing::internal::CaptureStderr();
  {
    ProgressLine p(ProgressMode::kPlain);
    p.show("a");
    p.show("b");
    std::this_thread::sleep_for(std::chrono::milliseconds(550));
    p.show("c");
    p.show("d");
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "c\n");
  // A bad value is said (once), not silently taken for the default.
  testing::internal::CaptureStderr();
  for (const char* bad : {"0", "-1", "x", "5s", ""}) {
    ::setenv("INFERBENCH_PROGRESS_INTERVAL", bad, 1);
    EXPECT_DOUBLE_EQ(plain_progress_interval_s(), 5.0) << bad;
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "inferbench: INFERBENCH_PROGRESS_INTERVAL='0' is not a number of seconds from 0.1 to "
            "86400; progress lines come every 5 s\n");
  ::unsetenv("INFERBENCH_PROGRESS_INTERVAL");
}

TEST(Progress, LiveLineIsRedrawnAndClearedAndOffIsSilent) {
  testing::internal::CaptureStderr();
  {
    ProgressLine p(ProgressMode::kLive);
    p.show("1 / 2");
    p.show("2 / 2");
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "\r\033[K1 / 2\r\033[K2 / 2\r\033[K");
  testing::internal::CaptureStderr();
  {
    ProgressLine p(ProgressMode::kOff);
    p.show("x");
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(progress_mode(false), ProgressMode::kOff);
}

}  // namespace
}  // namespace ib
