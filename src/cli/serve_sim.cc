// `inferbench serve-sim`: runs the embedded simulated OpenAI-compatible engine (docs/serve-sim.md)
// until SIGINT or SIGTERM.
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.h"
#include "cli/tokenizer_options.h"
#include "core/files.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/strings.h"
#include "report/table.h"
#include "sim/config.h"
#include "sim/env.h"
#include "sim/hardware.h"
#include "sim/model_spec.h"
#include "sim/router.h"
#include "sim/sim_server.h"

namespace ib::cli {

namespace {

// Raw option values; which ones were given is read from the CLI11 options after parsing.
struct ServeSimOptions {
  CLI::App* app = nullptr;  // for the options a router refuses
  sim::SimArgs args;
  std::string port_file;
  std::string timing_model;
  std::string threads = "auto";
  bool list_presets = false;
  double gsm8k_correct = 1.0, gsm8k_flexible_only = 0.0;
  TokenizerOptions tokenizer;
  CLI::Option *gsm8k_correct_opt = nullptr, *gsm8k_flexible_opt = nullptr;
  // Speculative decoding (simple model).
  int spec_k = 0;
  double spec_acceptance = 0, spec_length = 0, spec_draft_ms = 0;
  CLI::Option *spec_k_opt = nullptr, *spec_p_opt = nullptr, *spec_al_opt = nullptr,
              *spec_draft_opt = nullptr;
  std::string per_request_spec;  // --per-request-spec-decode-metrics: summary
  std::string spec_decoding;     // --spec-decoding: InferenceX's field (none | mtp | draft_model)
  // Disaggregation: the role, the KV link, the router's workers.
  std::string role = "both", kv_link, routing = "round_robin";
  double kv_bandwidth_gbs = 0, kv_latency_us = 0, router_timeout_s = 600;
  double session_affinity_ttl_s = 0;
  std::vector<std::string> prefill_urls, decode_urls;
  CLI::Option *kv_bandwidth_opt = nullptr, *kv_latency_opt = nullptr, *kv_port_opt = nullptr,
              *kv_lease_opt = nullptr;
  // Roofline settings.
  std::string hardware, model_preset, quantization, kv_cache_dtype;
  int tp = 1, max_num_seqs = 0, max_num_batched_tokens = 0, block_size = 0, num_gpu_blocks = 0;
  double gpu_memory_utilization = 0, compute_efficiency = 0, memory_efficiency = 0;
  double step_overhead_us = 0;
  bool enable_expert_parallel = false, enable_prefix_caching = true;
  bool disable_custom_all_reduce = false;
  // Options by role, to tell which were given.
  std::vector<CLI::Option*> simple_only;
  std::vector<CLI::Option*> worker_only, router_only;  // --kv-*; --prefill, --decode, --routing
  std::vector<CLI::Option*> roofline_only;
  CLI::Option* timing_model_opt = nullptr;
  CLI::Option* max_model_len_opt = nullptr;
  CLI::Option* max_num_seqs_opt = nullptr;
  CLI::Option *hardware_opt = nullptr, *model_preset_opt = nullptr, *quantization_opt = nullptr,
              *kv_cache_dtype_opt = nullptr, *tp_opt = nullptr, *ep_opt = nullptr,
              *batched_opt = nullptr, *block_size_opt = nullptr, *num_blocks_opt = nullptr,
              *util_opt = nullptr, *prefix_opt = nullptr, *custom_ar_opt = nullptr,
              *compute_eff_opt = nullptr, *memory_eff_opt = nullptr, *overhead_opt = nullptr;
};

template <class T>
std::optional<T> given(const CLI::Option* opt, const T& value) {
  return opt != nullptr && opt->count() > 0 ? std::optional<T>(value) : std::nullopt;
}

// The table's lines, each indented by two spaces.
std::string indented(const report::Table& table) {
  std::vector<std::string> lines = split(table.render(), '\n');
  lines.pop_back();  // the empty field after the final '\n'
  std::string out;
  for (const std::string& line : lines) out += "  " + line + "\n";
  return out;
}

void print_presets() {
  using report::Align;
  report::Table hardware({{"name", Align::kLeft},
                          {"arch", Align::kLeft},
                          {"HBM GiB"},
                          {"TB/s"},
                          {"bf16"},
                          {"fp8"},
                          {"fp4"},
                          {"scale-up fabric", Align::kLeft}});
  for (const sim::HardwareSpec& h : sim::hardware_presets()) {
    hardware.add_row({std::string(h.name), std::string(h.arch), fmt::format("{:g}", h.memory_gib),
                      fmt::format("{:g}", h.hbm_tb_s), fmt::format("{:g}", h.bf16_tflops),
                      fmt::format("{:g}", h.fp8_tflops),
                      h.fp4_tflops > 0 ? fmt::format("{:g}", h.fp4_tflops) : std::string("-"),
                      h.fabric == sim::Fabric::kSwitch
                          ? fmt::format("NVSwitch {:g} GB/s per GPU", h.link_gb_s)
                          : fmt::format("mesh, {:g} GB/s per link", h.link_gb_s)});
  }
  report::Table models({{"name", Align::kLeft},
                        {"total B"},
                        {"active B"},
                        {"layers"},
                        {"dtype", Align::kLeft},
                        {"checkpoint", Align::kLeft}});
  for (const sim::ModelSpec& m : sim::model_presets()) {
    const sim::ParamCounts p = sim::param_counts(m);
    models.add_row({std::string(m.name), report::fixed(p.total() / 1e9, 1),
                    report::fixed(p.active(m.experts_per_token, m.moe_layers()) / 1e9, 1),
                    std::to_string(m.layers), std::string(sim::to_string(m.checkpoint)),
                    std::string(m.hf_id)});
  }
  fmt::print("hardware presets (dense TFLOPS; fabric bandwidth one direction):\n{}",
             indented(hardware));
  fmt::print("\nmodel presets:\n{}", indented(models));
}

// Chooses the timing model and resolves the roofline configuration into o.args.
int resolve(ServeSimOptions& o) {
  auto any_given = [](const std::vector<CLI::Option*>& opts) -> const CLI::Option* {
    for (const CLI::Option* opt : opts) {
      if (opt->count() > 0) return opt;
    }
    return nullptr;
  };
  const CLI::Option* simple_flag = any_given(o.simple_only);
  const CLI::Option* roofline_flag = any_given(o.roofline_only);
  sim::TimingModelKind kind = sim::TimingModelKind::kRoofline;
  if (o.timing_model_opt->count() > 0) {
    kind = o.timing_model == "simple" ? sim::TimingModelKind::kSimple
                                      : sim::TimingModelKind::kRoofline;
  } else if (simple_flag != nullptr) {
    kind = sim::TimingModelKind::kSimple;  // the simple model's flags select it
  }
  if (kind == sim::TimingModelKind::kRoofline && simple_flag != nullptr) {
    return fail("serve-sim", usage_error(fmt::format("{} applies to --timing-model simple",
                                                     simple_flag->get_name())));
  }
  if (kind == sim::TimingModelKind::kSimple && roofline_flag != nullptr) {
    return fail("serve-sim", usage_error(fmt::format("{} applies to --timing-model roofline",
                                                     roofline_flag->get_name())));
  }
  o.args.timing_model = kind;
  if (kind == sim::TimingModelKind::kSimple) {
    if (o.max_num_seqs_opt->count() > 0) o.args.max_running = o.max_num_seqs;
    return kExitOk;
  }
  sim::EngineFlags f;
  f.hardware = given(o.hardware_opt, o.hardware);
  f.model_preset = given(o.model_preset_opt, o.model_preset);
  f.quantization = given(o.quantization_opt, o.quantization);
  f.kv_cache_dtype = given(o.kv_cache_dtype_opt, o.kv_cache_dtype);
  f.tensor_parallel_size = given(o.tp_opt, o.tp);
  f.enable_expert_parallel = given(o.ep_opt, o.enable_expert_parallel);
  f.max_num_seqs = given(o.max_num_seqs_opt, o.max_num_seqs);
  f.max_num_batched_tokens = given(o.batched_opt, o.max_num_batched_tokens);
  f.block_size = given(o.block_size_opt, o.block_size);
  f.num_gpu_blocks_override = given(o.num_blocks_opt, o.num_gpu_blocks);
  f.gpu_memory_utilization = given(o.util_opt, o.gpu_memory_utilization);
  f.enable_prefix_caching = given(o.prefix_opt, o.enable_prefix_caching);
  f.disable_custom_all_reduce = given(o.custom_ar_opt, o.disable_custom_all_reduce);
  f.compute_efficiency = given(o.compute_eff_opt, o.compute_efficiency);
  f.memory_efficiency = given(o.memory_eff_opt, o.memory_efficiency);
  f.step_overhead_us = given(o.overhead_opt, o.step_overhead_us);
  // Without --max-model-len the roofline model serves its preset's native context (capped to the
  // KV cache), as InferenceX launches agentic servers with MAX_MODEL_LEN unset.
  auto config = sim::resolve_engine_config(f, given(o.max_model_len_opt, o.args.max_model_len));
  if (!config) {
    return fail("serve-sim", with_kind(config.error(), ErrorKind::kUsage));
  }
  o.args.max_model_len = config->max_model_len;
  o.args.engine = std::move(*config);
  return kExitOk;
}

int resolve_spec(ServeSimOptions& o);
int resolve_disagg(ServeSimOptions& o);
int run_router(ServeSimOptions& o);

// An option of another role would be silently ignored: refused, naming it.
int check_role_options(const ServeSimOptions& o) {
  for (const auto& [opts, applies, roles] :
       {std::tuple{&o.worker_only, o.role == "prefill" || o.role == "decode",
                   "--role prefill or decode"},
        std::tuple{&o.router_only, o.role == "router", "--role router"}}) {
    for (const CLI::Option* opt : *opts) {
      if (opt->count() > 0 && !applies) {
        return fail("serve-sim", usage_error(fmt::format("{} applies with {}, not --role {}",
                                                         opt->get_name(), roles, o.role)));
      }
    }
  }
  if (o.role == "router") {
    // The router computes nothing: an engine's option given to it would be ignored.
    static const std::set<std::string> kRouterOptions = {"--help",
                                                         "--role",
                                                         "--prefill",
                                                         "--decode",
                                                         "--routing",
                                                         "--host",
                                                         "--port",
                                                         "--model",
                                                         "--api-key",
                                                         "--port-file",
                                                         "--router-timeout-s",
                                                         "--router-session-affinity-ttl-secs",
                                                         "--keep-alive-timeout-s"};
    for (const CLI::Option* opt : o.app->get_options()) {
      if (opt->count() > 0 && !kRouterOptions.count(opt->get_name())) {
        return fail("serve-sim", usage_error(fmt::format(
                                     "{} is an engine's option: the router (--role router) "
                                     "computes nothing; give it to the prefill and decode workers",
                                     opt->get_name())));
      }
    }
  }
  return kExitOk;
}

int run(ServeSimOptions& o) {
  if (o.list_presets) {
    print_presets();
    return kExitOk;
  }
  if (auto same =
          same_output_files({{"--port-file", o.port_file}, {"--truth-log", o.args.truth_log}})) {
    return fail("serve-sim", usage_error(*same));
  }
  if (int rc = check_role_options(o); rc != kExitOk) return rc;
  if (o.role == "router") {
    if (o.prefill_urls.empty() || o.decode_urls.empty()) {
      return fail("serve-sim", usage_error("--role router needs --prefill URL and --decode URL "
                                           "(one of each at least)"));
    }
    return run_router(o);
  }
  if (int rc = resolve(o); rc != kExitOk) return rc;
  if (int rc = resolve_spec(o); rc != kExitOk) return rc;
  if (int rc = resolve_disagg(o); rc != kExitOk) return rc;
  o.args.per_request_spec_metrics = o.per_request_spec == "summary";
  if (o.gsm8k_flexible_opt->count() > 0 && o.gsm8k_correct_opt->count() == 0) {
    return fail("serve-sim", usage_error("--gsm8k-flexible-only applies with --gsm8k-correct"));
  }
  if (o.gsm8k_correct_opt->count() > 0) {
    o.args.gsm8k = sim::Gsm8kAnswerOptions{o.gsm8k_correct, o.gsm8k_flexible_only};
  }
  auto tok = load_tokenizer(o.tokenizer);
  if (!tok) {
    return fail("serve-sim", with_kind(tok.error(), ErrorKind::kUsage));
  }
  o.args.tokenizer = std::move(*tok);
  o.args.threads = o.threads == "auto" ? sim::default_io_threads() : std::stoi(o.threads);
  if (auto valid = sim::validate(o.args); !valid) {
    return fail("serve-sim", with_kind(valid.error(), ErrorKind::kUsage));
  }
  raise_open_file_limit();  // thousands of connections
  // Declared first, destroyed last: the server's pending work refers to it.
  boost::asio::io_context io(1);
  sim::SimServer server(io, o.args);
  auto port = server.listen();
  if (!port) {
    return fail("serve-sim", port.error());
  }
  // Removed at exit only when serve-sim created it: a file, link or device that was there
  // before is the user's (written through or replaced, never deleted).
  std::error_code exists_ec;
  const bool remove_port_file =
      !o.port_file.empty() &&
      !std::filesystem::exists(std::filesystem::symlink_status(o.port_file, exists_ec));
  if (!o.port_file.empty()) {
    if (auto written = write_file_atomic(o.port_file, fmt::format("{}\n", *port)); !written) {
      return fail("serve-sim",
                  Error{fmt::format("cannot write the port file: {}", written.error().message)});
    }
  }
  if (o.args.tokenizer) {
    const auto& t = *o.args.tokenizer;
    fmt::print(stderr, "serve-sim: counting prompt tokens with {} ({})\n", t.path(),
               t.has_chat_template()
                   ? fmt::format("chat template from {}, {} tokens around one message",
                                 t.chat_template_source(), *t.chat_overhead())
                   : std::string("no chat template: chat messages get the word rule's 4 tokens "
                                 "each and 3 per request"));
  }
  const std::string& host = o.args.host;
  fmt::print(stderr, "serve-sim listening on http://{}:{}\n",
             host.find(':') != std::string::npos ? "[" + host + "]" : host, *port);

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    fmt::print(stderr, "serve-sim: received {}, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  });
  // The engine (and, with --threads 1, every connection) runs on this thread. Returns once stop()
  // has closed every connection, the cancelled requests have unwound and the I/O threads are
  // done; the server's destructor joins them.
  io.run();

  if (remove_port_file) {
    std::error_code ignored;
    std::filesystem::remove(o.port_file, ignored);  // a stale port file would mislead a parent
  }
  return kExitOk;
}

// --threads: "auto" or a thread count, rewritten in plain decimal for the std::stoi in run().
CLI::Validator threads_value() {
  const CLI::Validator count = integer_in(1, sim::kMaxIoThreads);
  return CLI::Validator(
      [count](std::string& text) -> std::string {
        if (text == "auto") return "";
        if (count(text).empty()) return "";
        return fmt::format("must be auto or an integer from 1 to {}, got '{}'", sim::kMaxIoThreads,
                           printable(text, 40));
      },
      "auto|1.." + std::to_string(sim::kMaxIoThreads));
}

// The server's own options: where it listens, what it serves, its timing model and threads.
void add_sim_server_options(CLI::App* app, ServeSimOptions& o) {
  sim::SimArgs& a = o.args;
  app->add_option("--host", a.host, "Address to listen on")->capture_default_str();
  add_integer(app, "--port", a.port, "TCP port; 0 picks a free one (see --port-file)", 0, 65535)
      ->capture_default_str();
  app->add_option("--port-file", o.port_file,
                  "Once listening, write the bound port and a newline here (atomically)")
      ->check(output_file());
  app->add_option("--model", a.model, "Served model name")->capture_default_str();
  app->add_option("--api-key", a.api_key,
                  "Answer the /v1 routes with 401 unless 'Authorization: Bearer KEY' (as vLLM)");
  o.max_model_len_opt =
      add_integer(app, "--max-model-len", a.max_model_len,
                  "Context length: prompt + output tokens beyond it get 400 (default: "
                  "roofline, the model preset's max_context capped to the KV cache; simple, "
                  "32768)",
                  2, std::numeric_limits<int>::max());
  o.timing_model_opt =
      app->add_option("--timing-model", o.timing_model,
                      "roofline (continuous batching on a hardware/model performance model; the "
                      "default) or simple (fixed per-request timing; implied by its flags)")
          ->check(CLI::IsMember({"roofline", "simple"}));
  app->add_option("--time-scale", a.time_scale,
                  "Run the same schedule this many times faster (durations divided by it)")
      ->capture_default_str()
      ->transform(positive_real(kMaxTimeScale));
  add_integer(app, "--stream-interval", a.stream_interval,
              "Tokens per SSE event, as vLLM's and SGLang's --stream-interval: the first token "
              "goes out at once, then one event every N tokens, the rest with the last",
              1, 1'000'000)
      ->capture_default_str();
  app->add_option("--metrics-engine", a.metrics_engine,
                  "/metrics in vllm's names or sglang's (sglang:num_running_reqs, token_usage, "
                  "spec_accept_length over the steps since the previous scrape, ...)")
      ->capture_default_str()
      ->check(CLI::IsMember({"vllm", "sglang"}));
  app->add_option("--truth-log", a.truth_log,
                  "Write one JSON line per request with each token's send time (steady-clock ns)")
      ->check(output_file());
  add_integer(app, "--seed", a.seed, "Seed of output lengths and texts", 0, kMaxSeed)
      ->capture_default_str();
  app->add_flag("--power-model", a.power_model,
                "Export a modelled GPU power trace per tensor-parallel rank on /metrics, in "
                "dcgm-exporter's names (DCGM_FI_DEV_POWER_USAGE, ..._TOTAL_ENERGY_CONSUMPTION), "
                "derived from the engine's steps (roofline only; docs/serve-sim.md)");
  app->add_option("--threads", o.threads,
                  fmt::format("HTTP I/O threads: 1 serves the engine and every connection on one "
                              "thread; N > 1 spreads connections over N threads, the engine "
                              "keeping its own (at most {}); auto = min(4, cores / 2), at least 1 "
                              "(here {})",
                              sim::kMaxIoThreads, sim::default_io_threads()))
      ->capture_default_str()
      ->transform(threads_value());
  app->add_option("--keep-alive-timeout-s", a.keep_alive_timeout_s,
                  "Close keep-alive connections idle this long (0 = never)")
      ->capture_default_str()
      ->transform(real_in(0, kMaxSeconds));
  o.max_num_seqs_opt =
      add_integer(app, "--max-num-seqs,--max-running", o.max_num_seqs,
                  "Requests running at once; later ones wait (default: 1024 roofline on "
                  "GPUs >= 70 GiB, 256 simple; env SIM_MAX_NUM_SEQS)",
                  1, kMaxRunning);
  app->add_flag("--list-presets", o.list_presets, "Print the hardware and model presets and exit");
}

// --gsm8k-correct and --gsm8k-flexible-only: answers for lm-eval's GSM8K task.
void add_gsm8k_options(CLI::App* app, ServeSimOptions& o) {
  o.gsm8k_correct_opt =
      app->add_option("--gsm8k-correct", o.gsm8k_correct,
                      "Answer GSM8K test questions (lm-eval's prompt format) in lm-eval's answer "
                      "format, this fraction of them correctly (0-1; exactly floor(N x FRACTION) "
                      "of the first N problems); other prompts get the usual word text")
          ->transform(real_in(0, 1));
  o.gsm8k_flexible_opt =
      app->add_option("--gsm8k-flexible-only", o.gsm8k_flexible_only,
                      "With --gsm8k-correct: this fraction of the correct answers leaves out the "
                      "'#### N' line, so only the flexible-extract filter finds the number (0-1)")
          ->capture_default_str()
          ->transform(real_in(0, 1));
}

// The "Roofline model" group: hardware and model presets, parallelism, scheduler limits, KV cache
// and calibration. Each option is recorded as roofline-only.
void add_roofline_options(CLI::App* app, ServeSimOptions& o) {
  auto roofline = [&](CLI::Option* opt) {
    opt->group("Roofline model");
    o.roofline_only.push_back(opt);
    return opt;
  };
  o.hardware_opt =
      roofline(app->add_option("--hardware", o.hardware,
                               "Accelerator preset: " + sim::hardware_names() + " (default H200)"));
  o.model_preset_opt = roofline(app->add_option(
      "--model-preset", o.model_preset,
      "Model architecture preset: " + sim::model_names() + " (default llama-3.1-8b)"));
  o.tp_opt = roofline(add_integer(app, "--tensor-parallel-size,--tp", o.tp,
                                  "Tensor-parallel GPUs (default 1)", 1, 64));
  o.ep_opt = roofline(app->add_flag("--enable-expert-parallel", o.enable_expert_parallel,
                                    "MoE layers: split experts over the TP GPUs (all-to-all)"));
  o.quantization_opt =
      roofline(app->add_option("--quantization", o.quantization,
                               "Weight precision: bf16, fp8, fp4 (default: the checkpoint's)"));
  o.kv_cache_dtype_opt = roofline(app->add_option(
      "--kv-cache-dtype", o.kv_cache_dtype, "auto (bf16), bf16 or fp8 (env SIM_KV_CACHE_DTYPE)"));
  o.batched_opt = roofline(add_integer(
      app, "--max-num-batched-tokens", o.max_num_batched_tokens,
      "Token budget of one step (default 8192; env SIM_MAX_NUM_BATCHED_TOKENS)", 1, 1 << 24));
  o.block_size_opt = roofline(add_integer(app, "--block-size", o.block_size,
                                          "Tokens per KV-cache block (default 16)", 1, 1024));
  // Bounded: the simulator holds a record per block (a memory-sized input).
  o.num_blocks_opt =
      roofline(add_integer(app, "--num-gpu-blocks-override", o.num_gpu_blocks,
                           "KV-cache blocks, instead of what memory allows", 1, kMaxGpuBlocks));
  o.util_opt =
      roofline(app->add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                               "Fraction of GPU memory for weights + KV cache (default 0.9; env "
                               "SIM_GPU_MEMORY_UTILIZATION)")
                   ->transform(positive_real(1)));
  o.prefix_opt = roofline(app->add_flag(
      "--enable-prefix-caching,!--no-enable-prefix-caching", o.enable_prefix_caching,
      "Reuse KV blocks of shared prompt prefixes (default on; env SIM_ENABLE_PREFIX_CACHING)"));
  o.custom_ar_opt = roofline(
      app->add_flag("--disable-custom-all-reduce", o.disable_custom_all_reduce,
                    "Use NCCL/RCCL for every all-reduce (env SIM_DISABLE_CUSTOM_ALL_REDUCE)"));
  o.compute_eff_opt = roofline(app->add_option("--compute-efficiency", o.compute_efficiency,
                                               "Achieved / peak tensor FLOPS (default 0.6)")
                                   ->transform(positive_real(1)));
  o.memory_eff_opt = roofline(app->add_option("--memory-efficiency", o.memory_efficiency,
                                              "Achieved / peak HBM bandwidth (default 0.8)")
                                  ->transform(positive_real(1)));
  o.overhead_opt = roofline(app->add_option("--step-overhead-us", o.step_overhead_us,
                                            "Fixed cost of every engine step (default 1000)")
                                ->transform(real_in(0, kMaxSeconds * 1e6)));
}

// The "Simple model" group: fixed per-request timing. Each option is recorded as simple-only.
void add_simple_options(CLI::App* app, ServeSimOptions& o) {
  sim::SimpleTimingParams& t = o.args.timing;
  auto simple = [&](CLI::Option* opt) {
    opt->group("Simple model");
    o.simple_only.push_back(opt);
    return opt;
  };
  simple(app->add_option("--prefill-tok-s", t.prefill_tok_s, "Prefill speed, prompt tokens/s")
             ->capture_default_str()
             ->transform(positive_real(1e12)));
  simple(app->add_option("--prefill-overhead-ms", t.prefill_overhead_ms,
                         "Fixed time added to every prefill")
             ->capture_default_str()
             ->transform(real_in(0, kMaxSeconds * 1000)));
  simple(app->add_option("--decode-base-ms", t.decode_base_ms, "Decode step time of a lone request")
             ->capture_default_str()
             ->transform(real_in(0, kMaxSeconds * 1000)));
  simple(app->add_option("--decode-per-running-ms", t.decode_per_running_ms,
                         "Added to each decode step per running request")
             ->capture_default_str()
             ->transform(real_in(0, kMaxSeconds * 1000)));
  // Speculative decoding: either timing model (the roofline's decode steps verify the drafts).
  auto spec_group = [](CLI::Option* opt) { return opt->group("Speculative decoding"); };
  o.spec_k_opt =
      spec_group(add_integer(app, "--spec-decode", o.spec_k,
                             "Speculative decoding: K draft tokens a decode step (vLLM's "
                             "num_speculative_tokens); a step yields 1 + the accepted ones",
                             1, sim::kMaxSpeculativeTokens));
  o.spec_p_opt =
      spec_group(app->add_option("--spec-acceptance", o.spec_acceptance,
                                 "With --spec-decode: each draft token's acceptance, given "
                                 "the previous one's (0 to 1)")
                     ->transform(real_in(0, 1)));
  o.spec_al_opt =
      spec_group(app->add_option("--spec-acceptance-length", o.spec_length,
                                 "With --spec-decode: the mean tokens a step yields (1 to "
                                 "K+1), pinned as vLLM's synthetic_acceptance_length: "
                                 "floor(AL-1) drafts accepted each step, one more with "
                                 "probability frac(AL-1)")
                     ->transform(real_in(1, sim::kMaxSpeculativeTokens + 1)));
  app->add_option("--spec-decoding", o.spec_decoding,
                  "InferenceX's spec-decoding field, as a recipe's {spec-decoding} gives it: none "
                  "turns speculation off (whatever --spec-decode says), mtp or draft_model turn it "
                  "on (default --spec-decode 3 --spec-acceptance 0.7)")
      ->check(CLI::IsMember({"none", "mtp", "draft_model"}));
  app->add_flag("--enable-per-request-metrics", o.args.per_request_metrics,
                "Each response (a stream's final usage event) carries the request's timing, as "
                "vLLM's option of that name: metrics {queue_time_ms, time_to_first_token_ms (from "
                "scheduling), generation_time_ms, mean_itl_ms, tokens_per_second}");
  spec_group(app->add_option("--per-request-spec-decode-metrics", o.per_request_spec,
                             "summary: each response (a stream's final usage event) carries "
                             "its own speculative decoding, as vLLM's option of that name: "
                             "metrics.speculative_decoding {mean_acceptance_length, "
                             "acceptance_histogram, num_spec_steps, ...}")
                 ->check(CLI::IsMember({"summary"})));
  o.spec_draft_opt =
      spec_group(app->add_option("--spec-draft-ms", o.spec_draft_ms,
                                 "With --spec-decode: the draft's cost per draft token, "
                                 "added to every decode step (default 0)")
                     ->transform(real_in(0, kMaxSeconds * 1000)));
}

// --spec-decode K with --spec-acceptance P or --spec-acceptance-length AL into o.args.spec.
int resolve_spec(ServeSimOptions& o) {
  bool k = o.spec_k_opt->count() > 0, p = o.spec_p_opt->count() > 0;
  const bool al = o.spec_al_opt->count() > 0, draft = o.spec_draft_opt->count() > 0;
  // A recipe row's spec-decoding: none runs the same command without speculation.
  if (o.spec_decoding == "none") return kExitOk;
  if (!o.spec_decoding.empty() && !k) {
    o.spec_k = 3;
    k = true;
    if (!al && !p) {
      o.spec_acceptance = 0.7;
      p = true;
    }
  }
  if (!k) {
    if (p || al || draft) {
      return fail("serve-sim", usage_error(fmt::format("{} applies with --spec-decode K",
                                                       p    ? "--spec-acceptance"
                                                       : al ? "--spec-acceptance-length"
                                                            : "--spec-draft-ms")));
    }
    return kExitOk;
  }
  if (p == al) {
    return fail(
        "serve-sim",
        usage_error("--spec-decode needs exactly one of --spec-acceptance P (each draft token's "
                    "acceptance) or --spec-acceptance-length AL (the mean tokens a step "
                    "yields)"));
  }
  sim::SpecDecodeConfig& spec = o.args.spec;
  spec.num_speculative_tokens = o.spec_k;
  spec.draft_ms = o.spec_draft_ms;
  if (p) {
    spec.acceptance = o.spec_acceptance;
  } else {
    if (o.spec_length > o.spec_k + 1) {
      return fail("serve-sim", usage_error(fmt::format(
                                   "--spec-acceptance-length {} is more than a step of {} draft "
                                   "tokens can yield ({}: every draft accepted, plus one)",
                                   o.spec_length, o.spec_k, o.spec_k + 1)));
    }
    spec.acceptance = sim::acceptance_for_length(o.spec_length, o.spec_k);
    spec.pinned_length = o.spec_length;
  }
  return kExitOk;
}

void add_disagg_options(CLI::App* app, ServeSimOptions& o) {
  auto group = [](CLI::Option* opt) { return opt->group("Disaggregated prefill/decode"); };
  // Options of the workers and of the router, to refuse them where they do nothing.
  auto kv_opt = [&](CLI::Option* opt) {
    o.worker_only.push_back(opt);
    return group(opt);
  };
  auto router_opt = [&](CLI::Option* opt) {
    o.router_only.push_back(opt);
    return group(opt);
  };
  sim::KvRoleArgs& kv = o.args.kv;
  group(app->add_option("--role", o.role,
                        "both (an aggregated server), or one role of a disaggregated deployment: "
                        "prefill (keeps each prefill's KV for a decode worker), decode (pulls the "
                        "KV, then decodes), router (the frontend: --prefill and --decode URLs)")
            ->capture_default_str()
            ->check(CLI::IsMember({"both", "prefill", "decode", "router"})));
  kv_opt(app->add_option(
      "--kv-link", o.kv_link,
      "The KV transfer link: nvlink (450 GB/s, 3 us), rdma (50 GB/s, 5 us), ethernet (12.5 GB/s, "
      "20 us) or tcp (1.25 GB/s, 50 us); default rdma, or UCX_TLS's on a decode worker"));
  o.kv_bandwidth_opt =
      kv_opt(app->add_option("--kv-bandwidth-gbs", o.kv_bandwidth_gbs,
                             "The link's bandwidth in GB/s (overrides --kv-link's)")
                 ->transform(positive_real(1e6)));
  o.kv_latency_opt = kv_opt(app->add_option("--kv-latency-us", o.kv_latency_us,
                                            "The link's latency per transfer in microseconds")
                                ->transform(real_in(0, 1e9)));
  kv_opt(app->add_option("--kv-bytes-per-token", kv.bytes_per_token,
                         "KV bytes a prompt token, all GPUs together (default: the model preset's "
                         "with the roofline model, else Llama 3.1 8B's bf16 131072)")
             ->transform(real_in(0, 1e9)));
  o.kv_port_opt = add_integer(app, "--kv-port", kv.port,
                              "prefill: the KV side channel's port (default "
                              "VLLM_NIXL_SIDE_CHANNEL_PORT, else a free one)",
                              0, 65535);
  kv_opt(o.kv_port_opt);
  kv_opt(add_integer(app, "--kv-wire-max-bytes", kv.channel.wire_max_bytes,
                     "Bytes a KV transfer puts on the socket at most (the time is the link's for "
                     "the whole KV)",
                     0, int64_t{1} << 34)
             ->capture_default_str());
  o.kv_lease_opt = kv_opt(app->add_option("--kv-lease-s", kv.channel.lease_s,
                                          "prefill: KV not pulled within this is dropped (default "
                                          "VLLM_NIXL_ABORT_REQUEST_TIMEOUT, else 480)")
                              ->transform(positive_real(1e6)));
  kv_opt(app->add_option("--kv-pull-timeout-s", kv.pull_timeout_s,
                         "decode: a KV pull that takes longer fails its request")
             ->capture_default_str()
             ->transform(positive_real(1e6)));
  router_opt(app->add_option("--prefill", o.prefill_urls,
                             "router: a prefill worker's URL (repeat for each, or comma-separate)")
                 ->delimiter(','));
  router_opt(app->add_option("--decode", o.decode_urls,
                             "router: a decode worker's URL (repeat for each, or comma-separate)")
                 ->delimiter(','));
  router_opt(app->add_option("--routing", o.routing,
                             "router: how a prefill worker is picked: round_robin, or prefix (the "
                             "worker that saw the longest prefix of the prompt, as cache-aware "
                             "routers do)")
                 ->capture_default_str()
                 ->check(CLI::IsMember({"round_robin", "prefix"})));
  router_opt(app->add_option("--router-timeout-s", o.router_timeout_s,
                             "router: a worker silent for longer fails the request")
                 ->capture_default_str()
                 ->transform(positive_real(1e6)));
  router_opt(app->add_option("--router-session-affinity-ttl-secs", o.session_affinity_ttl_s,
                             "router: a request naming its session (X-Dynamo-Session-ID, "
                             "X-SMG-Routing-Key, nvext.session_control) goes to the workers of "
                             "its session's first request until the session closes or is idle "
                             "this long (Dynamo's option; 0: off)")
                 ->capture_default_str()
                 ->transform(real_in(0, 1e7)));
}

// Environment variable `name` as a decimal integer from `min` to `max` (read as the code path
// that uses it reads it); nullopt when unset; a usage error naming it and `what` it must be.
Expected<std::optional<int64_t>> env_whole(const char* name, int64_t min, int64_t max,
                                           std::string_view what) {
  const auto text = sim::sim_getenv(name);
  if (!text) return std::optional<int64_t>();
  int64_t n = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, n);
  if (ec != std::errc() || ptr != end || text->empty() || n < min || n > max) {
    return usage_error(fmt::format("{} must be {} ({} to {}), got '{}'", name, what, min, max,
                                   printable(*text, 40)));
  }
  return std::optional<int64_t>(n);
}

// The KV link and the role's environment: what a real worker would take from vLLM's NIXL
// variables (prefill: VLLM_NIXL_SIDE_CHANNEL_PORT, VLLM_NIXL_ABORT_REQUEST_TIMEOUT) and UCX's
// transport list (decode, the side that reads the KV: UCX_TLS), each read only by the role whose
// code path uses it, and only when the flag does not say.
int resolve_disagg(ServeSimOptions& o) {
  sim::KvRoleArgs& kv = o.args.kv;
  o.args.role = o.role == "prefill"  ? sim::SimRole::kPrefill
                : o.role == "decode" ? sim::SimRole::kDecode
                                     : sim::SimRole::kBoth;
  if (o.args.role == sim::SimRole::kBoth) return kExitOk;
  std::string link = o.kv_link.empty() ? "rdma" : o.kv_link;
  if (o.args.role == sim::SimRole::kDecode && o.kv_link.empty()) {
    if (auto tls = sim::sim_getenv("UCX_TLS")) {
      // UCX's transports, most capable first: cuda_ipc is NVLink, rc/dc/ud are InfiniBand.
      link = tls->find("cuda_ipc") != std::string::npos ? "nvlink"
             : (tls->find("rc") != std::string::npos || tls->find("dc") != std::string::npos ||
                tls->find("ib") != std::string::npos || *tls == "all")
                 ? "rdma"
                 : "tcp";
    }
  }
  auto preset = sim::kv_link_preset(link);
  if (!preset) return fail("serve-sim", usage_error("--kv-link: " + preset.error().message));
  kv.channel.link = *preset;
  if (o.kv_bandwidth_opt->count() > 0) {
    kv.channel.link.bytes_per_s = o.kv_bandwidth_gbs * 1e9;
    kv.channel.link.name = "custom";
  }
  if (o.kv_latency_opt->count() > 0) {
    kv.channel.link.latency_s = o.kv_latency_us * 1e-6;
    kv.channel.link.name = "custom";
  }
  kv.channel.time_scale = o.args.time_scale;
  kv.bytes_per_token = sim::transfer_kv_bytes_per_token(o.args);  // printed resolved
  if (o.args.role == sim::SimRole::kPrefill) {
    if (o.kv_port_opt->count() == 0) {
      auto port = env_whole("VLLM_NIXL_SIDE_CHANNEL_PORT", 0, 65535, "a port");
      if (!port) return fail("serve-sim", port.error());
      if (*port) kv.port = static_cast<uint16_t>(**port);
    }
    if (o.kv_lease_opt->count() == 0) {
      auto lease = env_whole("VLLM_NIXL_ABORT_REQUEST_TIMEOUT", 1, 1'000'000, "seconds");
      if (!lease) return fail("serve-sim", lease.error());
      if (*lease) kv.channel.lease_s = static_cast<double>(**lease);
    }
  }
  return kExitOk;
}

// serve-sim --role router: the frontend of a disaggregated deployment.
int run_router(ServeSimOptions& o) {
  sim::RouterArgs r;
  r.host = o.args.host;
  r.port = o.args.port;
  r.model = o.args.model;
  r.api_key = o.args.api_key;
  r.prefill_urls = o.prefill_urls;
  r.decode_urls = o.decode_urls;
  r.policy = *sim::parse_routing_policy(o.routing);
  r.timeout_s = o.router_timeout_s;
  r.session_affinity_ttl_s = o.session_affinity_ttl_s;
  r.keep_alive_timeout_s = o.args.keep_alive_timeout_s;
  boost::asio::io_context io(1);
  auto router = sim::SimRouter::create(io, std::move(r));
  if (!router) return fail("serve-sim", with_kind(router.error(), ErrorKind::kUsage));
  auto port = (*router)->listen();
  if (!port) return fail("serve-sim", port.error());
  if (!o.port_file.empty()) {
    if (auto written = write_file_atomic(o.port_file, fmt::format("{}\n", *port)); !written) {
      return fail("serve-sim",
                  Error{fmt::format("cannot write the port file: {}", written.error().message)});
    }
  }
  fmt::print(stderr, "serve-sim router listening on http://{}:{} ({} prefill, {} decode, {})\n",
             o.args.host, *port, o.prefill_urls.size(), o.decode_urls.size(), o.routing);
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) (*router)->stop();
  });
  io.run();
  if (!o.port_file.empty()) {
    std::error_code ignored;
    std::filesystem::remove(o.port_file, ignored);
  }
  return kExitOk;
}

}  // namespace

RunFn register_serve_sim(CLI::App& root) {
  auto o = std::make_shared<ServeSimOptions>();
  CLI::App* app = root.add_subcommand(
      "serve-sim", "Run the embedded simulated OpenAI-compatible inference server");
  o->app = app;
  add_sim_server_options(app, *o);
  add_gsm8k_options(app, *o);
  add_tokenizer_options(app, o->tokenizer,
                        "prompt tokens are counted with it as a real server counts them "
                        "(default: one token per word)");
  add_roofline_options(app, *o);
  add_simple_options(app, *o);
  add_disagg_options(app, *o);
  return [o]() {
    if (!o->args.api_key.empty()) add_secret(o->args.api_key);
    return run(*o);
  };
}

}  // namespace ib::cli
