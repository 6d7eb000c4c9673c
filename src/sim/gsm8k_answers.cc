#include "sim/gsm8k_answers.h"

#include <cmath>

#include "workload/gsm8k.h"

namespace ib::sim {

namespace gsm8k = workload::gsm8k;

namespace {

// floor((i + 1) f) > floor(i f): i is one of the floor(N f) chosen among the first N.
bool chosen(size_t i, double f) {
  const double a = std::floor(static_cast<double>(i) * f + 1e-9);
  const double b = std::floor(static_cast<double>(i + 1) * f + 1e-9);
  return b > a;
}

// The reference rationale without its final "#### N" line.
std::string_view rationale(std::string_view answer) {
  const size_t mark = answer.rfind("#### ");
  std::string_view r = answer.substr(0, mark);
  while (!r.empty() && (r.back() == '\n' || r.back() == ' ')) r.remove_suffix(1);
  return r;
}

}  // namespace

Gsm8kAnswers::Gsm8kAnswers(Gsm8kAnswerOptions options) : options_(options) {
  const auto& test = gsm8k::builtin().test;
  by_question_.reserve(test.size());
  for (size_t i = 0; i < test.size(); ++i) by_question_.emplace(test[i].question, i);
}

Gsm8kAnswerKind Gsm8kAnswers::kind(size_t index) const {
  if (!chosen(index, options_.correct)) return Gsm8kAnswerKind::kWrong;
  // k: how many problems before this one were answered correctly.
  const auto k = static_cast<size_t>(std::floor(static_cast<double>(index) * options_.correct + 1e-9));
  return chosen(k, options_.flexible_only) ? Gsm8kAnswerKind::kFlexibleOnly
                                           : Gsm8kAnswerKind::kCorrect;
}

std::optional<size_t> Gsm8kAnswers::find(std::string_view prompt) const {
  constexpr std::string_view kQuestion = "Question: ";
  const size_t at = prompt.rfind(kQuestion);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view q = prompt.substr(at + kQuestion.size());
  // The question ends where the prompt's instruction or "Answer:" line begins.
  q = q.substr(0, q.find('\n'));
  auto it = by_question_.find(q);
  if (it == by_question_.end()) return std::nullopt;
  return it->second;
}

std::string Gsm8kAnswers::answer_for(size_t index) const {
  const gsm8k::Problem& p = gsm8k::builtin().test.at(index);
  const std::string_view why = rationale(p.answer);
  const std::string number(p.answer.substr(p.answer.rfind("#### ") + 5));
  switch (kind(index)) {
    case Gsm8kAnswerKind::kCorrect:
      return std::string(why) + "\n#### " + number;
    case Gsm8kAnswerKind::kFlexibleOnly:
      return std::string(why) + "\nSo the answer is " + number + ".";
    case Gsm8kAnswerKind::kWrong:
      break;
  }
  // A different number for both filters: without the sign, or with a leading 1.
  const std::string wrong = number.starts_with('-') ? number.substr(1) : "1" + number;
  return std::string(why) + "\n#### " + wrong;
}

std::optional<std::string> Gsm8kAnswers::answer(std::string_view prompt) const {
  auto index = find(prompt);
  if (!index) return std::nullopt;
  return answer_for(*index);
}

}  // namespace ib::sim
