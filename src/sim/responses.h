// Response bodies and stream events of the simulated server, byte-compatible with vLLM's
// (vllm/entrypoints/openai/ serving and protocol code): compact JSON, "data: <json>\n\n" events,
// "data: [DONE]\n\n" at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/requests.h"
#include "sim/tokens.h"

namespace ib::sim {

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

/// The terminating event of every stream.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

/// `json` as one SSE event: "data: " + json + "\n\n".
std::string sse_event(std::string_view json);

/// `text` as a JSON string literal (quoted and escaped).
std::string json_quote(std::string_view text);

/// Builds the bodies of one response. `id` is the full id ("cmpl-..." or "chatcmpl-...").
class ResponseFormatter {
 public:
  ResponseFormatter(Api api, std::string_view id, int64_t created, std::string_view model);

  /// Chat only: the first stream event, {"delta":{"role":"assistant","content":""}}. With
  /// `usage` (continuous usage stats) it carries usage with completion_tokens 0.
  std::string role_event(const Usage* usage) const;
  void append_role_event(std::string& out, const Usage* usage) const;

  /// One generated token's stream event: choices[0].text (completions) or
  /// choices[0].delta.content (chat). The last one has `finish` set and also carries
  /// "stop_reason":null. `usage` is added when not null (continuous usage stats).
  std::string token_event(std::string_view text, std::optional<FinishReason> finish,
                          const Usage* usage) const;
  /// token_event() appended to `out` (the streaming hot path: no allocation once `out` has
  /// grown).
  void append_token_event(std::string& out, std::string_view text,
                          std::optional<FinishReason> finish, const Usage* usage) const;

  /// The final usage event: "choices":[] and usage; then "metrics": `metrics` (a JSON object,
  /// vLLM's per-request metrics) unless empty.
  std::string usage_event(const Usage& usage, std::string_view metrics = {}) const;
  void append_usage_event(std::string& out, const Usage& usage,
                          std::string_view metrics = {}) const;

  /// The complete non-streamed response ("text_completion" or "chat.completion"), with
  /// "metrics": `metrics` after usage unless empty.
  std::string full_response(std::string_view text, FinishReason finish, const Usage& usage,
                            std::string_view metrics = {},
                            std::string_view kv_transfer_params = {}) const;

 private:
  Api api_;
  std::string chunk_prefix_;  // {"id":...,"object":...,"created":...,"model":...,
  std::string body_prefix_;   // the same for the non-streamed object
  // Pieces of a token event: event_head_ + quoted text + (plain_tail_ | finish tail ...).
  std::string event_head_;  // data: {...,"choices":[{"index":0,"text":   (or "delta":{"content":)
  std::string plain_tail_;  // the rest of a non-final event without usage, through "}\n\n"
};

/// {"prompt_tokens":P,"total_tokens":P+C,"completion_tokens":C} (vLLM's key order).
std::string usage_json(const Usage& usage);
void append_usage_json(std::string& out, const Usage& usage);

}  // namespace ib::sim
