// Parsing and validation of /v1/completions and /v1/chat/completions request bodies: pure
// functions from the body text to a GenerateRequest, or to the OpenAI-shaped error to answer with.
// Field rules follow vLLM (docs/serve-sim.md "Requests").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ib::tokenizer {
class ServingTokenizer;
}

namespace ib::sim {

enum class Api { kCompletions, kChat };

/// What the server serves: requests naming another model get 404, and prompt plus output must
/// fit in max_model_len.
struct ServedModel {
  std::string name;
  int max_model_len = 32768;
  /// Keep the prompt's text in GenerateRequest::prompt_text (serve-sim's GSM8K answers read the
  /// question); off on the benchmark path, where it would be a copy per request.
  bool keep_prompt_text = false;
  /// --tokenizer: prompts are counted as a real server counts them (text prompts with the
  /// tokenizer's special tokens, chat requests through the chat template), and prefix-cache keys
  /// are the token ids. Null: words (docs/serve-sim.md "Tokens").
  const tokenizer::ServingTokenizer* tokenizer = nullptr;
};

/// A validated generation request, reduced to what the simulator needs.
struct GenerateRequest {
  Api api = Api::kCompletions;
  int prompt_tokens = 0;              // counted as in docs/serve-sim.md "Tokens"
  uint64_t prompt_hash = 0;           // hash of the prompt content (drives output length and text)
  std::vector<uint64_t> prompt_keys;  // one prefix-cache key per prompt token (tokens.h)
  /// With ServedModel::keep_prompt_text: a text prompt, or the last chat message's text.
  std::string prompt_text;
  /// The prompt's token ids (only for /tokenize, with a tokenizer).
  std::vector<int32_t> prompt_ids;
  int max_tokens = 0;                 // resolved: the request's value or the endpoint's default
  int min_tokens = 0;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (with include_usage)
  /// kv_transfer_params, as vLLM's P/D connectors (NixlConnector) pass them through the router:
  /// do_remote_decode asks a prefill instance to keep the request's KV for a decode instance;
  /// remote_host, remote_port and remote_request_id tell a decode instance where to pull it.
  struct KvTransfer {
    bool do_remote_decode = false;
    std::string remote_host;
    int remote_port = 0;
    std::string remote_request_id;
    /// inferbench_ttft: the parts of the time to first token spent before the decode worker (a
    /// serve-sim router sends router_ms, prefill_queue_ms, prefill_ms, prefill_transport_ms),
    /// which the decode worker's per-request metrics complete.
    std::map<std::string, double> upstream_ms;
    bool remote() const { return remote_port > 0 && !remote_request_id.empty(); }
  };
  std::optional<KvTransfer> kv_transfer;
};

/// An error answer in the shape of vLLM's ErrorResponse:
/// {"error":{"message":...,"type":"BadRequestError","param":...,"code":400}}.
struct ApiError {
  int status = 400;
  std::string type = "BadRequestError";
  std::string message;               // names the offending field and value
  std::optional<std::string> param;  // the offending field, null when none

  std::string to_json() const;
};

using ParseResult = std::variant<GenerateRequest, ApiError>;

/// Parses a /v1/completions body. `prompt` is a string, an array of token ids, or an array of one
/// of those (a batch of one); larger batches are rejected. max_tokens defaults to 16 (as vLLM).
ParseResult parse_completion_request(std::string_view body, const ServedModel& model);

/// Parses a /v1/chat/completions body. `messages` is a non-empty array of {role, content} with
/// content a string, null, or an array of {"type":"text","text":...} parts. The output limit is
/// max_completion_tokens, else max_tokens, else whatever fits in max_model_len (as vLLM).
ParseResult parse_chat_request(std::string_view body, const ServedModel& model);

/// Parses a /tokenize body (vLLM's and SGLang's shape): `prompt` (a string or token ids) or
/// `messages`, counted as a generation request would be; `add_special_tokens: false` leaves out
/// the BOS of a text prompt; `add_generation_prompt: false` is refused (400). With a tokenizer,
/// prompt_ids holds the ids.
ParseResult parse_tokenize_request(std::string_view body, const ServedModel& model);

}  // namespace ib::sim
