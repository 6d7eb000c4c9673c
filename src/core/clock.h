// Monotonic and wall clocks. All latency measurements use mono_ns(); wall time is only recorded
// to label results.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

namespace ib {

using MonoClock = std::chrono::steady_clock;

/// Nanoseconds on the monotonic clock (arbitrary epoch; only differences are meaningful).
inline int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(MonoClock::now().time_since_epoch())
      .count();
}

/// Seconds since the Unix epoch, wall clock, with sub-second precision.
inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Wall-clock time `unix_s` (default: now) formatted in UTC with strftime's `format`, e.g.
/// "%Y%m%d-%H%M%S" for run names or "%Y-%m-%dT%H:%M:%SZ" for ISO 8601.
inline std::string utc_time_text(const char* format, std::time_t unix_s = std::time(nullptr)) {
  std::tm tm_utc{};
  gmtime_r(&unix_s, &tm_utc);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, format, &tm_utc);
  return std::string(buf, n);
}

/// Seconds elapsed on the monotonic clock since `t0`.
inline double seconds_since(MonoClock::time_point t0) {
  return std::chrono::duration<double>(MonoClock::now() - t0).count();
}

inline double ns_to_ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}
inline double ns_to_s(int64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

}  // namespace ib
