// One agentic replay point: the replay (load/agentic_run.h), then the point's metrics, AgentX
// validity, InferenceX's aggregate keys and the server's own prefix-cache hit rate.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "core/clock.h"
#include "load/agentic_run.h"
#include "load/bench.h"
#include "metrics/prometheus.h"
#include "workload/agentic_workload.h"

namespace ib::load {

namespace json = boost::json;

namespace {

struct CacheScrape {
  bool ok = false;
  metrics::PrefixCacheCounters counters;
  std::string error;
};

CacheScrape scrape_prefix_cache(const http::Endpoint& endpoint) {
  CacheScrape out;
  auto resp = http::http_get(endpoint, "/metrics", std::chrono::seconds(5));
  if (!resp) {
    out.error = resp.error().message;
    return out;
  }
  if (resp->status != 200) {
    out.error = fmt::format("GET /metrics returned HTTP {}", resp->status);
    return out;
  }
  auto scrape = metrics::parse_prometheus(resp->body);
  if (!scrape) {
    out.error = fmt::format("GET /metrics: {}", scrape.error().message);
    return out;
  }
  out.counters = metrics::read_prefix_cache(*scrape);
  out.ok = true;
  return out;
}

json::object replay_request_json(const agentic::ReplayRequest& r) {
  return {{"phase", agentic::to_string(r.dispatch.phase)},
          {"lane", r.dispatch.lane},
          {"tree_instance", r.dispatch.instance},
          {"trace_id", r.trace_id},
          {"session_id", r.session_id},
          {"correlation_id", r.correlation_id},
          {"turn", r.dispatch.turn},
          {"messages", r.messages},
          {"recorded_in", r.recorded_in},
          {"recorded_out", r.recorded_out},
          {"content_tokens", r.content_tokens},
          {"max_tokens", r.dispatch.max_tokens},
          {"theoretical_hit_blocks", r.theoretical_hit_blocks},
          {"theoretical_total_blocks", r.theoretical_total_blocks},
          {"body_bytes", r.body_bytes},
          {"scheduled_s", r.dispatch.at}};
}

}  // namespace

Expected<BenchReport> run_agentic_bench(const BenchSpec& spec, const workload::PointPlan& plan) {
  const workload::AgenticPlan& ap = *plan.agentic;
  const workload::AgenticParams& p = ap.params;
  auto endpoint = http::parse_endpoint(spec.endpoint_url);
  if (!endpoint) return endpoint.error();
  std::string model = spec.model;
  if (model.empty()) {
    auto m = discover_model(*endpoint, spec.timeouts);
    if (!m) return m.error();
    model = *m;
  }
  agentic::AgenticRunConfig rc;
  rc.endpoint = *endpoint;
  rc.models = {model};
  rc.seed = p.seed;
  rc.corpus = ap.corpus;
  rc.tokenizer = p.tokenizer;
  rc.timeouts = spec.timeouts;
  rc.show_progress = spec.show_progress;
  rc.replay.concurrency = plan.shape.concurrency;
  rc.replay.seed = p.seed;
  rc.replay.t_star_min = p.t_star_min;
  rc.replay.t_star_max = p.t_star_max;
  rc.replay.warmup_requests_per_lane = p.warmup_requests_per_lane;
  rc.replay.system_idle_cap_s = p.system_idle_cap_s;
  rc.replay.trace_idle_cap_s = p.trace_idle_cap_s;
  rc.replay.duration_s = p.duration_s;
  rc.replay.grace_s = p.grace_s;
  rc.replay.warmup_grace_s = p.warmup_grace_s;
  rc.replay.time_scale = p.time_scale;
  rc.replay.use_think_time_only = p.use_think_time_only;
  if (spec.timeout_s > 0) rc.deadline_ns = mono_ns() + static_cast<int64_t>(spec.timeout_s * 1e9);
  CacheScrape before, after;
  rc.on_profiling_start = [&] { before = scrape_prefix_cache(*endpoint); };
  auto samplers = PointSamplers::start(spec, *endpoint);
  if (!samplers) return samplers.error();
  auto run = agentic::run_agentic(rc, *ap.trees);
  if (!run) return run.error();
  after = scrape_prefix_cache(*endpoint);

  BenchReport report;
  report.agentic = true;
  report.aborted = run->aborted;
  report.abort_reason = run->abort_reason;
  report.partial = run->interrupted;
  report.timed_out = run->deadline_hit;
  RunnerResult& rr = report.run;
  rr.interrupted = run->interrupted;
  rr.deadline_hit = run->deadline_hit;
  rr.origin_ns = run->origin_ns;
  rr.start_unix = run->start_unix;
  rr.end_unix = run->end_unix;
  std::vector<metrics::AgenticRequestInfo> info;
  int64_t warmup_requests = 0;
  for (size_t i = 0; i < run->records.size(); ++i) {
    const auto& q = run->requests[i];
    if (q.cancelled) {
      ++rr.cancelled;
      continue;
    }
    if (q.dispatch.phase != agentic::ReplayPhase::kProfiling) {
      ++warmup_requests;
      rr.warmup.push_back(std::move(run->records[i]));
      continue;
    }
    rr.measured.push_back(std::move(run->records[i]));
    metrics::AgenticRequestInfo a;
    a.profiling = true;
    a.session_id = q.correlation_id;  // one live session (AgentX counts by correlation id)
    a.recorded_in = q.recorded_in;
    a.recorded_out = q.recorded_out;
    a.messages = q.messages;
    a.theoretical_hit_blocks = q.theoretical_hit_blocks;
    a.theoretical_total_blocks = q.theoretical_total_blocks;
    info.push_back(std::move(a));
    json::object extra = replay_request_json(q);
    report.record_extras.push_back(std::move(extra));
  }
  report.window_start_unix = run->start_unix + run->profiling_start_s;
  report.window_end_unix = run->start_unix + run->profiling_end_s;
  samplers->stop(report);
  ClientHealth& h = rr.health;
  h.threads = 1;
  h.cpu_seconds = run->cpu_seconds;
  h.wall_seconds = run->wall_seconds;
  h.cpu_utilization = run->wall_seconds > 0 ? run->cpu_seconds / run->wall_seconds : 0;
  h.peak_in_flight = run->peak_in_flight;
  h.connections_opened = run->connections_opened;
  h.peak_rss_kib = run->peak_rss_kib;
  if (h.cpu_utilization > 0.9) {
    h.warnings.push_back(fmt::format(
        "client CPU at {:.0f}% of its event-loop thread: the client may have slowed the replay",
        h.cpu_utilization * 100));
  }

  report.metrics = metrics::compute_metrics(rr.measured, spec.metrics);
  metrics::AgenticOptions ao;
  ao.num_gpus = spec.metrics.num_gpus;
  report.agentic_metrics = metrics::compute_agentic_metrics(rr.measured, info, ao);
  metrics::AgenticRunFacts facts;
  facts.duration_s = p.duration_s / p.time_scale;
  facts.duration_floor_s = workload::kAgenticDurationFloorS;
  facts.time_scale = p.time_scale;
  facts.cancelled = run->interrupted || run->aborted;
  report.agentic_invalid = metrics::agentic_validity(report.agentic_metrics, facts);
  if (run->aborted) {
    report.agentic_invalid.insert(report.agentic_invalid.begin(),
                                  {"warmup_aborted", run->abort_reason});
  }
  report.inferencex =
      metrics::inferencex_agentic_json(report.agentic_metrics, report.agentic_invalid);

  json::object j;
  j["date"] = utc_time_text("%Y-%m-%dT%H:%M:%SZ", static_cast<std::time_t>(rr.start_unix));
  j["tool"] = "inferbench";
  j["tool_version"] = INFERBENCH_VERSION;
  j["backend"] = "openai-chat";
  j["api"] = "chat";
  j["endpoint"] = endpoint->url();
  j["model_id"] = model;
  j["max_concurrency"] = plan.shape.concurrency;
  j["load_shape"] = "agentic_replay";
  for (const auto& kv : plan.describe) j[kv.key()] = kv.value();
  j["num_prompts"] = static_cast<int64_t>(rr.measured.size());
  j["num_warmups"] = warmup_requests;
  j["benchmark_start_time_unix"] = rr.start_unix;
  j["benchmark_end_time_unix"] = rr.end_unix;
  j["origin_mono_ns"] = rr.origin_ns;
  j["partial"] = report.partial;
  j["timed_out"] = report.timed_out;
  j["cancelled"] = rr.cancelled;
  json::object metrics_json = metrics::metrics_to_json(report.metrics, spec.metrics);
  for (auto& kv : metrics_json) j[kv.key()] = std::move(kv.value());

  json::object agentic = metrics::agentic_to_json(report.agentic_metrics);
  json::object server_cache;
  if (before.ok && after.ok) {
    server_cache["source"] = metrics::to_string(after.counters.source);
    auto rate = metrics::prefix_hit_rate(before.counters, after.counters);
    server_cache["hit_rate_pct"] = rate ? json::value(*rate * 100) : json::value(nullptr);
  } else {
    server_cache["hit_rate_pct"] = nullptr;
    server_cache["error"] = !before.ok ? before.error : after.error;
  }
  agentic["server_prefix_cache"] = std::move(server_cache);
  if (p.time_scale != 1) {
    // A time-scaled replay against a server scaled the same way (serve-sim --time-scale K):
    // its latencies are K times shorter and its rates K times higher than at recorded speed.
    const double k = p.time_scale;
    const metrics::AgenticMetrics& m = report.agentic_metrics;
    agentic["at_recorded_speed"] = json::object{
        {"assumes",
         fmt::format("the server ran {:g}x faster too (serve-sim --time-scale {:g})", k, k)},
        {"e2e_norm_intvty_p50", m.e2e_norm_intvty.p50 / k},
        {"e2e_norm_intvty_p90", m.e2e_norm_intvty.p90 / k},
        {"intvty_p50", m.intvty.p50 / k},
        {"output_tps_per_gpu", m.output_tps_per_gpu / k},
        {"total_tps_per_gpu", m.total_tps_per_gpu / k},
        {"median_ttft_ms", m.ttft_s.p50 * 1000 * k},
        {"median_e2el_ms", m.e2el_s.p50 * 1000 * k}};
  }
  json::object replay;
  replay["benchmark_id"] = run->benchmark_id;
  replay["lanes"] = plan.shape.concurrency;
  replay["traces"] = static_cast<int64_t>(ap.trees->size());
  replay["trees_started"] = run->trees;
  replay["trees_done"] = run->trees_done;
  replay["sessions_done"] = run->sessions_done;
  replay["warmup_requests"] = warmup_requests;
  replay["profiling_requests"] = static_cast<int64_t>(rr.measured.size());
  replay["profiling_start_s"] = run->profiling_start_s;
  replay["profiling_wall_s"] = std::max(0.0, run->profiling_end_s - run->profiling_start_s);
  replay["time_scale"] = p.time_scale;
  replay["aborted"] = run->aborted;
  if (run->aborted) replay["abort_reason"] = run->abort_reason;
  json::array notes;
  for (const auto& n : ap.notes) notes.emplace_back(n);
  for (const auto& n : run->notes) notes.emplace_back(n);
  replay["notes"] = std::move(notes);
  agentic["replay"] = std::move(replay);
  j["agentic"] = std::move(agentic);
  j["submission_valid"] = report.agentic_invalid.empty();
  json::array reasons;
  for (const auto& r : report.agentic_invalid) {
    reasons.push_back(json::object{{"reason", r.reason}, {"message", r.message}});
  }
  j["submission_invalid_reasons"] = std::move(reasons);
  j["inferencex_agentic"] = report.inferencex;

  json::object client;
  client["threads"] = 1;
  client["cpu_seconds"] = h.cpu_seconds;
  client["cpu_utilization"] = h.cpu_utilization;
  client["cpu_seconds_per_lane"] = h.cpu_seconds / std::max(1, plan.shape.concurrency);
  client["peak_in_flight"] = h.peak_in_flight;
  client["connections_opened"] = h.connections_opened;
  client["peak_rss_kib"] = h.peak_rss_kib;
  client["peak_rss_kib_per_lane"] = h.peak_rss_kib / std::max(1, plan.shape.concurrency);
  client["body_bytes_built"] = run->body_bytes_built;
  client["body_build_seconds"] = run->body_build_seconds;
  client["body_bytes_per_s"] =
      run->body_build_seconds > 0
          ? static_cast<double>(run->body_bytes_built) / run->body_build_seconds
          : 0.0;
  finish_result(report, spec, std::move(j), std::move(client));
  return report;
}

std::string format_agentic_summary(const BenchReport& report, const BenchSpec& spec) {
  const metrics::AgenticMetrics& a = report.agentic_metrics;
  const json::object& rp = report.json.at("agentic").as_object().at("replay").as_object();
  std::string s;
  auto line = [&](std::string_view k, const std::string& v) {
    s += fmt::format("{:<44}{:>14}\n", k, v);
  };
  auto f2 = [](double v) { return fmt::format("{:.2f}", v); };
  s += fmt::format("{:=^58}\n",
                   report.partial ? " Agentic Replay (PARTIAL) " : " Agentic Replay Result ");
  line("Lanes (concurrency):", std::to_string(rp.at("lanes").as_int64()));
  line("Traces:", std::to_string(rp.at("traces").as_int64()));
  line("Time scale:", fmt::format("{:g}", rp.at("time_scale").to_number<double>()));
  line("Warmup requests (excluded):", std::to_string(rp.at("warmup_requests").as_int64()));
  line("Profiling requests:", std::to_string(a.requests));
  line("Successful requests:", std::to_string(a.successful));
  line("Errors (context overflows):", fmt::format("{} ({})", a.errors, a.context_overflows));
  line("Sessions:", std::to_string(a.sessions));
  line("Profiling span (s):", f2(a.duration_s));
  line("Input throughput (tok/s):", f2(a.input_tps));
  line("Output throughput (tok/s):", f2(a.output_tps));
  line("Output throughput per GPU (tok/s/gpu):", f2(a.output_tps_per_gpu));
  s += fmt::format("{:-^58}\n", " E2E-normalized interactivity (tok/s/user) ");
  line("P50:", f2(a.e2e_norm_intvty.p50));
  line("P90:", f2(a.e2e_norm_intvty.p90));
  line("Mean:", f2(a.e2e_norm_intvty.mean));
  line("Conventional 1/ITL, P50:", f2(a.intvty.p50));
  s += fmt::format("{:-^58}\n", " Latency ");
  line("Median TTFT (ms):", f2(a.ttft_s.p50 * 1000));
  line("P90 TTFT (ms):", f2(a.ttft_s.p90 * 1000));
  line("Median E2EL (ms):", f2(a.e2el_s.p50 * 1000));
  s += fmt::format("{:-^58}\n", " Prefix cache ");
  line("Theoretical hit (%):",
       a.theoretical_cache_hit_pct ? f2(*a.theoretical_cache_hit_pct) : std::string("-"));
  const auto& sc = report.json.at("agentic").as_object().at("server_prefix_cache").as_object();
  line("Server hit, profiling phase (%):",
       sc.at("hit_rate_pct").is_number() ? f2(sc.at("hit_rate_pct").to_number<double>()) : "-");
  if (a.token_overhead.count > 0) {
    line("Prompt tokens − recorded in (mean):", f2(a.token_overhead.mean));
  }
  if (const auto* rs = report.json.at("agentic").as_object().if_contains("at_recorded_speed")) {
    const auto& o = rs->as_object();
    s += fmt::format("{:-^58}\n", " At recorded speed (time scale undone) ");
    line("E2E-normalized interactivity P50 / P90:",
         fmt::format("{:.1f} / {:.1f}", o.at("e2e_norm_intvty_p50").to_number<double>(),
                     o.at("e2e_norm_intvty_p90").to_number<double>()));
    line("Output throughput per GPU (tok/s/gpu):",
         f2(o.at("output_tps_per_gpu").to_number<double>()));
    line("Median TTFT (ms):", f2(o.at("median_ttft_ms").to_number<double>()));
  }
  s += fmt::format("{:=^58}\n", "");
  if (report.agentic_invalid.empty()) {
    s += "submission valid\n";
  } else {
    for (const auto& r : report.agentic_invalid) {
      s += fmt::format("not submission-valid: {}: {}\n", r.reason, r.message);
    }
  }
  (void)spec;
  for (const auto& w : report.metrics.warnings) s += fmt::format("warning: {}\n", w);
  for (const auto& w : report.run.health.warnings) s += fmt::format("warning: {}\n", w);
  return s;
}

}  // namespace ib::load
