// Progress of a long operation on stderr (README, "every long operation shows progress"): on a
// terminal, one live line redrawn in place; anywhere else (a CI log, a file, a pipe), a plain line
// every few seconds, so that a two-minute sweep is not silent in a log and a log is not flooded.
#pragma once

#include <cstdint>
#include <string_view>

namespace ib {

enum class ProgressMode { kOff, kLive, kPlain };

/// kOff when progress is not `wanted`; else kLive when stderr is a terminal, kPlain otherwise.
ProgressMode progress_mode(bool wanted);

/// The seconds between plain progress lines: 5, or INFERBENCH_PROGRESS_INTERVAL (a number of
/// seconds >= 0.1) where it is set.
double plain_progress_interval_s();

/// One operation's progress line. Not thread-safe: one thread shows it.
class ProgressLine {
 public:
  explicit ProgressLine(ProgressMode mode);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { done(); }

  /// Shows `text`: redrawn in place (live), or as a line of its own when the interval has passed
  /// since the last one, or since the start (plain: an operation shorter than the interval prints
  /// nothing).
  void show(std::string_view text);
  /// Ends the line: a live line is cleared. Idempotent.
  void done();
  ProgressMode mode() const { return mode_; }
  /// Starts over in `mode` (a line drawn so far is ended first).
  void reset(ProgressMode mode);

 private:
  ProgressMode mode_;
  int64_t next_plain_ns_ = 0;
  int64_t interval_ns_ = 0;
  bool drawn_ = false;
};

}  // namespace ib
