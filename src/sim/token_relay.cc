#include "sim/token_relay.h"

#include <boost/asio/post.hpp>
#include <cassert>
#include <mutex>
#include <utility>

#include "core/clock.h"

namespace ib::sim {

namespace asio = boost::asio;

// The receivers of one I/O thread's requests, by slot. Touched on that thread only.
struct TokenRelay::Mailbox {
  struct Slot {
    NewsReceiver* receiver = nullptr;
    uint32_t serial = 0;
  };

  asio::any_io_executor executor;
  bool shares_engine = false;
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;

  // The hand-off from the engine thread (shares_engine == false).
  std::mutex mutex;
  std::vector<TokenNews> inbox;  // guarded: news not yet taken by the I/O thread
  bool drain_posted = false;     // guarded: a drain() is on its way
  std::vector<TokenNews> work;   // I/O thread: the news being delivered

  uint32_t add(NewsReceiver& receiver) {
    uint32_t slot;
    if (!free_slots.empty()) {
      slot = free_slots.back();
      free_slots.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots.size());
      slots.emplace_back();
    }
    slots[slot].receiver = &receiver;
    return slot;
  }

  void remove(uint32_t slot) {
    slots[slot].receiver = nullptr;
    ++slots[slot].serial;  // news still on its way for the old receiver is dropped
    free_slots.push_back(slot);
  }

  NewsReceiver* find(const TokenNews& news) const {
    const Slot& s = slots[news.slot];
    return s.serial == news.serial ? s.receiver : nullptr;
  }

  void deliver(const std::vector<TokenNews>& batch) {
    for (const TokenNews& news : batch) {
      if (NewsReceiver* r = find(news)) r->on_news(news);
    }
    // Then each receiver acts once on all it got (a second commit() finds nothing to do).
    for (const TokenNews& news : batch) {
      if (NewsReceiver* r = find(news)) r->commit();
    }
  }

  // I/O thread: takes everything the engine handed over so far and delivers it.
  void drain() {
    {
      std::lock_guard lock(mutex);
      work.swap(inbox);
      drain_posted = false;
    }
    deliver(work);
    work.clear();
  }
};

// One request on the engine thread: its generation, and where its news goes.
class TokenRelay::Job final : public GenerationListener {
 public:
  Job(TokenRelay& relay, std::size_t io, uint32_t slot, uint32_t serial, GenerationRequest request)
      : relay_(relay), io_(io), slot_(slot), serial_(serial), request_(std::move(request)) {}

  void start() {
    generation_ = relay_.engine_.submit(std::move(request_));
    generation_->listen(this);
  }

  void on_admitted() override {
    TokenNews news = base();
    news.admitted = true;
    news.admitted_ns = mono_ns();
    relay_.push(io_, news);
  }

  void on_tokens(int n, int64_t due_ns, bool finished, int accepted) override {
    TokenNews news = base();
    news.tokens = n;
    news.accepted = accepted;
    news.due_ns = due_ns;
    news.finished = finished;
    relay_.push(io_, news);
  }

 private:
  TokenNews base() const {
    TokenNews news;
    news.slot = slot_;
    news.serial = serial_;
    if (generation_) {
      news.cached_tokens = generation_->cached_tokens();
      news.preemptions = generation_->preemptions();
    }
    return news;
  }

  TokenRelay& relay_;
  const std::size_t io_;
  const uint32_t slot_;
  const uint32_t serial_;
  GenerationRequest request_;  // until start()
  std::unique_ptr<Generation> generation_;
};

TokenRelay::TokenRelay(Engine& engine, asio::any_io_executor engine_executor,
                       std::vector<asio::any_io_executor> io_executors,
                       std::vector<bool> shares_engine)
    : engine_(engine), engine_executor_(std::move(engine_executor)) {
  assert(!io_executors.empty() && io_executors.size() == shares_engine.size());
  for (std::size_t i = 0; i < io_executors.size(); ++i) {
    auto mailbox = std::make_unique<Mailbox>();
    mailbox->executor = std::move(io_executors[i]);
    mailbox->shares_engine = shares_engine[i];
    mailboxes_.push_back(std::move(mailbox));
  }
  outbox_.resize(mailboxes_.size());
}

TokenRelay::~TokenRelay() = default;

TokenRelay::Ticket::Ticket(Ticket&& other) noexcept
    : relay_(std::exchange(other.relay_, nullptr)),
      io_(other.io_),
      slot_(other.slot_),
      job_(std::exchange(other.job_, nullptr)) {}

TokenRelay::Ticket::~Ticket() {
  if (relay_ == nullptr) return;
  Mailbox& mailbox = *relay_->mailboxes_[io_];
  mailbox.remove(slot_);
  if (relay_->closed_.load(std::memory_order_acquire)) return;  // the engine is going away
  if (mailbox.shares_engine) {
    relay_->release(job_);
  } else {
    asio::post(relay_->engine_executor_, [relay = relay_, job = job_] { relay->release(job); });
  }
}

TokenRelay::Ticket TokenRelay::submit(std::size_t io_index, NewsReceiver& receiver,
                                      GenerationRequest request) {
  Mailbox& mailbox = *mailboxes_.at(io_index);
  const uint32_t slot = mailbox.add(receiver);
  Job* job = new Job(*this, io_index, slot, mailbox.slots[slot].serial, std::move(request));
  live_jobs_.fetch_add(1, std::memory_order_acq_rel);
  Ticket ticket;
  ticket.relay_ = this;
  ticket.io_ = io_index;
  ticket.slot_ = slot;
  ticket.job_ = job;
  if (mailbox.shares_engine) {
    start(job);
  } else {
    // Posts from one thread run in order, so the release posted later finds the job started.
    asio::post(engine_executor_, [this, job] { start(job); });
  }
  return ticket;
}

void TokenRelay::start(Job* job) {
  job->start();
}

void TokenRelay::release(Job* job) {
  delete job;  // destroys the generation: the engine drops the request
  live_jobs_.fetch_sub(1, std::memory_order_acq_rel);
}

void TokenRelay::push(std::size_t io, const TokenNews& news) {
  outbox_[io].push_back(news);
  if (flush_posted_) return;
  // Posted: everything this turn of the event loop produces (a whole engine step's tokens, or
  // every request timer that came due together) goes out together.
  flush_posted_ = true;
  asio::post(engine_executor_, [this] { flush(); });
}

void TokenRelay::flush() {
  flush_posted_ = false;
  for (std::size_t i = 0; i < outbox_.size(); ++i) {
    std::vector<TokenNews>& out = outbox_[i];
    if (out.empty()) continue;
    Mailbox* mailbox = mailboxes_[i].get();
    if (mailbox->shares_engine) {
      // Same thread: delivered in place, from a buffer that news pushed meanwhile cannot touch.
      scratch_.swap(out);
      mailbox->deliver(scratch_);
      scratch_.clear();
      continue;
    }
    bool post = false;
    {
      std::lock_guard lock(mailbox->mutex);
      if (mailbox->inbox.empty()) {
        mailbox->inbox.swap(out);  // the buffers go back and forth: no allocation per step
      } else {
        // The I/O thread has not taken the last batch yet: this step's news joins it.
        mailbox->inbox.insert(mailbox->inbox.end(), out.begin(), out.end());
      }
      post = !mailbox->drain_posted;
      mailbox->drain_posted = true;
    }
    out.clear();
    if (post) {
      news_posts_.fetch_add(1, std::memory_order_relaxed);
      asio::post(mailbox->executor, [mailbox] { mailbox->drain(); });
    }
  }
}

}  // namespace ib::sim
