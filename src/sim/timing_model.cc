#include "sim/timing_model.h"

#include <fmt/format.h>

#include <cmath>

namespace ib::sim {

namespace {

Status check(const char* name, double value, bool positive) {
  if (!std::isfinite(value) || (positive ? value <= 0.0 : value < 0.0)) {
    return Error{
        fmt::format("{} must be {} and finite, got {}", name, positive ? "> 0" : ">= 0", value)};
  }
  return Status::Ok();
}

}  // namespace

Status validate(const SimpleTimingParams& params) {
  if (auto s = check("prefill_tok_s", params.prefill_tok_s, true); !s) return s;
  if (auto s = check("prefill_overhead_ms", params.prefill_overhead_ms, false); !s) return s;
  if (auto s = check("decode_base_ms", params.decode_base_ms, false); !s) return s;
  if (auto s = check("decode_per_running_ms", params.decode_per_running_ms, false); !s) return s;
  return Status::Ok();
}

double SimpleTimingModel::prefill_seconds(int prompt_tokens, int /*running*/) const {
  return params_.prefill_overhead_ms / 1e3 + prompt_tokens / params_.prefill_tok_s;
}

double SimpleTimingModel::decode_step_seconds(int running) const {
  return (params_.decode_base_ms + params_.decode_per_running_ms * running) / 1e3;
}

}  // namespace ib::sim
