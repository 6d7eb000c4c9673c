#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/clock.h"

namespace ib {

ProgressMode progress_mode(bool wanted) {
  if (!wanted) return ProgressMode::kOff;
  return isatty(STDERR_FILENO) != 0 ? ProgressMode::kLive : ProgressMode::kPlain;
}

double plain_progress_interval_s() {
  const char* v = std::getenv("INFERBENCH_PROGRESS_INTERVAL");
  if (v == nullptr) return 5.0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end != v && *end == '\0' && s >= 0.1 && s <= 86400) return s;
  // Not a reason to stop a benchmark, but never silently: said once per process.
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    fmt::print(stderr,
               "inferbench: INFERBENCH_PROGRESS_INTERVAL='{}' is not a number of seconds from 0.1 "
               "to 86400; progress lines come every 5 s\n",
               v);
  }
  return 5.0;
}

ProgressLine::ProgressLine(ProgressMode mode) : mode_(mode) {
  interval_ns_ = static_cast<int64_t>(plain_progress_interval_s() * 1e9);
  next_plain_ns_ = mono_ns() + interval_ns_;
}

void ProgressLine::show(std::string_view text) {
  switch (mode_) {
    case ProgressMode::kOff:
      return;
    case ProgressMode::kLive:
      fmt::print(stderr, "\r\033[K{}", text);
      std::fflush(stderr);
      drawn_ = true;
      return;
    case ProgressMode::kPlain: {
      const int64_t now = mono_ns();
      if (now < next_plain_ns_) return;
      next_plain_ns_ = now + interval_ns_;
      fmt::print(stderr, "{}\n", text);
      std::fflush(stderr);
      return;
    }
  }
}

void ProgressLine::reset(ProgressMode mode) {
  done();
  mode_ = mode;
  next_plain_ns_ = mono_ns() + interval_ns_;
}

void ProgressLine::done() {
  if (mode_ == ProgressMode::kLive && drawn_) {
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace ib
