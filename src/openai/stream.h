// Decoding of one SSE `data:` payload from /v1/completions or /v1/chat/completions streams,
// tolerant of the dialects of vLLM, SGLang, TensorRT-LLM and llama.cpp (as each server's stream
// code writes them: vLLM vllm/entrypoints/openai/, SGLang serving_chat.py and sse_utils.py,
// TensorRT-LLM tensorrt_llm/serve/postprocess_handlers.py, llama.cpp tools/server/server-task.cpp):
// any key order, null or missing keys, role-only first chunks, usage chunks with empty `choices`,
// reasoning and tool-call deltas, error events.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ib::openai {

/// Token counts reported by the server in a `usage` object.
struct Usage {
  int64_t prompt_tokens = -1;      // -1 when absent
  int64_t completion_tokens = -1;  // -1 when absent
};

/// One request's speculative decoding as the server reports it in the response (vLLM's
/// --per-request-spec-decode-metrics: "metrics":{"speculative_decoding":{...}} on the final usage
/// chunk or the full response).
struct SpecDecodeFigures {
  int64_t steps = 0;         // num_spec_steps: verify steps that drafted
  int64_t accepted = 0;      // num_accepted_draft_tokens
  int64_t draft_tokens = 0;  // num_draft_tokens
};

/// Where a disaggregated deployment's time to first token went, as its decode worker reports it
/// (serve-sim's metrics.disagg, ms): the names, in this order.
inline constexpr const char* kTtftPartNames[] = {
    "router_ms",         "prefill_queue_ms", "prefill_ms",      "prefill_transport_ms",
    "decode_receive_ms", "kv_transfer_ms",   "decode_queue_ms", "first_decode_ms"};
inline constexpr size_t kTtftParts = 8;

/// One request's timing as the engine reports it in the response (vLLM's
/// --enable-per-request-metrics, PR 46768: a top-level "metrics" object on the final usage chunk
/// or the full response), ms; negative where absent. vLLM's time_to_first_token_ms runs from the
/// request's scheduling to its first token (its own test: queued 1.0 s, scheduled 1.5 s, first
/// token 2.0 s gives 500 ms), so it leaves out queue_time_ms (queued to scheduled).
struct ServerTiming {
  double queue_ms = -1;       // queue_time_ms
  double ttft_ms = -1;        // time_to_first_token_ms: scheduled to first token
  double generation_ms = -1;  // generation_time_ms: first to last token
  double mean_itl_ms = -1;    // mean_itl_ms
};

/// What one stream event means for measurement ("content event" in docs/metrics.md).
struct StreamChunk {
  enum class Kind {
    kContent,    // carries non-empty generated text, reasoning text or tool-call deltas
    kNoContent,  // a valid chunk without content: role-only, empty delta, finish-only, usage-only
    kDone,       // the `[DONE]` sentinel
    kError,      // an error object in the stream (`{"error": {...}}` or `"object": "error"`)
    kMalformed,  // not JSON, or JSON of an unexpected shape
  };
  Kind kind = Kind::kMalformed;
  size_t content_bytes = 0;    // bytes of generated text/reasoning/tool arguments
  std::optional<Usage> usage;  // present when the chunk carried a non-null usage object
  std::optional<SpecDecodeFigures> spec;  // metrics.speculative_decoding, when present
  /// metrics.disagg, every part present (kTtftPartNames order), when present.
  std::optional<std::array<double, kTtftParts>> ttft_parts;
  std::optional<ServerTiming> timing;  // metrics' timing fields, when any is present
  std::string finish_reason;   // non-empty on the chunk that carried one
  std::string error_message;   // for kError and kMalformed
  std::string text;            // the content text, with StreamDecoder::keep_text (else empty)
};

/// Reusable decoder: holds a simdjson parser and a padded buffer, so decoding allocates nothing
/// once warmed up. One per thread; not thread-safe.
class StreamDecoder {
 public:
  /// Decodes one event's data (the text after `data:`; surrounding whitespace allowed).
  StreamChunk decode(std::string_view data);

  /// Decodes a complete non-streaming response body (a `text_completion` or `chat.completion`
  /// object, or an error body). Content bytes count the whole generated text.
  StreamChunk decode_body(std::string_view body) { return decode(body); }

  /// Also copy each chunk's content text into StreamChunk::text (the client's tokenizer counts
  /// it). Off by default: the text costs a copy per event.
  void keep_text(bool on) { keep_text_ = on; }

 private:
  simdjson::ondemand::parser parser_;
  std::string buffer_;
  bool keep_text_ = false;
};

/// Extracts a human-readable message from an error body of any of the known shapes
/// (`{"error":{"message":...}}`, `{"object":"error","message":...}`, `{"detail":...}`), or the
/// body itself (truncated) when it is not one of them.
std::string error_message_from_body(std::string_view body);

}  // namespace ib::openai
