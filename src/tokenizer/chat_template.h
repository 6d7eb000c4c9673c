// Chat templates: a Jinja subset interpreter for the `chat_template` of a Hugging Face
// tokenizer_config.json (or a folder's chat_template.jinja), rendered as transformers renders it
// (`ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)`, with `loopcontrols`, its
// `tojson` (json.dumps, ensure_ascii=False, key order kept), and the globals `raise_exception` and
// `strftime_now`). The client uses it to know exactly how many tokens the server's template adds
// (docs/tokenizer.md). Golden renders come from python3-jinja2 (scripts/chat-template-goldens.py).
#pragma once

#include <boost/json/object.hpp>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib::tokenizer {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;
};

struct RenderOptions {
  /// The time `strftime_now(fmt)` formats (UTC). Unset: the current time.
  std::optional<std::time_t> now;
  /// Loop iterations one render may take before it stops with an error (jinja::kMaxIterations,
  /// 10^7, by default; a test of the limit sets a smaller one, the same code path).
  int64_t max_iterations = 10'000'000;
};

/// A parsed template. Immutable; copies share the parsed tree; render() is safe from several
/// threads at once.
class ChatTemplate {
 public:
  /// Parses `text`. A syntax error or an unsupported construct is an Error naming `source`, the
  /// line and the construct, e.g. `tokenizer_config.json chat_template:3: unknown filter 'wordwrap'`.
  static Expected<ChatTemplate> parse(std::string_view text, std::string_view source);

  /// Renders with `context` as the template's variables (messages as a list of objects,
  /// add_generation_prompt, bos_token, eos_token, tools, enable_thinking, ... : whatever the caller
  /// passes). A `raise_exception(msg)` call, a runtime type error or an undefined attribute used
  /// where Jinja would raise is an Error naming source and line.
  Expected<std::string> render(const boost::json::object& context,
                               const RenderOptions& options = {}) const;

  const std::string& source() const;

  struct Impl;

 private:
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// What tokenizer_config.json (and a sibling chat_template.jinja) say about special tokens and the
/// template.
struct TokenizerConfig {
  std::string source;                      // the file read
  std::optional<std::string> bos_token;    // a string or an AddedToken object's "content"
  std::optional<std::string> eos_token;
  bool add_bos_token = false;              // absent: false
  bool add_eos_token = false;
  /// The template's text: `chat_template` as a string, or the entry named "default" of a list of
  /// {name, template}; else the folder's chat_template.jinja. Unset when there is none.
  std::optional<std::string> chat_template;
  std::string chat_template_source;        // "FILE chat_template" or the .jinja file's path
};

/// Reads `path` (a tokenizer_config.json). A chat_template.jinja next to it is used when the JSON
/// has no chat_template. Errors name the file and the field.
Expected<TokenizerConfig> load_tokenizer_config(const std::filesystem::path& path);

/// The context transformers' apply_chat_template builds: messages (role, content), bos_token and
/// eos_token from `config` (when set), add_generation_prompt, tools and documents (null, as
/// apply_chat_template passes them when not given), plus `extra` (chat_template_kwargs such as
/// enable_thinking, or tools) merged on top.
boost::json::object chat_context(std::span<const ChatMessage> messages, const TokenizerConfig& config,
                                 bool add_generation_prompt,
                                 const boost::json::object& extra = {});

}  // namespace ib::tokenizer
