// GSM8K: extraction and normalisation against cases written from lm-eval's documented regexes
// (gsm8k.yaml, filters/extraction.py, metrics.py exact_match), prompts, the score's standard error
// and the embedded data.
#include "workload/gsm8k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace ib::workload::gsm8k {
namespace {

TEST(Gsm8kStrict, TakesTheNumberAfterTheMarkLastMatchByDefault) {
  EXPECT_EQ(extract_strict("so she makes 9 * 2 = 18 dollars.\n#### 18"), "18");
  EXPECT_EQ(extract_strict("#### -5"), "-5");
  EXPECT_EQ(extract_strict("#### 1,234.50 dollars"), "1,234.50");
  EXPECT_EQ(extract_strict("#### .5"), ".5");
  EXPECT_EQ(extract_strict("#### 18.\n"), "18.");
  // InferenceX (group_select -1) takes the last; lm-eval's stock task the first.
  EXPECT_EQ(extract_strict("#### 3\nrecited shot\n#### 7"), "7");
  EXPECT_EQ(extract_strict("#### 3\nrecited shot\n#### 7", /*last=*/false), "3");
  // The '$' is not in the strict class; "####5" lacks the space; a lone '-' is no number.
  EXPECT_EQ(extract_strict("#### $18"), kInvalid);
  EXPECT_EQ(extract_strict("####5"), kInvalid);
  EXPECT_EQ(extract_strict("#### -"), kInvalid);
  EXPECT_EQ(extract_strict("#### - 4"), kInvalid);
  EXPECT_EQ(extract_strict("The answer is 18."), kInvalid);
  EXPECT_EQ(extract_strict(""), kInvalid);
  // findall scans on after a failed mark: "##### 5" has "#### 5" one character in.
  EXPECT_EQ(extract_strict("##### 5"), "5");
  EXPECT_EQ(extract_strict("#### x\n#### 12"), "12");
}

TEST(Gsm8kFlexible, TakesTheLastNumberLikeRun) {
  EXPECT_EQ(extract_flexible("The answer is $1,234."), "$1,234.");
  EXPECT_EQ(extract_flexible("x = -3"), "-3");
  EXPECT_EQ(extract_flexible("5 apples and 7 pears"), "7");
  EXPECT_EQ(extract_flexible("no numbers here"), kInvalid);
  EXPECT_EQ(extract_flexible("1 - 2"), "2");
  EXPECT_EQ(extract_flexible("a-5b"), "-5");
  EXPECT_EQ(extract_flexible("-.5"), "-.5");
  // Two punctuation characters make a match of the first alternative, as in Python.
  EXPECT_EQ(extract_flexible("18 and then .."), "..");
  EXPECT_EQ(extract_flexible("total: 36 eggs.\n#### 36"), "36");
  EXPECT_EQ(extract_flexible("costs $5"), "$5");
  EXPECT_EQ(extract_flexible("$"), kInvalid);
  EXPECT_EQ(extract_flexible("7"), "7");
}

TEST(Gsm8kNormalize, AppliesRegexesToIgnoreInOrderThenLowerCase) {
  EXPECT_EQ(normalize("1,234"), "1234");
  EXPECT_EQ(normalize("$1,234."), "1234");
  EXPECT_EQ(normalize("18."), "18");
  EXPECT_EQ(normalize("18..."), "18..");  // one trailing period only
  EXPECT_EQ(normalize("5.\n"), "5\n");     // '$' also matches before a final newline
  EXPECT_EQ(normalize("-7"), "-7");
  EXPECT_EQ(normalize("[INVALID]"), "[invalid]");
  EXPECT_EQ(reference_answer("The cost ... came out to 80,000+50,000=$<<80000+50000=130000>>130,000"
                             "\nSo he made a profit of 200,000-130,000=$<<200000-130000=70000>>"
                             "70,000\n#### 70000"),
            "70000");
}

TEST(Gsm8kScore, StrictAndFlexibleAreScoredApart) {
  const std::string ref = "She makes 9 * 2 = $<<9*2=18>>18.\n#### 18";
  auto both = score("9 * 2 = 18\n#### 18", ref);
  EXPECT_TRUE(both.strict_correct);
  EXPECT_TRUE(both.flexible_correct);
  auto flex_only = score("She makes $18.", ref);
  EXPECT_FALSE(flex_only.strict_correct);
  EXPECT_EQ(flex_only.strict, kInvalid);
  EXPECT_TRUE(flex_only.flexible_correct);
  auto commas = score("#### 1,018", "... #### 1018");
  EXPECT_TRUE(commas.strict_correct);
  auto wrong = score("#### 17", ref);
  EXPECT_FALSE(wrong.strict_correct);
  EXPECT_FALSE(wrong.flexible_correct);
  auto negative = score("The change is -4.\n#### -4", "... #### -4");
  EXPECT_TRUE(negative.strict_correct);
  EXPECT_TRUE(negative.flexible_correct);
  // A recited shot's answer before the real one: the last match wins (InferenceX).
  auto recited = score("#### 72\nNow the question.\n#### 18", ref);
  EXPECT_TRUE(recited.strict_correct);
  EXPECT_FALSE(score("#### 72\nNow the question.\n#### 18", ref, /*strict_last=*/false)
                   .strict_correct);
}

TEST(Gsm8kAccuracy, MeanAndSampleStandardError) {
  Accuracy a{4, 2};
  EXPECT_DOUBLE_EQ(a.value(), 0.5);
  ASSERT_TRUE(a.stderr_value());
  EXPECT_NEAR(*a.stderr_value(), std::sqrt((4 * 0.25 / 3) / 4), 1e-12);
  EXPECT_FALSE((Accuracy{1, 1}).stderr_value());
  EXPECT_TRUE(std::isnan((Accuracy{0, 0}).value()));
  EXPECT_DOUBLE_EQ(*(Accuracy{10, 10}).stderr_value(), 0.0);
}

TEST(Gsm8kBudget, InferenceXMaxTokensRule) {
  EXPECT_EQ(max_tokens_for_context(16384), 12288);
  EXPECT_EQ(max_tokens_for_context(9472), 5376);  // 8k1k: 8192 + 1024 + 256
  EXPECT_EQ(max_tokens_for_context(4096), 2048);
  EXPECT_EQ(max_tokens_for_context(2000), 1000);
  EXPECT_EQ(max_tokens_for_context(1 << 20), 16384);
}

TEST(Gsm8kData, EmbeddedSplitsParseAndEveryReferenceIsANumber) {
  const Dataset& d = builtin();
  ASSERT_EQ(d.test.size(), 1319u);
  ASSERT_EQ(d.train.size(), 64u);
  EXPECT_EQ(reference_answer(d.test[0].answer), "18");
  EXPECT_EQ(reference_answer(d.train[0].answer), "72");
  for (const auto& p : d.test) {
    const std::string ref = reference_answer(p.answer);
    ASSERT_FALSE(ref.empty()) << p.question;
    ASSERT_EQ(ref.find_first_not_of("-0123456789."), std::string::npos) << ref;
    // Every reference's own `#### N` is found by the strict filter.
    ASSERT_EQ(normalize(extract_strict(p.answer)), ref);
  }
}

TEST(Gsm8kData, ParseErrorsNameTheFileLineAndField) {
  auto bad = parse_jsonl("{\"question\":\"q\",\"answer\":\"#### 1\"}\n\n{oops\n", "x.jsonl");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("x.jsonl:3: not valid JSON"), std::string::npos)
      << bad.error().message;
  auto twice =
      parse_jsonl("{\"question\":\"q\",\"answer\":\"#### 1\",\"answer\":\"#### 2\"}\n", "t.jsonl");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("t.jsonl:1: key \"answer\" appears twice"),
            std::string::npos)
      << twice.error().message;
  auto missing = parse_jsonl("{\"question\":\"q\"}\n", "y.jsonl");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "y.jsonl:1: field \"answer\" is missing");
  auto no_mark = parse_jsonl("{\"question\":\"q\",\"answer\":\"42\"}\n", "z.jsonl");
  ASSERT_FALSE(no_mark);
  EXPECT_NE(no_mark.error().message.find("no final \"#### N\" line"), std::string::npos);
  auto empty = parse_jsonl("\n  \n", "e.jsonl");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, "e.jsonl: no problems in the file");
  auto crlf = parse_jsonl("{\"question\":\"q\",\"answer\":\"#### 1\"}\r\n", "c.jsonl");
  ASSERT_TRUE(crlf);
  EXPECT_EQ(crlf->size(), 1u);
}

TEST(Gsm8kPrompt, MultiturnChatAlternatesShotsThenTheQuestion) {
  const Dataset& d = builtin();
  PromptOptions o;
  Prompt p = build_prompt(d, 7, o);
  ASSERT_EQ(p.messages.size(), 11u);
  for (size_t i = 0; i + 1 < p.messages.size(); i += 2) {
    EXPECT_EQ(p.messages[i].role, "user");
    EXPECT_EQ(p.messages[i].content.rfind("Question: ", 0), 0u);
    EXPECT_TRUE(p.messages[i].content.ends_with(
        "\nEnd your response with the answer on the last line, formatted as: #### "
        "[number]\nAnswer:"));
    EXPECT_EQ(p.messages[i + 1].role, "assistant");
    EXPECT_NE(p.messages[i + 1].content.find("#### "), std::string::npos);
  }
  EXPECT_EQ(p.messages.back().content, doc_to_text(d.test[7].question, true));
  EXPECT_TRUE(p.text.empty());
  EXPECT_EQ(p.stop, (std::vector<std::string>{"</s>", "<|im_end|>"}));
}

TEST(Gsm8kPrompt, PlainTextUsesLmEvalDelimiters) {
  Dataset d;
  d.train = {{"q1", "a1\n#### 1"}, {"q2", "a2\n#### 2"}};
  d.test = {{"q?", "#### 3"}};
  PromptOptions o;
  o.style = PromptStyle::kCompletions;
  o.num_fewshot = 2;
  o.inferencex = false;
  Prompt p = build_prompt(d, 0, o);
  ASSERT_TRUE(p.messages.empty());
  // Both shots, in the drawn order, each "<q> <a>\n\n", then the question without a delimiter.
  const bool first12 = p.text.rfind("Question: q1\nAnswer: a1\n#### 1\n\n", 0) == 0;
  const std::string a = "Question: q1\nAnswer: a1\n#### 1\n\n";
  const std::string b = "Question: q2\nAnswer: a2\n#### 2\n\n";
  EXPECT_EQ(p.text, (first12 ? a + b : b + a) + "Question: q?\nAnswer:");
  EXPECT_EQ(p.stop, (std::vector<std::string>{"Question:", "</s>", "<|im_end|>"}));
  o.style = PromptStyle::kChatSingleTurn;
  Prompt single = build_prompt(d, 0, o);
  ASSERT_EQ(single.messages.size(), 1u);
  EXPECT_EQ(single.messages[0].content, p.text);
}

TEST(Gsm8kPrompt, FewshotIndicesAreDistinctDeterministicAndPerProblem) {
  std::set<std::vector<size_t>> seen;
  for (size_t index = 0; index < 50; ++index) {
    auto a = fewshot_indices(64, 5, 1234, index);
    ASSERT_EQ(a, fewshot_indices(64, 5, 1234, index));
    ASSERT_EQ(a.size(), 5u);
    EXPECT_EQ(std::set<size_t>(a.begin(), a.end()).size(), 5u);
    for (size_t i : a) EXPECT_LT(i, 64u);
    seen.insert(a);
  }
  EXPECT_GT(seen.size(), 45u);  // different problems get different shots
  EXPECT_NE(fewshot_indices(64, 5, 1, 0), fewshot_indices(64, 5, 2, 0));
  EXPECT_EQ(fewshot_indices(3, 5, 1234, 0).size(), 3u);
  EXPECT_TRUE(fewshot_indices(64, 0, 1234, 0).empty());
}

}  // namespace
}  // namespace ib::workload::gsm8k
