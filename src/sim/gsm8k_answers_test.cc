// serve-sim's GSM8K answers: the chosen share is exact over any prefix, and each kind of answer is
// scored by the eval's own filters as it should be.
#include "sim/gsm8k_answers.h"

#include <gtest/gtest.h>

#include "workload/gsm8k.h"

namespace ib::sim {
namespace {

namespace gsm8k = workload::gsm8k;

TEST(Gsm8kAnswers, ExactShareOfEveryPrefixAndEachKindScoresAsIntended) {
  const auto& d = gsm8k::builtin();
  Gsm8kAnswers answers({0.8, 0.25});
  int64_t strict = 0, flexible = 0;
  for (size_t i = 0; i < d.test.size(); ++i) {
    const auto s = gsm8k::score(answers.answer_for(i), d.test[i].answer);
    switch (answers.kind(i)) {
      case Gsm8kAnswerKind::kCorrect:
        EXPECT_TRUE(s.strict_correct && s.flexible_correct) << i;
        break;
      case Gsm8kAnswerKind::kFlexibleOnly:
        EXPECT_TRUE(!s.strict_correct && s.flexible_correct) << i;
        EXPECT_EQ(s.strict, gsm8k::kInvalid);
        break;
      case Gsm8kAnswerKind::kWrong:
        EXPECT_TRUE(!s.strict_correct && !s.flexible_correct) << i;
        break;
    }
    strict += s.strict_correct;
    flexible += s.flexible_correct;
    const auto n = static_cast<int64_t>(i + 1);
    // floor(n c) correct among the first n; of the C correct, floor(C g) flexible-only.
    const int64_t c = n * 8 / 10;
    ASSERT_EQ(flexible, c) << n;
    ASSERT_EQ(strict, c - c / 4) << n;
  }
}

TEST(Gsm8kAnswers, FindsTheLastQuestionOfAPromptInEveryStyle) {
  const auto& d = gsm8k::builtin();
  Gsm8kAnswers answers({1.0, 0.0});
  gsm8k::PromptOptions o;
  for (auto style : {gsm8k::PromptStyle::kChatMultiturn, gsm8k::PromptStyle::kChatSingleTurn,
                     gsm8k::PromptStyle::kCompletions}) {
    o.style = style;
    for (bool ix : {true, false}) {
      o.inferencex = ix;
      const auto p = gsm8k::build_prompt(d, 42, o);
      const std::string& text = p.messages.empty() ? p.text : p.messages.back().content;
      ASSERT_EQ(answers.find(text), 42u) << gsm8k::style_name(style);
    }
  }
  EXPECT_FALSE(answers.find("Question: how many apples?\nAnswer:"));
  EXPECT_FALSE(answers.find("no question at all"));
  EXPECT_FALSE(answers.answer(""));
  EXPECT_EQ(answers.answer(gsm8k::doc_to_text(d.test[0].question, true)),
            std::optional<std::string>(answers.answer_for(0)));
}

TEST(Gsm8kAnswers, AllOrNothing) {
  Gsm8kAnswers none({0.0, 0.0}), all({1.0, 1.0});
  for (size_t i = 0; i < 50; ++i) {
    EXPECT_EQ(none.kind(i), Gsm8kAnswerKind::kWrong);
    EXPECT_EQ(all.kind(i), Gsm8kAnswerKind::kFlexibleOnly);
  }
}

}  // namespace
}  // namespace ib::sim
