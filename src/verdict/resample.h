// The headline metrics of a resample of one point's per-request records, for the bootstrap
// (docs/compare.md, "Statistics"). Each request is reduced once to the numbers the headline needs,
// so a resample costs no copy of the records; the statistics are those of
// metrics::compute_metrics and kHeadlineMetrics (a test holds them equal on the full sample).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "metrics/keys.h"
#include "metrics/record.h"

namespace ib::verdict {

struct RequestFeatures {
  bool ok = false;
  int64_t send_ns = 0, done_ns = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  double ttft_ms = 0, e2el_ms = 0, tpot_ms = 0;  // tpot only when output_tokens > 1
  std::vector<double> itl_ms;                    // gaps between content events
};

std::vector<RequestFeatures> request_features(std::span<const metrics::RequestRecord> records);

/// Reusable buffers for headline_of (one per thread).
struct ResampleScratch {
  std::vector<double> ttft, tpot, itl, e2el;
};

/// The headline of the requests `pick` (indices into `requests`, repeats allowed) on `gpus` GPUs.
metrics::Headline headline_of(std::span<const RequestFeatures> requests,
                              std::span<const size_t> pick, int gpus, ResampleScratch& scratch);

}  // namespace ib::verdict
