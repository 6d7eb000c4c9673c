#include "verdict/resample.h"

#include <algorithm>
#include <limits>

#include "core/clock.h"
#include "metrics/stats.h"

namespace ib::verdict {

std::vector<RequestFeatures> request_features(std::span<const metrics::RequestRecord> records) {
  std::vector<RequestFeatures> out;
  out.reserve(records.size());
  for (const auto& r : records) {
    RequestFeatures f;
    f.send_ns = r.send_ns;
    f.done_ns = r.done_ns;
    f.ok = r.ok() && !r.content_ns.empty();
    if (f.ok) {
      f.input_tokens = r.input_tokens();
      f.output_tokens = r.output_tokens();
      f.ttft_ms = ns_to_ms(r.content_ns.front() - r.send_ns);
      f.e2el_ms = ns_to_ms(r.content_ns.back() - r.send_ns);
      if (f.output_tokens > 1) {
        f.tpot_ms = (f.e2el_ms - f.ttft_ms) / static_cast<double>(f.output_tokens - 1);
      }
      for (size_t i = 1; i < r.content_ns.size(); ++i) {
        f.itl_ms.push_back(ns_to_ms(r.content_ns[i] - r.content_ns[i - 1]));
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// As metrics::summarize: 0 for no samples.
double pct(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return metrics::percentile_sorted(v, q);
}

}  // namespace

metrics::Headline headline_of(std::span<const RequestFeatures> requests,
                              std::span<const size_t> pick, int gpus, ResampleScratch& s) {
  s.ttft.clear();
  s.tpot.clear();
  s.itl.clear();
  s.e2el.clear();
  int64_t first_send = std::numeric_limits<int64_t>::max();
  int64_t last_done = std::numeric_limits<int64_t>::min();
  int64_t completed = 0, failed = 0, in_tokens = 0, out_tokens = 0;
  for (size_t i : pick) {
    const RequestFeatures& f = requests[i];
    if (f.send_ns > 0) first_send = std::min(first_send, f.send_ns);
    if (f.done_ns > 0) last_done = std::max(last_done, f.done_ns);
    if (!f.ok) {
      ++failed;
      continue;
    }
    ++completed;
    in_tokens += f.input_tokens;
    out_tokens += f.output_tokens;
    s.ttft.push_back(f.ttft_ms);
    s.e2el.push_back(f.e2el_ms);
    if (f.output_tokens > 1) s.tpot.push_back(f.tpot_ms);
    s.itl.insert(s.itl.end(), f.itl_ms.begin(), f.itl_ms.end());
  }
  double duration_s = 0;
  if (first_send != std::numeric_limits<int64_t>::max() && last_done > first_send) {
    duration_s = ns_to_s(last_done - first_send);
  }
  const double req_tput = duration_s > 0 ? static_cast<double>(completed) / duration_s : 0;
  const double out_tput = duration_s > 0 ? static_cast<double>(out_tokens) / duration_s : 0;
  const double total_tput =
      duration_s > 0 ? static_cast<double>(in_tokens + out_tokens) / duration_s : 0;
  const double per_gpu = static_cast<double>(std::max(1, gpus));
  const double median_tpot = pct(s.tpot, 50);
  metrics::Headline h;
  h.set("request_throughput", req_tput);
  h.set("output_throughput", out_tput);
  h.set("total_token_throughput", total_tput);
  h.set("median_ttft_ms", pct(s.ttft, 50));
  h.set("p99_ttft_ms", pct(s.ttft, 99));
  h.set("median_tpot_ms", median_tpot);
  h.set("p99_tpot_ms", pct(s.tpot, 99));
  h.set("median_itl_ms", pct(s.itl, 50));
  h.set("median_e2el_ms", pct(s.e2el, 50));
  h.set("median_intvty", median_tpot > 0 ? 1000.0 / median_tpot : 0.0);
  h.set("tput_per_gpu", total_tput / per_gpu);
  h.set("output_tput_per_gpu", out_tput / per_gpu);
  h.set("completed", static_cast<double>(completed));
  h.set("failed", static_cast<double>(failed));
  return h;
}

}  // namespace ib::verdict
