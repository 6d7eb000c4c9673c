// `inferbench bench`: one benchmark point against any OpenAI-compatible server.
#include <cstdio>
#include <memory>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "load/bench.h"

namespace ib::cli {

namespace {

struct BenchOptions {
  BenchSpec spec;
  std::string api = "completions";
  std::string output;
  std::string details;
  std::string percentiles = "90,99,99.9";
  double connect_timeout_s = 10;
  double idle_timeout_s = 300;
};

Expected<std::vector<double>> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      double v = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      return Error{fmt::format("--percentiles: '{}' is not a number", item)};
    }
  }
  if (out.empty()) return Error{"--percentiles: empty list"};
  return out;
}

int run(BenchOptions& o) {
  auto api = parse_api(o.api);
  if (!api) {
    fmt::print(stderr, "inferbench bench: --api must be 'completions' or 'chat' (got '{}')\n",
               o.api);
    return kExitUsage;
  }
  o.spec.api = *api;
  auto pct = parse_percentiles(o.percentiles);
  if (!pct) {
    fmt::print(stderr, "inferbench bench: {}\n", pct.error().message);
    return kExitUsage;
  }
  o.spec.metrics.percentiles = *pct;
  o.spec.timeouts.connect = std::chrono::milliseconds(static_cast<int64_t>(o.connect_timeout_s * 1000));
  o.spec.timeouts.idle = std::chrono::milliseconds(static_cast<int64_t>(o.idle_timeout_s * 1000));
  if (auto s = validate(o.spec); !s) {
    fmt::print(stderr, "inferbench bench: {}\n", s.error().message);
    return kExitUsage;
  }
  o.spec.show_progress = true;
  install_interrupt_handlers();
  auto report = run_bench(o.spec);
  if (!report) {
    fmt::print(stderr, "inferbench bench: {}\n", report.error().message);
    return kExitUsage;
  }
  fmt::print("{}", format_summary(*report, o.spec));
  if (!o.output.empty()) {
    if (auto s = write_file_atomic(o.output, boost::json::serialize(report->json) + "\n"); !s) {
      fmt::print(stderr, "inferbench bench: {}\n", s.error().message);
      return kExitFailure;
    }
  }
  if (!o.details.empty()) {
    std::string lines;
    for (const auto& r : report->run.measured) {
      lines += boost::json::serialize(record_to_json(r, report->run.origin_ns));
      lines += '\n';
    }
    if (auto s = write_file_atomic(o.details, lines); !s) {
      fmt::print(stderr, "inferbench bench: {}\n", s.error().message);
      return kExitFailure;
    }
  }
  if (report->partial) {
    fmt::print(stderr, "inferbench bench: interrupted; the result is partial\n");
    return kExitInterrupted;
  }
  const auto& m = report->metrics;
  if (m.num_requests == 0) {
    fmt::print(stderr, "inferbench bench: no request was measured\n");
    return kExitFailure;
  }
  if (m.failure_rate() > kMaxFailureRate) {
    fmt::print(stderr, "inferbench bench: {} of {} requests failed (limit {:.0f}%)\n", m.failed,
               m.num_requests, kMaxFailureRate * 100);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

RunFn register_bench(CLI::App& root) {
  auto o = std::make_shared<BenchOptions>();
  o->spec.workload.num_prompts = 100;
  CLI::App* app = root.add_subcommand("bench", "Run one benchmark point against an OpenAI-compatible server");
  app->add_option("--endpoint", o->spec.endpoint_url, "Server base URL")
      ->capture_default_str();
  app->add_option("--model", o->spec.model, "Model name (default: first from /v1/models)");
  app->add_option("--api", o->api, "completions | chat")->capture_default_str();
  app->add_option("--isl", o->spec.workload.isl, "Input length in tokens")->capture_default_str();
  app->add_option("--osl", o->spec.workload.osl, "Output length in tokens")->capture_default_str();
  app->add_option("--range-ratio", o->spec.workload.range_ratio,
                  "Lengths uniform in [ratio*L, L]")
      ->capture_default_str();
  app->add_option("--num-prompts", o->spec.workload.num_prompts, "Measured requests")
      ->capture_default_str();
  app->add_option("--concurrency,--max-concurrency", o->spec.concurrency,
                  "Closed-loop concurrency")
      ->capture_default_str();
  app->add_option("--warmups", o->spec.warmups, "Warmup requests (not measured)")
      ->capture_default_str();
  app->add_option("--seed", o->spec.workload.seed, "Random seed")->capture_default_str();
  app->add_option("--vocab-size", o->spec.workload.vocab_size,
                  "Token ids are drawn below this")
      ->capture_default_str();
  app->add_option("--percentiles", o->percentiles, "Percentiles to report besides the median")
      ->capture_default_str();
  app->add_option("--num-gpus", o->spec.metrics.num_gpus, "GPUs serving (for per-GPU throughput)")
      ->capture_default_str();
  app->add_option("--connect-timeout", o->connect_timeout_s, "Seconds")->capture_default_str();
  app->add_option("--idle-timeout", o->idle_timeout_s,
                  "Seconds of silence allowed while reading a response")
      ->capture_default_str();
  app->add_option("--output", o->output, "Write the result JSON here");
  app->add_option("--details", o->details, "Write per-request records (JSONL) here");
  return [o]() { return run(*o); };
}

}  // namespace ib::cli
