// A recorded agentic trace turned into the conversations AgentX replays (docs/agentic.md, "From
// a trace to conversations"; the AgentX replay spec §2): the root conversation, its subagents
// (SPAWN/JOIN branches, background branches, child start offsets), the flattened agents hidden in
// the top-level list and in each subagent (chains: solo, aux, reduction, worker groups), and the
// interval barriers between streams of one scope. Pure: no I/O, no clock; the replay's timing
// (load/agentic_scheduler.h) and prompts (workload/agentic_prompts.h) work on these types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "workload/weka_trace.h"

namespace ib::workload::agentic {

/// What a stream (one conversation with its own history) is.
enum class StreamKind {
  kRoot,          // "<trace>": the retained top-level requests of the main chain
  kSubagent,      // "<trace>::sa:<agent_id>": a subagent's main chain
  kFlat,          // "...::fa:NNN": a flattened agent (solo chain)
  kAux,           // "...::aux:NNN": a one-request side call (other model, or a small prompt)
  kAuxReduction,  // "...::aux:red:NNN": one large-in, small-out request (a summary)
  kWorkerGroup,   // "...::wg:GGG_MMM": one of >= 3 overlapping forks from one point
};

/// "root", "subagent", "flat", "aux", "aux_reduction", "worker_group".
std::string_view to_string(StreamKind kind);

/// A turn of a stream, by index.
struct TurnRef {
  int stream = -1;
  int turn = -1;
  bool operator==(const TurnRef&) const = default;
};

/// One request of a stream, as recorded, with what gates it and what it starts.
struct Turn {
  double t = 0;         // recorded start, seconds from the trace's start (absolute)
  double api_time = 0;  // recorded server time (end = t + max(api_time, 0))
  /// End-to-start idle before this turn: max(0, t_k − (t_{k−1} + api_time_{k−1})); 0 for turn 0.
  double delay_s = 0;
  double think_time = 0;  // recorded client idle (--use-think-time-only uses it instead)
  int64_t in = 0, out = 0;
  std::vector<int64_t> hash_ids;
  int model = 0;  // index into ReplayTree::models
  /// Position in the trace: the top-level list index of the request, or of the subagent entry
  /// that holds it, then the inner index (for ordering and messages).
  int outer_idx = 0;
  int inner_idx = -1;  // -1: a top-level request
  /// Branches (indices into ReplayTree::branches) whose streams start when this turn completes.
  std::vector<int> spawns;
  /// Branches whose every stream must have ended (any terminal outcome) before this turn starts.
  std::vector<int> joins;
  /// Interval barriers: turns of other streams of the same scope that must have ended first
  /// (the latest turn of each other stream with start < this start and end <= this start;
  /// dominated ones removed).
  std::vector<TurnRef> after;
  /// The theoretical prefix-cache hit of this request, in blocks: the leading run of its
  /// hash_ids already seen, walking every request of the trace in (t, outer, chain, k) order.
  int64_t theoretical_hit_blocks = 0;
};

/// One conversation: a root, subagent or chain.
struct Stream {
  std::string session_id;
  StreamKind kind = StreamKind::kRoot;
  int branch = -1;  // the branch that starts it; -1 for the root
  /// Declared prefix (merged into one system segment of ceil((tool + system) / block) blocks).
  int64_t tool_tokens = 0, system_tokens = 0;
  /// Delay of turn 0 after the spawning turn completed: max(0, turn0.t − branch start).
  double start_offset = 0;
  std::vector<Turn> turns;
};

/// A SPAWN/JOIN branch: streams started by one turn and (unless background) joined by a later
/// turn of the same parent stream.
struct Branch {
  std::string id;  // "<trace>:spawn:<agent_id of the first>" or "<trace>:flatspawn:<chain>"
  bool flat = false;
  TurnRef spawn;
  std::optional<TurnRef> join;  // none: a background branch
  double start = 0;             // min over the group of the recorded start
  std::vector<int> streams;
  bool background() const { return !join.has_value(); }
};

/// Counts of what the DAG holds (`trace stats`).
struct DagSummary {
  int64_t root = 0, subagent = 0, flat = 0, aux = 0, aux_reduction = 0, worker_group = 0;
  int64_t worker_groups = 0;  // distinct groups
  int64_t branches = 0, background_branches = 0, flat_branches = 0;
  int64_t barriers = 0;           // interval-barrier edges
  int64_t dropped_subagents = 0;  // no parent turn before them
  int64_t sessions() const { return root + subagent + flat + aux + aux_reduction + worker_group; }
};

struct ReplayTree {
  std::string trace_id;
  int64_t block_size = 64;
  bool global_scope = false;  // hash_id_scope "global": block text keyed without the trace id
  /// Recorded models in order of first appearance; [0] is the trace's main model (that of the
  /// first top-level request, else of the first subagent's first request).
  std::vector<std::string> models;
  std::vector<Stream> streams;  // [0] is the root
  std::vector<Branch> branches;
  double start_t = 0, end_t = 0;  // min and max recorded turn start over every stream
  DagSummary summary;
  std::vector<std::string> notes;  // what was dropped and why, one line each

  int64_t requests() const;
};

struct DagOptions {
  bool split_flattened_agents = true;  // AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS
  double seam_max_gap_s = 3600;        // WEKA_SEAM_MAX_GAP_SECONDS
  double seam_min_overlap = 0.5;       // WEKA_SEAM_MIN_OVERLAP_RATIO
  int aux_max_requests = 1;
  bool aux_cross_model = true;
  int64_t aux_isl_floor = 16384;
  double aux_isl_ratio = 0.1;
  int64_t reduction_osl_max = 4000;
  double reduction_ratio = 20;
  int worker_group_min = 3;
};

/// Builds the conversations of one trace. Error (naming the trace's source) only for a trace the
/// replay cannot use: a declared system prefix longer than a turn-0 prompt's hash ids, a trace
/// with no request at all (or none left: only subagents, all before any parent turn).
Expected<ReplayTree> build_replay_tree(const WekaTrace& trace, const DagOptions& options = {});

/// Maps each recorded model of `tree` to one of `served` (the --model list): the main model to
/// served[0], the others in order of first appearance to the next entries, wrapping around.
/// REQUIRES: !served.empty().
std::vector<std::string> rewrite_models(const ReplayTree& tree,
                                        const std::vector<std::string>& served);

}  // namespace ib::workload::agentic
