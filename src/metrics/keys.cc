#include "metrics/keys.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "metrics/result.h"

namespace ib::metrics {

namespace {

double per_gpu(double v, const MetricsOptions& o) {
  return v / static_cast<double>(std::max(1, o.num_gpus));
}

constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

double p99(const Summary& s, const MetricsOptions& o) {
  for (size_t i = 0; i < o.percentiles.size() && i < s.percentiles.size(); ++i) {
    if (o.percentiles[i] == 99) return s.percentiles[i];
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

// Interactivity is 1000 / TPOT (ms) at the same statistic (docs/architecture.md, "Metric
// definitions"); 0 when TPOT is 0.
const std::array<MetricKey, kHeadlineCount> kHeadlineMetrics = {{
    {"request_throughput", "req/s", 2, false, true, true,
     [](const BenchMetrics& m, const MetricsOptions&) { return m.request_throughput; }},
    {"output_throughput", "out tok/s", 1, false, true, true,
     [](const BenchMetrics& m, const MetricsOptions&) { return m.output_throughput; }},
    {"total_token_throughput", "total tok/s", 1, false, false, true,
     [](const BenchMetrics& m, const MetricsOptions&) { return m.total_token_throughput; }},
    {"median_ttft_ms", "p50 TTFT ms", 2, false, true, false,
     [](const BenchMetrics& m, const MetricsOptions&) { return m.ttft_ms.median; }},
    {"p99_ttft_ms", "p99 TTFT ms", 2, false, false, false,
     [](const BenchMetrics& m, const MetricsOptions& o) { return p99(m.ttft_ms, o); }},
    // TPOT needs a request with two output tokens: without one it is undefined (NaN, written
    // null), never 0.
    {"median_tpot_ms", "p50 TPOT ms", 2, false, true, false,
     [](const BenchMetrics& m, const MetricsOptions&) {
       return m.tpot_ms.count > 0 ? m.tpot_ms.median : kUndefined;
     }},
    {"p99_tpot_ms", "p99 TPOT ms", 2, false, false, false,
     [](const BenchMetrics& m, const MetricsOptions& o) {
       return m.tpot_ms.count > 0 ? p99(m.tpot_ms, o) : kUndefined;
     }},
    {"median_itl_ms", "p50 ITL ms", 2, false, false, false,
     [](const BenchMetrics& m, const MetricsOptions&) {
       // Per token; not measured (NaN) where no request's tokens per event are known.
       return m.itl_ms.count > 0 ? m.itl_ms.median : std::numeric_limits<double>::quiet_NaN();
     }},
    // The gap between content events (what clients have called ITL), and the tokens an event
    // carried: a speculating or batching server's cadence (docs/metrics.md, "Tokens per event").
    {"median_icl_ms", "p50 ICL ms", 2, false, false, false,
     [](const BenchMetrics& m, const MetricsOptions&) {
       return m.icl_ms.count > 0 ? m.icl_ms.median : kUndefined;
     }},
    {"mean_tokens_per_event", "tok/event", 2, false, false, true,
     [](const BenchMetrics& m, const MetricsOptions&) {
       return m.tokens_per_event.count > 0 ? m.tokens_per_event.mean : kUndefined;
     }},
    {"median_e2el_ms", "p50 E2EL ms", 1, false, false, false,
     [](const BenchMetrics& m, const MetricsOptions&) { return m.e2el_ms.median; }},
    {"median_intvty", "tok/s/user", 1, false, true, true,
     [](const BenchMetrics& m, const MetricsOptions&) {
       return m.tpot_ms.count > 0 && m.tpot_ms.median > 0 ? 1000.0 / m.tpot_ms.median : kUndefined;
     }},
    {"tput_per_gpu", "tput/gpu", 1, false, true, true,
     [](const BenchMetrics& m, const MetricsOptions& o) {
       return per_gpu(m.total_token_throughput, o);
     }},
    {"output_tput_per_gpu", "out tput/gpu", 1, false, false, true,
     [](const BenchMetrics& m, const MetricsOptions& o) {
       // Disaggregated: over the decode GPUs, which make the output (InferenceX's rule).
       return o.decode_gpus > 0 ? m.output_throughput / o.decode_gpus
                                : per_gpu(m.output_throughput, o);
     }},
    {"completed", "completed", 0, true, false, true,
     [](const BenchMetrics& m, const MetricsOptions&) { return static_cast<double>(m.completed); }},
    {"failed", "failed", 0, true, false, false,
     [](const BenchMetrics& m, const MetricsOptions&) { return static_cast<double>(m.failed); }},
}};

std::optional<size_t> headline_index(std::string_view key) {
  for (size_t i = 0; i < kHeadlineMetrics.size(); ++i) {
    if (kHeadlineMetrics[i].key == key) return i;
  }
  return std::nullopt;
}

bool descriptive_metric(std::string_view key) {
  return key == "mean_tokens_per_event";
}

std::string headline_keys_text() {
  std::string out;
  for (const auto& k : kHeadlineMetrics) {
    if (!out.empty()) out += ", ";
    out += k.key;
  }
  return out;
}

Headline::Headline() {
  v_.fill(std::numeric_limits<double>::quiet_NaN());
}

Headline Headline::from_metrics(const BenchMetrics& m, const MetricsOptions& options) {
  Headline h;
  for (size_t i = 0; i < kHeadlineMetrics.size(); ++i)
    h.v_[i] = kHeadlineMetrics[i].value(m, options);
  return h;
}

Headline Headline::from_json(const boost::json::object& result) {
  Headline h;
  for (size_t i = 0; i < kHeadlineMetrics.size(); ++i) {
    const auto* v = result.if_contains(kHeadlineMetrics[i].key);
    if (v && v->is_number()) h.v_[i] = v->to_number<double>();
  }
  return h;
}

double Headline::get(std::string_view key) const {
  auto i = headline_index(key);
  if (!i) throw std::out_of_range(fmt::format("not a headline metric: {}", key));
  return v_[*i];
}

void Headline::set(std::string_view key, double v) {
  auto i = headline_index(key);
  if (!i) throw std::out_of_range(fmt::format("not a headline metric: {}", key));
  v_[*i] = v;
}

bool Headline::empty() const {
  for (double v : v_) {
    if (!std::isnan(v)) return false;
  }
  return true;
}

boost::json::object Headline::to_json() const {
  boost::json::object o;
  for (size_t i = 0; i < kHeadlineMetrics.size(); ++i) {
    const double v = v_[i];
    if (std::isnan(v)) {
      o[kHeadlineMetrics[i].key] = nullptr;
    } else if (kHeadlineMetrics[i].integer && std::fabs(v) < 9.2e18) {
      // (a count out of int64's range, from an edited file, stays a number)
      o[kHeadlineMetrics[i].key] = static_cast<int64_t>(v);
    } else {
      o[kHeadlineMetrics[i].key] = v;
    }
  }
  return o;
}

std::string Headline::cell(size_t i) const {
  if (std::isnan(v_[i])) return "-";
  return fmt::format("{:.{}f}", v_[i], kHeadlineMetrics[i].decimals);
}

}  // namespace ib::metrics
