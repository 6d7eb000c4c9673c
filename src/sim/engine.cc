#include "sim/engine.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cassert>

#include "http/awaitable.h"

namespace ib::sim {

namespace asio = boost::asio;

namespace {

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}


}  // namespace

asio::awaitable<bool> Generation::next_token() {
  if (untaken_ > 0) {
    --untaken_;
    co_return true;
  }
  const int n = co_await next_tokens();
  if (n == 0) co_return false;
  untaken_ = n - 1;
  co_return true;
}

std::unique_ptr<Generation> Engine::submit(int prompt_tokens, int output_tokens) {
  GenerationRequest request;
  request.prompt_tokens = prompt_tokens;
  request.output_tokens = output_tokens;
  return submit(std::move(request));
}

EngineStats Engine::stats() const {
  EngineStats s;
  s.running = running();
  s.waiting = waiting();
  return s;
}

class SimpleEngine::Request final : public Generation {
 public:
  Request(SimpleEngine& engine, const GenerationRequest& request)
      : engine_(engine),
        prompt_tokens_(request.prompt_tokens -
                       std::clamp(request.external_tokens, 0, request.prompt_tokens - 1)),
        output_tokens_(request.output_tokens),
        record_due_times_(request.record_due_times),
        rng_(request.output_seed ^ 0x5eedc0dedeadbeefULL),
        timer_(engine.executor_) {}

  ~Request() override {
    if (queued_) engine_.queue_.erase(queue_pos_);
    if (holds_slot_) engine_.release_slot();
  }

  asio::awaitable<void> admitted() override {
    if (admitted_) co_return;
    if (!holds_slot_ && !queued_ && !engine_.try_admit(*this)) {
      queue_pos_ = engine_.queue_.insert(engine_.queue_.end(), this);
      queued_ = true;
    }
    while (!holds_slot_) {
      // release_slot() hands over the slot and cancels this wait; any other wake-up while still
      // queued is a cancellation of the awaiting coroutine.
      timer_.expires_at(Clock::time_point::max());
      auto [ec] = co_await timer_.async_wait(use_tuple);
      if (!holds_slot_) {
        engine_.queue_.erase(queue_pos_);
        queued_ = false;
        throw boost::system::system_error(ec ? ec : asio::error::operation_aborted);
      }
    }
    admitted_ = true;
    admitted_at_ = Clock::now();
  }

  asio::awaitable<int> next_tokens() override {
    if (!admitted_) co_await admitted();
    if (produced_ >= output_tokens_) co_return 0;
    advance_next_at();
    timer_.expires_at(next_at_);
    auto [ec] = co_await timer_.async_wait(use_tuple);
    if (ec) throw boost::system::system_error(ec);
    const int n = step_tokens();
    produced_ += n;
    if (record_due_times_) due_ns_.insert(due_ns_.end(), static_cast<size_t>(n), to_ns(next_at_));
    if (produced_ == output_tokens_ && holds_slot_) {
      holds_slot_ = false;  // done generating: the slot goes to the next request right away
      engine_.release_slot();
    }
    co_return n;
  }

 private:
  friend class SimpleEngine;

  // When the next token is due: the prefill after admission, then one decode step after another
  // (at `running` when the step starts).
  void advance_next_at() {
    const TimingModel& model = *engine_.model_;
    const double scale = engine_.time_scale_;
    if (produced_ == 0) {
      next_at_ = admitted_at_ +
                 to_duration(model.prefill_seconds(prompt_tokens_, engine_.running_) / scale);
    } else {
      const SpecDecodeConfig& spec = engine_.spec_;
      const double draft_s = spec.num_speculative_tokens * spec.draft_ms / 1000.0;
      next_at_ += to_duration((model.decode_step_seconds(engine_.running_) + draft_s) / scale);
    }
  }

  // The tokens the step now ending yields: the prefill's one; a decode step's one, or with
  // speculative decoding one plus the drafts it accepted (at most what is left), counted.
  int step_tokens() {
    const SpecDecodeConfig& spec = engine_.spec_;
    if (produced_ == 0 || !spec.enabled()) return 1;
    const int left = output_tokens_ - produced_;
    const int n = std::min(1 + draw_accepted(rng_, spec), left);
    engine_.spec_counters_.count(n - 1, spec.num_speculative_tokens);
    return n;
  }

 public:
  // Push mode: the request drives itself with callbacks on its timer.
  void listen(GenerationListener* listener) override {
    listener_ = listener;
    alive_ = std::make_shared<int>(0);
    if (engine_.try_admit(*this)) {
      on_slot();
    } else {
      queue_pos_ = engine_.queue_.insert(engine_.queue_.end(), this);
      queued_ = true;
    }
  }

 private:
  // Push mode: the request holds a slot now.
  void on_slot() {
    admitted_ = true;
    admitted_at_ = Clock::now();
    listener_->on_admitted();
    schedule_next();
  }
  void schedule_next() {
    advance_next_at();
    timer_.expires_at(next_at_);
    // A completion already queued when the request is destroyed still runs: `alive` tells.
    timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
      if (ec || alive.expired()) return;
      const bool speculates = produced_ > 0 && engine_.spec_.enabled();
      const int n = step_tokens();
      produced_ += n;
      const bool last = produced_ == output_tokens_;
      if (last && holds_slot_) {
        holds_slot_ = false;  // done generating: the slot goes to the next request right away
        engine_.release_slot();
      }
      listener_->on_tokens(n, to_ns(next_at_), last, speculates ? n - 1 : -1);
      if (!last) schedule_next();
    });
  }

  SimpleEngine& engine_;
  const int prompt_tokens_;
  const int output_tokens_;
  const bool record_due_times_;
  std::mt19937_64 rng_;  // speculative decoding's acceptances, from the request's output seed
  asio::steady_timer timer_;
  std::list<Request*>::iterator queue_pos_;
  bool queued_ = false;
  bool holds_slot_ = false;
  bool admitted_ = false;
  int produced_ = 0;
  Clock::time_point admitted_at_;
  Clock::time_point next_at_;
  GenerationListener* listener_ = nullptr;  // push mode
  std::shared_ptr<int> alive_;              // push mode: expires with the request
};

SimpleEngine::SimpleEngine(asio::any_io_executor executor, std::shared_ptr<const TimingModel> model,
                           int max_running, double time_scale, SpecDecodeConfig spec)
    : executor_(std::move(executor)),
      model_(std::move(model)),
      max_running_(max_running),
      time_scale_(time_scale),
      spec_(spec) {
  assert(max_running_ >= 1 && time_scale_ > 0 && validate(spec_).ok());
}

EngineStats SimpleEngine::stats() const {
  EngineStats s = Engine::stats();
  s.num_speculative_tokens = spec_.num_speculative_tokens;
  s.spec = spec_counters_;
  return s;
}

SimpleEngine::~SimpleEngine() {
  // Every Generation must be gone by now (they point at the engine).
  assert(queue_.empty() && running_ == 0);
}

std::unique_ptr<Generation> SimpleEngine::submit(GenerationRequest request) {
  assert(request.prompt_tokens >= 1 && request.output_tokens >= 1);
  return std::make_unique<Request>(*this, request);
}

bool SimpleEngine::try_admit(Request& request) {
  if (running_ >= max_running_ || !queue_.empty()) return false;
  ++running_;
  request.holds_slot_ = true;
  return true;
}

void SimpleEngine::release_slot() {
  if (queue_.empty()) {
    --running_;
    return;
  }
  Request* next = queue_.front();
  queue_.pop_front();
  next->queued_ = false;
  next->holds_slot_ = true;  // the running count is unchanged: the slot changes hands
  if (next->listener_ != nullptr) {
    next->on_slot();
  } else {
    next->timer_.cancel();
  }
}

}  // namespace ib::sim
