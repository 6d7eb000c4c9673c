#include "workload/random_prompts.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace ib::workload {
namespace {

TEST(RandomPrompts, LengthsWithinRangeAndExactTokenCounts) {
  RandomWorkload w;
  w.isl = 100;
  w.osl = 50;
  w.range_ratio = 0.8;
  w.num_prompts = 500;
  auto ps = make_random_prompts(w).value();
  ASSERT_EQ(ps.size(), 500u);
  std::set<int> in_lens, out_lens;
  for (const auto& p : ps) {
    EXPECT_GE(p.input_len, 80);
    EXPECT_LE(p.input_len, 100);
    EXPECT_GE(p.output_len, 40);
    EXPECT_LE(p.output_len, 50);
    EXPECT_EQ(p.token_ids.size(), static_cast<size_t>(p.input_len));
    for (int id : p.token_ids) {
      EXPECT_GE(id, 100);
      EXPECT_LT(id, w.vocab_size);
    }
    in_lens.insert(p.input_len);
    out_lens.insert(p.output_len);
  }
  // Both ends of the inclusive range are reached with 500 draws over 21 values.
  EXPECT_TRUE(in_lens.count(80) && in_lens.count(100));
  EXPECT_TRUE(out_lens.count(40) && out_lens.count(50));
}

TEST(RandomPrompts, RatioOneGivesFixedLengths) {
  RandomWorkload w;
  w.isl = 7;
  w.osl = 3;
  w.num_prompts = 20;
  for (const auto& p : std::vector<PromptSpec>(make_random_prompts(w).value())) {
    EXPECT_EQ(p.input_len, 7);
    EXPECT_EQ(p.output_len, 3);
  }
}

TEST(RandomPrompts, DeterministicForASeedAndDifferentAcrossSeeds) {
  RandomWorkload w;
  w.isl = 32;
  w.osl = 8;
  w.num_prompts = 4;
  auto a = make_random_prompts(w).value();
  auto b = make_random_prompts(w).value();
  w.seed = 1;
  auto c = make_random_prompts(w).value();
  EXPECT_EQ(a[0].token_ids, b[0].token_ids);
  EXPECT_NE(a[0].token_ids, c[0].token_ids);
  EXPECT_NE(a[0].token_ids, a[1].token_ids);
}

TEST(RandomPrompts, TextPromptsHaveInputLenWords) {
  RandomWorkload w;
  w.isl = 40;
  w.osl = 4;
  w.num_prompts = 3;
  w.as_text = true;
  for (const auto& p : std::vector<PromptSpec>(make_random_prompts(w).value())) {
    EXPECT_TRUE(p.token_ids.empty());
    std::istringstream ss(p.text);
    int words = 0;
    std::string word;
    while (ss >> word) ++words;
    EXPECT_EQ(words, p.input_len);
  }
}

TEST(RandomPrompts, ValidationNamesTheOption) {
  RandomWorkload w;
  w.isl = 0;
  auto s = validate(w);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--isl"), std::string::npos);
  w.isl = 10;
  w.range_ratio = 1.5;
  s = validate(w);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--range-ratio"), std::string::npos);
  w.range_ratio = 0.5;
  w.num_prompts = 0;
  EXPECT_FALSE(validate(w).ok());
}

}  // namespace
}  // namespace ib::workload
