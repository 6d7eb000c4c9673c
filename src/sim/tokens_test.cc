#include "sim/tokens.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ib::sim {
namespace {

TEST(CountWords, SplitsOnAnyWhitespace) {
  EXPECT_EQ(count_words(""), 0);
  EXPECT_EQ(count_words(" \t\n"), 0);
  EXPECT_EQ(count_words("one"), 1);
  EXPECT_EQ(count_words("  one two\tthree\nfour  "), 4);
  EXPECT_EQ(count_words("héllo wörld"), 2);
}

TEST(CountTextTokens, AtLeastOne) {
  EXPECT_EQ(count_text_tokens(""), 1);
  EXPECT_EQ(count_text_tokens("   "), 1);
  EXPECT_EQ(count_text_tokens("a b c"), 3);
}

TEST(OutputTokenText, OneWordWithALeadingSpaceDeterministic) {
  std::set<std::string> seen;
  std::string text;
  for (int i = 0; i < 200; ++i) {
    std::string_view t = output_token_text(42, i);
    ASSERT_GE(t.size(), 2u);
    EXPECT_EQ(t[0], ' ');
    EXPECT_EQ(t.find(' ', 1), std::string_view::npos);
    EXPECT_EQ(t, output_token_text(42, i));
    seen.insert(std::string(t));
    text += t;
  }
  EXPECT_GT(seen.size(), 20u);        // the words vary
  EXPECT_EQ(count_words(text), 200);  // re-counting the text gives the token count back
  bool differs = false;
  for (int i = 0; i < 20; ++i) differs |= output_token_text(42, i) != output_token_text(43, i);
  EXPECT_TRUE(differs);
}

TEST(PlanOutput, IgnoreEosRunsToMaxTokens) {
  for (uint64_t h = 0; h < 50; ++h) {
    OutputPlan p = plan_output(h, 0, 16, 0, true);
    EXPECT_EQ(p.tokens, 16);
    EXPECT_EQ(p.finish, FinishReason::kLength);
  }
}

TEST(PlanOutput, NaturalLengthIsBoundedAndBothEndingsOccur) {
  int stops = 0;
  int lengths = 0;
  for (uint64_t h = 0; h < 2000; ++h) {
    OutputPlan p = plan_output(h * 7919, 1, 10, 3, false);
    EXPECT_GE(p.tokens, 4) << "EOS may only follow min_tokens tokens";
    EXPECT_LE(p.tokens, 10);
    if (p.finish == FinishReason::kStop) {
      ++stops;
    } else {
      EXPECT_EQ(p.tokens, 10);
      ++lengths;
    }
  }
  // Natural lengths are uniform in [1, 20]: about half of them exceed max_tokens.
  EXPECT_GT(stops, 500);
  EXPECT_GT(lengths, 500);
}

TEST(PlanOutput, DeterministicPerPromptAndSeed) {
  EXPECT_EQ(plan_output(123, 9, 100, 0, false).tokens, plan_output(123, 9, 100, 0, false).tokens);
  bool differs = false;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    differs |=
        plan_output(123, seed, 100, 0, false).tokens != plan_output(123, 0, 100, 0, false).tokens;
  }
  EXPECT_TRUE(differs);
}

TEST(PlanOutput, MinTokensEqualToMaxTokensAlwaysRunsToLength) {
  for (uint64_t h = 0; h < 100; ++h) {
    OutputPlan p = plan_output(h, 0, 5, 5, false);
    EXPECT_EQ(p.tokens, 5);
    EXPECT_EQ(p.finish, FinishReason::kLength);
  }
}

TEST(PlanOutput, SingleTokenLimit) {
  for (uint64_t h = 0; h < 100; ++h) {
    OutputPlan p = plan_output(h, 0, 1, 0, false);
    EXPECT_EQ(p.tokens, 1);
  }
}

TEST(FinishReasonNames, MatchOpenAi) {
  EXPECT_EQ(to_string(FinishReason::kStop), "stop");
  EXPECT_EQ(to_string(FinishReason::kLength), "length");
}

TEST(PrefixKeys, GeneratedTokensHaveTheirWordsKeys) {
  // A reply sent back as text in the next turn must match what the engine cached while
  // generating it: the key of a generated token is the key of its word.
  for (int i = 0; i < 50; ++i) {
    std::string_view text = output_token_text(99, i);
    ASSERT_EQ(text.front(), ' ');
    EXPECT_EQ(output_token_key(99, i), word_key(text.substr(1))) << i;
  }
  std::vector<uint64_t> keys;
  EXPECT_EQ(append_word_keys("  alpha beta\talpha\n", keys), 3);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], keys[2]);
  EXPECT_NE(keys[0], keys[1]);
  EXPECT_EQ(keys[0], word_key("alpha"));
  EXPECT_NE(token_id_key(7), token_id_key(8));
  EXPECT_EQ(append_word_keys("   ", keys), 0);
}

}  // namespace
}  // namespace ib::sim
