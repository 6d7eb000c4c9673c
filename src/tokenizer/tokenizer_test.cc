// Unit tests on small tokenizer.json and tiktoken files written here. Expected ids were checked
// against the reference (npm tokenizers@0.23.2) on the same files.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "core/files.h"
#include "core/temp_dir.h"
#include "tokenizer/unicode.h"

namespace ib::tokenizer {
namespace {

namespace json = boost::json;
using Ids = std::vector<int32_t>;

json::object added_token(int id, std::string_view content, bool special, bool normalized) {
  return {{"id", id},        {"content", content},       {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", normalized}, {"special", special}};
}

json::object byte_level_pre(bool add_prefix_space = false, bool use_regex = false) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

json::object split(std::string_view regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

json::object sequence(std::initializer_list<json::value> steps) {
  return {{"type", "Sequence"}, {"pretokenizers", json::array(steps.begin(), steps.end())}};
}

// A byte-level BPE tokenizer.json: the 256 bytes are ids 0-255 (byte-level text), `extra`
// vocabulary entries (byte-level text) follow from 256, then `merges` ("a b").
json::object tiny(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                  json::value pre_tokenizer = byte_level_pre()) {
  json::object vocab;
  for (int b = 0; b < 256; ++b) vocab[bytes_to_byte_level(std::string(1, char(b)))] = b;
  for (const std::string& e : extra) vocab[e] = int64_t(vocab.size());
  json::array m;
  for (const std::string& s : merges) m.emplace_back(s);
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", std::move(pre_tokenizer)},
          {"post_processor", nullptr},
          {"decoder",
           {{"type", "ByteLevel"},
            {"add_prefix_space", true},
            {"trim_offsets", true},
            {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", std::move(vocab)},
            {"merges", std::move(m)}}}};
}

Tokenizer load(const json::object& tokenizer_json) {
  auto t = Tokenizer::from_hf_json(json::serialize(tokenizer_json), "tiny.json");
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  if (!t) std::abort();
  return std::move(*t);
}

std::string load_error(const json::object& tokenizer_json) {
  auto t = Tokenizer::from_hf_json(json::serialize(tokenizer_json), "tiny.json");
  return t ? std::string("loaded") : t.error().message;
}

// The GPT-2 pre-tokenizer (ByteLevel with its regex); vocabulary 'ab' 256 ... 'aaa' 262.
json::object gpt2_tiny() {
  return tiny({"ab", "abc", "Ġa", "Ġab", "bc", "aa", "aaa"},
              {"a b", "ab c", "Ġ a", "Ġa b", "b c", "a a", "aa a"}, byte_level_pre(false, true));
}

TEST(Tokenizer, MergesLowestRankFirstThenLeftmost) {
  const Tokenizer t = load(gpt2_tiny());
  EXPECT_EQ(t.encode("abc ab aaaa"), (Ids{257, 32, 256, 258, 262}));
  EXPECT_EQ(t.encode("aaaaa"), (Ids{261, 262}));
  EXPECT_EQ(t.encode(""), Ids{});
  EXPECT_EQ(t.count("abc ab aaaa"), 5u);
}

TEST(Tokenizer, MergesAsPairArraysEqualMergesAsStrings) {
  json::object j = gpt2_tiny();
  json::array pairs;
  for (const json::value& m : j["model"].as_object()["merges"].as_array()) {
    const std::string s(m.as_string());
    const size_t space = s.find(' ');
    pairs.push_back(json::array{s.substr(0, space), s.substr(space + 1)});
  }
  j["model"].as_object()["merges"] = std::move(pairs);
  EXPECT_EQ(load(j).encode("abc ab aaaa"), (Ids{257, 32, 256, 258, 262}));
}

TEST(Tokenizer, IgnoreMergesTakesAWholePieceInTheVocabulary) {
  json::object j = tiny({"bc", "abc"}, {"b c"});
  EXPECT_EQ(load(j).encode("abc"), (Ids{97, 256}));
  j["model"].as_object()["ignore_merges"] = true;
  EXPECT_EQ(load(j).encode("abc"), (Ids{257}));
  EXPECT_EQ(load(j).encode("abcabc"), (Ids{97, 256, 97, 256}));
}

TEST(Tokenizer, SplitIsolatedKeepsMatchesAndGapsAndAddsPrefixSpacePerPiece) {
  const Tokenizer t = load(tiny({"12", "123", "Ġ1"}, {"1 2", "12 3", "Ġ 1"},
                                sequence({split(R"(\p{N}{1,3})"), byte_level_pre(true)})));
  EXPECT_EQ(t.encode("12345"), (Ids{32, 257, 32, 52, 53}));
  EXPECT_EQ(t.encode("a12"), (Ids{32, 97, 32, 256}));
}

TEST(Tokenizer, SplitFollowsOnigFindIterOnEmptyMatches) {
  // x* matches empty between 'a' and 'b', which splits them, as in tokenizers.
  const Tokenizer t =
      load(tiny({"ab", "xx"}, {"a b", "x x"}, sequence({split("x*"), byte_level_pre()})));
  EXPECT_EQ(t.encode("abxxc"), (Ids{97, 98, 257, 99}));
  EXPECT_EQ(t.encode("xxab"), (Ids{257, 97, 98}));
}

TEST(Tokenizer, SplitWithALiteralString) {
  json::object j = tiny({"ab"}, {"a b"}, sequence({split("."), byte_level_pre()}));
  auto& steps = j["pre_tokenizer"].as_object()["pretokenizers"].as_array();
  steps[0].as_object()["pattern"] = {{"String", "."}};
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("ab.ab"), (Ids{256, 46, 256}));
  EXPECT_EQ(t.encode("a.b"), (Ids{97, 46, 98}));
}

TEST(Tokenizer, AddedTokensLongestMatchFirstWithTokenizersIds) {
  json::object j = tiny({}, {});
  // The ids in the file are ignored as tokenizers ignores them: tokens not in the vocabulary get
  // the vocabulary size (256), then one more each.
  j["added_tokens"] =
      json::array{added_token(300, "<a>", true, false), added_token(301, "<a>b", false, false)};
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("x<a>b<a>c<a"), (Ids{120, 257, 256, 99, 60, 97}));
  EXPECT_EQ(t.encode("<<a>>"), (Ids{60, 256, 62}));
  EXPECT_EQ(t.token_id("<a>"), 256);
  EXPECT_TRUE(t.is_special(256));
  EXPECT_FALSE(t.is_special(257));
  EXPECT_EQ(t.id_limit(), 258);
}

TEST(Tokenizer, NfcAndNormalizedAddedTokens) {
  json::object j = tiny({}, {});
  j["normalizer"] = {{"type", "NFC"}};
  // Matched after normalisation / in the raw text.
  j["added_tokens"] = json::array{added_token(256, "\u00e9!", false, true),
                                  added_token(257, "e\u0301?", false, false)};
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("e\u0301!"), (Ids{256}));
  EXPECT_EQ(t.encode("\u00e9!"), (Ids{256}));
  EXPECT_EQ(t.encode("e\u0301?"), (Ids{257}));
  EXPECT_EQ(t.encode("\u00e9?"), (Ids{195, 169, 63}));
  EXPECT_EQ(t.encode("e\u0301"), (Ids{195, 169}));  // NFC: é
}

TEST(Tokenizer, TemplateProcessingAddsTokensOnRequest) {
  json::object j = tiny({}, {});
  j["added_tokens"] =
      json::array{added_token(256, "<s>", true, false), added_token(257, "</s>", true, false)};
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array{
           byte_level_pre(),
           {{"type", "TemplateProcessing"},
            {"single", json::array{{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                   {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
            {"pair", json::array()},
            {"special_tokens",
             {{"<s>", {{"id", "<s>"}, {"ids", json::array{256}}, {"tokens", json::array{"<s>"}}}},
              {"</s>",
               {{"id", "</s>"}, {"ids", json::array{257}}, {"tokens", json::array{"</s>"}}}}}}}}}};
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("a"), (Ids{97}));
  EXPECT_EQ(t.encode("a", {.add_special_tokens = true}), (Ids{256, 97, 257}));
}

TEST(Tokenizer, DecodeJoinsAllBytesThenRepairsUtf8) {
  json::object j = gpt2_tiny();
  j["added_tokens"] = json::array{added_token(300, "<|x|>", true, false),
                                  added_token(301, "a\u0120\u00e9", false, false),
                                  added_token(302, "<\uff5cy\uff5c>", false, true)};
  const Tokenizer t = load(j);  // ids 263, 264, 265
  EXPECT_EQ(t.decode(Ids{228, 184, 173}), "\u4e2d");
  EXPECT_EQ(t.decode(Ids{228, 184}), "\ufffd");
  // Bytes are joined across added tokens before the repair...
  EXPECT_EQ(t.decode(Ids{228, 184, 263, 173}), "\ufffd<|x|>\ufffd");
  EXPECT_EQ(t.decode(Ids{228, 184, 265, 173}), "\ufffd<\uff5cy\uff5c>\ufffd");
  // ...unless it is a special token that is skipped.
  EXPECT_EQ(t.decode(Ids{228, 184, 263, 173}, {.skip_special_tokens = true}), "\u4e2d");
  // Byte-level text in an added token is decoded like any token (é is the byte 0xE9 there, which
  // 169 = 0xA9 then continues).
  EXPECT_EQ(t.decode(Ids{264}), "a \ufffd");
  EXPECT_EQ(t.decode(Ids{195, 264, 169}), "\ufffda \ufffd");
  // Maximal subparts: one U+FFFD for a truncated sequence, one per byte that cannot start one.
  EXPECT_EQ(t.decode(Ids{240, 159, 152}), "\ufffd");
  EXPECT_EQ(t.decode(Ids{255, 65}), "\ufffdA");
  EXPECT_EQ(t.decode(Ids{237, 160, 128}), "\ufffd\ufffd\ufffd");
  EXPECT_EQ(t.decode(Ids{224, 128, 65}), "\ufffd\ufffdA");
  EXPECT_EQ(t.decode(Ids{999, -1, 97}), "a");  // unknown ids are skipped
}

TEST(Tokenizer, InvalidUtf8InputIsRepairedFirst) {
  const Tokenizer t = load(gpt2_tiny());
  EXPECT_EQ(t.encode("a\xff"
                     "b"),
            t.encode("a\ufffd"
                     "b"));
  EXPECT_EQ(t.encode("\xe4\xb8"), t.encode("\ufffd"));
}

TEST(Tokenizer, RoundTripOfBytesAndText) {
  const Tokenizer t = load(gpt2_tiny());
  for (std::string_view text : {"abc ab aaaa", "  tabs\tand\nnewlines\r\n", "中文 😀 é"}) {
    EXPECT_EQ(t.decode(t.encode(text)), text);
  }
}

TEST(Tokenizer, EncodesFromManyThreadsAtOnce) {
  const Tokenizer t = load(gpt2_tiny());
  const std::string text = "abc ab aaaa aaaaa ab abc 中文 ab";
  const Ids want = t.encode(text);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      int same = 0;
      for (int i = 0; i < 500; ++i) same += t.encode(text) == want;
      ok[size_t(k)] = same;
    });
  }
  for (auto& th : threads) th.join();
  for (int same : ok) EXPECT_EQ(same, 500);
}

TEST(TokenizerErrors, MissingFileNamesThePath) {
  auto t = Tokenizer::from_hf_json_file("/nonexistent/tokenizer.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("/nonexistent/tokenizer.json"), std::string::npos);
}

TEST(TokenizerErrors, BadJsonNamesTheFileAndPlace) {
  auto t = Tokenizer::from_hf_json("{\n\"model\": [1,,2]}", "bad.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("bad.json: invalid JSON at byte"), std::string::npos)
      << t.error().message;
  EXPECT_NE(t.error().message.find("(line 2)"), std::string::npos) << t.error().message;
}

TEST(TokenizerErrors, UnsupportedPartsNameTheField) {
  json::object j = gpt2_tiny();
  j["model"].as_object()["type"] = "WordPiece";
  EXPECT_EQ(load_error(j), "tiny.json: model.type: 'WordPiece' is not supported (only BPE)");

  j = gpt2_tiny();
  j["pre_tokenizer"] = sequence({split("x"), {{"type", "Metaspace"}}});
  EXPECT_EQ(load_error(j),
            "tiny.json: pre_tokenizer.pretokenizers[1].type: pre-tokenizer 'Metaspace' is not "
            "supported (only Sequence, Split, ByteLevel)");

  j = gpt2_tiny();
  j["pre_tokenizer"] = split("x");
  EXPECT_EQ(load_error(j),
            "tiny.json: pre_tokenizer: no ByteLevel step; only byte-level BPE is supported");

  j = gpt2_tiny();
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_EQ(load_error(j),
            "tiny.json: normalizer.type: normalizer 'Lowercase' is not supported (only NFC, NFD, "
            "NFKC, NFKD)");

  j = gpt2_tiny();
  j["decoder"] = {{"type", "WordPiece"}};
  EXPECT_EQ(load_error(j),
            "tiny.json: decoder.type: decoder 'WordPiece' is not supported (only ByteLevel)");

  j = gpt2_tiny();
  j["model"].as_object()["byte_fallback"] = true;
  EXPECT_EQ(load_error(j), "tiny.json: model.byte_fallback: true is not supported");

  j = gpt2_tiny();
  j["added_tokens"] = json::array{added_token(300, "<x>", true, false)};
  j["added_tokens"].as_array()[0].as_object()["lstrip"] = true;
  EXPECT_EQ(load_error(j),
            "tiny.json: added_tokens[0].lstrip: true is not supported (token '<x>')");
}

TEST(TokenizerErrors, MalformedFieldsNameTheField) {
  json::object j = gpt2_tiny();
  j["model"].as_object()["merges"].as_array()[2] = "Ġa";
  EXPECT_EQ(load_error(j),
            "tiny.json: model.merges[2]: expected \"left right\" (two tokens, one space)");

  j = gpt2_tiny();
  j["model"].as_object()["merges"].as_array()[1] = "q r";
  EXPECT_EQ(load_error(j), "tiny.json: model.merges[1]: token 'qr' is not in model.vocab");

  j = gpt2_tiny();
  j["model"].as_object().erase("vocab");
  EXPECT_EQ(load_error(j), "tiny.json: model.vocab: missing");

  j = gpt2_tiny();
  j["pre_tokenizer"] = sequence({split("(unclosed"), byte_level_pre()});
  const std::string e = load_error(j);
  EXPECT_EQ(e.rfind("tiny.json: pre_tokenizer.pretokenizers[0].pattern: invalid regular "
                    "expression: ",
                    0),
            0u)
      << e;
}

// A tiktoken rank file for the bytes 'a', 'b', 'c', ' ' and the tokens "ab" (4), "abc" (5),
// " a" (6).
constexpr std::string_view kRanks = "YQ== 0\nYg== 1\nYw== 2\nIA== 3\nYWI= 4\nYWJj 5\nIGE= 6\n";

TEST(Tiktoken, MergesByRankOfTheJoinedBytes) {
  auto t = Tokenizer::from_tiktoken(kRanks, "tiny.tiktoken", R"( ?\p{L}+|\s+)", {{"<|end|>", 7}});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->encode("abc ab cab"), (Ids{5, 3, 4, 3, 2, 4}));
  EXPECT_EQ(t->encode("ab<|end|>c"), (Ids{4, 7, 2}));
  EXPECT_EQ(t->decode(Ids{5, 7, 6}), "abc<|end|> a");
  EXPECT_EQ(t->decode(Ids{5, 7, 6}, {.skip_special_tokens = true}), "abc a");
  EXPECT_TRUE(t->is_special(7));
}

TEST(Tiktoken, ErrorsNameTheFileAndLine) {
  auto t = Tokenizer::from_tiktoken("YQ== 0\n!!!! 1\n", "bad.tiktoken", "x", {});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "bad.tiktoken:2: invalid base64 token");
  t = Tokenizer::from_tiktoken("YQ== x\n", "bad.tiktoken", "x", {});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "bad.tiktoken:1: invalid rank");
  t = Tokenizer::from_tiktoken(kRanks, "tiny.tiktoken", "(", {});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message.rfind("tiny.tiktoken: split pattern: invalid regular expression", 0),
            0u);
}

TEST(TokenizerFiles, LoadsFromAFile) {
  TempDir dir("tokenizer-test");
  ASSERT_TRUE(write_file_atomic(dir.path() / "tokenizer.json", json::serialize(gpt2_tiny())));
  auto t = Tokenizer::from_hf_json_file(dir.path() / "tokenizer.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->source(), (dir.path() / "tokenizer.json").string());
  EXPECT_EQ(t->encode("aaaaa"), (Ids{261, 262}));
}

TEST(Unicode, Utf8StepsFollowMaximalSubparts) {
  EXPECT_EQ(utf8_step("a"), 1);
  EXPECT_EQ(utf8_step("\xc3\xa9"), 2);
  EXPECT_EQ(utf8_step("\xe4\xb8\xad"), 3);
  EXPECT_EQ(utf8_step("\xf0\x9f\x98\x80"), 4);
  EXPECT_EQ(utf8_step("\xf0\x9f\x98"), -3);
  EXPECT_EQ(utf8_step("\xed\xa0\x80"), -1);      // surrogate
  EXPECT_EQ(utf8_step("\xc0\x80"), -1);          // overlong
  EXPECT_EQ(utf8_step("\xf4\x90\x80\x80"), -1);  // above U+10FFFF
  EXPECT_TRUE(is_valid_utf8("plain ascii text, long enough for the fast path"));
  EXPECT_FALSE(is_valid_utf8("plain ascii text, long enough \xff for the fast path"));
}

TEST(Unicode, ByteLevelAlphabet) {
  EXPECT_EQ(bytes_to_byte_level(" a\n"), "\u0120a\u010a");
  std::string bytes;
  EXPECT_TRUE(byte_level_to_bytes("\u0120a\u010a", bytes));
  EXPECT_EQ(bytes, " a\n");
  bytes.clear();
  EXPECT_FALSE(byte_level_to_bytes("a b", bytes));  // ' ' is not in the alphabet
  for (int b = 0; b < 256; ++b) {
    bytes.clear();
    ASSERT_TRUE(byte_level_to_bytes(bytes_to_byte_level(std::string(1, char(b))), bytes));
    EXPECT_EQ(bytes, std::string(1, char(b)));
  }
}

}  // namespace
}  // namespace ib::tokenizer
