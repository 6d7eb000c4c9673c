// The simulated engine's scheduling core: when a request is admitted and when each of its tokens
// exists. The HTTP handlers (sim_server.h) only see Engine and Generation, so engines with
// different models (SimpleEngine here, the continuous-batching BatchEngine of batch_engine.h)
// plug in without touching them (docs/serve-sim.md).
//
// Threading: an engine and its generations live on one single-threaded executor (the engine
// thread); a Generation is used and destroyed only there.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <vector>

#include "sim/spec_decode.h"
#include "sim/timing_model.h"

namespace ib::sim {

/// The engines' clock (Asio's steady timer clock), and its time points as nanoseconds since its
/// epoch, as token due times are kept.
using Clock = boost::asio::steady_timer::clock_type;
inline int64_t to_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// What an engine needs to know about a request.
struct GenerationRequest {
  int prompt_tokens = 1;
  int output_tokens = 1;  // exactly this many tokens are generated
  /// One key per prompt token for prefix caching (tokens.h); empty: never matched.
  std::vector<uint64_t> prompt_keys;
  uint64_t output_seed = 0;       // generated token i has key output_token_key(output_seed, i)
  bool ends_with_eos = false;     // the last generated token is EOS (key kKeyEos)
  bool record_due_times = false;  // keep every token's due time (Generation::due_times)
  /// Prompt tokens whose KV came from elsewhere (a disaggregated decode instance got it from a
  /// prefill instance): not computed again at the first admission (at most prompt_tokens - 1:
  /// the last is computed to sample the first token).
  int external_tokens = 0;
};

/// A snapshot of an engine's state and counters, for /metrics.
struct EngineStats {
  int running = 0;
  int waiting = 0;
  double kv_cache_usage = 0;   // fraction of KV blocks in use, 0..1
  int64_t prefix_queries = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hits = 0;     // of those, found
  int64_t preemptions = 0;
  int64_t kv_evicted_blocks = 0;  // cached (reusable) KV blocks evicted to make room
  int64_t steps = 0;              // engine iterations run
  int num_gpu_blocks = 0;
  int block_size = 0;
  int num_speculative_tokens = 0;  // > 0: speculative decoding, counted in `spec`
  SpecDecodeCounters spec;
};

/// Push mode (Generation::listen): the engine tells a generation's news as it happens, on the
/// engine's executor, with no coroutine resumption or timer per token.
class GenerationListener {
 public:
  /// The request was admitted (got a running slot / was first scheduled). May come more than
  /// once (readmission after a preemption).
  virtual void on_admitted() = 0;
  /// `n` >= 1 new tokens exist; the engine step (or decode step) that made them ended at
  /// `due_ns` (steady-clock ns). `finished`: they include the last one. `accepted`: with
  /// speculative decoding, the draft tokens the step accepted (n - 1, or more when the output
  /// ended first); -1 when the step did not speculate (a prefill, or no speculation).
  virtual void on_tokens(int n, int64_t due_ns, bool finished, int accepted) = 0;

 protected:
  ~GenerationListener() = default;
};

/// One request inside the engine, from submission to its last token. Destroying it at any point
/// (finished, client gone, cancelled) removes the request from the engine and frees its slot.
class Generation {
 public:
  virtual ~Generation() = default;

  /// Switches to push mode: from now on the engine calls `listener` instead of waking
  /// admitted() / next_tokens(), which must not be used any more (due_times() stays empty: the
  /// listener gets each due time). on_admitted() may come before listen() returns. REQUIRES:
  /// called once, right after submit(), before anything awaited the generation; `listener`
  /// outlives the generation.
  virtual void listen(GenerationListener* listener) = 0;

  /// Waits until the request is admitted (holds a running slot / was first scheduled).
  /// Cancelling the awaiting coroutine throws boost::system::system_error (operation_aborted).
  virtual boost::asio::awaitable<void> admitted() = 0;

  /// Waits until tokens the caller has not taken yet exist (admitting first when needed), takes
  /// them all and returns how many (>= 1); returns 0 once every token was taken. Tokens that came
  /// due while the caller was busy come back together, so a slow caller catches up at once.
  virtual boost::asio::awaitable<int> next_tokens() = 0;

  /// next_tokens() one token at a time: false once all tokens were taken.
  boost::asio::awaitable<bool> next_token();

  /// Steady-clock nanoseconds at which each taken token came to exist (index = token number),
  /// when the request was submitted with record_due_times; empty otherwise.
  std::span<const int64_t> due_times() const { return due_ns_; }

  /// Prompt tokens the engine found in its prefix cache (0 when it has none).
  virtual int cached_tokens() const { return 0; }
  /// Times the request was preempted (its KV dropped and recomputed).
  virtual int preemptions() const { return 0; }

 protected:
  std::vector<int64_t> due_ns_;

 private:
  int untaken_ = 0;  // tokens next_token() took from next_tokens() but has not returned yet
};

/// Accepts requests and times them.
class Engine {
 public:
  virtual ~Engine() = default;

  /// Submits a request. REQUIRES: prompt_tokens >= 1, output_tokens >= 1. The engine must
  /// outlive the result.
  virtual std::unique_ptr<Generation> submit(GenerationRequest request) = 0;
  /// Shorthand for a request without prefix-cache keys.
  std::unique_ptr<Generation> submit(int prompt_tokens, int output_tokens);

  /// Requests holding a running slot (prefilling or decoding).
  virtual int running() const = 0;
  /// Requests waiting for a running slot.
  virtual int waiting() const = 0;
  /// State and counters.
  virtual EngineStats stats() const;
  /// Empties the prefix cache, as SGLang's /flush_cache does: only when no request is waiting or
  /// running (false then, and nothing is done). An engine without a prefix cache has nothing to
  /// empty.
  virtual bool reset_prefix_cache() { return running() == 0 && waiting() == 0; }
};

/// Times every request on its own: FIFO admission to at most `max_running` slots, then the first
/// token at admission + prefill_seconds(prompt, running), then one token every
/// decode_step_seconds(running), where `running` is the engine's count when the step starts, all
/// divided by `time_scale`. Token times are absolute (each step starts when the previous one
/// ended, not when the caller asked), so slow callers do not make the schedule drift.
class SimpleEngine final : public Engine {
 public:
  /// REQUIRES: max_running >= 1, time_scale > 0, validate(spec).ok(). With `spec` enabled every
  /// decode step yields 1 + the accepted drafts (sim/spec_decode.h) and costs spec.draft_ms per
  /// draft token more.
  SimpleEngine(boost::asio::any_io_executor executor, std::shared_ptr<const TimingModel> model,
               int max_running, double time_scale = 1.0, SpecDecodeConfig spec = {});
  ~SimpleEngine() override;

  using Engine::submit;
  std::unique_ptr<Generation> submit(GenerationRequest request) override;
  int running() const override { return running_; }
  int waiting() const override { return static_cast<int>(queue_.size()); }
  EngineStats stats() const override;

 private:
  class Request;

  // Takes a slot for `request` now when one is free and nobody waits; else queues it.
  bool try_admit(Request& request);
  // Frees a slot: hands it to the first waiting request, or decrements the running count.
  void release_slot();

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const TimingModel> model_;
  int max_running_;
  double time_scale_;
  SpecDecodeConfig spec_;
  SpecDecodeCounters spec_counters_;
  int running_ = 0;
  std::list<Request*> queue_;
};

}  // namespace ib::sim
