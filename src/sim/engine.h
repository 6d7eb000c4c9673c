// The simulated engine's scheduling core: when a request is admitted and when each of its tokens
// exists. The HTTP handlers (sim_server.h) only see Engine and Generation, so a continuous-batching
// performance model replaces SimpleEngine without touching them (docs/serve-sim.md).
//
// Threading: an engine and its generations live on one single-threaded executor.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <list>
#include <memory>

#include "sim/timing_model.h"

namespace ib::sim {

/// One request inside the engine, from submission to its last token. Destroying it at any point
/// (finished, client gone, cancelled) removes the request from the engine and frees its slot.
class Generation {
 public:
  virtual ~Generation() = default;

  /// Waits until the request holds a running slot. Cancelling the awaiting coroutine throws
  /// boost::system::system_error (operation_aborted) and leaves the queue.
  virtual boost::asio::awaitable<void> admitted() = 0;

  /// Waits until the next output token exists (admitting first when needed). Returns false once
  /// all tokens were produced; the request stops counting as running at its last token.
  virtual boost::asio::awaitable<bool> next_token() = 0;
};

/// Accepts requests and times them.
class Engine {
 public:
  virtual ~Engine() = default;

  /// Submits a request that will generate exactly `output_tokens` tokens.
  /// REQUIRES: prompt_tokens >= 1, output_tokens >= 1. The engine must outlive the result.
  virtual std::unique_ptr<Generation> submit(int prompt_tokens, int output_tokens) = 0;

  /// Requests holding a running slot (prefilling or decoding).
  virtual int running() const = 0;
  /// Requests waiting for a running slot.
  virtual int waiting() const = 0;
};

/// Times every request on its own: FIFO admission to at most `max_running` slots, then the first
/// token at admission + prefill_seconds(prompt, running), then one token every
/// decode_step_seconds(running), where `running` is the engine's count when the step starts.
/// Token times are absolute (each step starts when the previous one ended, not when the caller
/// asked), so slow callers do not make the schedule drift.
class SimpleEngine final : public Engine {
 public:
  /// REQUIRES: max_running >= 1.
  SimpleEngine(boost::asio::any_io_executor executor, std::shared_ptr<const TimingModel> model,
               int max_running);
  ~SimpleEngine() override;

  std::unique_ptr<Generation> submit(int prompt_tokens, int output_tokens) override;
  int running() const override { return running_; }
  int waiting() const override { return static_cast<int>(queue_.size()); }

 private:
  class Request;

  // Takes a slot for `request` now when one is free and nobody waits; else queues it.
  bool try_admit(Request& request);
  // Frees a slot: hands it to the first waiting request, or decrements the running count.
  void release_slot();

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const TimingModel> model_;
  int max_running_;
  int running_ = 0;
  std::list<Request*> queue_;
};

}  // namespace ib::sim
