// Iteration-level (continuous-batching) scheduler of the simulated engine, in the manner of vLLM's
// v1 scheduler: every step it first gives each running request its next tokens (a decode token,
// or the next chunk of a prefill), then admits waiting requests in arrival order while the token
// budget, the running cap and the KV cache allow. KV blocks come from a BlockPool; when they run
// out, the most recently admitted running request is preempted (its blocks freed, its work redone
// later) and counted. Pure logic with no clock: the engine (batch_engine.h) times the steps.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "sim/kv_cache.h"
#include "sim/perf_model.h"
#include "sim/spec_decode.h"

namespace ib::sim {

struct SchedulerConfig {
  int max_num_seqs = 256;             // requests running at once
  int max_num_batched_tokens = 8192;  // tokens computed in one step
  int block_size = 16;                // tokens per KV block
  int num_blocks = 1024;              // KV blocks on each GPU
  bool prefix_caching = true;
  int sliding_window = 0;  // the model's sliding window, for StepBatch accounting
  /// Speculative decoding (sim/spec_decode.h): each decode step verifies the last token and K
  /// drafts (K + 1 tokens of compute and KV), keeps the accepted ones and adds its own.
  SpecDecodeConfig spec;
};

/// A request as the scheduler sees it.
struct SequenceSpec {
  int prompt_tokens = 1;
  int output_tokens = 1;
  /// One key per prompt token (token id or word, see tokens.h) for prefix caching; empty: the
  /// prompt cannot be matched (it is never cached).
  std::vector<uint64_t> prompt_keys;
  uint64_t output_seed = 0;    // keys of generated tokens: output_token_key(output_seed, i)
  bool ends_with_eos = false;  // the last generated token is EOS
  /// Prompt tokens whose KV arrived from another instance (P/D disaggregation): computed at the
  /// first admission, given blocks like computed ones (at most prompt_tokens - 1 count).
  int external_tokens = 0;
};

/// Counters of the scheduler's life (for /metrics).
struct SchedulerStats {
  int64_t preemptions = 0;
  int64_t prefix_queries = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hits = 0;     // of those, found cached
  int64_t steps = 0;
  int64_t prompt_tokens = 0;      // prompt tokens of requests that produced their first token
  int64_t generation_tokens = 0;  // tokens produced
  SpecDecodeCounters spec;        // with speculative decoding: drafts, accepted, per position
};

class Scheduler {
 public:
  using Id = uint64_t;

  /// One sequence's part of a step.
  struct Entry {
    Id id;
    void* owner;     // given to add()
    int new_tokens;  // tokens computed for it in this step
    bool first;      // the first time the request is scheduled (it is now admitted)
    bool samples;    // the step ends its known tokens, so it produces a token
    int draft;       // of new_tokens, draft tokens verified (speculative decoding; 0: none)
  };
  struct Plan {
    std::vector<Entry> entries;
    StepBatch batch;
    void clear() {
      entries.clear();
      batch = StepBatch{};
    }
  };
  /// What a finished step produced for one sequence.
  struct Emission {
    void* owner;
    bool finished;      // that was its last token; the request has left the scheduler
    int cached_tokens;  // prompt tokens found in the prefix cache at its first admission
    int preemptions;    // times it was preempted so far
    int tokens;         // tokens produced: 1, or 1 + the accepted drafts
    int accepted;       // draft tokens the step accepted; -1: it did not speculate
  };

  /// REQUIRES: every field >= 1 (sliding_window >= 0).
  explicit Scheduler(const SchedulerConfig& config);

  /// Queues a request. `owner` is handed back in plans and emissions.
  /// REQUIRES: 1 <= prompt_tokens, 1 <= output_tokens, and prompt + output tokens fit in the
  /// KV cache (num_blocks x block_size), so a request alone can always run.
  Id add(SequenceSpec spec, void* owner);

  /// Removes a request wherever it is (waiting, running, or in a step in flight), freeing its
  /// blocks. Unknown or finished ids are ignored.
  void abort(Id id);

  /// Forms the next step into `plan`; false (and an empty plan) when nothing can run.
  bool schedule(Plan& plan);

  /// Applies a finished step: advances every still-present sequence of `plan`, appends one
  /// Emission per produced token, and removes finished requests.
  void complete(const Plan& plan, std::vector<Emission>& emissions);

  int running() const { return static_cast<int>(running_.size()); }
  int waiting() const { return waiting_count_; }
  bool idle() const { return running_.empty() && waiting_count_ == 0; }
  const BlockPool& pool() const { return pool_; }
  /// Empties the prefix cache when no request is waiting or running; false otherwise.
  bool reset_prefix_cache() { return idle() && pool_.reset_prefix_cache(); }
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerConfig& config() const { return config_; }

  /// Prompt tokens of request `id` found in the prefix cache at its first admission; 0 when
  /// unknown.
  int cached_tokens(Id id) const;
  /// Times request `id` was preempted so far.
  int preemptions(Id id) const;

 private:
  enum class State { kWaiting, kRunning, kDone };
  struct Seq {
    uint32_t generation = 0;
    bool live = false;
    State state = State::kDone;
    void* owner = nullptr;
    SequenceSpec spec;
    int generated = 0;  // tokens produced so far
    std::mt19937_64 rng;  // speculative decoding's acceptances, from the output seed
    int computed = 0;   // tokens whose KV is in the cache
    bool scheduled_before = false;
    int cached_tokens = 0;
    int preemptions = 0;
    std::vector<int> blocks;
    std::vector<uint64_t> hashes;  // chained hash of each full block, as far as tokens are known
    int registered = 0;            // leading blocks already offered to the prefix cache

    int known() const { return spec.prompt_tokens + generated; }
  };

  Seq* find(Id id);
  const Seq* find(Id id) const;
  static Id make_id(uint32_t slot, uint32_t generation) {
    return (static_cast<Id>(generation) << 32) | slot;
  }
  uint64_t token_key(const Seq& s, int position) const;
  void extend_hashes(Seq& s);
  void register_blocks(Seq& s);
  int blocks_for(int tokens) const {
    return (tokens + config_.block_size - 1) / config_.block_size;
  }
  void preempt(uint32_t slot);
  void free_slot(uint32_t slot);
  bool try_admit(uint32_t slot, int& budget, Plan& plan);

  SchedulerConfig config_;
  BlockPool pool_;
  std::vector<Seq> seqs_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> running_;  // admission order: the last is preempted first
  std::deque<Id> waiting_;         // arrival order; aborted entries are skipped lazily
  int waiting_count_ = 0;
  SchedulerStats stats_;
  std::vector<int> scratch_ids_;
};

}  // namespace ib::sim
