// The timing of agentic replay (docs/agentic.md, "Timing"; the AgentX replay spec §4) as a pure
// state machine: it is told the time and the outcomes of requests, and answers which requests are
// due. No clock, no I/O, so tests drive it with a fake clock and the network driver
// (load/agentic_run.h) with the real one.
//
// `concurrency` lanes each hold one tree (a root conversation with every subagent and chain it
// starts) until the tree drains, then draw the next trace (sequential rotation) from turn 0. The
// first trees start at a point t* of their recording; warmup primers (max_tokens 1, the full prefix
// up to t*) and a cache-pressure stage (each lane replays N more turns without idle time,
// max_tokens 1) come first and are excluded from metrics. Within a stream a turn is sent its
// recorded end-to-start delay after the previous one completed; spawns, joins and interval barriers
// are honoured; a system idle cap (10 s) and a per-tree idle cap (300 s) shorten idle stretches;
// after the duration nothing new is sent and what is in flight drains for a grace period. Every
// recorded time, cap, duration and grace is divided by `time_scale`.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include "workload/agentic_dag.h"

namespace ib::load::agentic {

using workload::agentic::ReplayTree;

struct ReplayOptions {
  int concurrency = 1;  // lanes
  uint64_t seed = 42;   // t* per lane
  double t_star_min = 0.25, t_star_max = 0.75;
  int warmup_requests_per_lane = 10;  // cache-pressure stage (fast mode: 1)
  double system_idle_cap_s = 10;
  double trace_idle_cap_s = 300;  // 0: off
  double duration_s = 3600;
  double grace_s = 30;
  double warmup_grace_s = 1800;  // warmup must end within this (InferenceX); 0: unbounded
  double time_scale = 1;
  bool use_think_time_only = false;  // think_time instead of the end-to-start gap
  bool burst_phase_starts = false;   // primers all at once instead of spread to end together
};

/// The phase a request belongs to. Primer and pressure requests are warmup.
enum class ReplayPhase { kPrimer, kPressure, kProfiling };
std::string_view to_string(ReplayPhase phase);

/// One request to send now.
struct Dispatch {
  int64_t id = 0;  // unique in the run, in dispatch order
  ReplayPhase phase = ReplayPhase::kProfiling;
  int lane = 0;
  int64_t instance = 0;  // the tree instance (unique per minted tree)
  int stream = 0, turn = 0;
  int64_t max_tokens = 1;
  double at = 0;  // when it became due (scheduler seconds)
};

/// How a request ended, as the replay cares: a generic error moves the session on; a context
/// overflow ends the session (and releases its join).
enum class Outcome { kOk, kError, kContextOverflow, kCancelled };

/// A minted tree: which trace, which lane, its recycle pass (for the cache-bust marker).
struct TreeInstance {
  int64_t id = 0;
  int tree = 0;  // index into the pool
  int lane = 0;
  int64_t recycle_pass = 0;  // per trace: 0 for its first tree, +1 for each further one
  bool from_t_star = false;  // started mid-recording (the run's first trees)
  double t_star = 0;         // recorded time the tree was cut at (from_t_star only)
};

struct ReplayProgress {
  bool warmup = true;
  int lanes_busy = 0;  // lanes with a request in flight
  int64_t in_flight = 0;
  int64_t dispatched = 0, completed = 0;  // profiling requests
  int64_t warmup_dispatched = 0;
  int64_t sessions_done = 0;  // profiling: streams that ended
  int64_t trees_done = 0;
  double elapsed_s = 0;  // since the profiling phase started (0 during warmup)
  double duration_s = 0;
};

class ReplayScheduler {
 public:
  /// REQUIRES: !pool.empty(); every tree outlives the scheduler.
  ReplayScheduler(std::vector<const ReplayTree*> pool, ReplayOptions options);

  /// Mints the first trees (t*, snapshot) and schedules the primers from time `now`.
  void start(double now);
  /// Moves the replay's phases and caps to time `now` without dispatching (poll() does it too).
  void update(double now) { advance(now); }
  /// Requests due at `now`, in order; they are in flight until complete().
  std::vector<Dispatch> poll(double now);
  /// The earliest time poll() may return something without a completion in between; +inf when
  /// only a completion can move the replay.
  double next_wake() const;
  void complete(int64_t id, double now, Outcome outcome);
  /// Time after which requests still in flight are cancelled (duration + grace); +inf before
  /// the profiling phase.
  double hard_stop() const { return hard_stop_; }
  /// True when nothing will be dispatched any more and nothing is in flight.
  bool finished() const;
  /// A root primer failed: the run cannot be measured (AgentX aborts).
  bool aborted() const { return !abort_reason_.empty(); }
  const std::string& abort_reason() const { return abort_reason_; }

  const TreeInstance& instance(int64_t id) const;
  const ReplayTree& tree_of(int64_t instance) const;
  ReplayProgress progress(double now) const;
  /// Time the profiling phase started; +inf before.
  double profiling_start() const { return profile_start_; }
  /// Notes on what the replay had to do (barriers released to avoid a deadlock, lanes whose t*
  /// had nothing to send).
  const std::vector<std::string>& notes() const { return notes_; }

  /// t* of `tree` on `lane` for seed `seed`: start + U(min, max) · (end − start), U from
  /// SHA256("<seed>:<trace_id>:<lane>") (deterministic per seed).
  static double sample_t_star(const ReplayTree& tree, uint64_t seed, int lane, double min_ratio,
                              double max_ratio);

 private:
  struct StreamState {
    int next = 0;          // next turn to send (turns below are done or seeded)
    bool spawned = false;  // its branch started (the root: always)
    bool done = false;     // no more turns (finished, or ended by a context overflow)
    bool in_flight = false;
    double ready_at = 0;         // its next turn may be sent from then on (timer)
    bool has_timer = false;      // ready_at is set (false: waits for a completion first)
    bool from_snapshot = false;  // timer set at t* (the offset is re-based at profiling start)
    double snapshot_offset = 0;  // scheduler seconds from the profiling start
    double last_return = 0;
    bool counted_done = false;
  };
  struct Tree {
    int64_t id = 0;
    int lane = 0;
    const ReplayTree* tree = nullptr;
    std::vector<StreamState> streams;
    std::vector<int> branch_live;  // per branch: streams not done yet; -1: not spawned
    int64_t in_flight = 0;
    double idle_since = 0;
    bool done = false;
    bool ignore_barriers = false;  // released after a detected deadlock
  };
  struct Lane {
    int64_t tree = -1;  // current tree instance
    int64_t pressure_issued = 0;
  };
  struct InFlight {
    int64_t tree = 0;
    int stream = 0, turn = 0;
    ReplayPhase phase = ReplayPhase::kProfiling;
    bool open = false;
  };

  Tree& mint(int lane, double now, bool at_t_star);
  bool snapshot(Tree& tree, double t_star, double now);
  void start_turn0(Tree& tree, int stream, double at);
  void spawn_branches(Tree& tree, int stream, int turn, double now);
  bool runnable(const Tree& tree, int stream, double now, bool ignore_timer) const;
  bool turn_done(const Tree& tree, int stream, int turn) const;
  void end_stream(Tree& tree, int stream, double now);
  void advance(double now);
  void enter_profiling(double now);
  void apply_tree_idle_cap(Tree& tree, double now);
  void apply_system_idle_cap(double now);
  void check_tree_done(Tree& tree, double now);
  void unstick(Tree& tree, double now);
  Dispatch make_dispatch(Tree& tree, int stream, int turn, ReplayPhase phase, double now);
  double scaled(double recorded_s) const { return recorded_s / options_.time_scale; }

  std::vector<const ReplayTree*> pool_;
  ReplayOptions options_;
  int next_root_ = 0;            // sequential sampler position
  std::vector<int64_t> passes_;  // per pool entry: trees minted so far
  std::vector<Lane> lanes_;
  std::deque<Tree> trees_;  // every tree minted (index = instance id; references stay valid)
  std::deque<TreeInstance> instances_;
  std::vector<InFlight> in_flight_;  // by dispatch id
  int64_t next_id_ = 0;
  double last_now_ = 0;
  int64_t in_flight_count_ = 0;
  enum class Stage { kIdle, kPrimers, kPressure, kDrainPressure, kProfiling, kDraining, kDone };
  Stage stage_ = Stage::kIdle;
  std::vector<Dispatch> primers_;  // not yet sent
  bool root_primer_failed_ = false;
  double profile_start_ = std::numeric_limits<double>::infinity();
  double profile_end_ = std::numeric_limits<double>::infinity();
  double hard_stop_ = std::numeric_limits<double>::infinity();
  double warmup_deadline_ = std::numeric_limits<double>::infinity();
  std::string abort_reason_;
  std::vector<std::string> notes_;
  int64_t dispatched_ = 0, completed_ = 0, warmup_dispatched_ = 0;
  int64_t sessions_done_ = 0, trees_done_ = 0;
};

}  // namespace ib::load::agentic
