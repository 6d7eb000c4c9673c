// Timed request traces (docs/trace-replay.md): production arrival logs that the field replays to
// test serving under real arrival patterns and, where the trace has them, real prefix reuse.
// Four public formats, read strictly (an error names the file, line and field):
//   mooncake  JSONL {timestamp (ms), input_length, output_length, hash_ids}, 512-token blocks
//             (kvcache-ai/Mooncake, FAST25-release/traces);
//   bailian   JSONL {chat_id, parent_chat_id, timestamp (s), input_length, output_length, type,
//             turn, hash_ids}, 16-token blocks (alibaba-edu/qwen-bailian-usagetraces-anon);
//   burstgpt  CSV Timestamp (s), Model, Request tokens, Response tokens, Total tokens, Log Type
//             (HPMLL/BurstGPT): no prefix data;
//   azure     CSV TIMESTAMP (datetime text), ContextTokens, GeneratedTokens
//             (Azure/AzurePublicDataset, AzureLLMInferenceDataset2023/2024): no prefix data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace ib::workload {

enum class TraceFormat { kMooncake, kBailian, kBurstGpt, kAzure };

/// "mooncake", "bailian", "burstgpt", "azure".
std::optional<TraceFormat> parse_trace_format(std::string_view text);
std::string_view trace_format_name(TraceFormat f);
/// Tokens a hash id stands for: 512 (Mooncake), 16 (Bailian); 0 for formats without hash ids.
int64_t default_block_size(TraceFormat f);

/// One request of a trace.
struct TimedRequest {
  double t_s = 0;  // arrival, seconds after the trace's first request
  int64_t input_len = 0, output_len = 0;
  std::vector<uint64_t> hash_ids;  // one per block of the input (the last may be partial)
  int64_t line = 0;                // 1-based line in the file (CSV: the header is line 1)
};

struct TimedTrace {
  TraceFormat format = TraceFormat::kMooncake;
  std::string source;                  // the file's path as given
  std::string digest;                  // SHA-256 of the file's bytes
  int64_t block_size = 0;              // tokens per hash id; 0: no prefix data
  std::vector<TimedRequest> requests;  // in arrival order (stable for equal times)
  /// What was left out or changed, one line each (rows BurstGPT logged with 0 response tokens,
  /// a file whose times were not in order).
  std::vector<std::string> notes;
  bool has_prefix() const { return block_size > 0; }
};

/// Parses `text` (the file's bytes; `source` names it in errors and in `source`). `block_size` 0:
/// the format's default. Errors: a line that is not the format's object or row, a field missing
/// or of the wrong type, a negative time or length, an input of 0 tokens, a hash-id count other
/// than ceil(input_length / block_size), no request at all.
Expected<TimedTrace> parse_timed_trace(std::string_view text, TraceFormat format,
                                       const std::string& source, int64_t block_size = 0);
Expected<TimedTrace> load_timed_trace(const std::filesystem::path& path, TraceFormat format,
                                      int64_t block_size = 0);

/// A slice of the trace's time: requests with START <= t < END (seconds after the first
/// request), times made relative to the slice's first request.
struct TraceWindow {
  double start_s = 0;
  double end_s = 0;  // 0: to the end
};
/// "START:END" (seconds; either may be empty: ":600", "300:"). Error names --window.
Expected<TraceWindow> parse_trace_window(std::string_view text);
TimedTrace cut_window(const TimedTrace& trace, const TraceWindow& window);

/// What a trace holds (`inferbench trace stats`).
struct TimedTraceStats {
  int64_t requests = 0;
  double span_s = 0;        // last arrival - first
  double mean_rate = 0;     // requests / span (0 when the span is 0)
  double peak_rate_1s = 0;  // most arrivals in any 1 s window starting at an arrival
  int64_t input_tokens = 0, output_tokens = 0;
  struct Lengths {
    int64_t min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
    double mean = 0;
  } input, output;
  /// Requests per second in consecutive buckets of `bucket_s` from the first arrival.
  double bucket_s = 0;
  std::vector<int64_t> arrivals_per_bucket;
  /// Prefix structure (traces with hash ids): distinct ids, ids used more than once, and the
  /// theoretical prefix-cache hit with an unbounded cache: every request in arrival order against
  /// the ids of all before it; its hit is its leading run of ids already seen, in tokens
  /// (min(run × block, input_length)); hit % = 100 · Σ hit tokens / Σ input tokens.
  int64_t distinct_blocks = 0, reused_blocks = 0, total_blocks = 0;
  int64_t hit_tokens = 0;
  double theoretical_hit_pct = 0;
};
TimedTraceStats timed_trace_stats(const TimedTrace& trace, double bucket_s = 0);

/// Each request's theoretical hit in tokens (as timed_trace_stats counts it), in trace order.
std::vector<int64_t> theoretical_hits(const TimedTrace& trace);

}  // namespace ib::workload
