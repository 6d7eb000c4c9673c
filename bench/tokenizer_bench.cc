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
#include "tokenizer/serving.h"
#include "tokenizer/tokenizer.h"
#include "workload/exact_prompts.h"

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

// Exact-length prompt preparation (workload/exact_prompts.h) on one core: 16 prompts of 8,192
// tokens (InferenceX's 8k1k ISL) per iteration, for the completions API (text + BOS rule) or the
// chat API (rendered template). Items are prompt tokens, so items/s is prepared tokens per second.
void BM_ExactPrompts(benchmark::State& state, const std::string& family, bool chat) {
  const auto dir = ib::tokenizer::tokenizer_cache_dir() / family;
  static std::map<std::string, std::shared_ptr<const ib::tokenizer::ServingTokenizer>> loaded;
  auto& tok = loaded[family];
  if (!tok) {
    auto t = ib::tokenizer::ServingTokenizer::load(dir);
    if (!t) {
      state.SkipWithError((t.error().message + " (run scripts/fetch-tokenizers.sh)").c_str());
      return;
    }
    tok = *t;
  }
  auto builder = ib::workload::ExactPromptBuilder::create(tok, chat);
  if (!builder) {
    state.SkipWithError(builder.error().message.c_str());
    return;
  }
  int64_t tokens = 0, prompts = 0, inexact = 0;
  uint64_t start = 0;
  for (auto _ : state) {
    for (int i = 0; i < 16; ++i) {
      start += 7919;
      auto p = builder->build(8192, start);
      if (!p) {
        state.SkipWithError(p.error().message.c_str());
        return;
      }
      tokens += p->tokens;
      inexact += p->exact ? 0 : 1;
      ++prompts;
    }
  }
  state.SetItemsProcessed(tokens);
  state.counters["prompts_per_s"] = benchmark::Counter(double(prompts), benchmark::Counter::kIsRate);
  state.counters["inexact"] = double(inexact);
}

const char* const kFamilies[] = {"llama3", "qwen3", "deepseek_v3", "gptoss", "o200k.tiktoken"};

const bool registered = [] {
  for (const char* f : kFamilies) {
    benchmark::RegisterBenchmark((std::string("BM_Count/") + f).c_str(), BM_Count, f);
    benchmark::RegisterBenchmark((std::string("BM_EncodeLines/") + f).c_str(), BM_EncodeLines, f);
    benchmark::RegisterBenchmark((std::string("BM_Decode/") + f).c_str(), BM_Decode, f);
  }
  for (const char* f : {"llama3", "llama3_1", "qwen3", "deepseek_v3"}) {
    benchmark::RegisterBenchmark((std::string("BM_ExactPrompts/completions/") + f).c_str(),
                                 BM_ExactPrompts, f, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_ExactPrompts/chat/") + f).c_str(),
                                 BM_ExactPrompts, f, true)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
