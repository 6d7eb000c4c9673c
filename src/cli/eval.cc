// `inferbench eval`: one GSM8K accuracy eval against any OpenAI-compatible server, scored and gated
// as InferenceX does (docs/evals.md).
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "load/eval_run.h"
#include "load/judge.h"
#include "recipe/eval_thresholds.h"
#include "report/table.h"
#include "workload/gsm8k.h"

namespace ib::cli {

namespace {

namespace gsm8k = workload::gsm8k;
namespace json = boost::json;

struct EvalOptions {
  load::EvalSpec spec;
  std::string style = "chat";
  std::string variant = "inferencex";
  int64_t limit = 0;
  int64_t max_model_len = 16384;
  CLI::Option* max_tokens_opt = nullptr;
  CLI::Option* max_model_len_opt = nullptr;
  double request_timeout_s = 1800;
  std::string dataset, fewshot_dataset;
  std::string thresholds, model_prefix;
  double min_score = recipe::kDefaultMinScore;
  bool json = false;
  std::string output, samples;
};

std::string score_cell(const gsm8k::Accuracy& a) {
  return std::isnan(a.value()) ? "-" : fmt::format("{:.4f}", a.value());
}

std::string stderr_cell(const gsm8k::Accuracy& a) {
  auto se = a.stderr_value();
  return se ? fmt::format("{:.4f}", *se) : "N/A";
}

void print_text(const load::EvalReport& r, const load::EvalGate& gate, const std::string& url) {
  fmt::print(
      "gsm8k ({}-shot, {}, {} prompt) on {} at {}: {} problems at concurrency {}, {:.1f} s\n",
      r.prompt.num_fewshot, gsm8k::style_name(r.prompt.style),
      r.prompt.inferencex ? "InferenceX" : "lm-eval", r.model, url, r.problems, r.concurrency,
      r.duration_s);
  report::Table t({{"filter", report::Align::kLeft},
                   {"exact_match", report::Align::kRight},
                   {"stderr", report::Align::kRight},
                   {"correct", report::Align::kRight}});
  t.add_row({"strict-match", score_cell(r.strict), stderr_cell(r.strict),
             fmt::format("{} / {}", r.strict.correct, r.strict.n)});
  t.add_row({"flexible-extract", score_cell(r.flexible), stderr_cell(r.flexible),
             fmt::format("{} / {}", r.flexible.correct, r.flexible.n)});
  fmt::print("{}", t.render());
  if (r.truncated > 0) {
    fmt::print(
        "warning: {} of {} answers stopped at max_tokens ({}); raise --max-tokens or "
        "--max-model-len\n",
        r.truncated, r.strict.n, r.max_tokens);
  }
  if (r.failed > 0 || r.not_run > 0) {
    fmt::print("unanswered: {} failed, {} not sent\n", r.failed, r.not_run);
  }
  if (gate.passed()) {
    fmt::print("gate: passed (threshold {:.2f}, {})\n", gate.threshold, gate.source);
  } else {
    fmt::print("gate: FAILED\n");
    for (const auto& why : gate.reasons) fmt::print("  - {}\n", why);
  }
}

// The first failed record's error, for the message when nothing was answered.
std::string first_error(const load::EvalReport& r) {
  for (const auto& rec : r.records) {
    if (rec.attempts > 0 && !rec.answered) return rec.error;
  }
  return "";
}

// The prompt and request options, checked, into the spec: --prompt-style, --task, --max-tokens
// or --max-model-len, --limit, --request-timeout (nullopt: go on; else the exit code).
std::optional<int> set_eval_spec(EvalOptions& o) {
  if (auto same = same_output_files({{"--output", o.output}, {"--samples", o.samples}})) {
    return fail("eval", usage_error(*same));
  }
  auto style = gsm8k::parse_style(o.style);
  if (!style) {
    return fail("eval",
                usage_error(fmt::format(
                    "--prompt-style must be chat, chat-single-turn or completions (got '{}')",
                    printable(o.style, 40))));
  }
  if (o.variant != "inferencex" && o.variant != "lm-eval") {
    return fail("eval", usage_error(fmt::format("--task must be inferencex or lm-eval (got '{}')",
                                                printable(o.variant, 40))));
  }
  if (o.max_tokens_opt->count() > 0 && o.max_model_len_opt->count() > 0) {
    return fail("eval", usage_error("give --max-tokens or --max-model-len, not both "
                                    "(--max-model-len sets --max-tokens by InferenceX's rule)"));
  }
  o.spec.prompt.style = *style;
  o.spec.prompt.inferencex = o.variant == "inferencex";
  if (o.max_tokens_opt->count() == 0) {
    o.spec.max_tokens = gsm8k::max_tokens_for_context(o.max_model_len);
  }
  o.spec.limit = static_cast<size_t>(o.limit);
  o.spec.request_timeout =
      std::chrono::seconds(static_cast<int64_t>(std::ceil(o.request_timeout_s)));
  return std::nullopt;
}

// --dataset and --fewshot-dataset in place of the built-in splits, and enough few-shot problems
// for --num-fewshot (nullopt: go on; else the exit code).
std::optional<int> load_eval_dataset(const EvalOptions& o, gsm8k::Dataset& dataset) {
  if (!o.dataset.empty()) {
    auto test = gsm8k::load_jsonl(o.dataset);
    if (!test) {
      return fail("eval", usage_error(fmt::format("--dataset {}", test.error().message)));
    }
    dataset.test = std::move(*test);
    dataset.source = fmt::format("{} ({} problems)", o.dataset, dataset.test.size());
  }
  if (!o.fewshot_dataset.empty()) {
    auto train = gsm8k::load_jsonl(o.fewshot_dataset);
    if (!train) {
      return fail("eval", usage_error(fmt::format("--fewshot-dataset {}", train.error().message)));
    }
    dataset.train = std::move(*train);
    dataset.source += fmt::format("; few-shot examples from {} ({} problems)", o.fewshot_dataset,
                                  dataset.train.size());
  }
  if (static_cast<size_t>(o.spec.prompt.num_fewshot) > dataset.train.size()) {
    return fail("eval", usage_error(fmt::format("--num-fewshot {} is more than the {} few-shot "
                                                "problems there are (--fewshot-dataset gives more)",
                                                o.spec.prompt.num_fewshot, dataset.train.size())));
  }
  return std::nullopt;
}

// The gate's threshold: --thresholds FILE (at --model-prefix), else --min-score (nullopt: go
// on; else the exit code).
std::optional<int> resolve_eval_threshold(const EvalOptions& o,
                                          recipe::EvalThresholds::Resolved& out) {
  recipe::EvalThresholds thresholds;
  if (!o.thresholds.empty()) {
    auto t = recipe::load_eval_thresholds(o.thresholds);
    if (!t) {
      return fail("eval", with_kind(t.error(), ErrorKind::kUsage));
    }
    thresholds = std::move(*t);
  } else if (!o.model_prefix.empty()) {
    return fail("eval", usage_error("--model-prefix selects a threshold of --thresholds FILE"));
  }
  out = thresholds.resolve(o.model_prefix, "gsm8k", o.min_score);
  return std::nullopt;
}

// The result JSON: the report with the endpoint, the tool, the gate and the judge's verdict.
json::object eval_result_json(const EvalOptions& o, const load::EvalReport& report,
                              const load::EvalGate& gate, const load::PointVerdict& verdict) {
  json::object result = report.to_json();
  result["endpoint"] = o.spec.endpoint_url;
  result["tool"] = "inferbench";
  result["tool_version"] = INFERBENCH_VERSION;
  result["gate"] = gate.to_json();
  result["status"] = metrics::status_name(verdict.status);
  result["validity"] = verdict.validity.to_json();
  return result;
}

// --samples and --output, secrets hidden (nullopt: go on; else the exit code).
std::optional<int> write_eval_files(const EvalOptions& o, const load::EvalReport& report,
                                    const gsm8k::Dataset& dataset, const std::string& text) {
  if (!o.samples.empty()) {
    std::string lines;
    for (const auto& r : report.records) {
      json::object rec = r.to_json();
      rec["target"] = gsm8k::reference_answer(dataset.test[r.index].answer);
      lines += redact_text(json_text(rec));
      lines += '\n';
    }
    if (auto s = write_file_atomic(o.samples, lines); !s) {
      return fail("eval", Error{fmt::format("cannot write --samples: {}", s.error().message)});
    }
  }
  if (!o.output.empty()) {
    if (auto s = write_file_atomic(o.output, text + "\n"); !s) {
      return fail("eval", Error{fmt::format("cannot write --output: {}", s.error().message)});
    }
  }
  return std::nullopt;
}

// The exit code of the judged eval: interrupted 128 + the signal; nothing answered 1, said on
// stderr; else 0 when the verdict is ok, 1 when not.
int eval_exit_code(const load::EvalReport& report, const load::PointVerdict& verdict) {
  if (verdict.validity.has(metrics::InvalidKind::kInterrupted)) return interrupted_exit_code();
  if (verdict.validity.has(metrics::InvalidKind::kFailureRate)) {
    return fail(
        "eval",
        Error{fmt::format(
            "nothing was measured: none of the {} problems was answered{}", report.problems,
            first_error(report).empty() ? "" : " (first error: " + first_error(report) + ")")});
  }
  return verdict.ok() ? kExitOk : kExitFailure;
}

// After the eval ran: gated and judged, written, printed; the exit code.
int finish_eval(const EvalOptions& o, const load::EvalReport& report, const gsm8k::Dataset& dataset,
                const recipe::EvalThresholds::Resolved& threshold) {
  const load::EvalGate gate = gate_eval(report, threshold.value, threshold.source);
  // The one judge of a point (load/judge.h), as a sweep's eval point is judged.
  const load::PointVerdict verdict = load::judge(report, gate, {});
  const std::string text = redact_text(json_text(eval_result_json(o, report, gate, verdict)));
  if (auto rc = write_eval_files(o, report, dataset, text)) return *rc;
  if (o.json) {
    fmt::print("{}\n", text);
  } else {
    print_text(report, gate, o.spec.endpoint_url);
  }
  return eval_exit_code(report, verdict);
}

int run(EvalOptions& o) {
  if (auto rc = set_eval_spec(o)) return *rc;
  gsm8k::Dataset dataset = gsm8k::builtin();
  if (auto rc = load_eval_dataset(o, dataset)) return *rc;
  recipe::EvalThresholds::Resolved threshold;
  if (auto rc = resolve_eval_threshold(o, threshold)) return *rc;

  o.spec.show_progress = true;
  install_interrupt_handlers();
  auto report = load::run_eval(o.spec, dataset);
  if (!report) {
    return fail("eval", usage_error(redact_text(report.error().message)));
  }
  return finish_eval(o, *report, dataset, threshold);
}

}  // namespace

RunFn register_eval(CLI::App& root) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* app = root.add_subcommand(
      "eval", "Run a GSM8K accuracy eval against an OpenAI-compatible server and gate it");
  app->add_option("--endpoint", o->spec.endpoint_url,
                  "Server base URL: http://HOST:PORT, with or without a trailing /v1")
      ->capture_default_str()
      ->transform(endpoint_url());
  app->add_option("--model", o->spec.model, "Model name (default: first from /v1/models)");
  add_api_key_option(app, o->spec.api_key);
  add_integer(app, "--concurrency", o->spec.concurrency,
              "Requests in flight (InferenceX: EVAL_CONCURRENT_REQUESTS, else the row's conc, "
              "else 64)",
              1, kMaxConcurrency)
      ->capture_default_str();
  add_integer(app, "--limit", o->limit, "Only the first N problems (0 = all 1319)", 0, kMaxRequests)
      ->capture_default_str();
  o->max_model_len_opt =
      add_integer(app, "--max-model-len", o->max_model_len,
                  "The server's context length; max_tokens is then InferenceX's ctx - 4096 (ctx "
                  "/ 2 at 4096 or less), at most 16384",
                  2, kMaxTokens)
          ->capture_default_str();
  o->max_tokens_opt =
      add_integer(app, "--max-tokens", o->spec.max_tokens,
                  "max_tokens of each request (instead of --max-model-len)", 1, kMaxTokens);
  app->add_option("--prompt-style", o->style,
                  "chat (few-shot as multi-turn messages, lm-eval --apply_chat_template, as "
                  "InferenceX) | chat-single-turn | completions (plain text, /v1/completions)")
      ->capture_default_str();
  app->add_option("--task", o->variant,
                  "inferencex (its prompt asks for '#### [number]'; strict takes the last match) "
                  "| lm-eval (the stock gsm8k task: first match, 'Question:' also stops)")
      ->capture_default_str();
  add_integer(app, "--num-fewshot", o->spec.prompt.num_fewshot, "Few-shot examples per problem", 0,
              1000)
      ->capture_default_str();
  add_integer(app, "--fewshot-seed", o->spec.prompt.fewshot_seed, "Seed of the few-shot draw", 0,
              kMaxSeed)
      ->capture_default_str();
  app->add_option("--dataset", o->dataset,
                  "Problems to score, JSON Lines of {question, answer} (default: the built-in "
                  "test split)")
      ->check(input_file());
  app->add_option("--fewshot-dataset", o->fewshot_dataset,
                  "Few-shot examples, same format (default: the built-in first 64 train "
                  "problems; give the whole train split for lm-eval's pool)")
      ->check(input_file());
  app->add_option("--thresholds", o->thresholds,
                  "Thresholds file in InferenceX's shape (default.<task>, models.<prefix>.<task>)")
      ->check(input_file());
  app->add_option("--model-prefix", o->model_prefix,
                  "Model prefix for models.<prefix>.gsm8k in --thresholds (dsr1, gptoss, ...)");
  app->add_option("--min-score", o->min_score,
                  "Threshold when --thresholds gives none for the task")
      ->capture_default_str()
      ->transform(real_in(0, 1));
  add_integer(app, "--max-retries", o->spec.max_retries,
              "Re-sends of a request after a transport error, 429 or 5xx", 0, 100)
      ->capture_default_str();
  app->add_option("--request-timeout", o->request_timeout_s, "Seconds for one request")
      ->capture_default_str()
      ->transform(positive_real(kMaxSeconds));
  app->add_flag("--json", o->json, "Print the result as JSON");
  app->add_option("--output", o->output, "Write the result JSON here")->check(output_file());
  app->add_option("--samples", o->samples,
                  "Write one JSON line per problem (response, extracted answers, correct) here")
      ->check(output_file());
  return [o]() {
    if (!o->spec.api_key.empty()) add_secret(o->spec.api_key);  // hidden wherever it turns up
    return run(*o);
  };
}

}  // namespace ib::cli
