#include "verdict/resample.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/clock.h"

namespace ib::verdict {

PointResampler::PointResampler(std::span<const metrics::RequestRecord> records, int gpus)
    : PointResampler(records, gpus, std::nullopt) {}

PointResampler::PointResampler(std::span<const metrics::RequestRecord> records, int gpus,
                               const std::optional<metrics::SteadyWindow>& window)
    : gpus_(gpus), window_(window) {
  std::vector<int32_t> counts;  // one request's tokens per event
  event_tokens_.assign(records.size(), 0);
  events_.assign(records.size(), 0);
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const auto req = static_cast<uint32_t>(i);
    send_ns_.push_back(r.send_ns);
    done_ns_.push_back(r.done_ns);
    const bool ok = r.ok() && !r.content_ns.empty();
    ok_.push_back(ok);
    input_tokens_.push_back(ok ? r.input_tokens() : 0);
    output_tokens_.push_back(ok ? r.output_tokens() : 0);
    if (window_) {
      window_out_tokens_.push_back(metrics::tokens_in_window(r, *window_));
      done_in_window_.push_back(r.done_ns >= window_->start_ns && r.done_ns <= window_->end_ns);
      sent_in_window_.push_back(r.send_ns >= window_->start_ns && r.send_ns <= window_->end_ns);
      inside_.push_back(metrics::inside(r, *window_));
      // Only the requests inside the window give steady latencies.
      if (!metrics::inside(r, *window_)) continue;
    }
    if (!ok) continue;
    const int64_t out = r.output_tokens();
    const double ttft = ns_to_ms(r.content_ns.front() - r.send_ns);
    const double e2el = ns_to_ms(r.content_ns.back() - r.send_ns);
    ttft_.value.push_back(ttft);
    ttft_.request.push_back(req);
    e2el_.value.push_back(e2el);
    e2el_.request.push_back(req);
    if (out > 1) {
      tpot_.value.push_back((e2el - ttft) / static_cast<double>(out - 1));
      tpot_.request.push_back(req);
    }
    // Per-token ITL, as the point's own metrics compute it: only where the request's tokens per
    // event are known (metrics::event_token_counts).
    if (metrics::event_token_counts(r, &counts) != metrics::EventTokens::kUnknown) {
      const size_t before = itl_.value.size();
      metrics::append_per_token_itl(r, counts, &itl_.value);
      itl_.request.insert(itl_.request.end(), itl_.value.size() - before, req);
      event_tokens_[i] = std::accumulate(counts.begin(), counts.end(), int64_t{0});
      events_[i] = static_cast<int64_t>(counts.size());
    }
    for (size_t k = 1; k < r.content_ns.size(); ++k) {
      icl_.value.push_back(ns_to_ms(r.content_ns[k] - r.content_ns[k - 1]));
      icl_.request.push_back(req);
    }
  }
  for (Samples* s : {&ttft_, &tpot_, &itl_, &e2el_, &icl_}) s->sort(records.size());
}

void PointResampler::Samples::sort(size_t requests) {
  per_request.assign(requests, 0);
  for (uint32_t r : request) ++per_request[r];
  std::vector<size_t> order(value.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
  std::vector<double> v;
  std::vector<uint32_t> r;
  v.reserve(order.size());
  r.reserve(order.size());
  for (size_t k : order) {
    v.push_back(value[k]);
    r.push_back(request[k]);
  }
  value = std::move(v);
  request = std::move(r);
}

double PointResampler::Samples::percentile(std::span<const uint32_t> counts, double q) const {
  uint64_t n = 0;
  for (size_t r = 0; r < per_request.size(); ++r) n += uint64_t{counts[r]} * per_request[r];
  if (n == 0) return 0;
  // numpy linear: h = (n-1)·q/100; x[⌊h⌋] + (h-⌊h⌋)·(x[⌊h⌋+1] - x[⌊h⌋]) in the expanded multiset.
  const double h = static_cast<double>(n - 1) * q / 100.0;
  const auto lo = static_cast<uint64_t>(h);
  const uint64_t hi = std::min(lo + 1, n - 1);
  double x_lo = 0, x_hi = 0;
  bool have_lo = false;
  uint64_t seen = 0;  // expanded samples before this one
  for (size_t k = 0; k < value.size(); ++k) {
    const uint64_t w = counts[request[k]];
    if (w == 0) continue;
    if (!have_lo && lo < seen + w) {
      x_lo = value[k];
      have_lo = true;
    }
    if (hi < seen + w) {
      x_hi = value[k];
      break;
    }
    seen += w;
  }
  return x_lo + (h - static_cast<double>(lo)) * (x_hi - x_lo);
}

metrics::Headline PointResampler::headline(std::span<const uint32_t> counts) const {
  int64_t first_send = std::numeric_limits<int64_t>::max();
  int64_t last_done = std::numeric_limits<int64_t>::min();
  int64_t completed = 0, failed = 0, in_tokens = 0, out_tokens = 0, ev_tokens = 0, events = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint32_t w = counts[i];
    if (w == 0 || (window_ && !inside_[i])) continue;  // steady: counts of the requests inside
    if (send_ns_[i] > 0) first_send = std::min(first_send, send_ns_[i]);
    if (done_ns_[i] > 0) last_done = std::max(last_done, done_ns_[i]);
    if (!ok_[i]) {
      failed += w;
      continue;
    }
    completed += w;
    in_tokens += w * input_tokens_[i];
    out_tokens += w * output_tokens_[i];
    ev_tokens += w * event_tokens_[i];
    events += w * events_[i];
  }
  double duration_s = 0;
  if (first_send != std::numeric_limits<int64_t>::max() && last_done > first_send) {
    duration_s = ns_to_s(last_done - first_send);
  }
  double req_tput = duration_s > 0 ? static_cast<double>(completed) / duration_s : 0;
  double out_tput = duration_s > 0 ? static_cast<double>(out_tokens) / duration_s : 0;
  double total_tput = duration_s > 0 ? static_cast<double>(in_tokens + out_tokens) / duration_s : 0;
  if (window_) {
    // The window's rates: what was emitted, completed and sent in it, over its length.
    double w_out = 0, w_in = 0, w_done = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      const double w = counts[i];
      if (w == 0 || !ok_[i]) continue;
      w_out += w * window_out_tokens_[i];
      if (sent_in_window_[i]) w_in += w * static_cast<double>(input_tokens_[i]);
      if (done_in_window_[i]) w_done += w;
    }
    const double secs = window_->seconds();
    req_tput = w_done / secs;
    out_tput = w_out / secs;
    total_tput = (w_out + w_in) / secs;
  }
  const double per_gpu = static_cast<double>(std::max(1, gpus_));
  const double median_tpot = tpot_.percentile(counts, 50);
  metrics::Headline h;
  h.set("request_throughput", req_tput);
  h.set("output_throughput", out_tput);
  h.set("total_token_throughput", total_tput);
  h.set("median_ttft_ms", ttft_.percentile(counts, 50));
  h.set("p99_ttft_ms", ttft_.percentile(counts, 99));
  h.set("median_tpot_ms", median_tpot);
  h.set("p99_tpot_ms", tpot_.percentile(counts, 99));
  h.set("median_itl_ms", itl_.value.empty() ? std::numeric_limits<double>::quiet_NaN()
                                            : itl_.percentile(counts, 50));
  h.set("median_icl_ms", icl_.value.empty() ? std::numeric_limits<double>::quiet_NaN()
                                            : icl_.percentile(counts, 50));
  h.set("mean_tokens_per_event", events > 0
                                     ? static_cast<double>(ev_tokens) / static_cast<double>(events)
                                     : std::numeric_limits<double>::quiet_NaN());
  h.set("median_e2el_ms", e2el_.percentile(counts, 50));
  h.set("median_intvty", median_tpot > 0 ? 1000.0 / median_tpot : 0.0);
  h.set("tput_per_gpu", total_tput / per_gpu);
  h.set("output_tput_per_gpu", out_tput / (output_gpus_ > 0 ? output_gpus_ : per_gpu));
  h.set("completed", static_cast<double>(completed));
  h.set("failed", static_cast<double>(failed));
  return h;
}

}  // namespace ib::verdict
