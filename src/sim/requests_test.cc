#include "sim/requests.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>

#include "core/temp_dir.h"
#include "sim/tokens.h"
#include "tokenizer/serving.h"
#include "tokenizer/testing.h"

namespace ib::sim {
namespace {

const ServedModel kModel{"sim-model", 1000};

GenerateRequest ok_completion(const std::string& body) {
  ParseResult r = parse_completion_request(body, kModel);
  if (const auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << "unexpected error for " << body << ": " << e->message;
    return {};
  }
  return std::get<GenerateRequest>(r);
}

GenerateRequest ok_chat(const std::string& body) {
  ParseResult r = parse_chat_request(body, kModel);
  if (const auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << "unexpected error for " << body << ": " << e->message;
    return {};
  }
  return std::get<GenerateRequest>(r);
}

ApiError error_of(const ParseResult& r) {
  if (const auto* e = std::get_if<ApiError>(&r)) return *e;
  ADD_FAILURE() << "expected an error";
  return {};
}

TEST(ParseCompletion, TextPromptWithDefaults) {
  GenerateRequest r = ok_completion(R"({"model":"sim-model","prompt":"the quick  brown fox"})");
  EXPECT_EQ(r.api, Api::kCompletions);
  EXPECT_EQ(r.prompt_tokens, 4);
  EXPECT_EQ(r.max_tokens, 16);  // vLLM's default for completions
  EXPECT_EQ(r.min_tokens, 0);
  EXPECT_FALSE(r.ignore_eos);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.continuous_usage);
}

TEST(ParseCompletion, AllKnobs) {
  GenerateRequest r = ok_completion(
      R"({"prompt":"a b","max_tokens":32,"min_tokens":8,"ignore_eos":true,"stream":true,)"
      R"("stream_options":{"include_usage":true,"continuous_usage_stats":true},)"
      R"("temperature":0.0,"top_p":1,"seed":3,"unknown_field":[1,2]})");
  EXPECT_EQ(r.max_tokens, 32);
  EXPECT_EQ(r.min_tokens, 8);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.continuous_usage);
}

TEST(ParseCompletion, ContinuousUsageNeedsIncludeUsage) {
  GenerateRequest r = ok_completion(
      R"({"prompt":"a","stream":true,"stream_options":{"continuous_usage_stats":true}})");
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.continuous_usage);
}

TEST(ParseCompletion, NullMeansDefault) {
  GenerateRequest r =
      ok_completion(R"({"prompt":"a","max_tokens":null,"stream":null,"model":null})");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FALSE(r.stream);
}

TEST(ParseCompletion, IntegralFloatIsAnInteger) {
  EXPECT_EQ(ok_completion(R"({"prompt":"a","max_tokens":8.0})").max_tokens, 8);
}

TEST(ParseCompletion, TokenIdPrompt) {
  GenerateRequest r = ok_completion(R"({"prompt":[1,2,3,4,5,6,7]})");
  EXPECT_EQ(r.prompt_tokens, 7);
  GenerateRequest same = ok_completion(R"({"prompt":[1,2,3,4,5,6,7]})");
  GenerateRequest other = ok_completion(R"({"prompt":[1,2,3,4,5,6,8]})");
  EXPECT_EQ(r.prompt_hash, same.prompt_hash);
  EXPECT_NE(r.prompt_hash, other.prompt_hash);
}

TEST(ParseCompletion, BatchOfOneIsAccepted) {
  EXPECT_EQ(ok_completion(R"({"prompt":["one two three"]})").prompt_tokens, 3);
  EXPECT_EQ(ok_completion(R"({"prompt":[[5,6]]})").prompt_tokens, 2);
}

TEST(ParseCompletion, WhitespaceOnlyPromptCountsOneToken) {
  EXPECT_EQ(ok_completion(R"({"prompt":"   "})").prompt_tokens, 1);
}

TEST(ParseCompletion, UnknownModelIs404) {
  ApiError e = error_of(parse_completion_request(R"({"model":"gpt-9","prompt":"a"})", kModel));
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.type, "NotFoundError");
  EXPECT_EQ(e.param, "model");
  EXPECT_NE(e.message.find("gpt-9"), std::string::npos);
}

struct BadCase {
  const char* body;
  const char* param;     // expected param; nullptr for null
  const char* contains;  // expected in the message
};

// Printed in test names (ctest discovery): stable text, not the struct's bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << (c.param ? c.param : "null"); }

class BadCompletion : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCompletion, Is400NamingTheField) {
  const BadCase& c = GetParam();
  ApiError e = error_of(parse_completion_request(c.body, kModel));
  EXPECT_EQ(e.status, 400) << c.body;
  EXPECT_EQ(e.type, "BadRequestError");
  if (c.param == nullptr) {
    EXPECT_FALSE(e.param.has_value()) << *e.param;
  } else {
    EXPECT_EQ(e.param, std::string(c.param)) << c.body;
  }
  EXPECT_NE(e.message.find(c.contains), std::string::npos)
      << "message '" << e.message << "' lacks '" << c.contains << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadCompletion,
    ::testing::Values(
        BadCase{R"({"prompt":"a",)", nullptr, "not valid JSON"},
        BadCase{R"([1,2])", nullptr, "must be a JSON object"},
        BadCase{"", nullptr, "not valid JSON"},
        BadCase{R"({"max_tokens":5})", "prompt", "prompt is required"},
        BadCase{R"({"prompt":""})", "prompt", "must not be empty"},
        BadCase{R"({"prompt":[]})", "prompt", "must not be empty"},
        BadCase{R"({"prompt":42})", "prompt", "string or an array of token ids"},
        BadCase{R"({"prompt":["a","b"]})", "prompt", "batched prompts are not supported"},
        BadCase{R"({"prompt":[[1],[2]]})", "prompt", "batched prompts"},
        BadCase{R"({"prompt":[1,-2]})", "prompt", "prompt[1]"},
        BadCase{R"({"prompt":[1,"x"]})", "prompt", "prompt[1]"},
        BadCase{R"({"prompt":"a","model":7})", "model", "model must be a string"},
        BadCase{R"({"prompt":"a","max_tokens":"16"})", "max_tokens",
                "max_tokens must be an integer"},
        BadCase{R"({"prompt":"a","max_tokens":1.5})", "max_tokens", "integer"},
        BadCase{R"({"prompt":"a","max_tokens":0})", "max_tokens", "max_tokens must be at least 1"},
        BadCase{R"({"prompt":"a","max_tokens":-3})", "max_tokens", "at least 1"},
        BadCase{R"({"prompt":"a","min_tokens":-1})", "min_tokens", "min_tokens must be at least 0"},
        BadCase{R"({"prompt":"a","max_tokens":4,"min_tokens":5})", "min_tokens",
                "less than or equal to max_tokens"},
        BadCase{R"({"prompt":"a","min_tokens":true})", "min_tokens", "integer"},
        BadCase{R"({"prompt":"a","ignore_eos":"yes"})", "ignore_eos",
                "ignore_eos must be a boolean"},
        BadCase{R"({"prompt":"a","stream":1})", "stream", "stream must be a boolean"},
        BadCase{R"({"prompt":"a","stream":true,"stream_options":[]})", "stream_options",
                "must be an object"},
        BadCase{R"({"prompt":"a","stream_options":{"include_usage":true}})", "stream_options",
                "only be set when stream is true"},
        BadCase{R"({"prompt":"a","stream":true,"stream_options":{"include_usage":1}})",
                "stream_options", "stream_options.include_usage must be a boolean"},
        BadCase{R"({"prompt":"a","n":2})", "n", "n must be 1"},
        BadCase{R"({"prompt":"a","max_tokens":1000})", "max_tokens",
                "maximum context length is 1000"},
        BadCase{R"({"prompt":"a","max_tokens":99999999999999999999})", "max_tokens",
                "maximum context length"}));

TEST(ParseCompletion, PromptLongerThanTheContextIs400) {
  std::string words;
  for (int i = 0; i < 1000; ++i) words += "w ";
  ApiError e = error_of(parse_completion_request(R"({"prompt":")" + words + R"("})", kModel));
  EXPECT_EQ(e.param, "prompt");
  EXPECT_NE(e.message.find("1000 input tokens"), std::string::npos) << e.message;
}

TEST(ParseCompletion, ExactlyFillingTheContextIsAccepted) {
  // 10 prompt tokens + 990 output tokens = max_model_len.
  GenerateRequest r = ok_completion(R"({"prompt":"1 2 3 4 5 6 7 8 9 10","max_tokens":990})");
  EXPECT_EQ(r.max_tokens, 990);
}

TEST(ParseChat, CountsWordsPlusTemplateOverhead) {
  GenerateRequest r = ok_chat(
      R"({"model":"sim-model","messages":[{"role":"system","content":"be brief"},)"
      R"({"role":"user","content":[{"type":"text","text":"hello there"},{"type":"text","text":"friend"}]}]})");
  EXPECT_EQ(r.api, Api::kChat);
  EXPECT_EQ(r.prompt_tokens, 2 + 3 + 2 * kChatTokensPerMessage + kChatTokensPerRequest);
  // Chat without a limit may use the rest of the context (as vLLM).
  EXPECT_EQ(r.max_tokens, 1000 - r.prompt_tokens);
}

TEST(ParseChat, MaxCompletionTokensWinsOverMaxTokens) {
  GenerateRequest r = ok_chat(
      R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"max_tokens":9})");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(ok_chat(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":9})").max_tokens,
            9);
}

TEST(ParseChat, NullContentAndAnyRoleAreAccepted) {
  GenerateRequest r = ok_chat(
      R"({"messages":[{"role":"assistant","content":null},{"role":"custom","content":"x"}]})");
  EXPECT_EQ(r.prompt_tokens, 1 + 2 * kChatTokensPerMessage + kChatTokensPerRequest);
}

TEST(ParseChat, HashDependsOnContentAndRole) {
  auto h = [](const char* body) { return ok_chat(body).prompt_hash; };
  EXPECT_EQ(h(R"({"messages":[{"role":"user","content":"a"}]})"),
            h(R"({"messages":[{"role":"user","content":"a"}],"stream":false})"));
  EXPECT_NE(h(R"({"messages":[{"role":"user","content":"a"}]})"),
            h(R"({"messages":[{"role":"user","content":"b"}]})"));
  EXPECT_NE(h(R"({"messages":[{"role":"user","content":"a"}]})"),
            h(R"({"messages":[{"role":"system","content":"a"}]})"));
}

class BadChat : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadChat, Is400NamingTheField) {
  const BadCase& c = GetParam();
  ApiError e = error_of(parse_chat_request(c.body, kModel));
  EXPECT_EQ(e.status, 400) << c.body;
  ASSERT_TRUE(e.param.has_value());
  EXPECT_EQ(*e.param, c.param) << c.body;
  EXPECT_NE(e.message.find(c.contains), std::string::npos)
      << "message '" << e.message << "' lacks '" << c.contains << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadChat,
    ::testing::Values(
        BadCase{R"({"prompt":"a"})", "messages", "messages is required"},
        BadCase{R"({"messages":"hi"})", "messages", "messages must be an array"},
        BadCase{R"({"messages":[]})", "messages", "must not be empty"},
        BadCase{R"({"messages":["hi"]})", "messages", "messages[0] must be an object"},
        BadCase{R"({"messages":[{"content":"hi"}]})", "messages", "messages[0].role"},
        BadCase{R"({"messages":[{"role":"user","content":5}]})", "messages",
                "messages[0].content must be"},
        BadCase{R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":)"
                R"([{"type":"image_url","image_url":{"url":"x"}}]}]})",
                "messages", "messages[1].content[0]"},
        BadCase{R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", "messages",
                "messages[0].content[0].text"},
        BadCase{R"({"messages":[{"role":"user","content":"a"}],"max_completion_tokens":0})",
                "max_completion_tokens", "max_completion_tokens must be at least 1"},
        BadCase{R"({"messages":[{"role":"user","content":"a"}],"max_tokens":5000})", "max_tokens",
                "maximum context length"},
        BadCase{R"({"messages":[{"role":"user","content":"a"}],"max_completion_tokens":3,)"
                R"("min_tokens":4})",
                "min_tokens", "max_completion_tokens (3)"}));

TEST(PrefixKeys, OneKeyPerPromptToken) {
  for (const char* body : {R"({"prompt":"a b c d"})", R"({"prompt":"   "})",
                           R"({"prompt":[1,2,3,9223372036854775807,18446744073709551615]})"}) {
    GenerateRequest r = ok_completion(body);
    EXPECT_EQ(static_cast<int>(r.prompt_keys.size()), r.prompt_tokens) << body;
  }
  GenerateRequest chat = ok_chat(
      R"({"messages":[{"role":"system","content":"be brief"},)"
      R"({"role":"user","content":[{"type":"text","text":"one two"},{"type":"text","text":"three"}]}]})");
  EXPECT_EQ(static_cast<int>(chat.prompt_keys.size()), chat.prompt_tokens);
}

TEST(PrefixKeys, NextChatTurnStartsWithThePreviousTurn) {
  // Turn 2 repeats turn 1 and appends the reply and a new user message: the keys of turn 1's
  // messages are a prefix of turn 2's, and the assistant reply's header matches the generation
  // prompt turn 1 ended with.
  GenerateRequest turn1 = ok_chat(R"({"messages":[{"role":"user","content":"hello there"}]})");
  GenerateRequest turn2 = ok_chat(
      R"({"messages":[{"role":"user","content":"hello there"},)"
      R"({"role":"assistant","content":" lorem ipsum"},{"role":"user","content":"more"}]})");
  ASSERT_LT(turn1.prompt_keys.size(), turn2.prompt_keys.size());
  for (size_t i = 0; i < turn1.prompt_keys.size(); ++i) {
    EXPECT_EQ(turn1.prompt_keys[i], turn2.prompt_keys[i]) << i;
  }
  const size_t reply = turn1.prompt_keys.size();
  EXPECT_EQ(turn2.prompt_keys[reply], word_key("lorem"));
  // Same text as completions prompt and as token ids gives different keys (different tokens).
  EXPECT_NE(ok_completion(R"({"prompt":"7"})").prompt_keys[0],
            ok_completion(R"({"prompt":[7]})").prompt_keys[0]);
}

TEST(ApiError, JsonShapeMatchesVllm) {
  ApiError e{400, "BadRequestError", "max_tokens must be at least 1, got 0", "max_tokens"};
  auto v = boost::json::parse(e.to_json());
  const auto& err = v.at("error").as_object();
  EXPECT_EQ(err.at("message").as_string(), "max_tokens must be at least 1, got 0");
  EXPECT_EQ(err.at("type").as_string(), "BadRequestError");
  EXPECT_EQ(err.at("param").as_string(), "max_tokens");
  EXPECT_EQ(err.at("code").as_int64(), 400);

  ApiError no_param{400, "BadRequestError", "bad \"json\"", std::nullopt};
  auto w = boost::json::parse(no_param.to_json());
  EXPECT_TRUE(w.at("error").at("param").is_null());
  EXPECT_EQ(w.at("error").at("message").as_string(), "bad \"json\"");
}

// serve-sim --tokenizer: counts as a real server does, prefix keys are token ids, and a template
// that fails to render is a 400 with the template's message.
TEST(ParseWithTokenizer, CountsLikeARealServer) {
  TempDir dir("ib-sim-tok");
  ASSERT_TRUE(tokenizer::write_test_tokenizer(dir.path()).ok());
  auto tok = tokenizer::ServingTokenizer::load(dir.path());
  ASSERT_TRUE(tok) << tok.error().message;
  ServedModel model{"sim-model", 1000, false, tok->get()};
  const std::string text = "How many apples does John have";
  ParseResult r = parse_completion_request(
      R"({"model":"sim-model","prompt":")" + text + R"(","max_tokens":4})", model);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  const auto ids = (*tok)->encode_prompt(text);
  const GenerateRequest& g = std::get<GenerateRequest>(r);
  EXPECT_EQ(g.prompt_tokens, static_cast<int>(ids.size()));
  ASSERT_EQ(g.prompt_keys.size(), ids.size());
  EXPECT_EQ(g.prompt_keys[1], token_id_key(ids[1]));
  EXPECT_TRUE(g.prompt_ids.empty());  // only /tokenize keeps them

  const std::string chat_body =
      R"({"model":"sim-model","messages":[{"role":"system","content":"Be brief"},)"
      R"({"role":"user","content":")" + text + R"("}],"max_tokens":4})";
  r = parse_chat_request(chat_body, model);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  const std::vector<tokenizer::ChatMessage> msgs = {{"system", "Be brief"}, {"user", text}};
  auto chat_ids = (*tok)->encode_chat(msgs);
  ASSERT_TRUE(chat_ids);
  EXPECT_EQ(std::get<GenerateRequest>(r).prompt_tokens, static_cast<int>(chat_ids->size()));

  // /tokenize: the same counts, and the ids.
  r = parse_tokenize_request(R"({"prompt":")" + text + R"("})", model);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  EXPECT_EQ(std::get<GenerateRequest>(r).prompt_ids, ids);
  r = parse_tokenize_request(chat_body, model);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  EXPECT_EQ(std::get<GenerateRequest>(r).prompt_ids, *chat_ids);
  // Without a tokenizer /tokenize counts words and has no ids.
  r = parse_tokenize_request(R"({"prompt":"a b c"})", kModel);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  EXPECT_EQ(std::get<GenerateRequest>(r).prompt_tokens, 3);
  EXPECT_TRUE(std::get<GenerateRequest>(r).prompt_ids.empty());
  EXPECT_EQ(error_of(parse_tokenize_request("[1]", kModel)).status, 400);
  // add_special_tokens: false leaves out the BOS; another model is 404, as for generation.
  r = parse_tokenize_request(R"({"prompt":")" + text + R"(","add_special_tokens":false})", model);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  EXPECT_EQ(std::get<GenerateRequest>(r).prompt_ids, (*tok)->tokenizer().encode(text));
  EXPECT_EQ(error_of(parse_tokenize_request(R"({"model":"x","prompt":"a"})", model)).status, 404);
  const ApiError no_gen =
      error_of(parse_tokenize_request(chat_body.substr(0, chat_body.size() - 1) +
                                          R"(,"add_generation_prompt":false})",
                                      model));
  EXPECT_EQ(no_gen.param, "add_generation_prompt");
}

// A tokenizer without a chat template: the word rule's template tokens around the content's
// token ids, one prefix key per token.
TEST(ParseWithTokenizer, NoTemplateCountsContentTokensPlusTheWordRulesTemplate) {
  TempDir dir("ib-sim-tok");
  ASSERT_TRUE(tokenizer::write_test_tokenizer(dir.path()).ok());
  auto tok = tokenizer::ServingTokenizer::load(dir.path() / "tokenizer.json");
  ASSERT_TRUE(tok) << tok.error().message;
  ASSERT_FALSE((*tok)->has_chat_template());
  ServedModel model{"sim-model", 1000, false, tok->get()};
  ParseResult r = parse_chat_request(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"How many"},)"
      R"({"type":"text","text":" apples"}]}],"max_tokens":2})",
      model);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(r));
  const GenerateRequest& g = std::get<GenerateRequest>(r);
  const int content = static_cast<int>((*tok)->tokenizer().count("How many") +
                                       (*tok)->tokenizer().count(" apples"));
  EXPECT_EQ(g.prompt_tokens, kChatTokensPerRequest + kChatTokensPerMessage + content);
  EXPECT_EQ(g.prompt_keys.size(), static_cast<size_t>(g.prompt_tokens));
  // The same content without a tokenizer hashes the same (the hash is of the text).
  ParseResult w = parse_chat_request(
      R"({"model":"sim-model","messages":[{"role":"user","content":[{"type":"text","text":"How many"},)"
      R"({"type":"text","text":" apples"}]}],"max_tokens":2})",
      kModel);
  ASSERT_TRUE(std::holds_alternative<GenerateRequest>(w));
  EXPECT_EQ(std::get<GenerateRequest>(w).prompt_hash, g.prompt_hash);
  EXPECT_EQ(std::get<GenerateRequest>(w).prompt_tokens, kChatTokensPerRequest + kChatTokensPerMessage + 3);
}

}  // namespace
}  // namespace ib::sim
