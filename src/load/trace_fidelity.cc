#include "load/trace_fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ib::load {

namespace json = boost::json;

namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

struct Counts {
  int64_t counted = 0, exact = 0, over = 0, under = 0;
  int64_t max_abs_error = 0;
  int64_t first_line = -1;  // the first mismatching request's index
  json::object to_json(const char* what) const {
    return {{"server_counted", counted},      {"exact", exact}, {"over", over}, {"under", under},
            {"max_abs_error", max_abs_error}, {"what", what}};
  }
  void add(int64_t server, int64_t trace, int64_t index) {
    ++counted;
    const int64_t d = server - trace;
    if (d == 0) {
      ++exact;
      return;
    }
    (d > 0 ? over : under) += 1;
    max_abs_error = std::max(max_abs_error, std::abs(d));
    if (first_line < 0) first_line = index;
  }
};

// The replay's bounds: what makes it not the trace's.
void add_bounds(Fidelity& f, const FidelityBounds& bounds, double p99, bool capped,
                const workload::TracePlanInfo& plan, const Counts& input, const Counts& output) {
  if (!capped && p99 > bounds.lag_p99_ms) {
    f.invalid.push_back(
        {"trace_arrival_lag",
         fmt::format("arrival lag p99 {:.2f} ms over the {} ms bound: requests were "
                     "not sent at the trace's times",
                     p99, bounds.lag_p99_ms)});
  }
  const bool exact_prompts = plan.prompt_mode != workload::TracePromptMode::kWords;
  if (bounds.exact_inputs && exact_prompts && input.exact < input.counted) {
    f.invalid.push_back(
        {"trace_input_drift",
         fmt::format("{} of {} requests reached the server with another input length than the "
                     "trace's (max error {} tokens; first: request {})",
                     input.counted - input.exact, input.counted, input.max_abs_error,
                     input.first_line)});
  }
  if (bounds.exact_outputs && output.under > 0) {
    f.invalid.push_back(
        {"trace_output_short",
         fmt::format("{} of {} finished requests generated fewer tokens than the trace's "
                     "output_length (max {} short; first: request {}): the server did not honour "
                     "max_tokens with ignore_eos",
                     output.under, output.counted, output.max_abs_error, output.first_line)});
  }
}

}  // namespace

Fidelity trace_fidelity(const FidelityInput& in, const FidelityBounds& bounds) {
  Fidelity f;
  const auto& records = *in.records;
  const workload::TracePlanInfo& plan = *in.plan;
  std::vector<double> lag_ms;
  Counts input, output;
  int64_t late_1ms = 0, hit_tokens = 0, input_tokens = 0;
  double first_send = 0, last_send = 0;
  for (const auto& r : records) {
    if (r.send_ns <= 0) continue;
    const double lag = static_cast<double>(r.send_ns - r.sched_ns) / 1e6;
    lag_ms.push_back(lag);
    if (lag > 1.0) ++late_1ms;
    const double t = static_cast<double>(r.send_ns) / 1e9;
    first_send = lag_ms.size() == 1 ? t : std::min(first_send, t);
    last_send = std::max(last_send, t);
    const auto i = static_cast<size_t>(r.index);
    if (i < plan.theoretical_hit_tokens.size()) {
      hit_tokens += plan.theoretical_hit_tokens[i];
      input_tokens += r.input_len;
    }
    if (r.prompt_tokens >= 0) input.add(r.prompt_tokens, r.input_len, r.index);
    // A request that finished normally ("length": max_tokens reached, as ignore_eos asks).
    if (r.ok() && r.completion_tokens >= 0) output.add(r.completion_tokens, r.output_len, r.index);
  }
  const bool capped = in.cap > 0 && in.peak_in_flight >= in.cap;
  json::object arrivals{
      {"scheduled", in.scheduled},
      {"sent", static_cast<int64_t>(lag_ms.size())},
      {"not_sent", in.scheduled - static_cast<int64_t>(lag_ms.size())},
      {"lag_p50_ms", quantile(lag_ms, 0.5)},
      {"lag_p99_ms", quantile(lag_ms, 0.99)},
      {"lag_max_ms", lag_ms.empty() ? 0.0 : *std::max_element(lag_ms.begin(), lag_ms.end())},
      {"late_over_1ms", late_1ms},
      {"cap", in.cap},
      {"cap_reached", capped},
      {"time_scale", plan.time_scale},
      {"rate_factor", 1.0 / plan.time_scale}};
  if (lag_ms.size() > 1 && last_send > first_send) {
    arrivals["target_rate"] =
        plan.span_s > 0 ? static_cast<double>(in.scheduled - 1) / (plan.span_s * plan.time_scale)
                        : 0.0;
    arrivals["sent_rate"] = static_cast<double>(lag_ms.size() - 1) / (last_send - first_send);
  }
  f.json["arrivals"] = std::move(arrivals);
  f.json["prompt_mode"] = workload::trace_prompt_mode_name(plan.prompt_mode);
  f.json["input_tokens"] =
      input.to_json("the prompt tokens the server counted vs the trace's input_length");
  f.json["output_tokens"] = output.to_json(
      "the tokens the server generated vs the trace's output_length (requests that finished)");
  json::object prefix;
  if (plan.block_size > 0) {
    prefix["block_size"] = plan.block_size;
    prefix["theoretical_hit_pct"] = input_tokens > 0 ? 100.0 * static_cast<double>(hit_tokens) /
                                                           static_cast<double>(input_tokens)
                                                     : 0.0;
    if (in.server_prefix_hit_rate) {
      prefix["server_hit_pct"] = 100.0 * *in.server_prefix_hit_rate;
      prefix["difference_points"] =
          100.0 * *in.server_prefix_hit_rate - prefix["theoretical_hit_pct"].as_double();
    } else {
      prefix["server_hit_pct"] = nullptr;
      prefix["note"] = "the server reported no prefix-cache counters";
    }
    prefix["what"] =
        "theoretical: an unbounded cache seeing the replayed requests in order; a server's finite "
        "cache may hit less (evictions), which is a measurement, not a replay error";
  } else {
    prefix["note"] = "the trace has no prefix data (hash ids)";
  }
  f.json["prefix_cache"] = std::move(prefix);

  add_bounds(f, bounds, quantile(lag_ms, 0.99), capped, plan, input, output);
  json::array reasons;
  for (const auto& r : f.invalid) reasons.push_back({{"reason", r.reason}, {"message", r.message}});
  f.json["valid"] = f.invalid.empty();
  f.json["invalid_reasons"] = std::move(reasons);
  f.json["bounds"] =
      json::object{{"lag_p99_ms", bounds.lag_p99_ms},
                   {"exact_inputs",
                    bounds.exact_inputs && plan.prompt_mode != workload::TracePromptMode::kWords},
                   {"exact_outputs", bounds.exact_outputs}};
  return f;
}

}  // namespace ib::load
