// Trace prompts (workload/trace_prompts.h): shared hash ids are shared prefixes exactly, lengths
// exact: as token ids always; as text on the fetched model tokenizers when
// scripts/fetch-tokenizers.sh has run (required in CI).
#include "workload/trace_prompts.h"

#include <gtest/gtest.h>

#include "tokenizer/test_cache.h"

namespace ib::workload {
namespace {

namespace fs = std::filesystem;

TimedTrace three_requests() {
  auto t = parse_timed_trace(
      "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 5, \"hash_ids\": [1, 2, 3]}\n"
      "{\"timestamp\": 5, \"input_length\": 37, \"output_length\": 6, \"hash_ids\": [1, 2, 4]}\n"
      "{\"timestamp\": 9, \"input_length\": 16, \"output_length\": 7, \"hash_ids\": [1]}\n",
      TraceFormat::kMooncake, "t.jsonl", 16);
  EXPECT_TRUE(t.ok());
  return *t;
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

TEST(TracePrompts, TokenIdsShareExactlyTheSharedBlocks) {
  const TimedTrace t = three_requests();
  TracePromptOptions o;
  o.seed = 7;
  auto p = make_trace_prompts(t, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE((*p)[i].exact_len);
    EXPECT_EQ((*p)[i].token_ids.size(), static_cast<size_t>(t.requests[i].input_len));
    EXPECT_EQ((*p)[i].output_len, t.requests[i].output_len);
  }
  // Blocks 1 and 2 (32 tokens) shared, then blocks 3 and 4 differ; block 1 alone is a full block.
  EXPECT_EQ(common_prefix((*p)[0].token_ids, (*p)[1].token_ids), 32u);
  EXPECT_EQ(common_prefix((*p)[0].token_ids, (*p)[2].token_ids), 16u);
  // Deterministic in the seed; another seed, other text.
  auto again = make_trace_prompts(t, o);
  EXPECT_EQ((*again)[1].token_ids, (*p)[1].token_ids);
  o.seed = 8;
  auto other = make_trace_prompts(t, o);
  EXPECT_EQ(common_prefix((*other)[0].token_ids, (*p)[0].token_ids), 0u);
  // Without hash ids, no request shares a prefix with another.
  auto b = parse_timed_trace(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "0,a,600,1,601,x\n1,a,600,1,601,x\n",
      TraceFormat::kBurstGpt, "b.csv");
  ASSERT_TRUE(b.ok());
  auto q = make_trace_prompts(*b, o);
  ASSERT_TRUE(q.ok());
  EXPECT_LT(common_prefix((*q)[0].token_ids, (*q)[1].token_ids), 2u);
  EXPECT_EQ((*q)[1].token_ids.size(), 600u);
}

TEST(TracePrompts, ChatWithoutATokenizerIsWordsAndSaysSo) {
  TracePromptOptions o;
  o.chat = true;
  EXPECT_EQ(trace_prompt_mode(o), TracePromptMode::kWords);
  auto p = make_trace_prompts(three_requests(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE((*p)[0].exact_len);
  EXPECT_EQ(std::count((*p)[0].text.begin(), (*p)[0].text.end(), ' '), 39);  // 40 words
}

// The fetched model tokenizers: every request exactly input_length tokens as the server counts it
// (completions with its BOS, chat through its template), and shared blocks shared as text.
class TracePromptFamilies : public ::testing::TestWithParam<std::string> {};

TEST_P(TracePromptFamilies, TextPromptsAreExactAndShareTheirBlocks) {
  const std::string family = GetParam();
  IB_SKIP_IF_MISSING(tokenizer::testing::missing_files({family + "/tokenizer.json"}));
  auto tok = tokenizer::ServingTokenizer::load(tokenizer::tokenizer_cache_dir() / family);
  ASSERT_TRUE(tok) << tok.error().message;
  // Long enough that what the template adds comes off the unshared tail, as in real traces.
  auto parsed = parse_timed_trace(
      "{\"timestamp\": 0, \"input_length\": 160, \"output_length\": 5, "
      "\"hash_ids\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n"
      "{\"timestamp\": 1, \"input_length\": 150, \"output_length\": 5, "
      "\"hash_ids\": [1, 2, 3, 11, 12, 13, 14, 15, 16, 17]}\n"
      "{\"timestamp\": 2, \"input_length\": 77, \"output_length\": 5, "
      "\"hash_ids\": [20, 21, 22, 23, 24]}\n",
      TraceFormat::kMooncake, "t.jsonl", 16);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const TimedTrace& t = *parsed;
  for (bool chat : {false, true}) {
    if (chat && !(*tok)->has_chat_template()) continue;
    TracePromptOptions o;
    o.chat = chat;
    o.tokenizer = *tok;
    auto p = make_trace_prompts(t, o);
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (size_t i = 0; i < 3; ++i) {
      const PromptSpec& s = (*p)[i];
      EXPECT_TRUE(s.exact_len) << family << " chat " << chat << " request " << i;
      size_t counted = 0;
      if (chat) {
        const tokenizer::ChatMessage m{"user", s.text};
        counted = (*tok)->encode_chat(std::span(&m, 1))->size();
      } else {
        counted = (*tok)->count_prompt(s.text);
      }
      EXPECT_EQ(counted, static_cast<size_t>(t.requests[i].input_len)) << family << " " << i;
    }
    // The first two share blocks 1 to 3: their texts share those 48 words, and no more.
    const std::string& a = (*p)[0].text;
    const std::string& b = (*p)[1].text;
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    const auto words = std::count(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), ' ');
    EXPECT_GE(words, 48) << family;
    EXPECT_LE(words, 49) << family;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TracePromptFamilies,
                         ::testing::Values("llama3_1", "qwen3", "deepseek_v3"));

}  // namespace
}  // namespace ib::workload
