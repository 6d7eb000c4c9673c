#include "metrics/steady.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "metrics/result.h"

namespace ib::metrics {

std::optional<SteadyWindow> find_steady_window(std::span<const RequestRecord> records,
                                               int64_t target_concurrency, double fraction) {
  if (target_concurrency <= 0 || records.empty()) return std::nullopt;
  // +1 at each send, -1 at each completion; at one instant, completions first (a closed loop
  // sends the next request as the last one ends: that is no moment with one more in flight).
  std::vector<std::pair<int64_t, int>> steps;
  steps.reserve(records.size() * 2);
  for (const RequestRecord& r : records) {
    if (r.send_ns <= 0 || r.done_ns < r.send_ns) continue;
    steps.emplace_back(r.send_ns, +1);
    steps.emplace_back(r.done_ns, -1);
  }
  std::sort(steps.begin(), steps.end());
  SteadyWindow w;
  w.threshold = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(fraction * static_cast<double>(target_concurrency))));
  int64_t in_flight = 0;
  bool reached = false;
  for (size_t i = 0; i < steps.size();) {
    // Every step of one instant, then judge it.
    const int64_t t = steps[i].first;
    const bool was_steady = in_flight >= w.threshold;
    for (; i < steps.size() && steps[i].first == t; ++i) in_flight += steps[i].second;
    const bool steady = in_flight >= w.threshold;
    if (steady && !reached) {
      reached = true;
      w.start_ns = t;
    }
    if (reached && was_steady && !steady) w.end_ns = t;  // the last such instant wins
  }
  if (!reached || w.end_ns <= w.start_ns) return std::nullopt;
  return w;
}

bool inside(const RequestRecord& r, const SteadyWindow& w) {
  return r.send_ns >= w.start_ns && r.done_ns <= w.end_ns && r.done_ns >= r.send_ns;
}

double tokens_in_window(const RequestRecord& r, const SteadyWindow& w) {
  if (!r.ok() || r.content_ns.empty()) return 0;
  std::vector<int32_t> counts;
  const bool counted = event_token_counts(r, &counts) != EventTokens::kUnknown &&
                       counts.size() == r.content_ns.size();
  const double even =
      static_cast<double>(r.output_tokens()) / static_cast<double>(r.content_ns.size());
  double tokens = 0;
  for (size_t i = 0; i < r.content_ns.size(); ++i) {
    if (r.content_ns[i] < w.start_ns || r.content_ns[i] > w.end_ns) continue;
    tokens += counted ? counts[i] : even;
  }
  return tokens;
}

boost::json::object steady_json(std::span<const RequestRecord> records, const SteadyWindow& w,
                                const MetricsOptions& options, int64_t origin_ns) {
  std::vector<RequestRecord> in;
  double out_tokens = 0, in_tokens = 0;
  int64_t done_in_window = 0;
  int64_t first_send = INT64_MAX, last_done = INT64_MIN;
  for (const RequestRecord& r : records) {
    if (inside(r, w)) in.push_back(r);
    out_tokens += tokens_in_window(r, w);
    if (r.ok() && r.send_ns >= w.start_ns && r.send_ns <= w.end_ns) {
      in_tokens += static_cast<double>(r.input_tokens());
    }
    if (r.ok() && r.done_ns >= w.start_ns && r.done_ns <= w.end_ns) ++done_in_window;
    if (r.send_ns > 0) first_send = std::min(first_send, r.send_ns);
    if (r.done_ns > 0) last_done = std::max(last_done, r.done_ns);
  }
  const BenchMetrics m = compute_metrics(in, options);
  boost::json::object o = Headline::from_metrics(m, options).to_json();
  const double secs = w.seconds();
  const double gpus = static_cast<double>(std::max(1, options.num_gpus));
  o["request_throughput"] = static_cast<double>(done_in_window) / secs;
  o["output_throughput"] = out_tokens / secs;
  o["total_token_throughput"] = (out_tokens + in_tokens) / secs;
  o["tput_per_gpu"] = (out_tokens + in_tokens) / secs / gpus;
  o["output_tput_per_gpu"] =
      out_tokens / secs / (options.decode_gpus > 0 ? options.decode_gpus : gpus);
  o["window_start_s"] = static_cast<double>(w.start_ns - origin_ns) / 1e9;
  o["window_end_s"] = static_cast<double>(w.end_ns - origin_ns) / 1e9;
  o["duration_s"] = secs;
  o["share_of_run"] =
      last_done > first_send ? secs / (static_cast<double>(last_done - first_send) / 1e9) : 0.0;
  o["threshold"] = w.threshold;
  o["requests_inside"] = static_cast<int64_t>(in.size());
  return o;
}

}  // namespace ib::metrics
