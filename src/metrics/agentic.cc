#include "metrics/agentic.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/clock.h"
#include "core/strings.h"
#include "metrics/stats.h"

namespace ib::metrics {

namespace json = boost::json;

namespace {

constexpr std::array<double, 6> kPoints = {1, 50, 75, 90, 95, 99};

// Statistics of `values` (consumed). InferenceX drops non-positive and non-finite latencies;
// callers filter what must be positive, this only drops non-finite values.
AgenticDist dist(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  AgenticDist d;
  const Summary s = summarize(values, kPoints);
  d.count = static_cast<int64_t>(s.count);
  if (s.count == 0) return d;
  d.mean = s.mean;
  d.std = s.std;
  d.min = s.min;
  d.max = s.max;
  d.p1 = s.percentiles[0];
  d.p50 = s.percentiles[1];
  d.p75 = s.percentiles[2];
  d.p90 = s.percentiles[3];
  d.p95 = s.percentiles[4];
  d.p99 = s.percentiles[5];
  return d;
}

// Interactivity from per-request costs x_i (seconds per token, or ITL seconds): 1/percentile_q(x)
// (so p90 is the slow tail), 1/mean(x), and the population std of 1/x_i. Keeps x_i > 0 only.
Interactivity agentic_inverse(std::vector<double> x) {
  std::erase_if(x, [](double v) { return !(v > 0) || !std::isfinite(v); });
  Interactivity out;
  out.count = static_cast<int64_t>(x.size());
  if (x.empty()) return out;
  std::sort(x.begin(), x.end());
  double sum = 0;
  for (double v : x) sum += v;
  out.mean = static_cast<double>(x.size()) / sum;
  out.p50 = 1.0 / percentile_sorted(x, 50);
  out.p75 = 1.0 / percentile_sorted(x, 75);
  out.p90 = 1.0 / percentile_sorted(x, 90);
  out.p95 = 1.0 / percentile_sorted(x, 95);
  std::vector<double> rates;
  rates.reserve(x.size());
  for (double v : x) rates.push_back(1.0 / v);
  out.std = summarize(rates, {}).std;
  return out;
}

double ratio(int64_t num, int64_t den) {
  return den > 0 ? static_cast<double>(num) / static_cast<double>(den) : 0.0;
}

// Per-request values collected from the profiling records, summarized afterwards.
struct AgenticSamples {
  std::vector<double> ttft, e2el, itl, norm, isl, osl, expected, drift_ratio, drift_overhead;
  std::vector<double> icl;               // gaps between content events (s)
  std::vector<int32_t> counts;           // scratch: one request's tokens per event
  int64_t event_tokens = 0, events = 0;  // of the requests whose tokens per event are known
  std::vector<int64_t> ends;                             // done_ns of the successful requests
  std::unordered_map<std::string, int64_t> per_session;  // profiling requests per session id
  int64_t first_send = std::numeric_limits<int64_t>::max();
  int64_t last_done = std::numeric_limits<int64_t>::min();
  int64_t hit_blocks = 0, total_blocks = 0;
};

// Counts a failed request: a context overflow, or its failure cause.
void count_agentic_error(const RequestRecord& r, AgenticMetrics& m) {
  ++m.errors;
  if (is_context_overflow(r.error)) {
    ++m.context_overflows;
    ++m.error_categories["context_overflow"];
  } else {
    ++m.error_categories[std::string(failure_cause_name(r.failure))];
  }
}

// A successful request's tokens, cache blocks, token drift and send/done times.
void collect_agentic_tokens(const RequestRecord& r, const AgenticRequestInfo& a, AgenticMetrics& m,
                            AgenticSamples& s) {
  const int64_t out = r.output_tokens();
  const int64_t in = r.input_tokens();
  m.total_input_tokens += in;
  m.total_output_tokens += out;
  s.isl.push_back(static_cast<double>(in));
  s.osl.push_back(static_cast<double>(out));
  if (a.recorded_out > 0) s.expected.push_back(static_cast<double>(a.recorded_out));
  s.hit_blocks += a.theoretical_hit_blocks;
  s.total_blocks += a.theoretical_total_blocks;
  if (r.prompt_tokens >= 0 && a.recorded_in > 0) {
    s.drift_ratio.push_back(static_cast<double>(r.prompt_tokens) /
                            static_cast<double>(a.recorded_in));
    s.drift_overhead.push_back(static_cast<double>(r.prompt_tokens - a.recorded_in));
  }
  if (r.send_ns > 0) s.first_send = std::min(s.first_send, r.send_ns);
  if (r.done_ns > 0) {
    s.last_done = std::max(s.last_done, r.done_ns);
    s.ends.push_back(r.done_ns);
  }
}

// A successful request's TTFT, E2EL, normalized E2EL and ITL, where observed.
void collect_agentic_latencies(const RequestRecord& r, AgenticMetrics& m, AgenticSamples& s) {
  if (r.content_ns.empty()) return;  // no TTFT observation (not expected of a success)
  const int64_t out = r.output_tokens();
  ++m.ttft_observations;
  const double ttft_s = ns_to_s(r.content_ns.front() - r.send_ns);
  const double e2el_s = ns_to_s(r.content_ns.back() - r.send_ns);
  if (ttft_s > 0) s.ttft.push_back(ttft_s);
  if (e2el_s > 0) s.e2el.push_back(e2el_s);
  if (e2el_s > 0 && out > 0) s.norm.push_back(e2el_s / static_cast<double>(out));
  if (out >= 2) {
    ++m.itl_observations;
    const double itl_s = (e2el_s - ttft_s) / static_cast<double>(out - 1);
    if (itl_s > 0) s.itl.push_back(itl_s);
  }
  // The stream's cadence (docs/metrics.md, "Tokens per event"): AgentX's ITL above is per token
  // already (the server's count over the decode time); these say how the tokens arrived.
  for (size_t i = 1; i < r.content_ns.size(); ++i) {
    s.icl.push_back(ns_to_s(r.content_ns[i] - r.content_ns[i - 1]));
  }
  if (event_token_counts(r, &s.counts) != EventTokens::kUnknown) {
    for (int32_t n : s.counts) s.event_tokens += n;
    s.events += static_cast<int64_t>(s.counts.size());
  }
}

// Counts the records (warm-up, profiling, errors, successes) into m and collects the profiling
// successes' values.
AgenticSamples collect_agentic_samples(std::span<const RequestRecord> records,
                                       std::span<const AgenticRequestInfo> info,
                                       AgenticMetrics& m) {
  static const AgenticRequestInfo kNoInfo;
  AgenticSamples s;
  for (size_t i = 0; i < records.size(); ++i) {
    const RequestRecord& r = records[i];
    const AgenticRequestInfo& a = i < info.size() ? info[i] : kNoInfo;
    if (!a.profiling) {
      ++m.warmup_records;
      continue;
    }
    ++m.requests;
    if (!a.session_id.empty()) ++s.per_session[a.session_id];
    if (!r.ok()) {
      count_agentic_error(r, m);
      continue;
    }
    ++m.successful;
    collect_agentic_tokens(r, a, m, s);
    collect_agentic_latencies(r, m, s);
  }
  return s;
}

// Sessions, their mean and largest number of profiling requests.
void summarize_sessions(const std::unordered_map<std::string, int64_t>& per_session,
                        AgenticMetrics& m) {
  m.sessions = static_cast<int64_t>(per_session.size());
  int64_t in_sessions = 0;
  for (const auto& [id, n] : per_session) {
    in_sessions += n;
    m.max_requests_per_session = std::max(m.max_requests_per_session, n);
  }
  m.requests_per_session = ratio(in_sessions, m.sessions);
}

// Token throughputs (total and per GPU) over first send to last completion.
void compute_agentic_throughput(const AgenticSamples& s, AgenticMetrics& m) {
  if (s.first_send == std::numeric_limits<int64_t>::max() || s.last_done <= s.first_send) return;
  m.duration_s = ns_to_s(s.last_done - s.first_send);
  const double g = static_cast<double>(m.num_gpus);
  m.input_tps = static_cast<double>(m.total_input_tokens) / m.duration_s;
  m.output_tps = static_cast<double>(m.total_output_tokens) / m.duration_s;
  m.total_tps = m.input_tps + m.output_tps;
  m.input_tps_per_gpu = m.input_tps / g;
  m.output_tps_per_gpu = m.output_tps / g;
  m.total_tps_per_gpu = m.total_tps / g;
}

// Completions per whole second after the first (ends is sorted); under one second of
// completions, only the mean rate.
void compute_agentic_qps(std::vector<int64_t>& ends, AgenticMetrics& m) {
  if (ends.empty()) return;
  std::sort(ends.begin(), ends.end());
  const int64_t span = ends.back() - ends.front();
  constexpr int64_t kWindow = 1'000'000'000;
  m.qps_windows = span / kWindow;
  if (m.qps_windows > 0) {
    std::vector<double> counts(static_cast<size_t>(m.qps_windows), 0.0);
    for (int64_t t : ends) {
      const int64_t w = (t - ends.front()) / kWindow;
      if (w < m.qps_windows) counts[static_cast<size_t>(w)] += 1;
    }
    m.qps = dist(std::move(counts));
  } else if (span > 0) {
    m.qps.mean = static_cast<double>(ends.size()) / ns_to_s(span);
  }
}

}  // namespace

bool is_context_overflow(std::string_view error_text) {
  const std::string text = lower(error_text);
  for (std::string_view needle :
       {"context length", "maximum context", "context_length_exceeded", "prompt is too long"}) {
    if (text.find(needle) != std::string::npos) return true;
  }
  return false;
}

AgenticMetrics compute_agentic_metrics(std::span<const RequestRecord> records,
                                       std::span<const AgenticRequestInfo> info,
                                       const AgenticOptions& options) {
  AgenticMetrics m;
  m.num_gpus = std::max(1, options.num_gpus);
  m.records_total = static_cast<int64_t>(records.size());
  AgenticSamples s = collect_agentic_samples(records, info, m);
  summarize_sessions(s.per_session, m);

  m.ttft_s = dist(s.ttft);
  m.e2el_s = dist(s.e2el);
  m.itl_s = dist(s.itl);
  m.icl_s = dist(s.icl);
  if (s.events > 0) {
    m.tokens_per_event = static_cast<double>(s.event_tokens) / static_cast<double>(s.events);
  }
  m.intvty = agentic_inverse(s.itl);
  m.e2e_norm_intvty = agentic_inverse(s.norm);
  m.input_tokens = dist(s.isl);
  m.output_tokens = dist(s.osl);
  m.expected_output_tokens = dist(s.expected);
  m.token_ratio = dist(s.drift_ratio);
  m.token_overhead = dist(s.drift_overhead);

  compute_agentic_throughput(s, m);
  compute_agentic_qps(s.ends, m);
  if (s.total_blocks > 0) {
    m.theoretical_cache_hit_pct =
        100.0 * static_cast<double>(s.hit_blocks) / static_cast<double>(s.total_blocks);
  }
  m.ttft_coverage = ratio(m.ttft_observations, m.successful);
  m.itl_coverage = ratio(m.itl_observations, m.successful);
  return m;
}

std::vector<AgenticInvalid> agentic_validity(const AgenticMetrics& m,
                                             const AgenticRunFacts& facts) {
  std::vector<AgenticInvalid> out;
  const double error_rate = ratio(m.errors, m.requests);
  if (error_rate > kAgenticMaxErrorRate) {
    out.push_back(
        {"error_rate_exceeded",
         fmt::format("{} of {} profiling requests failed ({:.2f}%), above the {:g}% "
                     "limit",
                     m.errors, m.requests, 100 * error_rate, 100 * kAgenticMaxErrorRate)});
  }
  const int64_t overflow_base = m.successful + m.errors + facts.skipped_overflow;
  const double overflow_rate = ratio(m.context_overflows, overflow_base);
  if (overflow_rate > kAgenticMaxOverflowRate) {
    out.push_back(
        {"context_overflow_rate_exceeded",
         fmt::format("{} context overflows in {} requests ({} successful + {} errors + {} skipped "
                     "as overflowing) = {:.2f}%, above the {:g}% limit",
                     m.context_overflows, overflow_base, m.successful, m.errors,
                     facts.skipped_overflow, 100 * overflow_rate, 100 * kAgenticMaxOverflowRate)});
  }
  if (m.coverage() < kAgenticMinCoverage) {
    out.push_back(
        {"insufficient_profile_metric_coverage",
         fmt::format("TTFT observed for {} and ITL for {} of {} successful profiling requests "
                     "({:.2f}% / {:.2f}%), below the {:g}% required",
                     m.ttft_observations, m.itl_observations, m.successful, 100 * m.ttft_coverage,
                     100 * m.itl_coverage, 100 * kAgenticMinCoverage)});
  }
  const double recorded_s = facts.duration_s * facts.time_scale;
  if (recorded_s < facts.duration_floor_s) {
    out.push_back({"duration_below_floor",
                   facts.time_scale == 1
                       ? fmt::format("the benchmark duration {:g} s is below the {:g} s floor",
                                     facts.duration_s, facts.duration_floor_s)
                       : fmt::format("the benchmark duration {:g} s at time scale {:g} replays "
                                     "{:g} s of recorded time, below the {:g} s floor",
                                     facts.duration_s, facts.time_scale, recorded_s,
                                     facts.duration_floor_s)});
  }
  if (facts.cancelled) {
    out.push_back({"run_cancelled", "the run was cancelled before its duration ended"});
  }
  if (facts.time_scale != 1) {
    out.push_back({"time_scaled",
                   fmt::format("the replay ran {:g}x faster than recorded: a time-scaled run is "
                               "not submission-valid",
                               facts.time_scale)});
  }
  return out;
}

namespace {

json::object dist_json(const AgenticDist& d) {
  json::object o;
  o["count"] = d.count;
  if (d.count == 0) return o;
  o["mean"] = d.mean;
  o["std"] = d.std;
  o["min"] = d.min;
  o["max"] = d.max;
  o["p1"] = d.p1;
  o["p50"] = d.p50;
  o["p75"] = d.p75;
  o["p90"] = d.p90;
  o["p95"] = d.p95;
  o["p99"] = d.p99;
  return o;
}

json::object ms_json(const AgenticDist& s) {
  AgenticDist d = s;
  for (double* v :
       {&d.mean, &d.std, &d.min, &d.max, &d.p1, &d.p50, &d.p75, &d.p90, &d.p95, &d.p99}) {
    *v *= 1000.0;
  }
  return dist_json(d);
}

json::object intvty_json(const Interactivity& i) {
  json::object o;
  o["count"] = i.count;
  if (i.count == 0) return o;
  o["mean"] = i.mean;
  o["p50"] = i.p50;
  o["p75"] = i.p75;
  o["p90"] = i.p90;
  o["p95"] = i.p95;
  o["std"] = i.std;
  return o;
}

// InferenceX rounds every float of its aggregate to 5 decimals.
double r5(double v) {
  return std::isfinite(v) ? std::round(v * 1e5) / 1e5 : v;
}

json::object ix_stats(int64_t count, double mean, double p50, double p75, double p90, double p95,
                      double std) {
  json::object o;
  if (count == 0) return o;
  o["mean"] = r5(mean);
  o["p50"] = r5(p50);
  o["p75"] = r5(p75);
  o["p90"] = r5(p90);
  o["p95"] = r5(p95);
  o["std"] = r5(std);
  return o;
}

json::object ix_dist(const AgenticDist& d) {
  return ix_stats(d.count, d.mean, d.p50, d.p75, d.p90, d.p95, d.std);
}

json::object ix_intvty(const Interactivity& i) {
  return ix_stats(i.count, i.mean, i.p50, i.p75, i.p90, i.p95, i.std);
}

json::object counts_json(const std::map<std::string, int64_t>& counts) {
  json::object o;
  for (const auto& [k, v] : counts) o[k] = v;
  return o;
}

}  // namespace

json::object agentic_to_json(const AgenticMetrics& m) {
  json::object o;
  o["records_total"] = m.records_total;
  o["warmup_records"] = m.warmup_records;
  o["requests"] = m.requests;
  o["successful"] = m.successful;
  o["errors"] = m.errors;
  o["context_overflows"] = m.context_overflows;
  o["error_categories"] = counts_json(m.error_categories);
  o["sessions"] = m.sessions;
  o["requests_per_session"] = m.requests_per_session;
  o["max_requests_per_session"] = m.max_requests_per_session;
  o["ttft_ms"] = ms_json(m.ttft_s);
  o["e2el_ms"] = ms_json(m.e2el_s);
  o["itl_ms"] = ms_json(m.itl_s);
  o["icl_ms"] = ms_json(m.icl_s);
  o["mean_tokens_per_event"] =
      m.tokens_per_event ? json::value(*m.tokens_per_event) : json::value(nullptr);
  o["e2e_norm_intvty"] = intvty_json(m.e2e_norm_intvty);
  o["intvty"] = intvty_json(m.intvty);
  o["total_input_tokens"] = m.total_input_tokens;
  o["total_output_tokens"] = m.total_output_tokens;
  o["input_tokens"] = dist_json(m.input_tokens);
  o["output_tokens"] = dist_json(m.output_tokens);
  o["expected_output_tokens"] = dist_json(m.expected_output_tokens);
  json::object qps = dist_json(m.qps);
  qps["windows"] = m.qps_windows;
  if (m.qps.count == 0 && m.qps.mean > 0) qps["mean"] = m.qps.mean;
  o["qps"] = std::move(qps);
  o["duration_s"] = m.duration_s;
  o["num_gpus"] = m.num_gpus;
  o["input_throughput"] = m.input_tps;
  o["output_throughput"] = m.output_tps;
  o["total_token_throughput"] = m.total_tps;
  o["input_tput_per_gpu"] = m.input_tps_per_gpu;
  o["output_tput_per_gpu"] = m.output_tps_per_gpu;
  o["tput_per_gpu"] = m.total_tps_per_gpu;
  if (m.theoretical_cache_hit_pct) {
    o["theoretical_prefix_cache_hit_pct"] = *m.theoretical_cache_hit_pct;
  } else {
    o["theoretical_prefix_cache_hit_pct"] = nullptr;
  }
  o["prompt_token_ratio"] = dist_json(m.token_ratio);
  o["prompt_token_overhead"] = dist_json(m.token_overhead);
  o["ttft_observations"] = m.ttft_observations;
  o["itl_observations"] = m.itl_observations;
  o["ttft_coverage"] = m.ttft_coverage;
  o["itl_coverage"] = m.itl_coverage;
  return o;
}

json::object inferencex_agentic_json(const AgenticMetrics& m,
                                     const std::vector<AgenticInvalid>& reasons) {
  json::object o;
  o["num_requests_total"] = m.records_total;
  o["num_requests_successful"] = m.successful;
  json::object accounting;
  accounting["records_total"] = m.records_total;
  accounting["records_profiled"] = m.successful;
  accounting["records_dropped_total"] = m.warmup_records + m.errors;
  accounting["records_warmup_dropped"] = m.warmup_records;
  accounting["records_error_dropped"] = m.errors;
  accounting["error_categories"] = counts_json(m.error_categories);
  o["request_accounting"] = std::move(accounting);

  json::object rm;
  json::object qps = ix_dist(m.qps);
  if (m.qps.count == 0 && m.qps.mean > 0) qps["mean"] = r5(m.qps.mean);
  qps["samples"] = m.qps_windows;
  rm["qps"] = std::move(qps);
  json::object latency;
  latency["ttft"] = ix_dist(m.ttft_s);
  latency["e2el"] = ix_dist(m.e2el_s);
  latency["itl"] = ix_dist(m.itl_s);
  latency["tpot"] = ix_dist(m.itl_s);  // the same per-request quantity
  latency["intvty"] = ix_intvty(m.intvty);
  latency["e2e_norm_intvty"] = ix_intvty(m.e2e_norm_intvty);
  rm["latency"] = std::move(latency);
  json::object tokens;
  tokens["input"] = ix_dist(m.input_tokens);
  tokens["output_actual"] = ix_dist(m.output_tokens);
  tokens["output_expected"] = ix_dist(m.expected_output_tokens);
  rm["tokens"] = std::move(tokens);
  json::object tput;
  tput["input_tput_tps"] = r5(m.input_tps);
  tput["output_tput_tps"] = r5(m.output_tps);
  tput["total_tput_tps"] = r5(m.total_tps);
  tput["duration_seconds"] = r5(m.duration_s);
  json::object per_gpu;
  per_gpu["input_tput_tps"] = r5(m.input_tps_per_gpu);
  per_gpu["output_tput_tps"] = r5(m.output_tps_per_gpu);
  per_gpu["total_tput_tps"] = r5(m.total_tps_per_gpu);
  tput["per_gpu"] = std::move(per_gpu);
  rm["throughput"] = std::move(tput);
  json::object cache;
  if (m.theoretical_cache_hit_pct) {
    cache["theoretical_cache_hit_rate"] = r5(*m.theoretical_cache_hit_pct / 100.0);
  } else {
    cache["theoretical_cache_hit_rate"] = nullptr;
  }
  rm["cache"] = std::move(cache);
  o["request_metrics"] = std::move(rm);

  o["submission_valid"] = submission_valid(reasons);
  json::array why;
  for (const AgenticInvalid& r : reasons) {
    json::object x;
    x["reason"] = r.reason;
    x["message"] = r.message;
    why.push_back(std::move(x));
  }
  o["submission_invalid_reasons"] = std::move(why);
  return o;
}

}  // namespace ib::metrics
