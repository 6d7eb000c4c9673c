// The continuous-batching simulated engine: one engine loop that, step after step, asks the
// Scheduler for a batch, times it with a StepCostModel (the roofline PerfModel in serve-sim), and
// when the step ends gives every request its token. Steps are scheduled back to back on absolute
// times (a late event loop does not stretch the schedule) and run `time_scale` times faster than
// the model says. See docs/serve-sim.md "Continuous batching".
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <vector>

#include "sim/engine.h"
#include "sim/perf_model.h"
#include "sim/power_model.h"
#include "sim/scheduler.h"

namespace ib::sim {

class BatchEngine final : public Engine {
 public:
  /// REQUIRES: time_scale > 0; a request's prompt + output tokens fit in the KV cache (the server
  /// guarantees it by checking max_model_len against the cache at startup). Destroy the engine
  /// only after its executor ran out of work and every Generation is gone.
  BatchEngine(boost::asio::any_io_executor executor, std::shared_ptr<const StepCostModel> cost,
              const SchedulerConfig& config, double time_scale = 1.0);
  ~BatchEngine() override;
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  using Engine::submit;
  std::unique_ptr<Generation> submit(GenerationRequest request) override;
  int running() const override { return scheduler_.running(); }
  int waiting() const override { return scheduler_.waiting(); }
  EngineStats stats() const override;
  bool reset_prefix_cache() override { return !step_in_flight_ && scheduler_.reset_prefix_cache(); }

  const Scheduler& scheduler() const { return scheduler_; }
  /// Model seconds of all steps started so far (before time scaling).
  double busy_seconds() const { return busy_seconds_; }
  /// Records every step's wall-clock span and activity (--power-model); nullptr: none.
  void set_power_meter(std::shared_ptr<PowerMeter> meter) { power_ = std::move(meter); }

 private:
  class Request;

  void kick();  // starts a step soon unless one is in flight
  void start_step();
  void on_step_done(const boost::system::error_code& ec);
  void abort(Request& request);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const StepCostModel> cost_;
  Scheduler scheduler_;
  double time_scale_;
  boost::asio::steady_timer timer_;
  Scheduler::Plan plan_;
  std::vector<Scheduler::Emission> emissions_;
  bool step_in_flight_ = false;
  bool kick_posted_ = false;
  bool back_to_back_ = false;  // the next step starts when the last one ended, not now
  boost::asio::steady_timer::time_point step_end_;
  double busy_seconds_ = 0;
  std::shared_ptr<PowerMeter> power_;
  int live_requests_ = 0;
};

}  // namespace ib::sim
