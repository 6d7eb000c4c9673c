// Exact prompt lengths end to end (issue 18, docs/tokenizer.md): serve-sim counts prompt tokens
// with a real tokenizer and chat template (--tokenizer), as vLLM does, and bench builds prompts of
// exactly --isl tokens with the same files; the server's usage.prompt_tokens and /tokenize agree
// with the client's count, and a server whose template differs is reported. The self-made test
// tokenizer (tokenizer/testing.h) always runs; the fetched model tokenizers run when
// scripts/fetch-tokenizers.sh has (CI requires them).
#include <algorithm>
#include <fstream>

#include "e2e_util.h"
#include "tokenizer/serving.h"
#include "tokenizer/test_cache.h"
#include "tokenizer/testing.h"
#include "workload/agentic_prompts.h"

namespace ib::e2e {
namespace {

std::vector<std::string> fast_sim(const fs::path& tokenizer, const std::string& chat_template = "") {
  std::vector<std::string> a = {"--timing-model", "simple", "--time-scale", "50",
                                "--tokenizer", tokenizer.string()};
  if (!chat_template.empty()) {
    a.push_back("--chat-template");
    a.push_back(chat_template);
  }
  return a;
}

struct TokenizerBenchRun {
  CommandResult r;
  boost::json::object j;
};

TokenizerBenchRun bench(const TempDir& dir, const SimServer& sim, const fs::path& tokenizer,
               const std::string& api, int isl, std::vector<std::string> extra = {}) {
  const fs::path out = dir.path() / ("bench-" + api + ".json");
  std::vector<std::string> args = {"bench",        "--endpoint",     sim.url(),
                                   "--api",        api,              "--tokenizer",
                                   tokenizer.string(), "--isl",      std::to_string(isl),
                                   "--osl",        "4",              "--num-prompts",
                                   "24",           "--concurrency",  "4",
                                   "--output",     out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  TokenizerBenchRun b;
  b.r = run_inferbench(args, dir.path() / ("bench-" + api + ".log"));
  if (b.r.exit.code == 0) b.j = read_json(out);
  return b;
}

void expect_exact_run(const TokenizerBenchRun& b, int isl) {
  ASSERT_EQ(b.r.exit.code, 0) << b.r.output;
  const auto& j = b.j;
  EXPECT_TRUE(j.at("input_length_exact").as_bool());
  const auto& check = j.at("prompt_token_check").as_object();
  EXPECT_EQ(check.at("checked").as_int64(), 24);
  EXPECT_EQ(check.at("mismatches").as_int64(), 0) << boost::json::serialize(check);
  EXPECT_EQ(check.at("client_total").as_int64(), check.at("server_total").as_int64());
  const auto& tok = j.at("tokenizer").as_object();
  EXPECT_EQ(tok.at("exact_prompts").as_int64(), 24);
  EXPECT_EQ(tok.at("inexact_prompts").as_int64(), 0);
  // Every measured length is in [0.8 ISL, ISL] (the default range ratio) and is what the server
  // counted.
  int64_t sum = 0;
  for (const auto& v : j.at("input_lens").as_array()) {
    EXPECT_GE(v.as_int64(), static_cast<int64_t>(0.8 * isl));
    EXPECT_LE(v.as_int64(), isl);
    sum += v.as_int64();
  }
  EXPECT_EQ(sum, static_cast<int64_t>(num(j, "total_input_tokens")));
  EXPECT_EQ(sum, check.at("server_total").as_int64());
  for (const auto& w : j.at("warnings").as_array()) {
    EXPECT_EQ(std::string(w.as_string()).find("prompt tokens"), std::string::npos) << w;
  }
}

class Tokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    model = dir.path() / "model";
    ASSERT_TRUE(tokenizer::write_test_tokenizer(model).ok());
  }
  TempDir dir;
  fs::path model;
};

TEST_F(Tokenizer, CompletionsAndChatPromptsAreExactAsTheServerCountsThem) {
  SimServer sim(dir.path(), fast_sim(model));
  ASSERT_TRUE(sim.running());
  EXPECT_NE(sim.log().find("counting prompt tokens with"), std::string::npos) << sim.log();
  for (const std::string api : {"completions", "chat"}) {
    SCOPED_TRACE(api);
    auto b = bench(dir, sim, model, api, 300, {"--tokenize-check", "6"});
    expect_exact_run(b, 300);
    if (b.r.exit.code != 0) continue;
    const auto& tc = b.j.at("tokenize_check").as_object();
    EXPECT_EQ(tc.at("checked").as_int64(), 6);
    EXPECT_EQ(tc.at("agree").as_int64(), 6);
    EXPECT_NE(b.r.output.find("6 of 6 prompts agree"), std::string::npos) << b.r.output;
  }
}

TEST_F(Tokenizer, AServerWithAnotherChatTemplateIsReported) {
  // The server's template puts a system line first: 1 + "system"(6 bytes) + "\n" + the line's
  // tokens + <|im_end|> + "\n" more than the client's.
  const fs::path other = dir.path() / "other.jinja";
  {
    std::ofstream f(other);
    f << "<|im_start|>system\nYou are the model<|im_end|>\n" << tokenizer::kTestChatTemplate;
  }
  SimServer sim(dir.path(), fast_sim(model, other.string()));
  ASSERT_TRUE(sim.running());
  auto b = bench(dir, sim, model, "chat", 200, {"--tokenize-check", "3"});
  ASSERT_EQ(b.r.exit.code, 0) << b.r.output;
  auto ours = tokenizer::ServingTokenizer::load(model);
  auto theirs = tokenizer::ServingTokenizer::load(model, other);
  ASSERT_TRUE(ours && theirs);
  const int extra = *(*theirs)->chat_overhead() - *(*ours)->chat_overhead();
  EXPECT_GT(extra, 0);
  const auto& check = b.j.at("prompt_token_check").as_object();
  EXPECT_EQ(check.at("mismatches").as_int64(), 24);
  EXPECT_EQ(check.at("max_difference").as_int64(), extra);
  EXPECT_EQ(check.at("server_total").as_int64() - check.at("client_total").as_int64(), 24 * extra);
  bool warned = false;
  for (const auto& w : b.j.at("warnings").as_array()) {
    warned |= std::string(w.as_string()).find("24 of 24 prompts: the server counted") !=
              std::string::npos;
  }
  EXPECT_TRUE(warned) << boost::json::serialize(b.j.at("warnings"));
  EXPECT_EQ(b.j.at("tokenize_check").as_object().at("agree").as_int64(), 0);
  EXPECT_NE(b.r.output.find("0 of 3 prompts agree"), std::string::npos) << b.r.output;
}

TEST_F(Tokenizer, TokenizeCommandPrintsIdsAndTheChatCount) {
  const fs::path text = dir.path() / "text.txt";
  {
    std::ofstream f(text);
    f << "How many apples does John have after he buys three more?";
  }
  auto r = run_inferbench({"tokenize", "--tokenizer", model.string(), "--chat", "--json",
                           text.string()},
                          dir.path() / "tokenize.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto tok = tokenizer::ServingTokenizer::load(model);
  ASSERT_TRUE(tok);
  const std::string s = "How many apples does John have after he buys three more?";
  const auto j = boost::json::parse(r.output).as_object();
  const auto ids = (*tok)->encode_prompt(s);
  EXPECT_EQ(j.at("tokens").as_int64(), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(j.at("special_tokens_added").as_int64(), 1);
  ASSERT_EQ(j.at("ids").as_array().size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(j.at("ids").as_array()[i].as_int64(), ids[i]);
  const tokenizer::ChatMessage m{"user", s};
  auto chat = (*tok)->encode_chat(std::span(&m, 1));
  ASSERT_TRUE(chat);
  const auto& c = j.at("chat").as_object();
  EXPECT_EQ(c.at("tokens").as_int64(), static_cast<int64_t>(chat->size()));
  EXPECT_EQ(c.at("template_tokens").as_int64(), *(*tok)->chat_overhead());
  EXPECT_NE(std::string(c.at("rendered").as_string()).find("<|im_start|>assistant\n"),
            std::string::npos);

  // Bad input: exit 2, naming what is wrong.
  auto missing = run_inferbench({"tokenize", "--tokenizer", model.string(), "nope.txt"},
                                dir.path() / "t2.log");
  EXPECT_EQ(missing.exit.code, 2);
  EXPECT_NE(missing.output.find("nope.txt"), std::string::npos) << missing.output;
  auto bad_tok = run_inferbench({"tokenize", "--tokenizer", (dir.path() / "none").string(),
                                 text.string()},
                                dir.path() / "t3.log");
  EXPECT_EQ(bad_tok.exit.code, 2);
  EXPECT_NE(bad_tok.output.find("no such file or folder"), std::string::npos) << bad_tok.output;
  // A new user's first miss: where vocabularies come from (issue 30).
  EXPECT_NE(bad_tok.output.find("scripts/fetch-tokenizers.sh"), std::string::npos)
      << bad_tok.output;
  {
    std::ofstream f(dir.path() / "bad.json");
    f << "{\"model\": {\"type\": \"WordPiece\"}}";
  }
  auto bad_json = run_inferbench({"tokenize", "--tokenizer", (dir.path() / "bad.json").string(),
                                  text.string()},
                                 dir.path() / "t4.log");
  EXPECT_EQ(bad_json.exit.code, 2);
  EXPECT_NE(bad_json.output.find("bad.json"), std::string::npos) << bad_json.output;
}

TEST_F(Tokenizer, BenchRefusesAnIslBelowTheTemplate) {
  SimServer sim(dir.path(), fast_sim(model));
  ASSERT_TRUE(sim.running());
  auto b = bench(dir, sim, model, "chat", 12);
  EXPECT_EQ(b.r.exit.code, 2) << b.r.output;
  EXPECT_NE(b.r.output.find("--isl 12"), std::string::npos) << b.r.output;
  auto c = run_inferbench({"bench", "--endpoint", sim.url(), "--chat-template", "x.jinja"},
                          dir.path() / "c.log");
  EXPECT_EQ(c.exit.code, 2);
  EXPECT_NE(c.output.find("--chat-template applies with --tokenizer"), std::string::npos)
      << c.output;
}

// Agentic replay with a tokenizer: every block is exactly its tokens, so the server counts each
// request's content exactly as recorded, plus the template's own tokens. The template here has
// no role names, so what it adds is known: BOS, <|im_start|> and <|im_end|> per message, and the
// generation prompt's <|im_start|>.
// Cost: about 13 s: the bundled traces replayed in full, since the count must hold on every
// recorded request, and the exact prompts built with a real model's tokenizer.
TEST(TokenizerAgentic, ServerCountsTheRecordedTokensPlusTheTemplate) {
  TempDir dir;
  const fs::path model = dir.path() / "model";
  std::vector<std::string_view> words;
  const auto& corpus = workload::agentic::Corpus::words();
  for (size_t i = 0; i < corpus.size(); ++i) words.push_back(corpus.token(i));
  ASSERT_TRUE(tokenizer::write_test_tokenizer(model, words).ok());
  const fs::path tmpl = dir.path() / "plain.jinja";
  {
    std::ofstream f(tmpl);
    f << "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['content'] | trim }}<|im_end|>"
         "{% endfor %}{% if add_generation_prompt %}<|im_start|>{% endif %}";
  }
  SimServer sim(dir.path(), {"--timing-model", "simple", "--time-scale", "100",
                             "--max-model-len", "262144", "--tokenizer", model.string(),
                             "--chat-template", tmpl.string()});
  ASSERT_TRUE(sim.running());
  const fs::path details = dir.path() / "details.jsonl";
  auto r = run_inferbench(
      {"bench", "--endpoint", sim.url(), "--workload", "agentic", "--traces",
       (fs::path(INFERBENCH_TEST_DATA) / "agentx-traces").string(), "--max-traces", "2",
       "--agentx-fast", "--time-scale", "100", "--concurrency", "2", "--tokenizer",
       model.string(), "--chat-template", tmpl.string(), "--details", details.string()},
      dir.path() / "bench.log", std::chrono::seconds(180));
  ASSERT_TRUE(r.exit.code == 0 || r.exit.code == 1) << r.output;
  EXPECT_NE(r.output.find("single tokens for"), std::string::npos) << r.output;
  std::ifstream in(details);
  std::string line;
  int checked = 0;
  int64_t most_messages = 0;
  while (std::getline(in, line)) {
    const auto j = boost::json::parse(line).as_object();
    const int64_t server = j.at("prompt_tokens").as_int64();
    if (server < 0) continue;
    const int64_t messages = j.at("messages").as_int64();
    EXPECT_EQ(server, j.at("content_tokens").as_int64() + 2 * messages + 2) << line.substr(0, 300);
    most_messages = std::max(most_messages, messages);
    ++checked;
  }
  // The replay is bounded by recorded time (12 s of wall time at time-scale 100), so how many
  // requests finish depends on the machine: about 30 in the main build, 12 under the sanitizers
  // on a loaded 2-core machine, fewer when the sanitizer pass runs whole unit-test executables
  // beside it. Every one that finished is checked exactly; at least three, and multi-turn.
  EXPECT_GE(checked, 3);
  EXPECT_GT(most_messages, 2);
}

// The fetched model tokenizers: serve-sim and bench with the same files agree on every prompt.
class FamilyBench : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir;
};

TEST_P(FamilyBench, ServerAndClientAgreeOnEveryPrompt) {
  const std::string family = GetParam();
  IB_SKIP_IF_MISSING(tokenizer::testing::missing_files({family + "/tokenizer.json"}));
  const fs::path model = tokenizer::tokenizer_cache_dir() / family;
  SimServer sim(dir.path(), fast_sim(model));
  ASSERT_TRUE(sim.running());
  for (const std::string api : {"completions", "chat"}) {
    SCOPED_TRACE(api);
    auto b = bench(dir, sim, model, api, 1024, {"--tokenize-check", "4"});
    expect_exact_run(b, 1024);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyBench,
                         ::testing::Values("llama3", "llama3_1", "qwen3", "deepseek_v3"));

}  // namespace
}  // namespace ib::e2e
