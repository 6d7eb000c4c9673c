// --truth-log: what the server did, per request, on the client's clock. One JSON line per request
// when it ends, with the time each token's bytes were handed to the socket, so a client's
// measurements can be checked against the truth (docs/serve-sim.md "Truth log"). Timestamps are
// steady-clock nanoseconds, ib::mono_ns(), the clock the inferbench client records with.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib::sim {

/// One request's record.
struct TruthRecord {
  std::string_view request_id;  // the X-Request-Id header, empty when absent
  std::string_view id;          // the response's "id" ("cmpl-..." / "chatcmpl-...")
  std::string_view api;         // "completions" or "chat"
  bool stream = false;
  int64_t arrival_ns = 0;  // request header received
  int prompt_tokens = 0;
  int completion_tokens = 0;  // tokens sent (fewer than planned when aborted)
  int cached_tokens = 0;      // prompt tokens found in the prefix cache
  int preemptions = 0;
  std::string_view finish_reason;     // "stop", "length" or "abort"
  std::span<const int64_t> token_ns;  // per token: its bytes handed to the socket
  std::span<const int64_t> due_ns;    // per token: the engine step that produced it ended
};

/// Appends TruthRecords to a file as JSON lines, each flushed when written. Thread-safe: every
/// record is one whole line, whichever thread writes it.
class TruthLog {
 public:
  /// Creates (truncates) `path`. Error names the path and the OS reason.
  static Expected<std::unique_ptr<TruthLog>> open(const std::string& path);
  ~TruthLog();
  TruthLog(const TruthLog&) = delete;
  TruthLog& operator=(const TruthLog&) = delete;

  void write(const TruthRecord& record);
  void flush();

 private:
  explicit TruthLog(std::FILE* file) : file_(file) {}
  std::FILE* file_;
  std::mutex mutex_;  // one writer at a time
};

/// The JSON line of `record` (without the newline).
std::string truth_json(const TruthRecord& record);

}  // namespace ib::sim
