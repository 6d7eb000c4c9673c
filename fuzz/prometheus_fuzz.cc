// The Prometheus text exposition format as servers' /metrics endpoints write it: parsed, then read
// the ways a sweep reads it (sums by name and label, prefix-cache counters, DCGM power). A server's
// /metrics is outside input: no text may crash the parser or its readers.
#include "fuzz_util.h"
#include "metrics/prometheus.h"
#include "telemetry/dcgm.h"
#include "telemetry/timeslices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto scrape = ib::metrics::parse_prometheus(text);
  if (!scrape) return 0;
  (void)ib::metrics::sum_samples(*scrape, "vllm:num_requests_running");
  const auto counters = ib::metrics::read_prefix_cache(*scrape);
  (void)ib::metrics::prefix_hit_rate(counters, counters);
  std::vector<ib::telemetry::TimedScrape> scrapes;
  scrapes.push_back({1.0e9, *scrape, "http://127.0.0.1/metrics"});
  scrapes.push_back({1.0e9 + 1, *scrape, "http://127.0.0.1/metrics"});
  (void)ib::telemetry::dcgm_power_log(scrapes, 1.0e9);
  return 0;
}
