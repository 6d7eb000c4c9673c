#include "metrics/result.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/clock.h"
#include "metrics/keys.h"

namespace ib::metrics {

std::string percentile_key(double q) {
  if (q == std::floor(q)) return fmt::format("p{}", static_cast<int64_t>(q));
  return fmt::format("p{}", q);
}

namespace {

// The per-request samples of a run's latency statistics (successful requests only).
struct LatencySamples {
  std::vector<double> ttft, tpot, itl, e2el, sched_ttft, sched_e2el, queue, norm;
  std::vector<double> icl, tokens_per_event, stall, request_al;
  std::array<std::vector<double>, kTtftPartCount> ttft_parts;
  std::vector<double> server_queue, server_ttft, outside_engine, server_generation;
  std::vector<double> ttft_unattributed;
  std::vector<int32_t> counts;  // scratch: one request's tokens per event
};

// A failed request: counted by cause, with the cause's first message and up to 5 distinct
// messages kept.
void count_failure(const RequestRecord& r, BenchMetrics& m) {
  ++m.failed;
  const std::string cause(failure_cause_name(r.failure));
  ++m.failures_by_cause[cause];
  m.first_error_by_cause.try_emplace(cause, r.error);
  if (m.error_samples.size() < 5 && !r.error.empty() &&
      std::find(m.error_samples.begin(), m.error_samples.end(), r.error) == m.error_samples.end()) {
    m.error_samples.push_back(r.error);
  }
}

// A successful request's tokens: the totals, and how the server's usage agrees with the client's
// prompt lengths and requested output lengths.
void count_tokens(const RequestRecord& r, BenchMetrics& m) {
  m.total_input_tokens += r.input_tokens();
  m.total_output_tokens += r.output_tokens();
  if (r.completion_tokens < 0) ++m.requests_without_usage;
  if (r.input_exact && r.prompt_tokens >= 0) {
    ++m.prompt_tokens_checked;
    m.prompt_tokens_client += r.input_len;
    m.prompt_tokens_server += r.prompt_tokens;
    const int64_t diff = r.prompt_tokens - r.input_len;
    if (diff != 0) {
      ++m.prompt_token_mismatches;
      if (std::abs(diff) > std::abs(m.prompt_token_max_diff)) m.prompt_token_max_diff = diff;
    }
  }
  if (r.completion_tokens >= 0 && r.output_len > 0 &&
      std::abs(static_cast<double>(r.completion_tokens - r.output_len)) > 0.05 * r.output_len) {
    ++m.usage_length_mismatches;
  }
}

// A successful request's gaps between content events (inter-chunk latency, its longest one) and,
// where its tokens per event are known, its per-token ITL and tokens per event.
void add_event_gaps(const RequestRecord& r, LatencySamples& s, BenchMetrics& m) {
  int64_t longest = 0;
  for (size_t i = 1; i < r.content_ns.size(); ++i) {
    const int64_t gap = r.content_ns[i] - r.content_ns[i - 1];
    longest = std::max(longest, gap);
    s.icl.push_back(ns_to_ms(gap));
  }
  if (r.content_ns.size() > 1) s.stall.push_back(ns_to_ms(longest));
  if (r.spec_steps > 0) {
    ++m.spec_requests;
    m.spec_steps += r.spec_steps;
    m.spec_accepted += r.spec_accepted;
    s.request_al.push_back(1.0 + static_cast<double>(r.spec_accepted) / r.spec_steps);
  }
  switch (event_token_counts(r, &s.counts)) {
    case EventTokens::kUsageDeltas:
      ++m.requests_counted_by_usage;
      for (size_t i = 1; i + 1 < s.counts.size(); ++i) {
        m.decode_event_tokens += s.counts[i];
        ++m.decode_events;
      }
      break;
    case EventTokens::kOnePerEvent:
      ++m.requests_one_per_event;
      break;
    case EventTokens::kTokenizer:
      ++m.requests_counted_by_tokenizer;
      if (r.completion_tokens >= 0) {
        // The tokenizer's own count, before it was scaled to the server's.
        for (int32_t n : r.text_tokens) m.tokenizer_tokens += std::max(n, 1);
        m.tokenizer_usage_tokens += r.completion_tokens;
      }
      break;
    case EventTokens::kUnknown:
      ++m.requests_uncounted;
      return;
  }
  append_per_token_itl(r, s.counts, &s.itl);
  for (int32_t n : s.counts) s.tokens_per_event.push_back(n);
}

// A successful request's latencies into `s`, and whether it meets every goodput objective.
void add_latencies(const RequestRecord& r, const GoodputSlo& slo, LatencySamples& s,
                   BenchMetrics& m) {
  const int64_t out = r.output_tokens();
  // A successful request has at least one content event (see load/ classification).
  const int64_t first = r.content_ns.front();
  const int64_t last = r.content_ns.back();
  const double ttft_ms = ns_to_ms(first - r.send_ns);
  const double e2el_ms = ns_to_ms(last - r.send_ns);
  s.ttft.push_back(ttft_ms);
  s.e2el.push_back(e2el_ms);
  if (r.ttft_parts.size() == kTtftPartCount) {
    double sum = 0;
    for (size_t i = 0; i < kTtftPartCount; ++i) {
      s.ttft_parts[i].push_back(r.ttft_parts[i]);
      sum += r.ttft_parts[i];
    }
    s.ttft_unattributed.push_back(ttft_ms - sum);
    ++m.ttft_attributed;
  }
  if (r.server_queue_ms >= 0 && r.server_ttft_ms >= 0) {
    s.server_queue.push_back(r.server_queue_ms);
    s.server_ttft.push_back(r.server_ttft_ms);
    s.outside_engine.push_back(ttft_ms - r.server_queue_ms - r.server_ttft_ms);
    if (r.server_generation_ms >= 0) s.server_generation.push_back(r.server_generation_ms);
    ++m.server_timed;
  }
  s.sched_ttft.push_back(ns_to_ms(first - r.sched_ns));
  s.sched_e2el.push_back(ns_to_ms(last - r.sched_ns));
  s.queue.push_back(ns_to_ms(r.send_ns - r.sched_ns));
  const double tpot_ms = out > 1 ? (e2el_ms - ttft_ms) / static_cast<double>(out - 1) : 0.0;
  if (out > 1) s.tpot.push_back(tpot_ms);
  if (slo.any() && (!slo.ttft_ms || ttft_ms <= *slo.ttft_ms) &&
      (!slo.tpot_ms || tpot_ms <= *slo.tpot_ms) && (!slo.e2el_ms || e2el_ms <= *slo.e2el_ms)) {
    ++m.good_requests;
  }
  if (out > 0) s.norm.push_back(e2el_ms / 1000.0 / static_cast<double>(out));
  add_event_gaps(r, s, m);
}

// The run's duration (first send to last completion) and the rates over it.
void set_throughput(std::span<const RequestRecord> records, BenchMetrics& m) {
  int64_t first_send = std::numeric_limits<int64_t>::max();
  int64_t last_done = std::numeric_limits<int64_t>::min();
  for (const RequestRecord& r : records) {
    if (r.send_ns > 0) first_send = std::min(first_send, r.send_ns);
    if (r.done_ns > 0) last_done = std::max(last_done, r.done_ns);
  }
  if (first_send != std::numeric_limits<int64_t>::max() && last_done > first_send) {
    m.duration_s = ns_to_s(last_done - first_send);
  }
  if (m.duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / m.duration_s;
    m.output_throughput = static_cast<double>(m.total_output_tokens) / m.duration_s;
    m.total_token_throughput =
        static_cast<double>(m.total_input_tokens + m.total_output_tokens) / m.duration_s;
    m.request_goodput = static_cast<double>(m.good_requests) / m.duration_s;
  }
}

void summarize_latencies(LatencySamples& s, const std::vector<double>& q, BenchMetrics& m) {
  m.ttft_ms = summarize(s.ttft, q);
  m.tpot_ms = summarize(s.tpot, q);
  m.itl_ms = summarize(s.itl, q);
  m.e2el_ms = summarize(s.e2el, q);
  m.sched_ttft_ms = summarize(s.sched_ttft, q);
  m.sched_e2el_ms = summarize(s.sched_e2el, q);
  m.queue_ms = summarize(s.queue, q);
  m.e2e_norm_s_per_tok = summarize(s.norm, q);
  m.icl_ms = summarize(s.icl, q);
  m.tokens_per_event = summarize(s.tokens_per_event, q);
  m.stall_ms = summarize(s.stall, q);
  m.request_acceptance_length = summarize(s.request_al, q);
  for (size_t i = 0; i < kTtftPartCount; ++i) m.ttft_parts[i] = summarize(s.ttft_parts[i], q);
  m.ttft_unattributed = summarize(s.ttft_unattributed, q);
  m.server_queue_ms = summarize(s.server_queue, q);
  m.server_ttft_ms = summarize(s.server_ttft, q);
  m.outside_engine_ms = summarize(s.outside_engine, q);
  m.server_generation_ms = summarize(s.server_generation, q);
}

// What a reader of the numbers must know: estimated output tokens, usage that disagrees with the
// request, and an undefined TPOT.
void add_warnings(BenchMetrics& m) {
  if (m.requests_without_usage > 0) {
    m.warnings.push_back(fmt::format(
        "{} of {} successful requests returned no usage; their output tokens are estimated "
        "from the number of content events",
        m.requests_without_usage, m.completed));
  }
  if (m.usage_length_mismatches > 0) {
    m.warnings.push_back(fmt::format(
        "{} of {} successful requests: the server's completion_tokens differ from the requested "
        "output length by more than 5%",
        m.usage_length_mismatches, m.completed));
  }
  if (m.prompt_token_mismatches > 0) {
    m.warnings.push_back(fmt::format(
        "{} of {} prompts: the server counted a different number of prompt tokens than the "
        "client (client {}, server {} in all; largest difference {:+}); the server's tokenizer, "
        "chat template or BOS handling differs from the client's (--tokenizer, --chat-template)",
        m.prompt_token_mismatches, m.prompt_tokens_checked, m.prompt_tokens_client,
        m.prompt_tokens_server, m.prompt_token_max_diff));
  }
  if (m.completed > 0 && m.tpot_ms.count == 0) {
    m.warnings.push_back("no request produced more than one output token: TPOT is undefined");
  }
  if (m.requests_uncounted > 0) {
    m.warnings.push_back(itl_note(m));
  }
}

}  // namespace

BenchMetrics compute_metrics(std::span<const RequestRecord> records,
                             const MetricsOptions& options) {
  BenchMetrics m;
  m.num_requests = static_cast<int64_t>(records.size());
  LatencySamples samples;
  for (const RequestRecord& r : records) {
    m.retries += r.retries;
    if (!r.ok()) {
      count_failure(r, m);
      continue;
    }
    ++m.completed;
    count_tokens(r, m);
    add_latencies(r, options.goodput, samples, m);
  }
  set_throughput(records, m);
  summarize_latencies(samples, options.percentiles, m);
  add_warnings(m);
  return m;
}

std::string failure_summary(const BenchMetrics& m) {
  std::vector<std::pair<std::string, int64_t>> causes(m.failures_by_cause.begin(),
                                                      m.failures_by_cause.end());
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [cause, n] : causes) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} \u00d7 {}", n, cause);
    auto it = m.first_error_by_cause.find(cause);
    if (it != m.first_error_by_cause.end() && !it->second.empty()) {
      std::string first = it->second.substr(0, it->second.find('\n'));
      if (first.size() > 160) first = first.substr(0, 157) + "...";
      out += ": " + first;
    }
  }
  return out;
}

std::string itl_note(const BenchMetrics& m) {
  if (m.requests_uncounted == 0) return "";
  const int64_t known =
      m.requests_counted_by_usage + m.requests_one_per_event + m.requests_counted_by_tokenizer;
  return fmt::format(
      "{} of {} successful requests did not say how many tokens each content event carried "
      "(no count on every event, and no final usage equal to their events: several tokens an "
      "event, or no usage at all): per-token ITL is {}; the gaps between events are "
      "inter-chunk latency (icl), not ITL. Ask for a count on every event (bench "
      "--continuous-usage: stream_options.continuous_usage_stats, as vLLM gives it), or count "
      "the text with the served model's tokenizer (--tokenizer)",
      m.requests_uncounted, m.completed,
      known == 0 ? std::string("not computed") : fmt::format("over the other {} only", known));
}

namespace {

void put_summary(boost::json::object& o, std::string_view name, const Summary& s,
                 const MetricsOptions& options) {
  if (s.count == 0 &&
      (name == "tpot_ms" || name == "itl_ms" || name == "icl_ms" || name == "tokens_per_event")) {
    // Undefined without a request of two output tokens: null, never a 0 that was not measured.
    o[fmt::format("mean_{}", name)] = nullptr;
    o[fmt::format("median_{}", name)] = nullptr;
    o[fmt::format("std_{}", name)] = nullptr;
    for (double p : options.percentiles) o[fmt::format("{}_{}", percentile_key(p), name)] = nullptr;
    return;
  }
  o[fmt::format("mean_{}", name)] = s.mean;
  o[fmt::format("median_{}", name)] = s.median;
  o[fmt::format("std_{}", name)] = s.std;
  for (size_t i = 0; i < options.percentiles.size(); ++i) {
    const std::string key = fmt::format("{}_{}", percentile_key(options.percentiles[i]), name);
    if (i < s.percentiles.size()) {
      o[key] = s.percentiles[i];
    } else {
      o[key] = nullptr;  // a summary made without this percentile
    }
  }
}

// Interactivity from TPOT; null (NaN) where TPOT is undefined.
double inverse(double v, double scale) {
  return v > 0 ? scale / v : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

namespace {}  // namespace

double response_acceptance_length(const BenchMetrics& m) {
  if (m.spec_steps <= 0) return std::nan("");
  return 1.0 + static_cast<double>(m.spec_accepted) / static_cast<double>(m.spec_steps);
}

namespace {

// Tokens, not events (docs/metrics.md, "Tokens per event"): the gaps between events, the tokens
// they carried and how those were known, the longest stalls, the client's acceptance length.
void put_stream(boost::json::object& o, const BenchMetrics& m, const MetricsOptions& options) {
  put_summary(o, "icl_ms", m.icl_ms, options);
  put_summary(o, "tokens_per_event", m.tokens_per_event, options);
  put_summary(o, "stall_ms", m.stall_ms, options);  // each request's longest gap
  if (m.stall_ms.count > 0) {
    o["max_stall_ms"] = m.stall_ms.max;  // the run's longest
  } else {
    o["max_stall_ms"] = nullptr;
  }
  o["event_tokens"] = boost::json::object{
      {event_tokens_name(EventTokens::kUsageDeltas), m.requests_counted_by_usage},
      {event_tokens_name(EventTokens::kOnePerEvent), m.requests_one_per_event},
      {event_tokens_name(EventTokens::kTokenizer), m.requests_counted_by_tokenizer},
      {event_tokens_name(EventTokens::kUnknown), m.requests_uncounted}};
  if (m.requests_uncounted > 0) o["itl_note"] = itl_note(m);
  if (m.tokenizer_usage_tokens > 0) {
    // How far the client's count of the streamed text is from the server's (1.0: the same).
    o["tokenizer_count_ratio"] =
        static_cast<double>(m.tokenizer_tokens) / static_cast<double>(m.tokenizer_usage_tokens);
  }
  // Only from usage deltas: an event counted as one token by the final usage says nothing.
  if (m.decode_events > 0) {
    o["client_acceptance_length"] =
        static_cast<double>(m.decode_event_tokens) / static_cast<double>(m.decode_events);
  } else {
    o["client_acceptance_length"] = nullptr;
  }
  // The server's own count, request by request (vLLM's --per-request-spec-decode-metrics).
  if (m.spec_steps > 0) {
    o["response_acceptance_length"] = response_acceptance_length(m);
    const Summary& al = m.request_acceptance_length;
    o["response_spec_decoding"] = boost::json::object{
        {"requests", m.spec_requests},
        {"steps", m.spec_steps},
        {"accepted_draft_tokens", m.spec_accepted},
        {"per_request_acceptance_length", boost::json::object{{"mean", al.mean},
                                                              {"median", al.median},
                                                              {"std", al.std},
                                                              {"min", al.min},
                                                              {"max", al.max}}}};
  } else {
    o["response_acceptance_length"] = nullptr;
  }
  // A disaggregated deployment: where TTFT went, by part (docs/metrics.md, "TTFT attribution").
  if (m.ttft_attributed > 0) {
    boost::json::object parts;
    for (size_t i = 0; i < kTtftPartCount; ++i) {
      const Summary& p = m.ttft_parts[i];
      parts[kTtftPartKeys[i]] =
          boost::json::object{{"mean_ms", p.mean}, {"median_ms", p.median}, {"max_ms", p.max}};
    }
    const Summary& u = m.ttft_unattributed;
    o["ttft_attribution"] = boost::json::object{
        {"requests", m.ttft_attributed},
        {"parts", std::move(parts)},
        {"unattributed",
         boost::json::object{
             {"mean_ms", u.mean}, {"median_ms", u.median}, {"min_ms", u.min}, {"max_ms", u.max}}}};
  }
  // The engine's own per-request timing (docs/metrics.md, "Server timing").
  if (m.server_timed > 0) {
    auto part = [](const Summary& p) {
      return boost::json::object{
          {"mean_ms", p.mean}, {"median_ms", p.median}, {"min_ms", p.min}, {"max_ms", p.max}};
    };
    boost::json::object st{{"requests", m.server_timed},
                           {"queue", part(m.server_queue_ms)},
                           {"engine_ttft", part(m.server_ttft_ms)},
                           {"outside_engine", part(m.outside_engine_ms)}};
    if (m.server_generation_ms.count > 0) st["generation"] = part(m.server_generation_ms);
    o["server_timing"] = std::move(st);
  }
}

}  // namespace

boost::json::object metrics_to_json(const BenchMetrics& m, const MetricsOptions& options) {
  boost::json::object o;
  // The headline keys come from the one table (metrics/keys.h); the families below add the rest.
  for (const MetricKey& k : kHeadlineMetrics) {
    const double v = k.value(m, options);
    if (std::isnan(v)) continue;
    if (k.integer) {
      o[k.key] = static_cast<int64_t>(v);
    } else {
      o[k.key] = v;
    }
  }
  o["duration"] = m.duration_s;
  o["total_input_tokens"] = m.total_input_tokens;
  o["total_output_tokens"] = m.total_output_tokens;
  if (options.goodput.any()) {
    boost::json::object slo;
    if (options.goodput.ttft_ms) slo["ttft_ms"] = *options.goodput.ttft_ms;
    if (options.goodput.tpot_ms) slo["tpot_ms"] = *options.goodput.tpot_ms;
    if (options.goodput.e2el_ms) slo["e2el_ms"] = *options.goodput.e2el_ms;
    o["goodput_slo"] = std::move(slo);
    o["good_requests"] = m.good_requests;
    o["request_goodput"] = m.request_goodput;
  }
  const double gpus = std::max(1, options.num_gpus);
  o["num_gpus"] = options.num_gpus;
  // Disaggregated: input over the prefill GPUs, which compute it (InferenceX's rule).
  o["input_tput_per_gpu"] = (m.total_token_throughput - m.output_throughput) /
                            (options.prefill_gpus > 0 ? options.prefill_gpus : gpus);
  if (options.prefill_gpus > 0 || options.decode_gpus > 0) {
    o["num_prefill_gpu"] = options.prefill_gpus;
    o["num_decode_gpu"] = options.decode_gpus;
  }

  put_summary(o, "ttft_ms", m.ttft_ms, options);
  put_summary(o, "tpot_ms", m.tpot_ms, options);
  put_summary(o, "itl_ms", m.itl_ms, options);
  put_summary(o, "e2el_ms", m.e2el_ms, options);
  put_stream(o, m, options);

  // Interactivity (tok/s/user) = 1 / TPOT at each TPOT statistic (docs/architecture.md, "Metric
  // definitions").
  o["mean_intvty"] = inverse(m.tpot_ms.mean, 1000.0);
  if (m.tpot_ms.count == 0) o["median_intvty"] = nullptr;  // not measured: null, as TPOT
  for (size_t i = 0; i < options.percentiles.size(); ++i) {
    o[fmt::format("{}_intvty", percentile_key(options.percentiles[i]))] =
        inverse(m.tpot_ms.percentiles[i], 1000.0);
  }
  // E2E-normalized interactivity: 1 / percentile_q(E2ELᵢ / outᵢ).
  o["mean_e2e_norm_intvty"] = inverse(m.e2e_norm_s_per_tok.mean, 1.0);
  o["median_e2e_norm_intvty"] = inverse(m.e2e_norm_s_per_tok.median, 1.0);
  for (size_t i = 0; i < options.percentiles.size(); ++i) {
    o[fmt::format("{}_e2e_norm_intvty", percentile_key(options.percentiles[i]))] =
        inverse(m.e2e_norm_s_per_tok.percentiles[i], 1.0);
  }
  // Latency from the scheduled send time: backlog in the client or server cannot hide here.
  put_summary(o, "sched_ttft_ms", m.sched_ttft_ms, options);
  put_summary(o, "sched_e2el_ms", m.sched_e2el_ms, options);
  put_summary(o, "queue_ms", m.queue_ms, options);

  boost::json::object failures, first_errors;
  for (const auto& [cause, n] : m.failures_by_cause) failures[cause] = n;
  for (const auto& [cause, e] : m.first_error_by_cause) first_errors[cause] = e;
  o["failures"] = std::move(failures);
  o["first_error_by_cause"] = std::move(first_errors);
  boost::json::array samples;
  for (const auto& e : m.error_samples) samples.emplace_back(e);
  o["error_samples"] = std::move(samples);
  o["retries"] = m.retries;
  o["requests_without_usage"] = m.requests_without_usage;
  o["output_tokens_estimated"] = m.requests_without_usage > 0;
  if (m.prompt_tokens_checked > 0) {
    boost::json::object c;
    c["checked"] = m.prompt_tokens_checked;
    c["client_total"] = m.prompt_tokens_client;
    c["server_total"] = m.prompt_tokens_server;
    c["mismatches"] = m.prompt_token_mismatches;
    c["max_difference"] = m.prompt_token_max_diff;
    o["prompt_token_check"] = std::move(c);
  }
  boost::json::array warnings;
  for (const auto& w : m.warnings) warnings.emplace_back(w);
  o["warnings"] = std::move(warnings);
  return o;
}

boost::json::object record_to_json(const RequestRecord& r, int64_t origin_ns) {
  auto ms = [&](int64_t t) -> boost::json::value {
    if (t == 0) return nullptr;
    return ns_to_ms(t - origin_ns);
  };
  boost::json::object o;
  o["index"] = r.index;
  o["input_len"] = r.input_len;
  o["output_len"] = r.output_len;
  o["sched_ms"] = ms(r.sched_ns);
  o["send_ms"] = ms(r.send_ns);
  o["first_byte_ms"] = ms(r.first_byte_ns);
  o["done_ms"] = ms(r.done_ns);
  boost::json::array content;
  content.reserve(r.content_ns.size());
  for (int64_t t : r.content_ns) content.emplace_back(ns_to_ms(t - origin_ns));
  o["content_ms"] = std::move(content);
  o["prompt_tokens"] = r.prompt_tokens;
  o["completion_tokens"] = r.completion_tokens;
  o["http_status"] = r.http_status;
  o["retries"] = r.retries;
  o["ok"] = r.ok();
  o["failure"] = failure_cause_name(r.failure);
  o["error"] = r.error;
  o["finish_reason"] = r.finish_reason;
  return o;
}

}  // namespace ib::metrics
