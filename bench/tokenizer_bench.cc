// Tokenizer speed: tokens per second on one core for each family's tokenizer.json (and o200k's
// tiktoken file), encoding tests/data/tokenizer-corpus.txt as one text and line by line. Needs the
// files of scripts/fetch-tokenizers.sh; without them each benchmark reports an error and is
// skipped. Run with scripts/bench.sh; these print numbers, they never pass or fail.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/strings.h"
#include "tokenizer/cache.h"
#include "tokenizer/tokenizer.h"

namespace {

using ib::tokenizer::Tokenizer;

const std::string& corpus() {
  static const std::string text = [] {
    auto t = ib::read_file(std::string(INFERBENCH_TEST_DATA) + "/tokenizer-corpus.txt");
    return t ? *t : std::string();
  }();
  return text;
}

// Loaded once per family; nullptr (and `error`) when the files are missing.
const Tokenizer* tokenizer(const std::string& family, std::string& error) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  static std::map<std::string, std::string> errors;
  if (auto it = loaded.find(family); it != loaded.end()) {
    error = errors[family];
    return it->second.get();
  }
  const auto dir = ib::tokenizer::tokenizer_cache_dir();
  auto t = family == "o200k.tiktoken"
               ? Tokenizer::from_tiktoken_file(dir / "tiktoken" / "o200k_base.tiktoken",
                                               ib::tokenizer::kO200kPattern,
                                               ib::tokenizer::o200k_harmony_special_tokens())
               : Tokenizer::from_hf_json_file(dir / family / "tokenizer.json");
  if (!t) {
    errors[family] = t.error().message + " (run scripts/fetch-tokenizers.sh)";
    loaded[family] = nullptr;
  } else {
    loaded[family] = std::make_unique<Tokenizer>(std::move(*t));
  }
  error = errors[family];
  return loaded[family].get();
}

// The whole corpus as one text, tokens counted with count().
void BM_Count(benchmark::State& state, const std::string& family) {
  std::string error;
  const Tokenizer* t = tokenizer(family, error);
  if (t == nullptr || corpus().empty()) {
    state.SkipWithError(error.empty() ? "corpus missing" : error.c_str());
    return;
  }
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = t->count(corpus());
    benchmark::DoNotOptimize(tokens);
  }
  state.SetItemsProcessed(int64_t(state.iterations() * tokens));  // tokens
  state.SetBytesProcessed(int64_t(state.iterations() * corpus().size()));
  state.counters["tokens"] = double(tokens);
}

// Each line on its own, ids into a reused vector (short prompts, added tokens, CJK, code...).
void BM_EncodeLines(benchmark::State& state, const std::string& family) {
  std::string error;
  const Tokenizer* t = tokenizer(family, error);
  if (t == nullptr || corpus().empty()) {
    state.SkipWithError(error.empty() ? "corpus missing" : error.c_str());
    return;
  }
  const std::vector<std::string> lines = ib::split(corpus(), '\n');
  std::vector<int32_t> ids;
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    for (const std::string& line : lines) {
      ids.clear();
      t->encode_into(line, ids);
      tokens += ids.size();
    }
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * tokens));
  state.SetBytesProcessed(int64_t(state.iterations() * corpus().size()));
}

void BM_Decode(benchmark::State& state, const std::string& family) {
  std::string error;
  const Tokenizer* t = tokenizer(family, error);
  if (t == nullptr || corpus().empty()) {
    state.SkipWithError(error.empty() ? "corpus missing" : error.c_str());
    return;
  }
  const std::vector<int32_t> ids = t->encode(corpus());
  for (auto _ : state) {
    std::string text = t->decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * ids.size()));
}

const char* const kFamilies[] = {"llama3", "qwen3", "deepseek_v3", "gptoss", "o200k.tiktoken"};

const bool registered = [] {
  for (const char* f : kFamilies) {
    benchmark::RegisterBenchmark((std::string("BM_Count/") + f).c_str(), BM_Count, f);
    benchmark::RegisterBenchmark((std::string("BM_EncodeLines/") + f).c_str(), BM_EncodeLines, f);
    benchmark::RegisterBenchmark((std::string("BM_Decode/") + f).c_str(), BM_Decode, f);
  }
  return true;
}();

}  // namespace
