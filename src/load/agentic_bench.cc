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

// The replay's configuration from the plan's parameters, sent to `model`; its deadline counts
// from now.
agentic::AgenticRunConfig agentic_run_config(const BenchSpec& spec, const workload::PointPlan& plan,
                                             const workload::AgenticPlan& ap,
                                             const http::Endpoint& endpoint,
                                             const std::string& model) {
  const workload::AgenticParams& p = ap.params;
  agentic::AgenticRunConfig rc;
  rc.endpoint = endpoint;
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
  rc.session_routing = p.session_routing;
  rc.session_timeout_s = p.session_timeout_s;
  if (spec.timeout_s > 0) rc.deadline_ns = mono_ns() + static_cast<int64_t>(spec.timeout_s * 1e9);
  return rc;
}

// The report of a finished replay, before its records are sorted in: its status, times and
// measured window (the profiling phase).
BenchReport replay_report(const workload::PointPlan& plan, const agentic::AgenticRunResult& run) {
  BenchReport report;
  report.concurrency = plan.shape.concurrency;
  report.agentic = true;
  report.aborted = run.aborted;
  report.abort_reason = run.abort_reason;
  report.partial = run.interrupted;
  report.timed_out = run.deadline_hit;
  RunnerResult& rr = report.run;
  rr.interrupted = run.interrupted;
  rr.deadline_hit = run.deadline_hit;
  rr.origin_ns = run.origin_ns;
  rr.start_unix = run.start_unix;
  rr.end_unix = run.end_unix;
  report.window_start_unix = run.start_unix + run.profiling_start_s;
  report.window_end_unix = run.start_unix + run.profiling_end_s;
  return report;
}

// Moves the replay's records into the report: cut requests are counted, warmup and primer
// requests kept apart, profiling requests measured with their AgentX facts (`info`) and their
// --details fields. Returns the number of warmup requests.
int64_t sort_replay_records(agentic::AgenticRunResult& run, BenchReport& report,
                            std::vector<metrics::AgenticRequestInfo>& info) {
  RunnerResult& rr = report.run;
  int64_t warmup_requests = 0;
  for (size_t i = 0; i < run.records.size(); ++i) {
    const auto& q = run.requests[i];
    if (q.cancelled) {
      ++rr.cancelled;
      continue;
    }
    if (q.dispatch.phase != agentic::ReplayPhase::kProfiling) {
      ++warmup_requests;
      rr.warmup.push_back(std::move(run.records[i]));
      continue;
    }
    rr.measured.push_back(std::move(run.records[i]));
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
  return warmup_requests;
}

// The client's health in a replay (one event-loop thread), warned about when its CPU was busy.
void replay_health(ClientHealth& h, const agentic::AgenticRunResult& run) {
  h.threads = 1;
  h.cpu_seconds = run.cpu_seconds;
  h.wall_seconds = run.wall_seconds;
  h.cpu_utilization = run.wall_seconds > 0 ? run.cpu_seconds / run.wall_seconds : 0;
  h.peak_in_flight = run.peak_in_flight;
  h.connections_opened = run.connections_opened;
  h.peak_rss_kib = run.peak_rss_kib;
  if (h.cpu_utilization > 0.9) {
    h.warnings.push_back(fmt::format(
        "client CPU at {:.0f}% of its event-loop thread: the client may have slowed the replay",
        h.cpu_utilization * 100));
  }
}

// The point's metrics, AgentX's metrics and validity, and InferenceX's aggregate keys.
void replay_metrics(BenchReport& report, const BenchSpec& spec,
                    const agentic::AgenticRunResult& run, const workload::AgenticParams& p,
                    const std::vector<metrics::AgenticRequestInfo>& info) {
  const RunnerResult& rr = report.run;
  report.metrics = metrics::compute_metrics(rr.measured, spec.metrics);
  metrics::AgenticOptions ao;
  ao.num_gpus = spec.metrics.num_gpus;
  report.agentic_metrics = metrics::compute_agentic_metrics(rr.measured, info, ao);
  metrics::AgenticRunFacts facts;
  facts.duration_s = p.duration_s / p.time_scale;
  facts.duration_floor_s = workload::kAgenticDurationFloorS;
  facts.time_scale = p.time_scale;
  facts.cancelled = run.interrupted || run.aborted;
  report.agentic_invalid = metrics::agentic_validity(report.agentic_metrics, facts);
  if (run.aborted) {
    report.agentic_invalid.insert(report.agentic_invalid.begin(),
                                  {"warmup_aborted", run.abort_reason});
  }
  report.inferencex =
      metrics::inferencex_agentic_json(report.agentic_metrics, report.agentic_invalid);
}

// What an agentic point's result JSON names beside its spec and report.
struct ReplayPoint {
  const workload::PointPlan& plan;
  const workload::AgenticPlan& ap;
  const agentic::AgenticRunResult& run;
  std::string endpoint_url;
  std::string model;
  int64_t warmup_requests = 0;
  CacheScrape before, after;  // the server's prefix-cache counters around the profiling phase
};

// The server's prefix-cache hit rate over the profiling phase, or why it is unknown.
json::object server_cache_json(const CacheScrape& before, const CacheScrape& after) {
  json::object server_cache;
  if (before.ok && after.ok) {
    server_cache["source"] = metrics::to_string(after.counters.source);
    auto rate = metrics::prefix_hit_rate(before.counters, after.counters);
    server_cache["hit_rate_pct"] = rate ? json::value(*rate * 100) : json::value(nullptr);
  } else {
    server_cache["hit_rate_pct"] = nullptr;
    server_cache["error"] = !before.ok ? before.error : after.error;
  }
  return server_cache;
}

// A time-scaled replay against a server scaled the same way (serve-sim --time-scale K): its
// latencies are K times shorter and its rates K times higher than at recorded speed.
json::object at_recorded_speed_json(const metrics::AgenticMetrics& m, double k) {
  return json::object{
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

// The replay's own facts: trees, sessions, phases, and the notes of the plan and the run.
json::object replay_json(const BenchReport& report, const ReplayPoint& point) {
  const agentic::AgenticRunResult& run = point.run;
  json::object replay;
  replay["benchmark_id"] = run.benchmark_id;
  replay["lanes"] = point.plan.shape.concurrency;
  replay["traces"] = static_cast<int64_t>(point.ap.trees->size());
  replay["trees_started"] = run.trees;
  replay["trees_done"] = run.trees_done;
  replay["sessions_done"] = run.sessions_done;
  replay["warmup_requests"] = point.warmup_requests;
  replay["profiling_requests"] = static_cast<int64_t>(report.run.measured.size());
  replay["profiling_start_s"] = run.profiling_start_s;
  replay["profiling_wall_s"] = std::max(0.0, run.profiling_end_s - run.profiling_start_s);
  replay["time_scale"] = point.ap.params.time_scale;
  replay["aborted"] = run.aborted;
  if (run.aborted) replay["abort_reason"] = run.abort_reason;
  json::array notes;
  for (const auto& n : point.ap.notes) notes.emplace_back(n);
  for (const auto& n : run.notes) notes.emplace_back(n);
  replay["notes"] = std::move(notes);
  return replay;
}

// The "agentic" block of the result JSON: AgentX's metrics, the server's prefix-cache hit rate,
// the metrics at recorded speed (a time-scaled replay) and the replay's facts.
json::object agentic_block_json(const BenchReport& report, const ReplayPoint& point) {
  json::object agentic = metrics::agentic_to_json(report.agentic_metrics);
  agentic["server_prefix_cache"] = server_cache_json(point.before, point.after);
  const double k = point.ap.params.time_scale;
  if (k != 1) agentic["at_recorded_speed"] = at_recorded_speed_json(report.agentic_metrics, k);
  agentic["replay"] = replay_json(report, point);
  return agentic;
}

// The result JSON of an agentic point, before finish_result adds the client block and telemetry.
json::object replay_point_json(const BenchSpec& spec, const BenchReport& report,
                               const ReplayPoint& point) {
  const RunnerResult& rr = report.run;
  json::object j;
  j["date"] = utc_time_text("%Y-%m-%dT%H:%M:%SZ", static_cast<std::time_t>(rr.start_unix));
  j["tool"] = "inferbench";
  j["tool_version"] = INFERBENCH_VERSION;
  j["backend"] = "openai-chat";
  j["api"] = "chat";
  j["endpoint"] = point.endpoint_url;
  j["model_id"] = point.model;
  j["max_concurrency"] = point.plan.shape.concurrency;
  j["load_shape"] = "agentic_replay";
  for (const auto& kv : point.plan.describe) j[kv.key()] = kv.value();
  j["num_prompts"] = static_cast<int64_t>(rr.measured.size());
  j["num_warmups"] = point.warmup_requests;
  j["benchmark_start_time_unix"] = rr.start_unix;
  j["benchmark_end_time_unix"] = rr.end_unix;
  j["origin_mono_ns"] = rr.origin_ns;
  j["partial"] = report.partial;
  j["timed_out"] = report.timed_out;
  j["cancelled"] = rr.cancelled;
  json::object metrics_json = metrics::metrics_to_json(report.metrics, spec.metrics);
  for (auto& kv : metrics_json) j[kv.key()] = std::move(kv.value());
  j["agentic"] = agentic_block_json(report, point);
  j["submission_valid"] = report.agentic_invalid.empty();
  json::array reasons;
  for (const auto& r : report.agentic_invalid) {
    reasons.push_back(json::object{{"reason", r.reason}, {"message", r.message}});
  }
  j["submission_invalid_reasons"] = std::move(reasons);
  j["inferencex_agentic"] = report.inferencex;
  return j;
}

// The client block of an agentic point's result JSON: its cost, also per lane (`lanes`).
json::object replay_client_json(const ClientHealth& h, const agentic::AgenticRunResult& run,
                                int lanes) {
  json::object client;
  client["threads"] = 1;
  client["cpu_seconds"] = h.cpu_seconds;
  client["cpu_utilization"] = h.cpu_utilization;
  client["cpu_seconds_per_lane"] = h.cpu_seconds / std::max(1, lanes);
  client["peak_in_flight"] = h.peak_in_flight;
  client["connections_opened"] = h.connections_opened;
  client["peak_rss_kib"] = h.peak_rss_kib;
  client["peak_rss_kib_per_lane"] = h.peak_rss_kib / std::max(1, lanes);
  client["body_bytes_built"] = run.body_bytes_built;
  client["body_build_seconds"] = run.body_build_seconds;
  client["body_bytes_per_s"] =
      run.body_build_seconds > 0
          ? static_cast<double>(run.body_bytes_built) / run.body_build_seconds
          : 0.0;
  return client;
}

}  // namespace

Expected<BenchReport> run_agentic_bench(const BenchSpec& spec, const workload::PointPlan& plan) {
  const workload::ReplayPlan* replay_plan = plan.replay();
  if (replay_plan == nullptr || !replay_plan->agentic) {
    return Error{"run_agentic_bench: the plan is no replay"};
  }
  const workload::AgenticPlan& ap = *replay_plan->agentic;
  auto endpoint = http::parse_endpoint(spec.endpoint_url);
  if (!endpoint) return endpoint.error();
  endpoint->bearer = spec.api_key;
  auto model = served_model(spec, *endpoint);
  if (!model) return model.error();
  agentic::AgenticRunConfig rc = agentic_run_config(spec, plan, ap, *endpoint, *model);
  CacheScrape before, after;
  rc.on_profiling_start = [&] { before = scrape_prefix_cache(*endpoint); };
  auto samplers = PointSamplers::start(spec, *endpoint);
  if (!samplers) return samplers.error();
  auto run = agentic::run_agentic(rc, *ap.trees);
  if (!run) return run.error();
  after = scrape_prefix_cache(*endpoint);

  BenchReport report = replay_report(plan, *run);
  std::vector<metrics::AgenticRequestInfo> info;
  const int64_t warmup_requests = sort_replay_records(*run, report, info);
  samplers->stop(report);
  replay_health(report.run.health, *run);
  replay_metrics(report, spec, *run, ap.params, info);
  const ReplayPoint point{.plan = plan,
                          .ap = ap,
                          .run = *run,
                          .endpoint_url = endpoint->url(),
                          .model = *model,
                          .warmup_requests = warmup_requests,
                          .before = std::move(before),
                          .after = std::move(after)};
  json::object j = replay_point_json(spec, report, point);
  finish_result(report, spec, std::move(j),
                replay_client_json(report.run.health, *run, plan.shape.concurrency));
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
