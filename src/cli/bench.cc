// `inferbench bench`: one benchmark point against any OpenAI-compatible server.
#include "load/bench.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/tokenizer_options.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "load/judge.h"
#include "load/point_run.h"
#include "workload/agentic_workload.h"
#include "workload/trace_workload.h"

namespace ib::cli {

namespace {

struct BenchOptions {
  load::BenchSpec spec;
  std::string api = "completions";
  std::string output;
  std::string details;
  std::string percentiles = "90,99,99.9";
  std::string arrival = "poisson";
  double request_rate = 0;  // 0: closed loop
  std::vector<std::string> goodput;
  double connect_timeout_s = 10;
  double first_byte_timeout_s = 300;
  double idle_timeout_s = 300;
  double request_timeout_s = 21600;  // 6 h, as vLLM's benchmark_serving
  bool no_request_ids = false;
  // --workload agentic (AgentX replay).
  std::string workload = "fixed";
  workload::AgenticParams agentic;
  bool agentx_fast = false;
  CLI::Option* seed_option = nullptr;
  CLI::Option* concurrency_option = nullptr;
  std::string gpu_power = "auto";
  CLI::Option* warmup_per_lane_option = nullptr;
  TokenizerOptions tokenizer;
  // --workload trace (timed trace replay).
  workload::TraceReplayParams trace;
  std::string trace_format = "mooncake";
  std::string window;
  int64_t max_concurrency = 0;
  // --expect-spec-acceptance: the golden acceptance length the server must realise.
  double expect_al = 0;
  double al_tolerance = 0.1;
};

// --tokenizer / --chat-template: the served model's tokenizer, for exact prompt lengths.
std::optional<int> load_bench_tokenizer(BenchOptions& o,
                                        std::shared_ptr<const tokenizer::ServingTokenizer>& out) {
  auto tok = load_tokenizer(o.tokenizer);
  if (!tok) {
    return fail("bench", with_kind(tok.error(), ErrorKind::kUsage));
  }
  out = std::move(*tok);
  return std::nullopt;
}

std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(s * 1000)));
}

// "ttft:500 tpot:50 e2el:10000" (vLLM's --goodput syntax, milliseconds).
Expected<metrics::GoodputSlo> parse_goodput(const std::vector<std::string>& items) {
  metrics::GoodputSlo slo;
  for (const auto& item : items) {
    auto colon = item.find(':');
    if (colon == std::string::npos) {
      return Error{fmt::format("--goodput: '{}' is not METRIC:MS (ttft, tpot or e2el)",
                               printable(item, 60))};
    }
    std::string key = item.substr(0, colon);
    const auto value = parse_real(std::string_view(item).substr(colon + 1));
    if (!value || !(*value > 0) || *value > kMaxSeconds * 1000) {
      return Error{
          fmt::format("--goodput: '{}' needs a number of milliseconds above 0 and at most {}",
                      printable(item, 60), bound_text(kMaxSeconds * 1000))};
    }
    if (key == "ttft") {
      slo.ttft_ms = *value;
    } else if (key == "tpot") {
      slo.tpot_ms = *value;
    } else if (key == "e2el") {
      slo.e2el_ms = *value;
    } else {
      return Error{fmt::format("--goodput: unknown metric '{}' (use ttft, tpot or e2el)",
                               printable(key, 40))};
    }
  }
  return slo;
}

Expected<std::vector<double>> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto v = parse_real(item);
    if (!v || !(*v > 0 && *v < 100)) {
      return Error{fmt::format(
          "--percentiles: '{}' is not a percentile; give numbers above 0 and below 100, "
          "comma-separated (e.g. 90,99,99.9)",
          printable(item, 40))};
    }
    out.push_back(*v);
  }
  if (out.empty()) return Error{"--percentiles: empty list"};
  return out;
}

int write_outputs(const BenchOptions& o, const load::BenchReport& report) {
  if (!o.output.empty()) {
    // One point: its timeslices go in its result file (a sweep keeps them in the database).
    boost::json::object out = report.json;
    out["timeslices"] =
        boost::json::object{{"server", telemetry::slices_to_json(report.server_slices)},
                            {"client", telemetry::slices_to_json(report.client_slices)}};
    if (auto s = write_file_atomic(o.output, json_text(out) + "\n"); !s) {
      return fail("bench", s.error());
    }
  }
  if (!o.details.empty()) {
    std::string lines;
    for (size_t i = 0; i < report.run.measured.size(); ++i) {
      boost::json::object line =
          metrics::record_to_json(report.run.measured[i], report.run.origin_ns);
      if (i < report.record_extras.size()) {
        for (const auto& kv : report.record_extras[i]) line[kv.key()] = kv.value();
      }
      lines += json_text(line);
      lines += '\n';
    }
    if (auto s = write_file_atomic(o.details, lines); !s) {
      return fail("bench", s.error());
    }
  }
  return kExitOk;
}

// The point failed --require-power: say why.
int power_failure(const load::BenchReport& report) {
  const auto& e = report.json.at("energy").as_object();
  std::string why;
  if (const auto* note = e.if_contains("note")) why = std::string(note->as_string());
  if (const auto* reasons = e.if_contains("reasons"); reasons && reasons->is_array()) {
    for (const auto& r : reasons->as_array()) why += (why.empty() ? "" : "; ") + json_text(r);
  }
  return fail("bench", Error{fmt::format("--require-power: no valid GPU power measurement{}{}",
                                         why.empty() ? "" : ": ", why)});
}

// What a failed point's line says: the plainest account of why nothing usable was measured,
// else the judge's reasons.
std::string failed_text(const load::BenchReport& report, const load::PointVerdict& v) {
  const auto& m = report.metrics;
  if (report.aborted) return fmt::format("{}; nothing was measured", report.abort_reason);
  if (m.num_requests == 0) return "no request was measured";
  if (m.completed == 0) {
    // What the server said, so that the cause is on the line that reports it: a 401 wants a key.
    std::string why;
    if (!m.error_samples.empty())
      why = fmt::format(" (first error: {})", printable(m.error_samples[0], 200));
    const bool unauthorized =
        !m.error_samples.empty() && (m.error_samples[0].rfind("HTTP 401", 0) == 0 ||
                                     m.error_samples[0].rfind("HTTP 403", 0) == 0);
    return fmt::format("nothing was measured: none of the {} requests succeeded{}{}",
                       m.num_requests, redact_text(why),
                       unauthorized ? "; the server wants an API key: give it with --api-key or "
                                      "OPENAI_API_KEY"
                                    : "");
  }
  return "the point failed: " + v.error;
}

// The exit code of a judged point (load/judge.h), with what happened said on stderr: ok 0; not
// submission-valid by the user's own choice (a time-scaled replay) 0, with a note; interrupted
// 128 + the signal; failed or invalid 1.
int point_exit(const load::BenchReport& report, const load::PointVerdict& v) {
  using metrics::InvalidKind;
  if (v.validity.has(InvalidKind::kInterrupted)) {
    fmt::print(stderr, "inferbench bench: interrupted; the result is partial\n");
    return interrupted_exit_code();
  }
  if (v.validity.has(InvalidKind::kPower)) return power_failure(report);
  if (v.status == metrics::PointStatus::kFailed) {
    return fail("bench", Error{failed_text(report, v)});
  }
  if (v.status == metrics::PointStatus::kInvalid) {
    const bool chosen = v.validity.only_chosen();
    fmt::print(stderr, "inferbench bench: {}: {}\n",
               chosen ? "measured, but not submission-valid" : "the point is invalid",
               v.validity.text());
    return chosen ? kExitOk : kExitFailure;
  }
  return kExitOk;
}

// What every point does after it ran: the judge's verdict goes into the result, the summary is
// printed and the files written; the exit code follows from the verdict.
int finish_point(const BenchOptions& o, load::BenchReport& report) {
  load::JudgeRules rules;
  if (o.expect_al > 0) {
    rules.spec_acceptance =
        load::SpecAcceptanceTarget{o.expect_al, o.al_tolerance, "--expect-spec-acceptance"};
    report.json["spec_acceptance"] = load::spec_acceptance_json(report, *rules.spec_acceptance);
  }
  const load::PointVerdict v = load::judge(report, rules);
  report.json["status"] = metrics::status_name(v.status);
  report.json["validity"] = v.validity.to_json();
  fmt::print("{}", load::format_summary(report, o.spec));
  if (int rc = write_outputs(o, report); rc != kExitOk) return rc;
  return point_exit(report, v);
}

// --workload agentic: one AgentX replay point.
int run_agentic(BenchOptions& o) {
  workload::AgenticParams& p = o.agentic;
  if (o.agentx_fast) {
    const int per_lane = p.warmup_requests_per_lane;
    p.apply_fast();
    if (o.warmup_per_lane_option->count() > 0) p.warmup_requests_per_lane = per_lane;
  }
  if (o.concurrency_option->count() > 0 && o.spec.shape.concurrency < 1) {
    return fail("bench",
                usage_error(fmt::format("--concurrency (lanes) must be at least 1 (got {})",
                                        o.spec.shape.concurrency)));
  }
  if (o.spec.shape.duration_s < 0 || !std::isfinite(o.spec.shape.duration_s)) {
    return fail("bench",
                usage_error(fmt::format("--duration must be a positive number of seconds (got {})",
                                        o.spec.shape.duration_s)));
  }
  if (o.spec.shape.duration_s > 0) p.duration_s = o.spec.shape.duration_s;
  p.seed = o.seed_option->count() > 0 ? o.spec.workload.seed : 42;
  if (o.request_rate != 0) {
    return fail("bench",
                usage_error("--request-rate does not apply to --workload agentic (the traces' own "
                            "timing drives it; --concurrency sets the lanes)"));
  }
  o.spec.api = openai::Api::kChat;
  if (auto rc = load_bench_tokenizer(o, p.tokenizer)) return *rc;
  auto wl = workload::AgenticWorkload::load(p);
  if (!wl) {
    return fail("bench", with_kind(wl.error(), ErrorKind::kUsage));
  }
  const int lanes = o.spec.shape.concurrency > 0 ? o.spec.shape.concurrency : 1;
  auto plan = (*wl)->plan(lanes);
  if (!plan) {
    return fail("bench", with_kind(plan.error(), ErrorKind::kUsage));
  }
  o.spec.shape.concurrency = lanes;
  if (auto s = http::parse_endpoint(o.spec.endpoint_url); !s) {
    return fail("bench", usage_error(fmt::format("--endpoint: {}", s.error().message)));
  }
  o.spec.show_progress = true;
  install_interrupt_handlers();
  for (const auto& n : (*wl)->agentic().notes) fmt::print(stderr, "note: {}\n", n);
  auto run = load::run_point(o.spec, *plan);
  if (!run) {
    return fail("bench", with_kind(run.error(), ErrorKind::kUsage));
  }
  return finish_point(o, std::get<load::BenchReport>(*run));
}

// --api, --tokenizer, --percentiles and --goodput: what each request asks and what the point
// reports, into the spec (nullopt: go on; else the exit code).
std::optional<int> set_bench_request_options(BenchOptions& o) {
  auto api = openai::parse_api(o.api);
  if (!api) {
    return fail("bench", usage_error(fmt::format("--api must be 'completions' or 'chat' (got '{}')",
                                                 o.api)));
  }
  o.spec.api = *api;
  if (auto rc = load_bench_tokenizer(o, o.spec.workload.tokenizer)) return *rc;
  auto pct = parse_percentiles(o.percentiles);
  if (!pct) {
    return fail("bench", with_kind(pct.error(), ErrorKind::kUsage));
  }
  o.spec.metrics.percentiles = *pct;
  auto slo = parse_goodput(o.goodput);
  if (!slo) {
    return fail("bench", with_kind(slo.error(), ErrorKind::kUsage));
  }
  o.spec.metrics.goodput = *slo;
  return std::nullopt;
}

// --request-rate, --arrival and --concurrency: closed or open loop, into the spec's shape
// (nullopt: go on; else the exit code).
std::optional<int> set_bench_load_shape(BenchOptions& o) {
  if (o.request_rate == 0 && o.spec.shape.concurrency == 0) {
    o.spec.shape.concurrency = 1;  // closed loop defaults to one request at a time
  }
  if (o.request_rate > 0) {
    auto arrival = load::parse_arrival(o.arrival);
    if (!arrival) {
      return fail("bench",
                  usage_error(fmt::format("--arrival must be constant, poisson or gamma (got '{}')",
                                          o.arrival)));
    }
    // A schedule that can be run: the mean gap and the whole span within kMaxSeconds (1e-10/s
    // would put every arrival past what a time can hold, and they were all sent at once).
    // (With --duration the run stops at the duration: only the mean gap must fit.)
    const double span_s =
        (o.spec.shape.duration_s > 0 ? 1.0 : static_cast<double>(o.spec.workload.num_prompts)) /
        o.request_rate;
    if (!std::isfinite(o.request_rate) || !(span_s <= kMaxSeconds)) {
      return fail("bench", usage_error(fmt::format(
                               "--request-rate {:g}: {} requests at that rate would take {:.3g} s; "
                               "a schedule may span at most {:g} s (a rate of at least {:.3g}/s)",
                               o.request_rate, o.spec.workload.num_prompts, span_s, kMaxSeconds,
                               static_cast<double>(o.spec.workload.num_prompts) / kMaxSeconds)));
    }
    o.spec.shape.mode = load::LoadMode::kOpenLoop;
    o.spec.shape.arrivals.rate = o.request_rate;
    o.spec.shape.arrivals.process = *arrival;
    o.spec.shape.arrivals.seed = o.spec.workload.seed;
  } else if (o.request_rate < 0) {
    return fail("bench", usage_error(fmt::format("--request-rate must be positive (got {})",
                                                 o.request_rate)));
  }
  return std::nullopt;
}

// The four timeouts and --no-request-ids into the spec (nullopt: go on; else the exit code).
std::optional<int> set_bench_client_options(BenchOptions& o) {
  for (double t :
       {o.connect_timeout_s, o.first_byte_timeout_s, o.idle_timeout_s, o.request_timeout_s}) {
    if (t < 0 || !std::isfinite(t)) {
      return fail("bench",
                  usage_error(fmt::format("timeouts must be non-negative seconds (got {})", t)));
    }
  }
  o.spec.timeouts.connect = seconds_to_ms(o.connect_timeout_s);
  o.spec.timeouts.first_byte = seconds_to_ms(o.first_byte_timeout_s);
  o.spec.timeouts.idle = seconds_to_ms(o.idle_timeout_s);
  o.spec.timeouts.total = seconds_to_ms(o.request_timeout_s);
  o.spec.send_request_ids = !o.no_request_ids;
  return std::nullopt;
}

// --workload fixed: one point of random prompts of --isl/--osl.
int run_bench_fixed(BenchOptions& o) {
  if (!o.agentic.traces.empty()) {
    return fail("bench", usage_error("--traces needs --workload agentic"));
  }
  if (auto rc = set_bench_request_options(o)) return *rc;
  if (auto rc = set_bench_load_shape(o)) return *rc;
  if (auto rc = set_bench_client_options(o)) return *rc;
  if (auto s = validate(o.spec); !s) {
    return fail("bench", with_kind(s.error(), ErrorKind::kUsage));
  }
  o.spec.show_progress = true;
  install_interrupt_handlers();
  auto report = load::run_bench(o.spec);
  if (!report) {
    return fail("bench", with_kind(report.error(), ErrorKind::kUsage));
  }
  return finish_point(o, *report);
}

// --workload trace: one replay of a timed trace at its recorded times (docs/trace-replay.md).
int run_bench_trace(BenchOptions& o) {
  workload::TraceReplayParams& p = o.trace;
  if (!o.agentic.traces.empty())
    return fail("bench", usage_error("--traces needs --workload agentic"));
  if (p.path.empty()) {
    return fail("bench", usage_error("--workload trace needs --trace FILE (and --trace-format)"));
  }
  if (o.request_rate != 0) {
    return fail("bench", usage_error("--request-rate does not apply to --workload trace: the "
                                     "trace's times drive it (--time-scale scales them; "
                                     "--max-concurrency caps the requests in flight)"));
  }
  // --concurrency / --max-concurrency: the cap (vLLM's meaning in open loop); none by default.
  o.max_concurrency = o.concurrency_option->count() > 0 ? o.spec.shape.concurrency : 0;
  auto format = workload::parse_trace_format(o.trace_format);
  if (!format) {
    return fail("bench", usage_error(fmt::format("--trace-format must be mooncake, bailian, "
                                                 "burstgpt or azure (got '{}')",
                                                 printable(o.trace_format, 40))));
  }
  p.format = *format;
  if (!o.window.empty()) {
    auto w = workload::parse_trace_window(o.window);
    if (!w) return fail("bench", w.error());
    p.window = *w;
  }
  p.time_scale = o.agentic.time_scale;
  if (auto rc = set_bench_request_options(o)) return *rc;
  if (auto rc = set_bench_client_options(o)) return *rc;
  p.chat = o.spec.api == openai::Api::kChat;
  p.tokenizer = o.spec.workload.tokenizer;
  p.seed = o.spec.workload.seed;
  auto wl = workload::TraceWorkload::load(p);
  if (!wl) return fail("bench", with_kind(wl.error(), ErrorKind::kUsage));
  auto plan = (*wl)->plan(o.max_concurrency);
  if (!plan) return fail("bench", with_kind(plan.error(), ErrorKind::kUsage));
  for (const auto& n : (*wl)->trace().notes) fmt::print(stderr, "note: {}: {}\n", p.path, n);
  o.spec.show_progress = true;
  install_interrupt_handlers();
  auto run = load::run_point(o.spec, *plan);
  if (!run) return fail("bench", with_kind(run.error(), ErrorKind::kUsage));
  return finish_point(o, std::get<load::BenchReport>(*run));
}

int run(BenchOptions& o) {
  // Checked before anything runs: a point can take hours, and its result must not be lost.
  if (auto same = same_output_files({{"--output", o.output}, {"--details", o.details}})) {
    return fail("bench", usage_error(*same));
  }
  auto power = load::parse_power_mode(o.gpu_power);
  if (!power) {
    return fail(
        "bench",
        usage_error(fmt::format(
            "--gpu-power must be auto, off, nvidia-smi, amd-smi or dcgm (got '{}')", o.gpu_power)));
  }
  o.spec.power = *power;
  if (o.workload == "agentic") return run_agentic(o);
  if (o.workload == "trace") return run_bench_trace(o);
  if (!o.trace.path.empty()) return fail("bench", usage_error("--trace needs --workload trace"));
  if (o.workload != "fixed") {
    return fail("bench",
                usage_error(fmt::format(
                    "--workload must be 'fixed', 'agentic' or 'trace' (got '{}')", o.workload)));
  }
  return run_bench_fixed(o);
}

// --endpoint, --model, --api: the server and how it is asked.
void add_bench_target_options(CLI::App* app, BenchOptions& o) {
  app->add_option("--endpoint", o.spec.endpoint_url,
                  "Server base URL: http://HOST:PORT, with or without a trailing /v1 (request "
                  "paths such as /v1/completions are added to it)")
      ->capture_default_str()
      ->transform(endpoint_url());
  app->add_option("--model", o.spec.model, "Model name (default: first from /v1/models)");
  add_api_key_option(app, o.spec.api_key);
  app->add_option("--api", o.api, "completions | chat")->capture_default_str();
}

// The fixed workload's prompts and the load shape: lengths, requests, concurrency or rate,
// arrivals, duration, warmups, seed.
void add_bench_load_options(CLI::App* app, BenchOptions& o) {
  add_integer(app, "--isl", o.spec.workload.isl, "Input length in tokens", 1, kMaxTokens)
      ->capture_default_str();
  add_integer(app, "--osl", o.spec.workload.osl, "Output length in tokens", 1, kMaxTokens)
      ->capture_default_str();
  app->add_option("--range-ratio", o.spec.workload.range_ratio,
                  "Lengths uniform in [ratio*L, L]; 1 (the default): every request exactly "
                  "--isl/--osl, as one point against a server is usually asked; sweep follows "
                  "InferenceX's recipes with 0.8")
      ->capture_default_str()
      ->transform(positive_real(1));
  add_integer(app, "--num-prompts", o.spec.workload.num_prompts, "Measured requests", 1,
              kMaxRequests)
      ->capture_default_str();
  o.concurrency_option =
      add_integer(app, "--concurrency,--max-concurrency", o.spec.shape.concurrency,
                  "Closed loop: concurrent requests (default 1). Open loop: cap on requests in "
                  "flight (default: none)",
                  1, kMaxConcurrency);
  app->add_option("--request-rate", o.request_rate,
                  "Open loop: requests per second on an absolute schedule (default: closed loop)")
      ->transform(positive_real(kMaxRequestRate));
  app->add_option("--arrival", o.arrival, "Open-loop arrivals: constant | poisson | gamma")
      ->capture_default_str();
  app->add_option("--burstiness", o.spec.shape.arrivals.burstiness,
                  "Gamma shape of the gaps (1 = Poisson; < 1 burstier)")
      ->capture_default_str()
      ->transform(positive_real(1000));
  app->add_option("--duration", o.spec.shape.duration_s,
                  "Stop sending after this many seconds (prompts are reused cyclically); "
                  "agentic: recorded seconds of the profiling phase (default 3600)")
      ->transform(positive_real(kMaxSeconds));
  add_integer(app, "--warmups", o.spec.warmups, "Warmup requests (not measured)", 0, kMaxRequests)
      ->capture_default_str();
  o.seed_option =
      add_integer(app, "--seed", o.spec.workload.seed,
                  "Random seed (default 0; --workload agentic: 42, as InferenceX)", 0, kMaxSeed);
  add_integer(app, "--vocab-size", o.spec.workload.vocab_size, "Token ids are drawn below this",
              101, std::numeric_limits<int32_t>::max())
      ->capture_default_str();
}

// What the point reports: percentiles, per-GPU throughput, goodput SLOs, usage stats.
void add_bench_metrics_options(CLI::App* app, BenchOptions& o) {
  app->add_option("--percentiles", o.percentiles, "Percentiles to report besides the median")
      ->capture_default_str();
  add_integer(app, "--num-gpus", o.spec.metrics.num_gpus, "GPUs serving (for per-GPU throughput)",
              1, kMaxGpus)
      ->capture_default_str();
  app->add_option("--goodput", o.goodput, "SLOs for goodput, e.g. ttft:500 tpot:50 e2el:10000")
      ->expected(1, 3);
  app->add_flag("--continuous-usage", o.spec.continuous_usage,
                "Also request stream_options.continuous_usage_stats: a token count on every "
                "event, so that per-token ITL is known where a server sends several tokens an "
                "event (speculative decoding, --stream-interval)");
}

// The client: timeouts, retries, event-loop threads, source addresses, request ids.
void add_bench_client_options(CLI::App* app, BenchOptions& o) {
  app->add_option("--connect-timeout", o.connect_timeout_s, "Seconds")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  app->add_option("--first-byte-timeout", o.first_byte_timeout_s,
                  "Seconds from sending to the first response byte (0 = none)")
      ->capture_default_str()
      ->transform(real_in(0, kMaxSeconds));
  app->add_option("--idle-timeout", o.idle_timeout_s,
                  "Seconds without progress while reading a response: an event stream progresses "
                  "with data events, not keep-alive comments (0 = none)")
      ->capture_default_str()
      ->transform(real_in(0, kMaxSeconds));
  app->add_option("--request-timeout", o.request_timeout_s,
                  "Seconds for a whole request (default 6 h, as vLLM's benchmark_serving; "
                  "0 = none)")
      ->capture_default_str()
      ->transform(real_in(0, kMaxSeconds));
  add_integer(app, "--max-retries", o.spec.max_retries,
              "Re-sends of a request that failed before any response byte", 0, 100)
      ->capture_default_str();
  add_integer(app, "--threads", o.spec.threads, "Client event-loop threads (0 = automatic)", 0,
              1024)
      ->capture_default_str();
  add_integer(app, "--source-addresses", o.spec.source_addresses,
              "Loopback targets: spread connections over 127.0.0.1..N (0 = automatic)", 0, 254)
      ->capture_default_str();
  app->add_flag("--no-request-ids", o.no_request_ids, "Do not send X-Request-Id headers");
}

// --tokenizer, --chat-template and --tokenize-check: prompts of exact token lengths.
void add_bench_tokenizer_options(CLI::App* app, BenchOptions& o) {
  add_tokenizer_options(app, o.tokenizer,
                        "prompts become natural text of exactly --isl tokens as the server counts "
                        "them, chat template included");
  add_integer(app, "--tokenize-check", o.spec.tokenize_check,
              "Before measuring, have the server's /tokenize (vLLM, SGLang) count N prompts and "
              "compare with the client's count",
              0, 1000);
}

// --workload and the AgentX replay's options (--workload agentic).
void add_bench_agentic_options(CLI::App* app, BenchOptions& o) {
  app->add_option("--workload", o.workload,
                  "fixed (random prompts of --isl/--osl) | agentic (AgentX replay of --traces) | "
                  "trace (a timed trace at its recorded times: --trace, --trace-format)")
      ->capture_default_str();
  app->add_option("--trace", o.trace.path,
                  "trace: the timed trace file (Mooncake/Bailian JSONL, BurstGPT/Azure CSV)")
      ->check(input_file());
  app->add_option("--trace-format", o.trace_format, "trace: mooncake | bailian | burstgpt | azure")
      ->capture_default_str();
  add_integer(app, "--block-size", o.trace.block_size,
              "trace: tokens per hash id (default: mooncake 512, bailian 16)", 1, 1 << 20);
  app->add_option("--max-lag-ms", o.trace.max_lag_ms,
                  "trace: the arrival lag p99 beyond which the replay is invalid (fidelity bound)")
      ->capture_default_str()
      ->transform(positive_real(1e9));
  app->add_option("--window", o.window,
                  "trace: only the requests in START:END seconds of the trace (':600', '300:')");
  add_integer(app, "--max-requests", o.trace.max_requests,
              "trace: replay the first N requests (of the window) only (0: all)", 0, kMaxRequests);
  app->add_option("--traces", o.agentic.traces,
                  "agentic: Weka traces to replay (files, .jsonl corpora or folders)")
      ->check(existing_path());
  add_integer(app, "--max-traces", o.agentic.max_traces, "agentic: replay the first N traces only",
              1, kMaxTraces);
  o.warmup_per_lane_option =
      add_integer(app, "--warmup-requests-per-lane", o.agentic.warmup_requests_per_lane,
                  "agentic: cache-pressure warmup requests per lane after the primers", 0,
                  kMaxWarmupsPerLane)
          ->capture_default_str();
  app->add_option("--time-scale", o.agentic.time_scale,
                  "agentic: divide every recorded delay, cap and duration by K (pair with "
                  "serve-sim --time-scale K; not submission-valid); trace: multiply every "
                  "recorded time by K (0.5 replays at twice the rate)")
      ->capture_default_str()
      ->transform(positive_real(kMaxTimeScale));
  app->add_option_function<std::string>(
         "--session-routing",
         [&o](const std::string& v) {
           o.agentic.session_routing = *workload::parse_session_routing(v);
         },
         "agentic: what each request tells a router of its session: none | dynamo-header "
         "(X-Dynamo-Session-ID) | dynamo-nvext (nvext.session_control bind/close) | "
         "smg-routing-key (X-SMG-Routing-Key)")
      ->check(CLI::IsMember({"none", "dynamo-header", "dynamo-nvext", "smg-routing-key"}));
  add_integer(app, "--session-timeout", o.agentic.session_timeout_s,
              "agentic: dynamo-nvext's session timeout in seconds", 1, 30 * 86400)
      ->capture_default_str();
  app->add_option("--trace-idle-cap", o.agentic.trace_idle_cap_s,
                  "agentic: per-tree idle cap in recorded seconds (0 = off)")
      ->capture_default_str()
      ->transform(real_in(0, kMaxSeconds));
  app->add_option("--t-star-min", o.agentic.t_star_min,
                  "agentic: lanes start at t* in [min, max] of their trace's span")
      ->capture_default_str()
      ->transform(real_in(0, 1));
  app->add_option("--t-star-max", o.agentic.t_star_max, "agentic: see --t-star-min")
      ->capture_default_str()
      ->transform(real_in(0, 1));
  app->add_option("--grace", o.agentic.grace_s,
                  "agentic: recorded seconds in-flight requests may finish after the duration")
      ->capture_default_str()
      ->transform(real_in(0, kMaxSeconds));
  app->add_flag("--agentx-fast", o.agentx_fast,
                "agentic: InferenceX's fast mode (1200 s, 1 warmup request per lane)");
}

// What is observed beside the point: the server's metrics and GPU power.
void add_bench_telemetry_options(CLI::App* app, BenchOptions& o) {
  app->add_option("--server-metrics-url", o.spec.server_metrics_urls,
                  "Prometheus endpoints to scrape during the point (repeatable, one per worker; "
                  "default: the endpoint's /metrics)");
  app->add_option("--expect-spec-acceptance", o.expect_al,
                  "The golden acceptance length a speculating server must realise over the point "
                  "(1 + accepted / drafts from its /metrics); a miss makes the point invalid")
      ->transform(real_in(1, 65));
  app->add_option("--spec-acceptance-tolerance", o.al_tolerance,
                  "How far the realised acceptance length may be from --expect-spec-acceptance")
      ->capture_default_str()
      ->transform(real_in(0, 64));
  app->add_option("--slice-duration", o.spec.slice_s,
                  "Seconds between server-metrics scrapes (the timeslice width)")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  // `o` lives as long as the function register_bench returns, which holds it.
  app->add_flag_callback(
      "--no-server-metrics", [&o] { o.spec.scrape_server_metrics = false; },
      "Do not scrape the server's metrics during the point");
  app->add_option("--gpu-power", o.gpu_power,
                  "GPU power during the point: auto (dcgm-exporter series in the server metrics, "
                  "else nvidia-smi or amd-smi on this host when the server is on loopback) | off "
                  "| nvidia-smi | amd-smi | dcgm (only the server metrics' DCGM_FI_DEV_* series)")
      ->capture_default_str();
  app->add_flag("--require-power", o.spec.require_power,
                "Fail the point when GPU power is missing or not valid");
}

// --output and --details: the files the point writes.
void add_bench_output_options(CLI::App* app, BenchOptions& o) {
  app->add_option("--output", o.output, "Write the result JSON here")->check(output_file());
  app->add_option("--details", o.details, "Write per-request records (JSONL) here")
      ->check(output_file());
}

}  // namespace

RunFn register_bench(CLI::App& root) {
  auto o = std::make_shared<BenchOptions>();
  o->spec.shape.concurrency = 0;  // unset: 1 in closed loop, no cap in open loop
  o->spec.workload.num_prompts = 100;
  CLI::App* app =
      root.add_subcommand("bench", "Run one benchmark point against an OpenAI-compatible server");
  add_bench_target_options(app, *o);
  add_bench_load_options(app, *o);
  add_bench_metrics_options(app, *o);
  add_bench_client_options(app, *o);
  add_bench_tokenizer_options(app, *o);
  add_bench_agentic_options(app, *o);
  add_bench_telemetry_options(app, *o);
  add_bench_output_options(app, *o);
  return [o]() {
    if (!o->spec.api_key.empty()) add_secret(o->spec.api_key);  // hidden wherever it turns up
    return run(*o);
  };
}

}  // namespace ib::cli
