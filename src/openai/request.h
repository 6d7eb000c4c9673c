// Request bodies for OpenAI-compatible endpoints, with the knobs that make output lengths exact:
// max_tokens with ignore_eos, min_tokens, streaming with stream_options.include_usage so the
// server reports its token counts (the request models of vLLM vllm/entrypoints/openai/, SGLang
// python/sglang/srt/entrypoints/openai/protocol.py, TensorRT-LLM tensorrt_llm/serve/
// openai_protocol.py and llama.cpp tools/server/).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ib::openai {

enum class Api { kCompletions, kChat };

/// "completions" or "chat".
std::string_view api_name(Api api);
/// Parses "completions" or "chat".
std::optional<Api> parse_api(std::string_view name);
/// The request path for the API ("/v1/completions", "/v1/chat/completions").
std::string_view api_path(Api api);

struct RequestKnobs {
  std::string model;
  bool stream = true;
  bool include_usage = true;
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM, SGLang, TRT-LLM)
  bool ignore_eos = true;
  bool send_min_tokens = true;  // min_tokens = max_tokens (not every server supports it)
  double temperature = 0.0;
};

/// A /v1/completions body with a token-id prompt.
std::string completions_body(const RequestKnobs& knobs, std::span<const int32_t> token_ids,
                             int max_tokens);
/// A /v1/completions body with a text prompt.
std::string completions_body(const RequestKnobs& knobs, std::string_view text, int max_tokens);
/// A /v1/chat/completions body with one user message.
std::string chat_body(const RequestKnobs& knobs, std::string_view text, int max_tokens);

}  // namespace ib::openai
