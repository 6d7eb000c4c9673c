#include "sim/batch_engine.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cassert>
#include <chrono>

#include "http/awaitable.h"

namespace ib::sim {

namespace asio = boost::asio;

namespace {

double steady_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

class BatchEngine::Request final : public Generation {
 public:
  Request(BatchEngine& engine, GenerationRequest&& request)
      : engine_(engine), record_due_times_(request.record_due_times), timer_(engine.executor_) {
    SequenceSpec spec;
    spec.prompt_tokens = request.prompt_tokens;
    spec.output_tokens = request.output_tokens;
    spec.prompt_keys = std::move(request.prompt_keys);
    spec.output_seed = request.output_seed;
    spec.external_tokens = request.external_tokens;
    spec.ends_with_eos = request.ends_with_eos;
    if (record_due_times_) due_ns_.reserve(static_cast<size_t>(request.output_tokens));
    id_ = engine_.scheduler_.add(std::move(spec), this);
    ++engine_.live_requests_;
    engine_.kick();
  }

  ~Request() override {
    --engine_.live_requests_;
    if (!finished_) engine_.abort(*this);
  }

  asio::awaitable<void> admitted() override {
    while (!admitted_) co_await wait();
  }

  asio::awaitable<int> next_tokens() override {
    while (true) {
      const int fresh = produced_ - taken_;
      if (fresh > 0) {
        taken_ = produced_;
        co_return fresh;
      }
      if (finished_) co_return 0;
      co_await wait();
    }
  }

  int cached_tokens() const override { return cached_tokens_; }
  int preemptions() const override { return preemptions_; }

  void listen(GenerationListener* listener) override {
    listener_ = listener;
    record_due_times_ = false;  // the listener gets them
  }

  // Engine side.
  Scheduler::Id id() const { return id_; }
  void on_admitted() {
    admitted_ = true;
    if (listener_ != nullptr) {
      listener_->on_admitted();
      return;
    }
    wake();
  }
  void on_token(int64_t due_ns, const Scheduler::Emission& e) {
    admitted_ = true;  // a token implies admission (the step that admitted it may have produced it)
    produced_ += e.tokens;
    cached_tokens_ = e.cached_tokens;
    preemptions_ = e.preemptions;
    if (e.finished) finished_ = true;  // the scheduler already let it go
    if (listener_ != nullptr) {
      taken_ = produced_;
      listener_->on_tokens(e.tokens, due_ns, e.finished, e.accepted);
      return;
    }
    if (record_due_times_) due_ns_.insert(due_ns_.end(), static_cast<size_t>(e.tokens), due_ns);
    wake();
  }

 private:
  // Parks the caller until the engine has news; a cancellation of the caller throws.
  asio::awaitable<void> wait() {
    waiting_ = true;
    timer_.expires_at(Clock::time_point::max());
    auto [ec] = co_await timer_.async_wait(use_tuple);
    waiting_ = false;
    if (!woken_) throw boost::system::system_error(ec ? ec : asio::error::operation_aborted);
    woken_ = false;
  }
  void wake() {
    if (!waiting_ || woken_) return;
    woken_ = true;
    timer_.cancel();
  }

  BatchEngine& engine_;
  bool record_due_times_;
  GenerationListener* listener_ = nullptr;
  asio::steady_timer timer_;
  Scheduler::Id id_ = 0;
  int produced_ = 0;
  int taken_ = 0;
  int cached_tokens_ = 0;
  int preemptions_ = 0;
  bool admitted_ = false;
  bool finished_ = false;
  bool waiting_ = false;
  bool woken_ = false;
};

BatchEngine::BatchEngine(asio::any_io_executor executor, std::shared_ptr<const StepCostModel> cost,
                         const SchedulerConfig& config, double time_scale)
    : executor_(std::move(executor)),
      cost_(std::move(cost)),
      scheduler_(config),
      time_scale_(time_scale),
      timer_(executor_) {
  assert(time_scale_ > 0);
}

BatchEngine::~BatchEngine() {
  // Every Generation must be gone by now (they point at the engine).
  assert(live_requests_ == 0);
}

std::unique_ptr<Generation> BatchEngine::submit(GenerationRequest request) {
  assert(request.prompt_tokens >= 1 && request.output_tokens >= 1);
  return std::make_unique<Request>(*this, std::move(request));
}

EngineStats BatchEngine::stats() const {
  EngineStats s;
  s.running = scheduler_.running();
  s.waiting = scheduler_.waiting();
  s.kv_cache_usage = scheduler_.pool().usage();
  const SchedulerStats& st = scheduler_.stats();
  s.prefix_queries = st.prefix_queries;
  s.prefix_hits = st.prefix_hits;
  s.preemptions = st.preemptions;
  s.kv_evicted_blocks = scheduler_.pool().evictions();
  s.steps = st.steps;
  s.num_gpu_blocks = scheduler_.pool().num_blocks();
  s.block_size = scheduler_.pool().block_size();
  s.num_speculative_tokens = scheduler_.config().spec.num_speculative_tokens;
  s.spec = st.spec;
  return s;
}

void BatchEngine::kick() {
  if (step_in_flight_ || kick_posted_) return;
  // Posted, so requests arriving in the same turn of the event loop join the same step.
  kick_posted_ = true;
  asio::post(executor_, [this] {
    kick_posted_ = false;
    if (!step_in_flight_) start_step();
  });
}

void BatchEngine::start_step() {
  if (!scheduler_.schedule(plan_)) {
    back_to_back_ = false;  // idle: the next step starts when work arrives
    return;
  }
  for (const Scheduler::Entry& e : plan_.entries) {
    if (e.first) static_cast<Request*>(e.owner)->on_admitted();
  }
  auto [seconds, activity] = cost_->time_step(plan_.batch);
  // The draft model's cost, once a step that drafted (its K tokens, --spec-draft-ms each).
  const SpecDecodeConfig& spec = scheduler_.config().spec;
  if (spec.enabled() && std::any_of(plan_.entries.begin(), plan_.entries.end(),
                                    [](const Scheduler::Entry& e) { return e.draft > 0; })) {
    seconds += spec.num_speculative_tokens * spec.draft_ms / 1000.0;
  }
  busy_seconds_ += seconds;
  const Clock::time_point start = back_to_back_ ? step_end_ : Clock::now();
  step_end_ = start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(seconds / time_scale_));
  if (power_) power_->step(steady_seconds(start), steady_seconds(step_end_), activity);
  step_in_flight_ = true;
  back_to_back_ = true;
  timer_.expires_at(step_end_);
  timer_.async_wait([this](const boost::system::error_code& ec) { on_step_done(ec); });
}

void BatchEngine::on_step_done(const boost::system::error_code& ec) {
  step_in_flight_ = false;
  if (ec) {
    // Cancelled because every request left (abort): the step's results have no taker.
    back_to_back_ = false;
    if (!scheduler_.idle()) kick();
    return;
  }
  emissions_.clear();
  scheduler_.complete(plan_, emissions_);
  const int64_t due = to_ns(step_end_);
  for (const Scheduler::Emission& e : emissions_) {
    static_cast<Request*>(e.owner)->on_token(due, e);
  }
  start_step();
}

void BatchEngine::abort(Request& request) {
  scheduler_.abort(request.id());
  if (step_in_flight_ && scheduler_.idle()) timer_.cancel();
}

}  // namespace ib::sim
