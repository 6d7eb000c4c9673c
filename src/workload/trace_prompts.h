// Prompts for a timed trace's requests (docs/trace-replay.md, "Prompts"): each hash id is one
// fixed block of exactly `block_size` tokens as the server counts them, so two requests that share
// leading hash ids share exactly that prefix as the server tokenizes it; the last (partial) block
// and the request's total come out at `input_length` exactly.
//
//   token ids  (/v1/completions, no tokenizer): a block is `block_size` ids drawn from the hash
//              id and the seed; nothing is decoded or re-tokenized, so the server's count is the
//              trace's whatever its tokenizer (the drift vLLM fixed by sending ids, #45423).
//   text       (a tokenizer given): a block is `block_size` words that the tokenizer encodes as one
//              token each, alone and after a space (agentic::Corpus::for_tokenizer), joined by
//              spaces; the template's (chat) or the BOS's (completions) tokens are taken from the
//              last block, and the whole request is counted with the tokenizer and checked.
//   words      (chat without a tokenizer): the same text, a word a token: exact for serve-sim,
//              approximate for a real model (said: PromptSpec::exact_len is false).
// Requests without hash ids (BurstGPT, Azure) get blocks of their own, shared with no other.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/expected.h"
#include "tokenizer/serving.h"
#include "workload/random_prompts.h"
#include "workload/timed_trace.h"

namespace ib::workload {

struct TracePromptOptions {
  bool chat = false;  // the chat API: text in one user message
  uint64_t seed = 0;
  int vocab_size = 32000;  // token ids from [100, vocab_size)
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;
};

/// How the prompts were made, for the result ("prompt_mode").
enum class TracePromptMode { kTokenIds, kTokenizerText, kWords };
const char* trace_prompt_mode_name(TracePromptMode m);
TracePromptMode trace_prompt_mode(const TracePromptOptions& o);

/// One prompt per request of `trace`, in its order; output_len = the recorded output length.
/// Error: a request shorter than the template's own tokens plus one, a tokenizer with too few
/// single-token words, a template that fails to render.
Expected<std::vector<PromptSpec>> make_trace_prompts(const TimedTrace& trace,
                                                     const TracePromptOptions& o);

}  // namespace ib::workload
