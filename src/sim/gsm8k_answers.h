// serve-sim's GSM8K mode (--gsm8k-correct): a request whose prompt asks a question of the GSM8K
// test split (the embedded copy, workload/gsm8k.h) is answered in lm-eval's answer format with a
// chosen fraction of correct answers, some of them only extractable by the flexible filter, so the
// eval, its two filters and the threshold gate are tested end to end against a known truth
// (docs/serve-sim.md "GSM8K answers").
//
// Which problems are answered correctly is fixed by the problem's index i in the test split, not
// drawn at random: problem i is correct when floor((i + 1) c) > floor(i c) for the fraction c, so
// the first N problems hold exactly floor(N c) correct answers (any --limit N measures c within
// 1/N). Of the correct ones, the k-th (from 0) leaves out the "#### N" line when
// floor((k + 1) g) > floor(k g) for the flexible-only fraction g.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ib::sim {

enum class Gsm8kAnswerKind { kCorrect, kFlexibleOnly, kWrong };

struct Gsm8kAnswerOptions {
  double correct = 1.0;        // fraction of problems answered with the right number
  double flexible_only = 0.0;  // fraction of the correct answers without the "#### N" line
};

class Gsm8kAnswers {
 public:
  explicit Gsm8kAnswers(Gsm8kAnswerOptions options);

  /// The kind of answer test problem `index` gets.
  Gsm8kAnswerKind kind(size_t index) const;
  /// The index of the test problem that `prompt` asks last ("Question: <q>\n..."), if any.
  std::optional<size_t> find(std::string_view prompt) const;
  /// The response text for `prompt`; nullopt when it asks no known GSM8K question.
  std::optional<std::string> answer(std::string_view prompt) const;
  /// The response text for test problem `index` (REQUIRES: index < 1319).
  std::string answer_for(size_t index) const;

 private:
  Gsm8kAnswerOptions options_;
  std::unordered_map<std::string_view, size_t> by_question_;
};

}  // namespace ib::sim
