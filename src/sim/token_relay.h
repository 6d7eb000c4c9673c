// Carries generations' news (admission, tokens) from the engine thread to the I/O threads that
// serve their requests (serve-sim --threads, docs/serve-sim.md "Threads"). The engine stays on one
// thread, so its schedule does not depend on the number of I/O threads. News is batched: all the
// news one turn of the engine's event loop produced (one engine step's tokens) for one I/O thread
// travels in ONE cross-thread post, never one post per token; where the engine shares the I/O
// thread it is delivered by a plain call. An I/O thread that lags behind gets no second post:
// the news of later steps joins the batch still waiting for it, so it catches up with one
// delivery (one socket write per request) instead of one per step. On the I/O thread every
// request has a mailbox slot; news for a request that went away meanwhile finds its slot's serial
// changed and is dropped, so neither side ever holds a pointer into the other's objects.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/engine.h"

namespace ib::sim {

/// One request's news of one turn of the engine (one engine step).
struct TokenNews {
  uint32_t slot = 0;    // the receiver's mailbox slot
  uint32_t serial = 0;  // the slot's serial when the receiver took it
  int tokens = 0;       // new tokens (0: admission only)
  bool admitted = false;
  bool finished = false;  // the tokens include the last one
  int64_t due_ns = 0;     // when the step that made the tokens ended (steady-clock ns)
  int cached_tokens = 0;  // the generation's prefix-cache hit and preemptions so far
  int preemptions = 0;
  int accepted = -1;  // speculative decoding: drafts the step accepted; -1: it did not speculate
  int64_t admitted_ns = 0;  // an admission's time on the engine thread (steady-clock ns)
};

/// Gets a request's news, on the I/O thread that submitted it. One delivery may bring several
/// news (several engine steps) for one receiver: on_news() for each, in order, then commit()
/// once all of the delivery's news is in (where a stream writes what it got).
class NewsReceiver {
 public:
  virtual void on_news(const TokenNews& news) = 0;
  virtual void commit() = 0;

 protected:
  ~NewsReceiver() = default;
};

class TokenRelay {
 public:
  /// `engine` runs on `engine_executor`. I/O thread i runs `io_executors[i]`; `shares_engine[i]`
  /// says it is the engine's own thread (news is then delivered without a post). The engine and
  /// the executors outlive the relay.
  TokenRelay(Engine& engine, boost::asio::any_io_executor engine_executor,
             std::vector<boost::asio::any_io_executor> io_executors,
             std::vector<bool> shares_engine);
  ~TokenRelay();
  TokenRelay(const TokenRelay&) = delete;
  TokenRelay& operator=(const TokenRelay&) = delete;

  class Job;

  /// A submitted request, held on its I/O thread. Destroying it stops the news and removes the
  /// request from the engine (on the engine's thread).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();

   private:
    friend class TokenRelay;
    TokenRelay* relay_ = nullptr;
    std::size_t io_ = 0;
    uint32_t slot_ = 0;
    Job* job_ = nullptr;
  };

  /// On I/O thread `io_index`: submits `request` to the engine (on the engine's thread, in
  /// order with this thread's other submissions) and delivers its news to `receiver` on this
  /// thread until the ticket is destroyed. `receiver` must outlive the ticket.
  Ticket submit(std::size_t io_index, NewsReceiver& receiver, GenerationRequest request);

  /// Requests submitted and not yet removed from the engine (any thread).
  std::size_t live_jobs() const { return live_jobs_.load(std::memory_order_acquire); }

  /// Cross-thread posts of news made so far (any thread; tests check the batching with it).
  uint64_t news_posts() const { return news_posts_.load(std::memory_order_relaxed); }

  /// Once closed (the server is being destroyed), destroyed tickets no longer reach the engine.
  void close() { closed_.store(true, std::memory_order_release); }

 private:
  struct Mailbox;
  friend class Job;

  // Engine thread.
  void push(std::size_t io, const TokenNews& news);
  void flush();
  void start(Job* job);
  void release(Job* job);

  Engine& engine_;
  boost::asio::any_io_executor engine_executor_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;  // one per I/O thread, touched there only
  std::vector<std::vector<TokenNews>> outbox_;       // per I/O thread; engine thread
  std::vector<TokenNews> scratch_;                   // engine thread: a batch delivered in place
  bool flush_posted_ = false;                        // engine thread
  std::atomic<std::size_t> live_jobs_{0};
  std::atomic<uint64_t> news_posts_{0};
  std::atomic<bool> closed_{false};
};

}  // namespace ib::sim
