#include "tokenizer/serving.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <system_error>

#include "core/sha256.h"
#include "tokenizer/cache.h"

namespace ib::tokenizer {

namespace fs = std::filesystem;

namespace {

Expected<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return Error{fmt::format("{}: no such file", path.string())};
    return Error{fmt::format("{}: cannot be read", path.string())};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Expected<std::shared_ptr<const ServingTokenizer>> ServingTokenizer::load(
    const fs::path& path, const fs::path& chat_template) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    const fs::path cache = tokenizer_cache_dir();
    return Error{fmt::format(
        "{}: no such file or folder (--tokenizer takes a tokenizer.json, a folder holding one, or "
        "a .tiktoken file, never a model name: nothing is downloaded at run time). "
        "scripts/fetch-tokenizers.sh in the inferbench repository fetches Llama-3, Qwen3, "
        "DeepSeek-V3 and gpt-oss into {} (docs/tokenizer.md)",
        path.string(),
        cache.empty() ? std::string("~/.cache/inferbench/tokenizers") : cache.string())};
  }
  fs::path json_file;
  fs::path config_file;
  std::optional<Tokenizer> tok;
  std::string identity_text;
  if (fs::is_directory(path, ec)) {
    json_file = path / "tokenizer.json";
    if (!fs::exists(json_file, ec)) {
      return Error{fmt::format("{}: the folder has no tokenizer.json", path.string())};
    }
    if (fs::exists(path / "tokenizer_config.json", ec)) config_file = path / "tokenizer_config.json";
  } else if (path.extension() == ".tiktoken") {
    const std::string stem = path.stem().string();
    std::string_view pattern;
    std::vector<SpecialToken> specials;
    if (stem.starts_with("o200k")) {
      pattern = kO200kPattern;
      specials = o200k_harmony_special_tokens();
    } else if (stem.starts_with("cl100k")) {
      pattern = kCl100kPattern;
      specials = {{"<|endoftext|>", 100257}, {"<|fim_prefix|>", 100258},
                  {"<|fim_middle|>", 100259}, {"<|fim_suffix|>", 100260},
                  {"<|endofprompt|>", 100276}};
    } else {
      return Error{fmt::format("{}: unknown tiktoken encoding '{}' (its split pattern is not in "
                               "the file; o200k_base and cl100k_base are known)",
                               path.string(), stem)};
    }
    auto bytes = read_file(path);
    if (!bytes) return bytes.error();
    auto t = Tokenizer::from_tiktoken(*bytes, path.string(), pattern, specials);
    if (!t) return t.error();
    tok = std::move(*t);
    identity_text = std::move(*bytes);
  } else {
    json_file = path;
  }
  if (!tok) {
    auto bytes = read_file(json_file);
    if (!bytes) return bytes.error();
    auto t = Tokenizer::from_hf_json(*bytes, json_file.string());
    if (!t) return t.error();
    tok = std::move(*t);
    identity_text = std::move(*bytes);
  }
  std::shared_ptr<ServingTokenizer> s(new ServingTokenizer(std::move(*tok)));
  s->path_ = path.string();
  if (!config_file.empty()) {
    auto config = load_tokenizer_config(config_file);
    if (!config) return config.error();
    s->config_ = std::move(*config);
    auto bytes = read_file(config_file);
    if (bytes) identity_text += *bytes;
  } else {
    s->config_.source = path.string();
  }
  if (!chat_template.empty()) {
    auto text = read_file(chat_template);
    if (!text) return Error{"--chat-template: " + text.error().message};
    s->config_.chat_template = std::move(*text);
    s->config_.chat_template_source = chat_template.string();
  }
  if (s->config_.chat_template) identity_text += *s->config_.chat_template;
  s->identity_ = sha256_hex(identity_text);
  if (Status st = s->finish(); !st.ok()) return st.error();
  return std::shared_ptr<const ServingTokenizer>(std::move(s));
}

Expected<std::shared_ptr<const ServingTokenizer>> ServingTokenizer::from_parts(
    Tokenizer tokenizer, TokenizerConfig config, std::string identity) {
  std::shared_ptr<ServingTokenizer> s(new ServingTokenizer(std::move(tokenizer)));
  s->config_ = std::move(config);
  s->path_ = s->tokenizer_.source();
  s->identity_ = std::move(identity);
  if (Status st = s->finish(); !st.ok()) return st.error();
  return std::shared_ptr<const ServingTokenizer>(std::move(s));
}

Status ServingTokenizer::finish() {
  if (config_.chat_template) {
    auto t = ChatTemplate::parse(*config_.chat_template, config_.chat_template_source.empty()
                                                             ? config_.source + " chat_template"
                                                             : config_.chat_template_source);
    if (!t) return t.error();
    chat_template_ = std::move(*t);
  }
  // transformers adds the BOS of add_bos_token when the post-processor does not already.
  if (config_.add_bos_token && config_.bos_token) {
    if (auto id = tokenizer_.token_id(*config_.bos_token)) {
      const auto probe = tokenizer_.encode("a", EncodeOptions{.add_special_tokens = true});
      if (probe.empty() || probe.front() != *id) config_bos_ = *id;
    } else {
      return Error{fmt::format("{}: bos_token '{}' is not a token of {}", config_.source,
                               *config_.bos_token, tokenizer_.source())};
    }
  }
  prompt_specials_ = static_cast<int>(count_prompt("a") - tokenizer_.count("a"));
  if (chat_template_) {
    const std::string content = "Hello there";
    const ChatMessage m{"user", content};
    auto ids = encode_chat(std::span(&m, 1));
    if (!ids) return Error{"rendering the chat template: " + ids.error().message};
    chat_overhead_ = static_cast<int>(ids->size()) - static_cast<int>(tokenizer_.count(content));
  }
  return Status::Ok();
}

std::vector<int32_t> ServingTokenizer::encode_prompt(std::string_view text) const {
  std::vector<int32_t> ids;
  if (config_bos_) ids.push_back(*config_bos_);
  tokenizer_.encode_into(text, ids, EncodeOptions{.add_special_tokens = true});
  return ids;
}

size_t ServingTokenizer::count_prompt(std::string_view text) const {
  return tokenizer_.count(text, EncodeOptions{.add_special_tokens = true}) + (config_bos_ ? 1 : 0);
}

Expected<std::string> ServingTokenizer::render_chat(std::span<const ChatMessage> messages,
                                                    const boost::json::object& kwargs) const {
  if (!chat_template_) {
    return Error{fmt::format("{} has no chat template (give one with --chat-template)", path_)};
  }
  return chat_template_->render(chat_context(messages, config_, true, kwargs));
}

Expected<std::vector<int32_t>> ServingTokenizer::encode_chat(
    std::span<const ChatMessage> messages, const boost::json::object& kwargs) const {
  auto text = render_chat(messages, kwargs);
  if (!text) return text.error();
  return tokenizer_.encode(*text);
}

Expected<int64_t> ServingTokenizer::count_request(std::string_view text, bool chat) const {
  if (!chat) return static_cast<int64_t>(count_prompt(text));
  const ChatMessage m{"user", std::string(text)};
  auto ids = encode_chat(std::span(&m, 1));
  if (!ids) return Error{"rendering the chat template: " + ids.error().message};
  return static_cast<int64_t>(ids->size());
}

}  // namespace ib::tokenizer
