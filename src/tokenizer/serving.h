// What a served model's tokenizer counts: the tokenizer (tokenizer.json or .tiktoken), the
// special-token rules of tokenizer_config.json, and the chat template, put together the way vLLM
// and SGLang count a request's prompt tokens. The client builds exact-length prompts with it
// (workload/exact_prompts.h) and serve-sim counts with it like a real server (`--tokenizer`).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ib::tokenizer {

class ServingTokenizer {
 public:
  /// Loads `path`: a tokenizer.json; a folder with tokenizer.json (and tokenizer_config.json,
  /// chat_template.jinja when present); or a tiktoken rank file (`o200k_base.tiktoken` gets
  /// gpt-oss's special tokens and o200k's pattern, `cl100k_base.tiktoken` cl100k's; other names
  /// are refused). `chat_template`, when not empty, is a Jinja file that replaces the
  /// tokenizer_config's template (vLLM's --chat-template). Errors name the file and field.
  static Expected<std::shared_ptr<const ServingTokenizer>> load(
      const std::filesystem::path& path, const std::filesystem::path& chat_template = {});

  /// From parts already loaded (tests).
  static Expected<std::shared_ptr<const ServingTokenizer>> from_parts(
      Tokenizer tokenizer, TokenizerConfig config, std::string identity);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  const TokenizerConfig& config() const { return config_; }
  bool has_chat_template() const { return chat_template_.has_value(); }
  /// Where the template came from ("FILE chat_template" or a .jinja path); empty when none.
  const std::string& chat_template_source() const { return config_.chat_template_source; }
  /// The path given to load().
  const std::string& path() const { return path_; }
  /// sha256 over the tokenizer file, the config and the template: equal identities count equally.
  const std::string& identity() const { return identity_; }

  /// The ids of a /v1/completions text prompt as the servers tokenize it (add_special_tokens:
  /// the post-processor's tokens, and the BOS of tokenizer_config's add_bos_token).
  std::vector<int32_t> encode_prompt(std::string_view text) const;
  size_t count_prompt(std::string_view text) const;
  /// Special tokens encode_prompt adds to any text (0 or 1 for these families).
  int prompt_specials() const { return prompt_specials_; }

  /// The chat request's text as the server's template renders it (add_generation_prompt, the
  /// config's bos/eos tokens, `kwargs` such as enable_thinking). Error without a template.
  Expected<std::string> render_chat(std::span<const ChatMessage> messages,
                                    const boost::json::object& kwargs = {}) const;
  /// The ids of the rendered chat request (no special tokens added: the template has them, as
  /// vLLM's and SGLang's chat paths tokenize).
  Expected<std::vector<int32_t>> encode_chat(std::span<const ChatMessage> messages,
                                             const boost::json::object& kwargs = {}) const;
  /// The tokens of a request whose prompt is `text`, as the server counts them: count_prompt
  /// (completions), or the rendered chat request with `text` as its one user message.
  Expected<int64_t> count_request(std::string_view text, bool chat) const;
  /// Tokens the template adds around one user message of ordinary text (no leading or trailing
  /// whitespace); unset without a template.
  std::optional<int> chat_overhead() const { return chat_overhead_; }

 private:
  ServingTokenizer(Tokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}
  Status finish();

  Tokenizer tokenizer_;
  TokenizerConfig config_;
  std::optional<ChatTemplate> chat_template_;
  std::optional<int32_t> config_bos_;  // BOS that tokenizer_config's add_bos_token adds
  int prompt_specials_ = 0;
  std::optional<int> chat_overhead_;
  std::string path_;
  std::string identity_;
};

}  // namespace ib::tokenizer
