// GSM8K, as lm-evaluation-harness and InferenceX run it (docs/evals.md): the problems, the 5-shot
// prompts (chat with few-shot as multi-turn, chat as one turn, or plain completions), the two
// answer filters (strict-match: the `#### N` answer; flexible-extract: the last number), the
// exact-match normalisation and the score with its standard error. Pure functions; the requests are
// sent by load/eval_run.h.
//
// The extraction regexes are lm-eval's (lm_eval/tasks/gsm8k/gsm8k.yaml, filters/extraction.py),
// implemented as hand-written scanners with the same leftmost, non-overlapping, backtracking
// semantics as Python's re.findall (std::regex recurses per character and overflows the stack on a
// long answer):
//   strict-match      #### (\-?[0-9\.\,]+)                 InferenceX: the last match (lm-eval: first)
//   flexible-extract  (-?[$0-9.,]{2,})|(-?[0-9]+)          the last match
//   exact_match       regexes_to_ignore [",", "\$", "(?s).*#### ", "\.$"], then lower case
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "workload/workload.h"

namespace ib::workload::gsm8k {

/// One problem: the question and the reference answer (the rationale ending in `#### N`).
struct Problem {
  std::string question;
  std::string answer;
};

/// Problems to score and the pool few-shot examples are drawn from.
struct Dataset {
  std::vector<Problem> test;
  std::vector<Problem> train;
  std::string source;  // "built-in (data/gsm8k: ...)" or the files read
};

/// The copy embedded in the binary (data/gsm8k): the 1,319-problem test split and the first 64
/// problems of the train split. Parsed once.
const Dataset& builtin();

/// Parses JSON Lines of {"question": ..., "answer": ...} objects (blank lines skipped). The error
/// names `name`, the line and the field.
Expected<std::vector<Problem>> parse_jsonl(std::string_view text, const std::string& name);
/// Reads and parses a JSON Lines file (at most 256 MiB).
Expected<std::vector<Problem>> load_jsonl(const std::filesystem::path& path);

/// How a prompt reaches the server.
enum class PromptStyle {
  kChatMultiturn,   // lm-eval --apply_chat_template (fewshot_as_multiturn, the default since the
                    // version InferenceX pins): user q1, assistant a1, ..., user q
  kChatSingleTurn,  // --apply_chat_template --fewshot_as_multiturn false: one user message
  kCompletions,     // no chat template: one text prompt to /v1/completions
};
std::string_view style_name(PromptStyle s);
std::optional<PromptStyle> parse_style(std::string_view name);

struct PromptOptions {
  PromptStyle style = PromptStyle::kChatMultiturn;
  int num_fewshot = 5;
  uint64_t fewshot_seed = 1234;  // lm-eval's fewshot_random_seed
  /// InferenceX's doc_to_text (asks for the `#### [number]` line) and its strict filter taking
  /// the last match; false: lm-eval's stock gsm8k task (plain "Question: ...\nAnswer:", the first
  /// match, "Question:" also a stop string).
  bool inferencex = true;
};

struct Message {
  std::string role;  // "user" | "assistant"
  std::string content;
};

/// One request's content: `messages` for chat, `text` for completions; the stop strings.
struct Prompt {
  std::vector<Message> messages;
  std::string text;
  std::vector<std::string> stop;
};

/// "Question: <q>\nEnd your response with the answer on the last line, formatted as: #### [number]
/// \nAnswer:" (InferenceX) or "Question: <q>\nAnswer:" (lm-eval).
std::string doc_to_text(std::string_view question, bool inferencex);

/// The few-shot examples of test problem `index`: `n` distinct indices into a train pool of
/// `pool` problems, drawn with a generator seeded by (seed, index), so a problem's prompt does not
/// depend on the order, the concurrency or --limit. Fewer when the pool is smaller.
std::vector<size_t> fewshot_indices(size_t pool, int n, uint64_t seed, size_t index);

/// The prompt of test problem `index` (REQUIRES: index < dataset.test.size()).
Prompt build_prompt(const Dataset& dataset, size_t index, const PromptOptions& options);

/// "[invalid]": what a filter yields when nothing matches (lm-eval's fallback).
inline constexpr std::string_view kInvalid = "[invalid]";

/// strict-match: the `#### N` number; `last` selects the last match (InferenceX), else the first.
std::string extract_strict(std::string_view response, bool last = true);
/// flexible-extract: the last number-like run.
std::string extract_flexible(std::string_view response);
/// exact_match's normalisation, applied to the prediction and the reference alike.
std::string normalize(std::string_view s);
/// The reference's answer as exact_match sees it: normalize(answer), "70000" for "...#### 70000".
std::string reference_answer(std::string_view answer);

/// One problem's outcome.
struct Scored {
  std::string strict;    // extracted, before normalisation
  std::string flexible;  // extracted, before normalisation
  bool strict_correct = false;
  bool flexible_correct = false;
};
Scored score(std::string_view response, std::string_view reference, bool strict_last = true);

/// A mean of 0/1 scores with lm-eval's standard error: sample standard deviation (n - 1) / √n;
/// no standard error for n <= 1.
struct Accuracy {
  int64_t n = 0;
  int64_t correct = 0;
  double value() const;                 // NaN when n == 0
  std::optional<double> stderr_value() const;  // nullopt when n <= 1
};

/// InferenceX's output budget for a context of `ctx` tokens: ctx - 4096 when ctx > 4096, else
/// ctx / 2, at most 16384.
int max_tokens_for_context(int64_t ctx);

/// A sweep's eval points (sweep/planner.h): what is asked at each concurrency. Its plan is an
/// EvalPlan (workload/workload.h), which load::run_point sends with load::run_eval.
struct EvalParams {
  PromptOptions prompt;
  size_t limit = 0;  // the first N problems; 0: all
  int max_tokens = 12288;
  std::string dataset = "built-in";  // named in the key: another dataset asks other questions
};

class Gsm8kWorkload : public Workload {
 public:
  explicit Gsm8kWorkload(EvalParams p) : p_(std::move(p)) {}
  std::string kind() const override { return "gsm8k"; }
  std::string label() const override;  // "gsm8k 5-shot chat"
  boost::json::object canonical(int64_t concurrency) const override;
  Expected<PointPlan> plan(int64_t concurrency) const override;
  const EvalParams& params() const { return p_; }

 private:
  EvalParams p_;
};

}  // namespace ib::workload::gsm8k
