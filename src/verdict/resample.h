// The headline metrics of a resample of one point's per-request records, for the bootstrap
// (docs/compare.md, "Statistics"). The records are reduced once to the numbers the headline needs,
// each latency sample list sorted once; a resample is then a count per request (how often it was
// drawn), and its percentiles are read by walking the sorted samples with those counts as
// weights: linear time, no copy and no sort per resample, even with a million ITL gaps. The
// statistics are those of metrics::compute_metrics and kHeadlineMetrics (a test holds them equal
// on the full sample).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "metrics/keys.h"
#include "metrics/record.h"
#include "metrics/steady.h"

namespace ib::verdict {

class PointResampler {
 public:
  /// `gpus`: for the per-GPU throughputs.
  PointResampler(std::span<const metrics::RequestRecord> records, int gpus);
  /// Restricted to a steady-state window (metrics/steady.h): throughputs over the window's length
  /// (output tokens of the events in it, requests completed in it, prompts sent in it), latencies
  /// of the requests inside it.
  PointResampler(std::span<const metrics::RequestRecord> records, int gpus,
                 const std::optional<metrics::SteadyWindow>& window);

  size_t requests() const { return send_ns_.size(); }

  /// A disaggregated point: output throughput per GPU over its decode GPUs (InferenceX's rule);
  /// 0 (the default): over all.
  void set_output_gpus(int decode_gpus) { output_gpus_ = decode_gpus; }

  /// The headline of the resample that drew request i counts[i] times.
  /// REQUIRES: counts.size() == requests().
  metrics::Headline headline(std::span<const uint32_t> counts) const;

 private:
  // One latency metric's samples over all requests, ascending, each with its request.
  struct Samples {
    std::vector<double> value;
    std::vector<uint32_t> request;
    std::vector<uint32_t> per_request;  // samples of each request (for the resample's size)
    void sort(size_t requests);
    // numpy-linear percentile q of the multiset where sample k appears counts[request[k]] times;
    // 0 when empty (as metrics::summarize).
    double percentile(std::span<const uint32_t> counts, double q) const;
  };

  int gpus_;
  int output_gpus_ = 0;
  std::optional<metrics::SteadyWindow> window_;
  std::vector<double> window_out_tokens_;  // per request, with a window
  std::vector<bool> done_in_window_, sent_in_window_, inside_;
  std::vector<int64_t> send_ns_, done_ns_;
  std::vector<int64_t> input_tokens_, output_tokens_;
  std::vector<bool> ok_;
  Samples ttft_, tpot_, itl_, e2el_, icl_;
  // Per request: the tokens of its counted events and how many (0 when uncounted).
  std::vector<int64_t> event_tokens_, events_;
};

}  // namespace ib::verdict
