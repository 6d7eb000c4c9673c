// A parser of the Prometheus text exposition format 0.0.4 (what vLLM, SGLang and serve-sim answer
// on GET /metrics), and readers of the prefix-cache counters agentic runs report. It is written
// here because no Debian package offers a C++ parser of this format (prometheus-cpp only writes
// it), and the server metrics of a run must be read exactly: a hit rate is a difference of two
// scrapes, so a sample lost to a lenient line split would be a wrong number, not a missing one.
//
// Format (https://prometheus.io/docs/instrumenting/exposition_formats/): one sample per line,
// `name{label="value",...} value [timestamp_ms]`; `# HELP name text` and `# TYPE name type`
// describe a family; other `#` lines are comments. Histograms and summaries appear as their
// `_bucket`/`_sum`/`_count` (and quantile) samples.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.h"

namespace ib::metrics {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };

/// "untyped", "counter", "gauge", "histogram", "summary" (the words of `# TYPE`).
std::string_view to_string(MetricType type);

using Labels = std::vector<std::pair<std::string, std::string>>;

/// One sample line.
struct Sample {
  std::string name;  // as written, e.g. "vllm:e2e_request_latency_seconds_bucket"
  Labels labels;     // sorted by label name; values unescaped
  double value = 0;  // NaN and ±Inf included
  std::optional<int64_t> timestamp_ms;

  /// The value of label `key`, or nullptr when the sample has none.
  const std::string* label(std::string_view key) const;
};

struct Family {
  MetricType type = MetricType::kUntyped;
  std::string help;  // unescaped
};

/// A parsed /metrics body.
struct Scrape {
  std::vector<Sample> samples;             // in the order of the text
  std::map<std::string, Family> families;  // from `# TYPE` / `# HELP` lines, by family name

  /// The type of the family a sample name belongs to: the name itself when typed, else the name
  /// without a `_bucket`/`_sum`/`_count` (histogram, summary) or `_total`/`_created` (counter)
  /// suffix when that family has the matching type; kUntyped otherwise.
  MetricType type_of(std::string_view sample_name) const;
};

/// Parses `text`. Errors name the 1-based line and what is wrong with it ("line 12: label value
/// of model_name is not terminated"): bad metric or label names, unterminated or badly escaped
/// label values, duplicate labels, unparseable values or timestamps, trailing characters, an
/// unknown `# TYPE`, a second `# TYPE` for one family, a histogram bucket without `le` or a
/// summary quantile sample without `quantile`.
Expected<Scrape> parse_prometheus(std::string_view text);

/// Sum of the values of every sample named `name` whose labels include all of `match`, over all
/// label sets (e.g. one counter per engine or rank). nullopt when no sample matches.
std::optional<double> sum_samples(const Scrape& scrape, std::string_view name,
                                  const Labels& match = {});

/// Where prefix-cache numbers were read from.
enum class PrefixCacheSource {
  kNone,
  kVllm,            // vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total (vLLM v1)
  kVllmGpu,         // vllm:gpu_prefix_cache_queries_total / _hits_total (older v1 releases)
  kSglangTokens,    // sglang:prompt_tokens_total / sglang:cached_tokens_total
  kSglangRealtime,  // sglang:realtime_tokens_total{mode="prefill_compute"|"prefill_cache"}
  kSglangGauge,     // sglang:cache_hit_rate (a gauge: a recent rate, not a counter)
};

/// "vllm", "vllm_gpu", "sglang_tokens", "sglang_realtime", "sglang_gauge", "none".
std::string_view to_string(PrefixCacheSource source);

/// Prefix-cache counters of one scrape, in prompt tokens, summed over engines/ranks.
struct PrefixCacheCounters {
  PrefixCacheSource source = PrefixCacheSource::kNone;
  double queries = 0;  // prompt tokens looked up (counter sources)
  double hits = 0;     // of those, found cached
  double gauge = 0;    // kSglangGauge: the mean of sglang:cache_hit_rate over its label sets
};

/// Reads the prefix-cache numbers of `scrape`, trying in order: vLLM's names (serve-sim uses
/// them), vLLM's older gpu_ names, SGLang's per-request counters, SGLang's per-mode token
/// counters, SGLang's hit-rate gauge. SGLang names are those of sgl-project/sglang
/// python/sglang/srt/metrics/collector.py (TokenizerMetricsCollector: cached_tokens_total and
/// prompt_tokens_total, counted when a request finishes; SchedulerMetricsCollector:
/// realtime_tokens_total, only updated each log interval, and the cache_hit_rate gauge).
PrefixCacheCounters read_prefix_cache(const Scrape& scrape);

/// The prefix-cache hit rate (0..1) between two scrapes: Δhits/Δqueries of a counter source.
/// nullopt when either scrape has no counters, the sources differ, or Δqueries <= 0 (nothing
/// was looked up, or the server restarted). For SGLang's gauge: the gauge of `after`.
std::optional<double> prefix_hit_rate(const PrefixCacheCounters& before,
                                      const PrefixCacheCounters& after);

}  // namespace ib::metrics
