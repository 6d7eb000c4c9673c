// Synthetic fixed-length workloads: prompts of exactly the sampled length, as token-id arrays for
// /v1/completions (no tokenizer needed) or as word text for /v1/chat/completions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.h"
#include "tokenizer/serving.h"

namespace ib::workload {

/// One request to send.
struct PromptSpec {
  std::vector<int32_t> token_ids;  // set for token-id prompts
  std::string text;                // set for text prompts
  int input_len = 0;   // tokens (exact for token ids; a word count, so approximate, for text)
  /// input_len is the request's token count as the server's tokenizer counts it (token ids, or
  /// text built with a tokenizer: workload/exact_prompts.h).
  bool exact_len = false;
  int output_len = 0;  // max_tokens to request
};

struct RandomWorkload {
  int isl = 1024;            // input sequence length (tokens)
  int osl = 1024;            // output sequence length (tokens)
  double range_ratio = 1.0;  // lengths uniform in [floor(ratio·L), L], integers, inclusive
  int num_prompts = 100;
  uint64_t seed = 0;
  int vocab_size = 32000;  // token ids are drawn from [100, vocab_size) to avoid special ids
  bool as_text = false;    // text of `input_len` words instead of token ids
  /// With a tokenizer, prompts are natural text of exactly `input_len` tokens as the server counts
  /// the request (chat template included when as_text): workload/exact_prompts.h.
  std::shared_ptr<const tokenizer::ServingTokenizer> tokenizer;
};

/// Sane limits of one point, checked before its prompts are made (the prompts of a point are
/// held in memory): measured plus warmup requests, and their prompt tokens in all (2^29 token
/// ids are 2 GiB; a sweep at concurrency 4096 with 10 prompts each of 8k tokens needs 1/2 of it).
inline constexpr int64_t kMaxPointRequests = 10'000'000;
inline constexpr int64_t kMaxPointPromptTokens = int64_t{1} << 29;

/// Checks a point's size against those limits before anything is allocated: `requests`
/// measured and `warmups` warmup prompts of up to `isl` tokens. `what` says where the numbers
/// came from (options or recipe fields) for the message.
Status check_point_size(int64_t requests, int64_t warmups, int64_t isl, const std::string& what);

/// Checks the parameters; the error names the offending option.
Status validate(const RandomWorkload& w);

/// Deterministic for a given workload (seed included): the same prompts on every machine.
/// Token ids are random (not sequential) so no two prompts share a prefix. Without a tokenizer
/// this never fails; with one, Error when a length is below the template's own tokens or the
/// template fails. Lengths are drawn the same way with or without a tokenizer.
/// REQUIRES: validate(w).ok().
Expected<std::vector<PromptSpec>> make_random_prompts(const RandomWorkload& w);

}  // namespace ib::workload
