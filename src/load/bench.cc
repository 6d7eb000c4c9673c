#include "load/bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

#include "core/clock.h"
#include "core/progress.h"
#include "load/tokenize_check.h"
#include "load/trace_fidelity.h"
#include "metrics/steady.h"
#include "telemetry/dcgm.h"
#include "telemetry/roles.h"

namespace ib::load {

namespace {

RunnerConfig runner_config(const BenchSpec& spec, const http::Endpoint& endpoint) {
  RunnerConfig rc;
  rc.endpoint = endpoint;
  rc.path = std::string(openai::api_path(spec.api));
  rc.shape = spec.shape;
  rc.timeouts = spec.timeouts;
  rc.max_retries = spec.max_retries;
  rc.threads = spec.threads;
  rc.source_addresses = spec.source_addresses;
  return rc;
}

}  // namespace

Status validate(const BenchSpec& spec) {
  auto endpoint = http::parse_endpoint(spec.endpoint_url);
  if (!endpoint) return endpoint.error();
  endpoint->bearer = spec.api_key;
  workload::RandomWorkload w = spec.workload;
  w.as_text = spec.api == openai::Api::kChat;
  if (spec.shape.duration_s > 0 && w.num_prompts < 1) w.num_prompts = 1;
  if (auto s = validate(w); !s) return s;
  if (auto s = validate(runner_config(spec, *endpoint)); !s) return s;
  if (spec.warmups < 0) {
    return Error{fmt::format("--warmups must not be negative (got {})", spec.warmups)};
  }
  // The warmup prompts are made beside the measured ones: both count against the limit.
  if (auto s = workload::check_point_size(w.num_prompts, spec.warmups, w.isl,
                                          "--num-prompts, --warmups and --isl");
      !s) {
    return s;
  }
  for (double q : spec.metrics.percentiles) {
    if (!(q > 0 && q < 100)) {
      return Error{fmt::format("--percentiles: {} is not in (0, 100)", q)};
    }
  }
  if (spec.metrics.num_gpus < 1) return Error{"--num-gpus must be at least 1"};
  return Status::Ok();
}

Expected<std::vector<std::string>> list_models(const http::Endpoint& endpoint,
                                               const http::ClientTimeouts& timeouts) {
  // The probe is bounded like a request, but never by the (long) whole-request limit.
  http::ClientTimeouts t = timeouts;
  if (t.total.count() <= 0 || t.total > t.connect + t.first_byte + t.idle) {
    t.total = t.connect + t.first_byte + t.idle;
  }
  if (t.total.count() <= 0) t.total = kProbeTimeouts.total;
  auto resp = http::http_get(endpoint, "/v1/models", t);
  if (!resp) return resp.error();
  if (resp->status != 200) {
    return Error{fmt::format("GET {}/v1/models returned HTTP {}; pass --model", endpoint.url(),
                             resp->status)};
  }
  boost::system::error_code ec;
  auto v = boost::json::parse(resp->body, ec);
  std::vector<std::string> ids;
  if (!ec && v.is_object()) {
    if (auto* d = v.as_object().if_contains("data"); d && d->is_array()) {
      for (const auto& m : d->as_array()) {
        const auto* id = m.is_object() ? m.as_object().if_contains("id") : nullptr;
        if (id && id->is_string()) ids.emplace_back(id->as_string());
      }
    }
  }
  return ids;
}

Expected<std::string> discover_model(const http::Endpoint& endpoint,
                                     const http::ClientTimeouts& timeouts) {
  auto ids = list_models(endpoint, timeouts);
  if (!ids) return ids.error();
  if (ids->empty()) {
    return Error{fmt::format("GET {}/v1/models listed no model; pass --model", endpoint.url())};
  }
  return ids->front();
}

Expected<std::string> served_model(const BenchSpec& spec, const http::Endpoint& endpoint) {
  if (!spec.model.empty()) return spec.model;
  return discover_model(endpoint, spec.timeouts);
}

namespace {

std::vector<PreparedRequest> prepare(const std::vector<workload::PromptSpec>& prompts,
                                     openai::Api api, const openai::RequestKnobs& knobs) {
  std::vector<PreparedRequest> out;
  out.reserve(prompts.size());
  for (const auto& p : prompts) {
    PreparedRequest r;
    r.input_len = p.input_len;
    r.input_exact = p.exact_len;
    r.output_len = p.output_len;
    if (api == openai::Api::kChat) {
      r.body = openai::chat_body(knobs, p.text, p.output_len);
    } else if (!p.token_ids.empty()) {
      r.body = openai::completions_body(knobs, p.token_ids, p.output_len);
    } else {
      r.body = openai::completions_body(knobs, p.text, p.output_len);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string iso_time(double unix_s) {
  return utc_time_text("%Y-%m-%dT%H:%M:%SZ", static_cast<std::time_t>(unix_s));
}

// A point's requests ready to send, and the /tokenize check of its prompts when one was asked.
struct PreparedPoint {
  std::vector<PreparedRequest> measured, warmup;
  std::optional<TokenizeCheck> token_check;
};

// Runs the --tokenize-check (its summary on stderr) and builds every request body for `model`.
Expected<PreparedPoint> prepare_point(const BenchSpec& spec, const http::Endpoint& endpoint,
                                      const std::string& model,
                                      const workload::RequestPlan& requests) {
  PreparedPoint point;
  if (spec.tokenize_check > 0) {
    auto check = tokenize_check(endpoint, model, spec.api, requests.measured, spec.tokenize_check,
                                spec.timeouts);
    if (!check) return check.error();
    fmt::print(stderr, "{}\n", check->summary());
    point.token_check = std::move(*check);
  }
  openai::RequestKnobs knobs;
  knobs.model = model;
  knobs.continuous_usage = spec.continuous_usage;
  point.measured = prepare(requests.measured, spec.api, knobs);
  point.warmup = prepare(requests.warmup, spec.api, knobs);
  return point;
}

// The run loop's configuration for a point: X-Request-Id prefix, the progress line (`progress`,
// which must outlive the run; may be null) and the point's deadline, counted from now.
RunnerConfig point_runner_config(const BenchSpec& spec, const http::Endpoint& endpoint,
                                 ProgressLine* progress) {
  RunnerConfig rc = runner_config(spec, endpoint);
  if (spec.send_request_ids) {
    rc.request_id_prefix = fmt::format("ib-{:x}-", static_cast<uint64_t>(mono_ns()) & 0xffffffffu);
  }
  if (progress != nullptr && progress->mode() != ProgressMode::kOff) {
    rc.on_progress = [progress](size_t done, size_t total, double elapsed) {
      if (total > 0) {
        progress->show(fmt::format("  {} / {} requests, {:.1f} s", done, total, elapsed));
      } else {
        progress->show(fmt::format("  {} requests, {:.1f} s", done, elapsed));
      }
    };
  }
  if (spec.timeout_s > 0) {
    rc.deadline_ns = mono_ns() + static_cast<int64_t>(spec.timeout_s * 1e9);
  }
  // Tokens per event from the served model's tokenizer, where the server is not asked to count
  // them on every event (metrics::EventTokens::kTokenizer).
  if (const auto& tok = spec.workload.tokenizer; tok && !spec.continuous_usage) {
    rc.count_text_tokens = [tok](std::string_view text) {
      const auto n = static_cast<int64_t>(tok->count_prompt(text)) - tok->prompt_specials();
      return static_cast<int32_t>(std::clamp<int64_t>(n, 0, 1 << 30));
    };
  }
  return rc;
}

// The report of a finished run: its records, status and metrics, and its measured window.
BenchReport request_report(const BenchSpec& spec, RunnerResult run) {
  BenchReport report;
  report.concurrency = spec.shape.concurrency;
  report.run = std::move(run);
  report.partial = report.run.interrupted;
  report.timed_out = report.run.deadline_hit;
  report.metrics = metrics::compute_metrics(report.run.measured, spec.metrics);
  report.window_start_unix = report.run.start_unix;
  report.window_end_unix = report.run.end_unix;
  return report;
}

// What a request point's result JSON names beside its spec, plan and report.
struct RequestPointFacts {
  std::string endpoint_url;
  std::string model;
  int64_t num_prompts = 0;
  int64_t distinct_prompts = 0;  // a duration-bounded run's prompt list (cycled); 0: not one
  int64_t num_warmups = 0;
  const TokenizeCheck* token_check = nullptr;  // null: no --tokenize-check
  std::string request_id_prefix;
};

// The load shape's keys of the result JSON (as vLLM's benchmark_serving names them).
void add_load_shape_json(boost::json::object& j, const LoadShape& shape) {
  const bool open_loop = shape.mode == LoadMode::kOpenLoop;
  if (open_loop && !shape.schedule_ns.empty()) {
    j["request_rate"] = "trace";  // the trace's own arrival times
    j["arrival"] = "trace";
  } else if (open_loop) {
    j["request_rate"] = shape.arrivals.rate;
    j["burstiness"] = shape.arrivals.burstiness;
    j["arrival"] = arrival_name(shape.arrivals.process);
  } else {
    j["request_rate"] = "inf";
    j["burstiness"] = 1.0;
  }
  if (shape.concurrency > 0) {
    j["max_concurrency"] = shape.concurrency;
  } else {
    j["max_concurrency"] = nullptr;
  }
  j["load_shape"] = open_loop ? "open_loop" : "closed_loop";
  if (shape.duration_s > 0) j["duration_limit_s"] = shape.duration_s;
}

// Whether the input lengths are exact token counts, and why not where they are not.
void add_input_length_json(boost::json::object& j, openai::Api api,
                           const boost::json::object& describe) {
  j["input_length_exact"] = api != openai::Api::kChat || describe.contains("tokenizer");
  if (api == openai::Api::kChat && !describe.contains("tokenizer")) {
    j["input_length_note"] =
        "chat prompts are text of N words; without a tokenizer their token count is approximate "
        "(total_input_tokens uses the server's prompt_tokens when reported)";
  }
}

// The input and output lengths of the successful measured requests.
void add_lengths_json(boost::json::object& j, const std::vector<metrics::RequestRecord>& records) {
  boost::json::array input_lens, output_lens;
  for (const auto& r : records) {
    if (!r.ok()) continue;
    input_lens.emplace_back(r.input_tokens());
    output_lens.emplace_back(r.output_tokens());
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
}

// The result JSON of a request point, before finish_result adds the client block and telemetry.
boost::json::object request_point_json(const BenchSpec& spec, const boost::json::object& describe,
                                       const BenchReport& report, const RequestPointFacts& facts) {
  boost::json::object j;
  j["date"] = iso_time(report.run.start_unix);
  j["tool"] = "inferbench";
  j["tool_version"] = INFERBENCH_VERSION;
  j["backend"] = spec.api == openai::Api::kChat ? "openai-chat" : "openai";
  j["api"] = openai::api_name(spec.api);
  j["endpoint"] = facts.endpoint_url;
  j["model_id"] = facts.model;
  add_load_shape_json(j, spec.shape);
  j["num_warmups"] = facts.num_warmups;
  for (const auto& kv : describe) j[kv.key()] = kv.value();
  // After the plan's description, whose num_prompts is its list's length.
  j["num_prompts"] = facts.num_prompts;
  if (facts.distinct_prompts > 0) j["distinct_prompts"] = facts.distinct_prompts;
  add_input_length_json(j, spec.api, describe);
  if (facts.token_check != nullptr) j["tokenize_check"] = facts.token_check->to_json();
  j["benchmark_start_time_unix"] = report.run.start_unix;
  // The monotonic time the --details *_ms values count from (to align with server-side logs
  // taken on the same clock, e.g. serve-sim --truth-log).
  j["origin_mono_ns"] = report.run.origin_ns;
  // X-Request-Id of measured request i is this prefix followed by i.
  j["request_id_prefix"] = facts.request_id_prefix;
  j["benchmark_end_time_unix"] = report.run.end_unix;
  j["partial"] = report.partial;
  j["timed_out"] = report.timed_out;
  j["cancelled"] = report.run.cancelled;
  boost::json::object metrics = metrics::metrics_to_json(report.metrics, spec.metrics);
  for (auto& kv : metrics) j[kv.key()] = std::move(kv.value());
  add_lengths_json(j, report.run.measured);
  return j;
}

// The client block of a request point's result JSON: the run loop's health.
boost::json::object client_health_json(const ClientHealth& h) {
  boost::json::object client;
  client["threads"] = h.threads;
  client["cpu_seconds"] = h.cpu_seconds;
  client["cpu_utilization"] = h.cpu_utilization;
  client["event_loop_lag_p99_ms"] = h.event_loop_lag_p99_ms;
  client["event_loop_lag_max_ms"] = h.event_loop_lag_max_ms;
  client["schedule_lag_p99_ms"] = h.schedule_lag_p99_ms;
  client["schedule_lag_max_ms"] = h.schedule_lag_max_ms;
  client["peak_in_flight"] = h.peak_in_flight;
  client["connections_opened"] = h.connections_opened;
  client["pool_reopened"] = h.pool_reopened;
  client["source_addresses"] = h.source_addresses;
  client["open_file_limit"] = h.open_file_limit;
  client["kernel_timestamp_fraction"] = h.kernel_timestamp_fraction;
  client["reads"] = h.reads;
  client["content_events"] = h.content_events;
  client["cpu_us_per_content_event"] = h.cpu_us_per_content_event;
  client["rss_before_kib"] = h.rss_before_kib;
  client["peak_rss_kib"] = h.peak_rss_kib;
  return client;
}

}  // namespace

Expected<BenchReport> run_bench(const BenchSpec& spec) {
  if (auto s = validate(spec); !s) return s.error();
  workload::RandomWorkload wl = spec.workload;
  wl.as_text = spec.api == openai::Api::kChat;
  auto plan = workload::random_point_plan(wl, spec.warmups, spec.shape.concurrency);
  if (!plan) return plan.error();
  return run_request_bench(spec, *plan);
}

// A timed trace's connections opened before its first arrival: the most requests its schedule
// sends within any 10 s (at most the cap, and 256), so that a burst of simultaneous arrivals does
// not wait for TCP connects.
int burst_connections(const LoadShape& shape) {
  const auto& s = shape.schedule_ns;
  size_t most = 0, j = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    while (s[j] < s[i] - 10'000'000'000) ++j;
    most = std::max(most, i - j + 1);
  }
  int n = static_cast<int>(std::min<size_t>(most, 256));
  if (shape.concurrency > 0) n = std::min(n, shape.concurrency);
  return n;
}

Expected<BenchReport> run_request_bench(const BenchSpec& given, const workload::PointPlan& plan) {
  const workload::RequestPlan* requests = plan.requests();
  if (requests == nullptr) return Error{"run_request_bench: the plan has no requests"};
  BenchSpec spec = given;
  if (!requests->schedule_ns.empty()) {
    // A timed trace: its own arrival times, the point's concurrency as the cap (0: none).
    spec.shape.mode = LoadMode::kOpenLoop;
    spec.shape.schedule_ns = requests->schedule_ns;
    spec.shape.concurrency = plan.shape.concurrency;
    spec.shape.duration_s = 0;
  }
  auto endpoint = http::parse_endpoint(spec.endpoint_url);
  if (!endpoint) return endpoint.error();
  endpoint->bearer = spec.api_key;
  if (auto s = validate(runner_config(spec, *endpoint)); !s) return s.error();
  auto model = served_model(spec, *endpoint);
  if (!model) return model.error();
  auto prepared = prepare_point(spec, *endpoint, *model, *requests);
  if (!prepared) return prepared.error();

  ProgressLine progress(progress_mode(spec.show_progress));
  RunnerConfig rc = point_runner_config(spec, *endpoint, &progress);
  if (!spec.shape.schedule_ns.empty()) rc.preconnect = burst_connections(spec.shape);
  auto samplers = PointSamplers::start(spec, *endpoint);
  if (!samplers) return samplers.error();
  auto run = run_load(rc, prepared->warmup, prepared->measured);
  progress.done();
  if (!run) return run.error();

  BenchReport report = request_report(spec, std::move(*run));
  samplers->stop(report);
  RequestPointFacts facts;
  facts.endpoint_url = endpoint->url();
  facts.model = *model;
  // A duration-bounded run cycles its prompt list for as long as it lasts: num_prompts is the
  // requests it sent (as vLLM's), the list's length is distinct_prompts.
  facts.num_prompts = static_cast<int64_t>(requests->measured.size());
  if (spec.shape.duration_s > 0) {
    facts.distinct_prompts = facts.num_prompts;
    facts.num_prompts = static_cast<int64_t>(report.run.measured.size());
  }
  facts.num_warmups = static_cast<int64_t>(requests->warmup.size());
  facts.token_check = prepared->token_check ? &*prepared->token_check : nullptr;
  facts.request_id_prefix = rc.request_id_prefix;
  boost::json::object j = request_point_json(spec, plan.describe, report, facts);
  // The steady state (metrics/steady.h): with a concurrency to reach, the window at 95% of it.
  const auto window = metrics::find_steady_window(report.run.measured, spec.shape.concurrency);
  j["steady"] = window ? boost::json::value(metrics::steady_json(
                             report.run.measured, *window, spec.metrics, report.run.origin_ns))
                       : boost::json::value(nullptr);
  finish_result(report, spec, std::move(j), client_health_json(report.run.health));
  if (requests->trace) {
    FidelityInput in;
    in.records = &report.run.measured;
    in.plan = requests->trace.get();
    in.scheduled = static_cast<int64_t>(requests->schedule_ns.size());
    in.cap = plan.shape.concurrency;
    in.peak_in_flight = report.run.health.peak_in_flight;
    in.server_prefix_hit_rate = report.server_summary.prefix_hit_rate;
    FidelityBounds bounds;
    bounds.lag_p99_ms = requests->trace->max_lag_ms;
    Fidelity f = trace_fidelity(in, bounds);
    report.json["trace_fidelity"] = std::move(f.json);
    report.trace_invalid = std::move(f.invalid);
  }
  return report;
}

void finish_result(BenchReport& report, const BenchSpec& spec, boost::json::object j,
                   boost::json::object client) {
  const ClientHealth& h = report.run.health;
  boost::json::array client_warnings;
  for (const auto& w : h.warnings) client_warnings.emplace_back(w);
  client["warnings"] = std::move(client_warnings);
  if (spec.scrape_server_metrics) {
    client["server_metrics_scrape"] = cost_to_json(report.scrape_cost, spec.slice_s);
  }
  j["client"] = std::move(client);
  // Client-health warnings join the result's warnings: they qualify every number in it.
  auto& warnings = j["warnings"].as_array();
  for (const auto& w : h.warnings) warnings.emplace_back(w);
  report.json = std::move(j);
  add_telemetry(report, spec);
}

Expected<PointSamplers> PointSamplers::start(const BenchSpec& spec,
                                             const http::Endpoint& endpoint) {
  PointSamplers s;
  if (spec.scrape_server_metrics) {
    auto targets = scrape_targets(spec.server_metrics_urls, endpoint);
    if (!targets) return targets.error();
    s.scraper = std::make_unique<MetricsScraper>(std::move(*targets), spec.slice_s);
    s.scraper->start();
  }
  if (spec.remote_power_dir && spec.power != PowerMode::kOff && spec.power != PowerMode::kDcgm) {
    s.remote_power_dir = spec.remote_power_dir;
    s.remote_interval_s = spec.power_interval_s;
  } else if (auto mode = resolve_power_mode(spec.power, endpoint.host, &s.power_note)) {
    auto p = PowerSampler::start(*mode, spec.power_interval_s);
    if (!p) return p.error();
    s.power = std::move(*p);
  }
  return s;
}

void PointSamplers::stop(BenchReport& report) {
  if (scraper) {
    scraper->stop();
    report.scrape_cost = scraper->cost();
    report.scrapes = scraper->scrapes();
    scraper.reset();
  }
  report.power_note = power_note;
  if (remote_power_dir) {
    // Let the remote sampler write the interval after the window (and the shared filesystem
    // show it).
    std::this_thread::sleep_for(std::chrono::duration<double>(remote_interval_s * 1.5));
    if (auto steps = read_step_power(*remote_power_dir)) {
      if (*steps) {
        report.power_tool = (*steps)->tool;
        report.power_log = std::move((*steps)->log);
        report.role_power_logs = std::move((*steps)->by_role);
        if (!(*steps)->missing.empty()) {
          report.power_note = fmt::format("no samples from {}", fmt::join((*steps)->missing, "; "));
        }
      } else {
        report.power_note = steps->error().message;
      }
      return;
    }
    auto remote = read_remote_power(*remote_power_dir);
    if (remote) {
      report.power_tool = remote->tool;
      report.power_log = std::move(remote->log);
    } else {
      report.power_note = remote.error().message;
    }
  }
  if (power) {
    report.power_tool = power->tool();
    auto log = power->stop();
    if (log) {
      report.power_log = std::move(*log);
    } else {
      report.power_note = log.error().message;
    }
    power.reset();
  }
}

namespace {

// A disaggregated deployment: each role's own server metrics over the window (its /metrics
// alone), so that a prefill worker's queue is not hidden in the deployment's sum.
boost::json::object role_summaries(const std::vector<telemetry::TimedScrape>& scrapes,
                                   const BenchSpec& spec) {
  boost::json::object out;
  for (const auto& [url, label] : spec.server_metrics_roles) {
    std::vector<telemetry::TimedScrape> mine;
    for (const auto& s : scrapes) {
      if (s.url == url) mine.push_back(s);
    }
    if (mine.empty()) continue;
    const auto summary = telemetry::summarize(telemetry::server_timeslices(mine, spec.slice_s));
    out[label] = telemetry::summary_to_json(summary);
  }
  return out;
}

// What the rate-match figure reads from the client: the point's token rates, and the TTFT
// parts where the deployment reported them.
telemetry::RateInputs rate_inputs(const metrics::BenchMetrics& m) {
  telemetry::RateInputs q;
  if (m.duration_s > 0) {
    q.input_tokens_per_s = m.total_token_throughput - m.output_throughput;
    q.output_tokens_per_s = m.output_throughput;
  }
  if (m.ttft_attributed <= 0) return q;
  auto median = [&](std::string_view key) -> std::optional<double> {
    for (size_t i = 0; i < metrics::kTtftPartCount; ++i) {
      if (key == metrics::kTtftPartKeys[i] && std::isfinite(m.ttft_parts[i].median)) {
        return m.ttft_parts[i].median;
      }
    }
    return std::nullopt;
  };
  q.prefill_queue_ms_p50 = median("prefill_queue");
  q.decode_queue_ms_p50 = median("decode_queue");
  q.kv_transfer_ms_p50 = median("kv_transfer");
  return q;
}

}  // namespace

void add_telemetry(BenchReport& report, const BenchSpec& spec) {
  report.client_slices =
      telemetry::client_timeslices(report.run.measured, report.run.origin_ns, spec.slice_s);
  boost::json::object t;
  t["slice_s"] = spec.slice_s;
  t["client_slices"] = static_cast<int64_t>(report.client_slices.size());
  std::optional<telemetry::PowerLog> dcgm;
  std::vector<telemetry::RoleTelemetry> roles;
  if (spec.scrape_server_metrics) {
    auto scrapes = window_scrapes(report.scrapes, report.window_start_unix, report.window_end_unix);
    if (spec.power == PowerMode::kAuto || spec.power == PowerMode::kDcgm) {
      dcgm = telemetry::dcgm_power_log(scrapes, report.window_start_unix);
    }
    report.server_slices = telemetry::server_timeslices(scrapes, spec.slice_s);
    report.server_summary = telemetry::summarize(report.server_slices);
    t["server_slices"] = static_cast<int64_t>(report.server_slices.size());
    t["server"] = telemetry::summary_to_json(report.server_summary);
    if (!spec.server_metrics_roles.empty()) {
      t["roles"] = role_summaries(scrapes, spec);
      roles = telemetry::role_telemetry(
          scrapes, spec.server_metrics_roles,
          {{"prefill", spec.metrics.prefill_gpus}, {"decode", spec.metrics.decode_gpus}},
          spec.slice_s);
      t["by_role"] = telemetry::roles_to_json(roles);
      if (auto rm = telemetry::rate_match(roles, rate_inputs(report.metrics))) {
        t["rate_match"] = telemetry::rate_match_to_json(*rm);
      }
    }
    if (scrapes.empty()) {
      t["server_note"] = report.scrape_cost.first_error.empty()
                             ? std::string("no server metrics were read")
                             : "no server metrics were read: " + report.scrape_cost.first_error;
    }
  }
  report.json["telemetry"] = std::move(t);
  // No acceptance length on /metrics (or no /metrics): the responses' own, where the server
  // reported each request's speculative decoding (vLLM's --per-request-spec-decode-metrics).
  if (!report.server_summary.spec_acceptance_length) {
    const double al = metrics::response_acceptance_length(report.metrics);
    if (!std::isnan(al)) {
      report.server_summary.spec_acceptance_length = al;
      report.server_summary.spec_acceptance_from =
          fmt::format("1 + accepted / steps over {} responses' metrics.speculative_decoding",
                      report.metrics.spec_requests);
    }
  }

  // dcgm-exporter's readings come from the server's side (or serve-sim's power model): they
  // win over a sampler on this host, which may be watching GPUs that do not serve.
  const bool from_dcgm = dcgm.has_value();
  if (dcgm) {
    report.power_note.clear();
    if (report.power_log) {
      report.power_note = fmt::format(
          "{} ran too, but the server metrics carry dcgm-exporter's "
          "readings, which were used",
          report.power_tool);
    }
    report.power_log = std::move(dcgm);
    report.power_tool = "dcgm-exporter (server metrics)";
  }
  // GPU energy over the measured window, per request and per token (InferenceX's rules).
  boost::json::object energy;
  if (report.power_log) {
    report.energy = telemetry::integrate_power(report.power_log->samples, report.window_start_unix,
                                               report.window_end_unix, spec.metrics.num_gpus);
    telemetry::TokenCounts counts;
    counts.requests = report.metrics.completed;
    counts.input_tokens = report.metrics.total_input_tokens;
    counts.output_tokens = report.metrics.total_output_tokens;
    energy = telemetry::energy_to_json(*report.energy, counts);
    energy["tool"] = report.power_tool;
    energy["power_column"] = report.power_log->power_column;
    if (!report.power_note.empty()) energy["note"] = report.power_note;
    // A disaggregated deployment: each role's GPUs over its own tokens (InferenceX's keys).
    auto by_role =
        from_dcgm || report.role_power_logs.empty()
            ? telemetry::role_energy(roles, report.window_start_unix, report.window_end_unix,
                                     counts)
            : telemetry::role_energy(
                  report.role_power_logs,
                  {{"prefill", spec.metrics.prefill_gpus}, {"decode", spec.metrics.decode_gpus}},
                  report.window_start_unix, report.window_end_unix, counts);
    for (auto& [k, v] : by_role) energy[k] = std::move(v);
  } else {
    energy["power_valid"] = false;
    energy["note"] = report.power_note.empty() ? "no GPU power sampler ran" : report.power_note;
    if (!report.power_tool.empty()) energy["tool"] = report.power_tool;
  }
  report.power_missing = spec.require_power && !(report.energy && report.energy->power_valid);
  report.json["energy"] = std::move(energy);
}

std::string format_summary(const BenchReport& report, const BenchSpec& spec) {
  if (report.agentic) return format_agentic_summary(report, spec);
  const metrics::BenchMetrics& m = report.metrics;
  std::string s;
  auto line = [&](std::string_view k, const std::string& v) {
    s += fmt::format("{:<36}{:>14}\n", k, v);
  };
  auto f2 = [](double v) { return fmt::format("{:.2f}", v); };
  s += fmt::format("{:=^50}\n",
                   report.partial ? " Serving Benchmark (PARTIAL) " : " Serving Benchmark Result ");
  line("Successful requests:", std::to_string(m.completed));
  line("Failed requests:", std::to_string(m.failed));
  if (spec.shape.mode == LoadMode::kOpenLoop) {
    line("Request rate (req/s):", f2(spec.shape.arrivals.rate));
  }
  line("Maximum request concurrency:",
       spec.shape.concurrency > 0 ? std::to_string(spec.shape.concurrency) : "unlimited");
  line("Benchmark duration (s):", f2(m.duration_s));
  line("Total input tokens:", std::to_string(m.total_input_tokens));
  line("Total generated tokens:", std::to_string(m.total_output_tokens));
  line("Request throughput (req/s):", f2(m.request_throughput));
  line("Output token throughput (tok/s):", f2(m.output_throughput));
  line("Total token throughput (tok/s):", f2(m.total_token_throughput));
  if (spec.metrics.goodput.any()) line("Request goodput (req/s):", f2(m.request_goodput));
  auto block = [&](std::string_view title, std::string_view name, const metrics::Summary& sum) {
    s += fmt::format("{:-^50}\n", fmt::format(" {} ", title));
    line(fmt::format("Mean {} (ms):", name), f2(sum.mean));
    line(fmt::format("Median {} (ms):", name), f2(sum.median));
    for (size_t i = 0; i < spec.metrics.percentiles.size(); ++i) {
      line(fmt::format("P{} {} (ms):",
                       metrics::percentile_key(spec.metrics.percentiles[i]).substr(1), name),
           f2(sum.percentiles[i]));
    }
  };
  block("Time to First Token", "TTFT", m.ttft_ms);
  block("Time per Output Token (excl. 1st token)", "TPOT", m.tpot_ms);
  block("Inter-token Latency", "ITL", m.itl_ms);
  block("End-to-end Latency", "E2EL", m.e2el_ms);
  s += fmt::format("{:-^50}\n", " Interactivity ");
  line("Median interactivity (tok/s/user):",
       f2(m.tpot_ms.median > 0 ? 1000.0 / m.tpot_ms.median : 0.0));
  for (const auto& [cause, n] : m.failures_by_cause) {
    line(fmt::format("Failures ({}):", cause), std::to_string(n));
  }
  s += fmt::format("{:=^50}\n", "");
  for (const auto& w : m.warnings) s += fmt::format("warning: {}\n", w);
  for (const auto& w : report.run.health.warnings) s += fmt::format("warning: {}\n", w);
  return s;
}

}  // namespace ib::load
