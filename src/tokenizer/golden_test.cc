// Parity with the reference implementation (npm tokenizers@0.23.2) on real vocabularies: the ids
// of every line of tests/data/tokenizer-corpus.txt and of the whole corpus, decoding, round
// trips, and tiktoken rank files against gpt-oss's tokenizer.json and gpt-tokenizer's test cases.
//
// The files come from scripts/fetch-tokenizers.sh (a cache folder, see tokenizer/cache.h). Without
// them these tests skip, unless IB_REQUIRE_TOKENIZERS=1 (CI), where they fail.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "core/files.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "tokenizer/cache.h"
#include "tokenizer/test_cache.h"
#include "tokenizer/tokenizer.h"

namespace ib::tokenizer {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

const fs::path kCorpus = fs::path(INFERBENCH_TEST_DATA) / "tokenizer-corpus.txt";

using ::ib::tokenizer::testing::missing_files;
#define SKIP_IF_MISSING(missing) IB_SKIP_IF_MISSING(missing)

std::vector<std::string> corpus_lines(const std::string& corpus) {
  std::vector<std::string> lines = split(corpus, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::vector<int32_t> ids_of(const json::value& v) {
  std::vector<int32_t> ids;
  for (const json::value& id : v.as_array()) ids.push_back(int32_t(id.to_number<int64_t>()));
  return ids;
}

std::string show(std::span<const int32_t> ids) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? ", " : "") << ids[i];
  s << "]";
  return s.str();
}

struct Golden {
  std::vector<std::vector<int32_t>> lines, lines_special;
  std::vector<std::string> decoded;
  std::vector<std::vector<std::string>> pieces;
  std::vector<int32_t> whole;
  std::vector<std::string> random_texts;
  std::vector<std::vector<int32_t>> random_ids;
};

// One family's tokenizer and goldens, loaded once for all its tests.
struct Family {
  std::string error;  // why it could not be loaded; empty when it was
  std::optional<Tokenizer> tokenizer;
  Golden golden;
  std::string corpus;
};

const Family& family(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Family>> loaded;
  auto& slot = loaded[name];
  if (slot) return *slot;
  slot = std::make_unique<Family>();
  Family& f = *slot;
  const fs::path dir = tokenizer_cache_dir();
  const fs::path tok_path = dir / name / "tokenizer.json";
  const fs::path golden_path = dir / "goldens" / (name + ".json");
  auto corpus = read_file(kCorpus);
  auto tok_text = read_file(tok_path);
  auto golden_text = read_file(golden_path);
  if (!corpus || !tok_text || !golden_text) {
    f.error = !corpus     ? corpus.error().message
              : !tok_text ? tok_text.error().message
                          : golden_text.error().message;
    return f;
  }
  f.corpus = *corpus;
  boost::system::error_code ec;
  const json::value g = json::parse(*golden_text, ec);
  if (ec || !g.is_object()) {
    f.error = golden_path.string() + ": not JSON; rerun scripts/fetch-tokenizers.sh";
    return f;
  }
  const json::object& o = g.get_object();
  if (json::value_to<std::string>(o.at("corpus_sha256")) != sha256_hex(*corpus) ||
      json::value_to<std::string>(o.at("tokenizer_sha256")) != sha256_hex(*tok_text)) {
    f.error = golden_path.string() +
              " was made from another corpus or tokenizer.json; rerun scripts/fetch-tokenizers.sh";
    return f;
  }
  for (const auto& v : o.at("lines").as_array()) f.golden.lines.push_back(ids_of(v));
  for (const auto& v : o.at("lines_special").as_array()) {
    f.golden.lines_special.push_back(ids_of(v));
  }
  for (const auto& v : o.at("decoded").as_array()) {
    f.golden.decoded.push_back(json::value_to<std::string>(v));
  }
  for (const auto& v : o.at("pieces").as_array()) {
    f.golden.pieces.push_back(json::value_to<std::vector<std::string>>(v));
  }
  f.golden.whole = ids_of(o.at("whole"));
  for (const auto& v : o.at("random").as_array()) {
    f.golden.random_texts.push_back(json::value_to<std::string>(v.at("text")));
    f.golden.random_ids.push_back(ids_of(v.at("ids")));
  }
  auto tok = Tokenizer::from_hf_json(*tok_text, tok_path.string());
  if (!tok) {
    f.error = tok.error().message;
    return f;
  }
  f.tokenizer = std::move(*tok);
  return f;
}

class GoldenParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    SKIP_IF_MISSING(
        missing_files({GetParam() + "/tokenizer.json", "goldens/" + GetParam() + ".json"}));
    const Family& f = family(GetParam());
    ASSERT_TRUE(f.error.empty()) << f.error;
    f_ = &f;
    lines_ = corpus_lines(f.corpus);
    ASSERT_EQ(lines_.size(), f.golden.lines.size()) << "goldens and corpus disagree on lines";
  }
  const Tokenizer& tok() const { return *f_->tokenizer; }

  const Family* f_ = nullptr;
  std::vector<std::string> lines_;
};

// Compares per-line ids; prints "<family> <what>: M/N lines, I/J ids" and the first mismatches.
void compare_lines(const std::string& name, std::string_view what,
                   const std::vector<std::string>& lines,
                   const std::vector<std::vector<int32_t>>& want,
                   const std::vector<std::vector<int32_t>>& got) {
  size_t lines_ok = 0, ids_ok = 0, ids_total = 0, shown = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    ids_total += want[i].size();
    if (got[i] == want[i]) {
      ++lines_ok;
      ids_ok += want[i].size();
      continue;
    }
    size_t common = 0;
    while (common < want[i].size() && common < got[i].size() && want[i][common] == got[i][common]) {
      ++common;
    }
    ids_ok += common;
    if (shown++ < 5) {
      ADD_FAILURE() << name << " " << what << " line " << i + 1 << ": " << printable(lines[i], 200)
                    << "\n  want " << show(want[i]) << "\n  got  " << show(got[i]);
    }
  }
  std::cout << "[parity] " << name << " " << what << ": " << lines_ok << "/" << lines.size()
            << " lines, " << ids_ok << "/" << ids_total << " ids match\n";
  EXPECT_EQ(lines_ok, lines.size());
}

TEST_P(GoldenParity, LinesMatchTheReference) {
  std::vector<std::vector<int32_t>> got;
  for (const std::string& line : lines_) got.push_back(tok().encode(line));
  compare_lines(GetParam(), "encode", lines_, f_->golden.lines, got);
}

TEST_P(GoldenParity, LinesWithSpecialTokensMatchTheReference) {
  std::vector<std::vector<int32_t>> got;
  for (const std::string& line : lines_) {
    got.push_back(tok().encode(line, {.add_special_tokens = true}));
  }
  compare_lines(GetParam(), "encode(add_special_tokens)", lines_, f_->golden.lines_special, got);
}

TEST_P(GoldenParity, WholeCorpusMatchesTheReference) {
  const std::vector<int32_t> got = tok().encode(f_->corpus);
  EXPECT_EQ(got, f_->golden.whole) << "want " << show(f_->golden.whole) << "\ngot  " << show(got);
  EXPECT_EQ(tok().count(f_->corpus), f_->golden.whole.size());
  std::cout << "[parity] " << GetParam() << " whole corpus: " << got.size() << " ids, "
            << (got == f_->golden.whole ? "equal" : "DIFFERENT") << "\n";
}

TEST_P(GoldenParity, RandomStringsMatchTheReference) {
  ASSERT_FALSE(f_->golden.random_texts.empty());
  std::vector<std::vector<int32_t>> got;
  for (const std::string& text : f_->golden.random_texts) got.push_back(tok().encode(text));
  compare_lines(GetParam(), "random strings", f_->golden.random_texts, f_->golden.random_ids, got);
}

TEST_P(GoldenParity, DecodeMatchesTheReference) {
  for (size_t i = 0; i < lines_.size(); ++i) {
    EXPECT_EQ(tok().decode(f_->golden.lines[i]), f_->golden.decoded[i]) << "line " << i + 1;
    ASSERT_EQ(f_->golden.pieces[i].size(), f_->golden.lines[i].size());
    for (size_t k = 0; k < f_->golden.lines[i].size(); ++k) {
      const int32_t id = f_->golden.lines[i][k];
      EXPECT_EQ(tok().decode(std::span(&id, 1)), f_->golden.pieces[i][k])
          << "line " << i + 1 << ", id " << id;
    }
  }
}

TEST_P(GoldenParity, RoundTrips) {
  // decode(encode(text)) is the text (NFC-normalised for Qwen3), and encoding that again gives
  // the same ids.
  for (size_t i = 0; i < lines_.size(); ++i) {
    const std::vector<int32_t> ids = tok().encode(lines_[i]);
    const std::string text = tok().decode(ids);
    EXPECT_EQ(text, f_->golden.decoded[i]) << "line " << i + 1;
    if (GetParam() != "qwen3") {
      EXPECT_EQ(text, lines_[i]) << "line " << i + 1;
    }
    EXPECT_EQ(tok().encode(text), ids) << "line " << i + 1;
  }
  const std::vector<int32_t> whole = tok().encode(f_->corpus);
  if (GetParam() != "qwen3") {
    EXPECT_EQ(tok().decode(whole), f_->corpus);
  }
  EXPECT_EQ(tok().encode(tok().decode(whole)), whole);
}

INSTANTIATE_TEST_SUITE_P(Families, GoldenParity,
                         ::testing::Values("llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// gpt-oss's tokenizer.json and OpenAI's o200k_base.tiktoken (with o200k_harmony's special tokens)
// are the same tokenizer: same ids on every corpus line, and decoding agrees.
TEST(TiktokenParity, O200kMatchesGptOssTokenizerJson) {
  SKIP_IF_MISSING(missing_files({"gptoss/tokenizer.json", "tiktoken/o200k_base.tiktoken"}));
  const fs::path dir = tokenizer_cache_dir();
  auto json_tok = Tokenizer::from_hf_json_file(dir / "gptoss" / "tokenizer.json");
  ASSERT_TRUE(json_tok) << json_tok.error().message;
  auto tik = Tokenizer::from_tiktoken_file(dir / "tiktoken" / "o200k_base.tiktoken", kO200kPattern,
                                           o200k_harmony_special_tokens());
  ASSERT_TRUE(tik) << tik.error().message;
  auto corpus = read_file(kCorpus);
  ASSERT_TRUE(corpus) << corpus.error().message;
  std::vector<std::string> lines = corpus_lines(*corpus);
  std::vector<std::vector<int32_t>> want, got;
  for (const std::string& line : lines) {
    want.push_back(json_tok->encode(line));
    got.push_back(tik->encode(line));
    EXPECT_EQ(tik->decode(got.back()), json_tok->decode(want.back())) << printable(line, 200);
  }
  compare_lines("o200k_base.tiktoken vs gptoss", "encode", lines, want, got);
  EXPECT_EQ(tik->encode(*corpus), json_tok->encode(*corpus));
}

// gpt-tokenizer's TestPlans.txt: (encoding, sample, expected ids) cases made with tiktoken, for
// cl100k_base and o200k_base.
TEST(TiktokenParity, GptTokenizerTestPlans) {
  SKIP_IF_MISSING(missing_files(
      {"tiktoken/TestPlans.txt", "tiktoken/o200k_base.tiktoken", "tiktoken/cl100k_base.tiktoken"}));
  const fs::path dir = tokenizer_cache_dir();
  std::map<std::string, Tokenizer> encodings;
  for (const auto& [name, pattern] : {std::pair{std::string("cl100k_base"), kCl100kPattern},
                                      std::pair{std::string("o200k_base"), kO200kPattern}}) {
    auto t = Tokenizer::from_tiktoken_file(dir / "tiktoken" / (name + ".tiktoken"), pattern, {});
    ASSERT_TRUE(t) << t.error().message;
    encodings.emplace(name, std::move(*t));
  }
  auto plans = read_file(dir / "tiktoken" / "TestPlans.txt");
  ASSERT_TRUE(plans) << plans.error().message;
  std::map<std::string, std::pair<int, int>> tally;  // encoding -> (passed, cases)
  std::string encoding, sample;
  LineReader reader(*plans);
  std::string_view line;
  while (reader.next(line)) {
    if (line.starts_with("EncodingName: ")) {
      encoding = line.substr(14);
    } else if (line.starts_with("Sample: ")) {
      sample = line.substr(8);
    } else if (line.starts_with("Encoded: ")) {
      auto it = encodings.find(encoding);
      if (it == encodings.end()) continue;
      std::vector<int32_t> want = ids_of(json::parse(line.substr(9)));
      const std::vector<int32_t> got = it->second.encode(sample);
      auto& [passed, cases] = tally[encoding];
      ++cases;
      passed += got == want;
      EXPECT_EQ(got, want) << encoding << ": " << printable(sample, 200);
      EXPECT_EQ(it->second.decode(got), sample) << encoding << ": " << printable(sample, 200);
    }
  }
  for (const auto& [name, t] : tally) {
    std::cout << "[parity] TestPlans " << name << ": " << t.first << "/" << t.second << " cases\n";
  }
  EXPECT_EQ(tally["cl100k_base"].second, 64);
  EXPECT_EQ(tally["o200k_base"].second, 57);
}

}  // namespace
}  // namespace ib::tokenizer
