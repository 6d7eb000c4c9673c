// The simulator's stand-in for a tokenizer and a sampler: prompt token counts from words, output
// text from a fixed word list, and a deterministic "natural" output length (where the model would
// emit EOS). All choices are pure functions of the prompt and the seed, so runs are reproducible.
// The rules are documented in docs/serve-sim.md "Tokens".
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/numeric.h"

namespace ib::sim {

/// Chat template overhead: tokens added per message (role markers) and once per request (the
/// assistant reply prefix), roughly what Llama-3 and Qwen templates add.
inline constexpr int kChatTokensPerMessage = 4;
inline constexpr int kChatTokensPerRequest = 3;

/// FNV-1a (64 bit) of `bytes`, continuing from `h`, for hashing prompts.
inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
uint64_t fnv1a(std::string_view bytes, uint64_t h = kFnvOffset);

using ::ib::mix64;  // core/numeric.h

/// Number of whitespace-separated words in `text` (0 for blank text).
int count_words(std::string_view text);

/// Prompt tokens of a text prompt: its words, at least 1.
int count_text_tokens(std::string_view text);

/// Text of generated token `index` (0-based) of a stream: one word of a fixed list with a leading
/// space, e.g. " lorem", chosen by `stream_seed` and `index`. Never empty; no JSON escaping needed.
std::string_view output_token_text(uint64_t stream_seed, int index);

/// Prefix-cache keys: one 64-bit key per token, equal for equal tokens, so requests that share a
/// prefix share block hashes (docs/serve-sim.md "Prefix caching"). A text token's key is its word's
/// hash, a token id's key a hash of the id; generated tokens get their word's key, so a reply sent
/// back as text in the next turn matches what the engine cached while generating it.
uint64_t word_key(std::string_view word);
uint64_t token_id_key(int64_t id);

/// Keys of the chat-template tokens (role markers) and of EOS, which also ends every message.
inline constexpr uint64_t kKeyHeaderStart = 0x68656164657273ULL;
inline constexpr uint64_t kKeyHeaderEnd = 0x68656164657265ULL;
inline constexpr uint64_t kKeyEos = 0x656f735f746f6bULL;

/// Appends the key of every whitespace-separated word of `text` to `keys`; returns how many.
int append_word_keys(std::string_view text, std::vector<uint64_t>& keys);

/// Key of generated token `index` of a stream (the key of output_token_text's word).
uint64_t output_token_key(uint64_t stream_seed, int index);

enum class FinishReason { kStop, kLength };

/// "stop" or "length", as in OpenAI responses.
std::string_view to_string(FinishReason reason);

/// How many tokens a request generates and why it ends.
struct OutputPlan {
  /// Tokens generated, as reported in usage.completion_tokens. With kStop the last one is the
  /// EOS token, whose text is empty (as in vLLM, where EOS detokenizes to "").
  int tokens = 0;
  FinishReason finish = FinishReason::kLength;
};

/// Decides the output length. With `ignore_eos` the request runs to `max_tokens` ("length").
/// Otherwise the model's natural length (EOS included) is 1 + mix(prompt_hash, seed) mod
/// (2 * max_tokens), raised to min_tokens + 1 because EOS is suppressed until `min_tokens`
/// tokens exist; when it exceeds `max_tokens` the request stops at max_tokens with "length".
/// REQUIRES: max_tokens >= 1, 0 <= min_tokens <= max_tokens.
OutputPlan plan_output(uint64_t prompt_hash, uint64_t seed, int max_tokens, int min_tokens,
                       bool ignore_eos);

}  // namespace ib::sim
