// Recorded agentic-coding sessions in the "Weka" trace format (the traces AgentX replays), loaded
// strictly: a trace that breaks the format is an error naming the file, the request's index path
// (`requests[12].requests[3]`) and the field. The replay itself (DAG, prompts, timing) builds on
// these types (issue 12).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace ib::workload {

/// A normal ("n") or streaming ("s") request of a trace.
struct TraceRequest {
  bool streaming = false;
  double t = 0;  // start, seconds from the conversation's start (absolute, see below)
  std::string model;
  int64_t in = 0;                 // input tokens
  int64_t out = 0;                // output tokens
  std::vector<int64_t> hash_ids;  // one per full block of the input
  std::vector<std::string> input_types, output_types;
  std::string stop;  // "", "tool_use" or "end_turn"
  double api_time = 0;
  double think_time = 0;       // client idle before this request (end-to-start gap)
  std::optional<double> ttft;  // streaming requests only
};

struct TraceSubagent;

/// One entry of a `requests` list: a request, or a subagent with its own nested entries.
struct TraceEntry {
  std::optional<TraceRequest> request;
  std::shared_ptr<TraceSubagent> subagent;  // set when this entry is a subagent
};

struct TraceSubagent {
  double t = 0;  // spawn time
  std::string agent_id;
  std::string subagent_type;
  std::optional<double> duration_ms;  // absent when status is "async_launched"
  std::string status;
  int64_t tool_tokens = 0, system_tokens = 0;
  std::vector<TraceEntry> entries;
  /// Inner `t` values were relative to the spawn (older captures) and have been made absolute.
  bool relative_times = false;
  /// Spawn + duration (negative or non-finite durations clamped to 0); without a duration, the
  /// latest inner end (t + api_time), else the spawn time.
  double end() const;
};

struct WekaTrace {
  std::string id;
  std::string source;  // file (and line, for a JSONL corpus) it came from
  int64_t block_size = 64;
  std::string hash_id_scope = "local";  // local | global
  int64_t tool_tokens = 0, system_tokens = 0;
  std::vector<TraceEntry> entries;
};

/// `inferbench trace stats`: what one trace holds.
struct TraceStats {
  std::string id;
  int64_t requests = 0, normal = 0, streaming = 0;
  int64_t top_level_requests = 0, subagent_requests = 0;
  int64_t subagents = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  /// The theoretical prefix-cache hit (AgentX): every request in start-time order (ties in file
  /// order) against one seen-set of hash ids per trace; a request's hit is the leading run of its
  /// ids already seen. 100 · Σ hit / Σ ids; 0 when no request has ids.
  double theoretical_prefix_hit_pct = 0;
  int64_t hit_blocks = 0, total_blocks = 0;
};

TraceStats trace_stats(const WekaTrace& trace);

/// Parses one trace. `source` names it in errors ("trace_0014.json", "corpus.jsonl:12").
Expected<WekaTrace> parse_weka_trace(std::string_view json, const std::string& source);

/// Loads traces from files (.json: one trace; .jsonl: one per line) and folders (their .json and
/// .jsonl files, sorted by name). Trace ids must be unique across everything loaded.
Expected<std::vector<WekaTrace>> load_weka_traces(const std::vector<std::filesystem::path>& paths);

}  // namespace ib::workload
