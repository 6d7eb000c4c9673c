// How long the simulated engine takes to prefill a prompt and to run one decode step. The engine
// (engine.h) asks a TimingModel for every step, so a more detailed model (roofline costs per
// batch, see docs/serve-sim.md) plugs in here without touching scheduling or HTTP.
#pragma once

#include <string>

#include "core/expected.h"

namespace ib::sim {

/// Step costs of a simulated engine. Implementations are immutable and cheap to call.
class TimingModel {
 public:
  virtual ~TimingModel() = default;

  /// Seconds to prefill `prompt_tokens` tokens while `running` requests (including this one)
  /// hold a running slot. REQUIRES: prompt_tokens >= 1, running >= 1.
  virtual double prefill_seconds(int prompt_tokens, int running) const = 0;

  /// Seconds of one decode step, which produces one token for each of the `running` requests.
  /// REQUIRES: running >= 1.
  virtual double decode_step_seconds(int running) const = 0;
};

/// Parameters of SimpleTimingModel (docs/serve-sim.md "Timing model").
struct SimpleTimingParams {
  double prefill_tok_s = 20000.0;      // prompt tokens prefilled per second
  double prefill_overhead_ms = 2.0;    // fixed cost of every prefill
  double decode_base_ms = 5.0;         // decode step time of a lone request
  double decode_per_running_ms = 0.1;  // added to every decode step per running request
};

/// Error naming the first parameter out of range (rates > 0, times >= 0, all finite).
Status validate(const SimpleTimingParams& params);

/// A linear model, independent of batch composition:
///   prefill = prefill_overhead_ms + prompt_tokens / prefill_tok_s
///   decode step = decode_base_ms + decode_per_running_ms * running
class SimpleTimingModel final : public TimingModel {
 public:
  /// REQUIRES: validate(params).ok().
  explicit SimpleTimingModel(const SimpleTimingParams& params) : params_(params) {}

  double prefill_seconds(int prompt_tokens, int running) const override;
  double decode_step_seconds(int running) const override;

  const SimpleTimingParams& params() const { return params_; }

 private:
  SimpleTimingParams params_;
};

}  // namespace ib::sim
