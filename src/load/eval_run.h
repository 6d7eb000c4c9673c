// One GSM8K accuracy eval against an OpenAI-compatible server (docs/evals.md), as lm-eval's
// local-chat-completions (or local-completions) model runs it: greedy (temperature 0, top_p 1,
// seed 1234), not streamed, `concurrency` requests in flight, each retried on transport errors,
// 429 and 5xx up to `max_retries` times, with a total time limit per request. Every problem's
// record (prompt id, response, extracted values, correct) is kept; the scores are lm-eval's
// exact_match for the strict-match and flexible-extract filters with their standard errors.
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/expected.h"
#include "workload/gsm8k.h"

namespace ib::load {

struct EvalSpec {
  std::string endpoint_url = "http://127.0.0.1:8000";
  std::string api_key;  // as BenchSpec::api_key
  std::string model;  // empty: the server's first model (/v1/models)
  workload::gsm8k::PromptOptions prompt;
  int concurrency = 64;
  int max_tokens = 12288;  // InferenceX: max_tokens_for_context(16384)
  size_t limit = 0;        // the first N problems; 0: all
  int max_retries = 5;
  std::chrono::seconds request_timeout{1800};
  bool show_progress = false;  // a progress line on stderr when it is a TTY
};

/// One problem's request and its score.
struct EvalRecord {
  size_t index = 0;  // in the test split
  int attempts = 0;
  int http_status = 0;
  bool answered = false;  // a response was received and parsed
  bool cut = false;       // in flight when the eval was interrupted: not a failure
  std::string error;      // why not
  std::string response;   // the generated text (reasoning text when content was empty)
  std::string finish_reason;
  int64_t prompt_tokens = -1, completion_tokens = -1;  // usage, -1 when absent
  double latency_s = 0;                                // last attempt, send to response
  workload::gsm8k::Scored scored;
  boost::json::object to_json() const;
};

struct EvalReport {
  std::string task = "gsm8k";
  std::string model;
  workload::gsm8k::PromptOptions prompt;
  int concurrency = 0, max_tokens = 0;
  size_t problems = 0;  // asked (after --limit)
  std::vector<EvalRecord> records;
  workload::gsm8k::Accuracy strict, flexible;  // over the answered problems
  int64_t failed = 0;   // problems sent that got no answer
  int64_t not_run = 0;  // problems never sent, or cut in flight (interrupted)
  int64_t truncated = 0;  // answers that stopped at max_tokens (finish_reason "length")
  double duration_s = 0;
  bool interrupted = false;
  std::string dataset;  // where the problems came from
  /// n_eff: problems scored.
  int64_t n_eff() const { return strict.n; }
  /// The result JSON: lm-eval's keys ("exact_match,strict-match", "exact_match_stderr,...")
  /// beside InferenceX's collected names (em_strict, em_flexible, *_se, n_eff); records left out.
  boost::json::object to_json() const;
};

/// The accuracy gate (InferenceX's validate_scores.py): every exact_match metric (strict-match and
/// flexible-extract) must be at least the threshold; a score over no answered problem is a
/// missing metric and fails; so do unanswered problems and an interrupted eval (the score would
/// describe fewer problems than were asked).
struct EvalGate {
  double threshold = 0;
  std::string source;                // where the threshold came from
  std::vector<std::string> reasons;  // why it failed; empty: passed
  bool passed() const { return reasons.empty(); }
  boost::json::object to_json() const;
};
EvalGate gate_eval(const EvalReport& report, double threshold, std::string source);

/// Sends the first `spec.limit` problems of `dataset.test` (all when 0). Error only when nothing
/// could be tried (bad endpoint, no model); failed requests are counted in the report.
Expected<EvalReport> run_eval(const EvalSpec& spec, const workload::gsm8k::Dataset& dataset);

/// The request body of one problem (chat or completions by spec.prompt.style).
std::string eval_request_body(const EvalSpec& spec, const workload::gsm8k::Prompt& prompt);

/// The generated text of a non-streamed response: choices[0].message.content (chat) or
/// choices[0].text; an empty chat content falls back to reasoning_content / reasoning (InferenceX's
/// patch for reasoning parsers). Error names what is missing.
struct ParsedAnswer {
  std::string text;
  std::string finish_reason;
  int64_t prompt_tokens = -1, completion_tokens = -1;
};
Expected<ParsedAnswer> parse_answer(std::string_view body, bool chat);

}  // namespace ib::load
