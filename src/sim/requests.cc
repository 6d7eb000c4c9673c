#include "sim/requests.h"

#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/json_text.h"
#include "core/strings.h"
#include "sim/tokens.h"
#include "tokenizer/serving.h"

namespace ib::sim {

namespace json = boost::json;

std::string ApiError::to_json() const {
  json::object error;
  error["message"] = message;
  error["type"] = type;
  if (param) {
    error["param"] = *param;
  } else {
    error["param"] = nullptr;
  }
  error["code"] = status;
  json::object root;
  root["error"] = std::move(error);
  return json_text(root);
}

namespace {

ApiError bad_request(std::optional<std::string> param, std::string message) {
  return ApiError{400, "BadRequestError", std::move(message), std::move(param)};
}

// A short rendering of a JSON value for error messages: its kind and, when small, its text.
std::string describe(const json::value& v) {
  std::string text = json_text(v);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return fmt::format("a boolean ({})", text);
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return fmt::format("a number ({})", text);
    case json::kind::string:
      return fmt::format("a string ({})", text);
    case json::kind::array:
      return fmt::format("an array ({})", text);
    case json::kind::object:
      return fmt::format("an object ({})", text);
  }
  return text;
}

// The value of `key`, or nullptr when absent or null (null means "use the default" in OpenAI
// request schemas).
const json::value* find(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

// Reads an optional integer field. Integral floats (16.0) are accepted, as pydantic does.
std::optional<ApiError> read_int(const json::object& o, std::string_view key,
                                 std::optional<int64_t>& out) {
  const json::value* v = find(o, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) {
    out = v->get_int64();
  } else if (v->is_uint64()) {
    out = std::numeric_limits<int64_t>::max();  // larger than any limit we check against
  } else if (v->is_double() && std::isfinite(v->get_double()) &&
             v->get_double() == std::floor(v->get_double())) {
    double d = v->get_double();
    // Beyond 2^53 (and beyond int64) only the sign matters for our range checks.
    if (std::fabs(d) < 9.0e15) {
      out = static_cast<int64_t>(d);
    } else {
      out = d > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    }
  } else {
    return bad_request(std::string(key),
                       fmt::format("{} must be an integer, got {}", key, describe(*v)));
  }
  return std::nullopt;
}

std::optional<ApiError> read_bool(const json::object& o, std::string_view key, bool& out) {
  const json::value* v = find(o, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_bool()) {
    return bad_request(std::string(key),
                       fmt::format("{} must be a boolean, got {}", key, describe(*v)));
  }
  out = v->get_bool();
  return std::nullopt;
}

// kv_transfer_params: null or absent, or an object whose known keys have their types; a decode
// side needs the three remote_* fields together.
std::optional<ApiError> read_kv_transfer(const json::object& o, GenerateRequest& r) {
  const json::value* v = find(o, "kv_transfer_params");
  if (v == nullptr) return std::nullopt;
  const std::string param = "kv_transfer_params";
  if (!v->is_object()) {
    return bad_request(param,
                       fmt::format("kv_transfer_params must be an object, got {}", describe(*v)));
  }
  const json::object& p = v->get_object();
  GenerateRequest::KvTransfer kv;
  auto prefixed = [&](ApiError e) {
    e.param = param;
    e.message = "kv_transfer_params." + e.message;
    return e;
  };
  if (auto err = read_bool(p, "do_remote_decode", kv.do_remote_decode)) return prefixed(*err);
  std::optional<int64_t> port;
  if (auto err = read_int(p, "remote_port", port)) return prefixed(*err);
  for (const char* key : {"remote_host", "remote_request_id"}) {
    const json::value* s = find(p, key);
    if (s == nullptr) continue;
    if (!s->is_string()) {
      return bad_request(
          param, fmt::format("kv_transfer_params.{} must be a string, got {}", key, describe(*s)));
    }
    (std::string_view(key) == "remote_host" ? kv.remote_host : kv.remote_request_id) =
        std::string(s->get_string());
  }
  if (port && (*port < 1 || *port > 65535)) {
    return bad_request(param, fmt::format("kv_transfer_params.remote_port must be 1 to 65535, "
                                          "got {}",
                                          *port));
  }
  kv.remote_port = port ? static_cast<int>(*port) : 0;
  if (const json::value* t = find(p, "inferbench_ttft"); t != nullptr) {
    if (!t->is_object() || t->get_object().size() > 16) {
      return bad_request(param,
                         "kv_transfer_params.inferbench_ttft must be an object of at most "
                         "16 durations in ms");
    }
    for (const auto& kv2 : t->get_object()) {
      const json::value& ms = kv2.value();
      const double d = ms.is_double()  ? ms.get_double()
                       : ms.is_int64() ? static_cast<double>(ms.get_int64())
                                       : -1;
      if (!(d >= 0) || !std::isfinite(d)) {
        return bad_request(param, fmt::format("kv_transfer_params.inferbench_ttft.{} must be a "
                                              "duration in ms (a number, at least 0)",
                                              printable(std::string_view(kv2.key()), 40)));
      }
      kv.upstream_ms[std::string(kv2.key())] = d;
    }
  }
  const bool any_remote = port || !kv.remote_host.empty() || !kv.remote_request_id.empty();
  if (any_remote && (kv.remote_host.empty() || !kv.remote())) {
    return bad_request(param,
                       "kv_transfer_params needs remote_host, remote_port and remote_request_id "
                       "together (where the prefill instance holds the KV)");
  }
  r.kv_transfer = std::move(kv);
  return std::nullopt;
}

// A validated token id (a non-negative int64 or a uint64) as 64 bits.
uint64_t token_id_bits(const json::value& id) {
  return id.is_uint64() ? id.get_uint64() : static_cast<uint64_t>(id.get_int64());
}

uint64_t hash_token_ids(const json::array& ids, uint64_t h) {
  for (const json::value& id : ids) {
    uint64_t x = token_id_bits(id);
    char bytes[sizeof x];
    std::memcpy(bytes, &x, sizeof x);
    h = fnv1a(std::string_view(bytes, sizeof bytes), h);
  }
  return h;
}

// Counts with a tokenizer: the ids' keys, and the ids themselves when asked for (/tokenize).
std::optional<ApiError> use_ids(std::vector<int32_t> ids, bool keep_ids, std::string_view input,
                                GenerateRequest& r) {
  if (ids.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    return bad_request(std::string(input), fmt::format("{} has too many tokens", input));
  }
  r.prompt_tokens = static_cast<int>(ids.size());
  r.prompt_keys.clear();
  r.prompt_keys.reserve(ids.size());
  for (int32_t id : ids) r.prompt_keys.push_back(token_id_key(id));
  if (r.prompt_keys.empty()) r.prompt_keys.push_back(word_key(""));
  if (keep_ids) r.prompt_ids = std::move(ids);
  return std::nullopt;
}

// One prompt: a string or an array of token ids. `where` names it in messages ("prompt",
// "prompt[0]").
std::optional<ApiError> read_single_prompt(const json::value& p, const std::string& where,
                                           const ServedModel& model, bool keep_ids,
                                           GenerateRequest& r) {
  if (p.is_string()) {
    std::string_view text = p.get_string();
    if (text.empty()) return bad_request("prompt", fmt::format("{} must not be empty", where));
    if (model.tokenizer != nullptr) {
      r.prompt_hash = fnv1a(text, fnv1a("text"));
      return use_ids(model.tokenizer->encode_prompt(text), keep_ids, "prompt", r);
    }
    r.prompt_tokens = count_text_tokens(text);
    r.prompt_hash = fnv1a(text, fnv1a("text"));
    r.prompt_keys.reserve(static_cast<size_t>(r.prompt_tokens));
    if (append_word_keys(text, r.prompt_keys) == 0) r.prompt_keys.push_back(word_key(""));
    return std::nullopt;
  }
  if (p.is_array()) {
    const json::array& ids = p.get_array();
    if (ids.empty()) return bad_request("prompt", fmt::format("{} must not be empty", where));
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const json::value& id = ids[i];
      bool ok = (id.is_int64() && id.get_int64() >= 0) || id.is_uint64();
      if (!ok) {
        return bad_request("prompt",
                           fmt::format("{}[{}] must be a token id (a non-negative integer), got {}",
                                       where, i, describe(id)));
      }
    }
    if (ids.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      return bad_request("prompt", fmt::format("{} has too many tokens", where));
    }
    r.prompt_tokens = static_cast<int>(ids.size());
    r.prompt_hash = hash_token_ids(ids, fnv1a("ids"));
    r.prompt_keys.reserve(ids.size());
    for (const json::value& id : ids) {
      r.prompt_keys.push_back(token_id_key(static_cast<int64_t>(token_id_bits(id))));
    }
    if (keep_ids) {
      for (const json::value& id : ids) {
        r.prompt_ids.push_back(static_cast<int32_t>(token_id_bits(id) & 0x7fffffff));
      }
    }
    return std::nullopt;
  }
  return bad_request("prompt", fmt::format("{} must be a string or an array of token ids, got {}",
                                           where, describe(p)));
}

std::optional<ApiError> read_prompt(const json::object& o, const ServedModel& model, bool keep_ids,
                                    GenerateRequest& r) {
  const json::value* p = find(o, "prompt");
  if (p == nullptr) return bad_request("prompt", "prompt is required");
  if (p->is_array() && !p->get_array().empty()) {
    const json::array& a = p->get_array();
    if (a[0].is_string() || a[0].is_array()) {
      // The batch forms: a list of strings or a list of token-id lists.
      if (a.size() > 1) {
        return bad_request(
            "prompt", fmt::format("batched prompts are not supported (got {} prompts); send one "
                                  "prompt per request",
                                  a.size()));
      }
      return read_single_prompt(a[0], "prompt[0]", model, keep_ids, r);
    }
  }
  return read_single_prompt(*p, "prompt", model, keep_ids, r);
}

// One validated chat message: views into the request body's JSON.
struct MessageView {
  std::string_view role;
  std::vector<std::string_view> parts;  // the content: a string, or its text parts
};

// The text parts of messages[i].content, an array of {"type": "text", "text": ...} parts.
std::optional<ApiError> read_content_parts(const json::array& parts, std::size_t i,
                                           MessageView& view) {
  for (std::size_t j = 0; j < parts.size(); ++j) {
    const json::value& part = parts[j];
    const json::value* type = part.is_object() ? find(part.get_object(), "type") : nullptr;
    if (type == nullptr || !type->is_string() || type->get_string() != "text") {
      return bad_request(
          "messages",
          fmt::format("messages[{}].content[{}]: only {{\"type\": \"text\"}} content parts "
                      "are supported, got {}",
                      i, j, describe(part)));
    }
    const json::value* text = find(part.get_object(), "text");
    if (text == nullptr || !text->is_string()) {
      return bad_request("messages",
                         fmt::format("messages[{}].content[{}].text must be a string, got {}", i, j,
                                     text ? describe(*text) : "nothing"));
    }
    view.parts.push_back(text->get_string());
  }
  return std::nullopt;
}

// Validates messages[i] into `view`: its role, and its content (a string or text parts; none when
// absent).
std::optional<ApiError> read_message(const json::value& message, std::size_t i, MessageView& view) {
  if (!message.is_object()) {
    return bad_request("messages",
                       fmt::format("messages[{}] must be an object, got {}", i, describe(message)));
  }
  const json::object& msg = message.get_object();
  const json::value* role = find(msg, "role");
  if (role == nullptr || !role->is_string()) {
    return bad_request("messages", fmt::format("messages[{}].role must be a string, got {}", i,
                                               role ? describe(*role) : "nothing"));
  }
  view.role = role->get_string();
  const json::value* content = find(msg, "content");
  if (content == nullptr) return std::nullopt;
  if (content->is_string()) {
    view.parts.push_back(content->get_string());
    return std::nullopt;
  }
  if (content->is_array()) return read_content_parts(content->get_array(), i, view);
  return bad_request(
      "messages",
      fmt::format("messages[{}].content must be a string or an array of content parts, got {}", i,
                  describe(*content)));
}

// The chat prompt's hash: each message's role and content, with separators.
uint64_t chat_prompt_hash(const std::vector<MessageView>& views) {
  uint64_t h = fnv1a("chat");
  for (const MessageView& view : views) {
    h = fnv1a(view.role, h);
    h = fnv1a("\x1f", h);
    for (std::string_view part : view.parts) h = fnv1a(part, h);
    h = fnv1a("\x1e", h);
  }
  return h;
}

// As a real server: the rendered chat template's tokens.
std::optional<ApiError> chat_template_prompt(const std::vector<MessageView>& views,
                                             const tokenizer::ServingTokenizer& tok, bool keep_ids,
                                             GenerateRequest& r) {
  std::vector<tokenizer::ChatMessage> chat;
  chat.reserve(views.size());
  for (const MessageView& v : views) {
    std::string content;
    for (std::string_view part : v.parts) content += part;
    chat.push_back({std::string(v.role), std::move(content)});
  }
  auto ids = tok.encode_chat(chat);
  if (!ids) return bad_request(std::nullopt, ids.error().message);
  return use_ids(std::move(*ids), keep_ids, "messages", r);
}

// The word rule's template tokens (header start, role, header end, then the content, then end
// of turn) around the content's tokens: its words, or with a tokenizer (and no template) its
// token ids. One key a token.
std::optional<ApiError> word_rule_chat_prompt(const std::vector<MessageView>& views,
                                              const tokenizer::ServingTokenizer* tok,
                                              GenerateRequest& r) {
  int64_t tokens = kChatTokensPerRequest;
  std::vector<int32_t> ids;
  for (const MessageView& v : views) {
    r.prompt_keys.push_back(kKeyHeaderStart);
    r.prompt_keys.push_back(word_key(v.role));
    r.prompt_keys.push_back(kKeyHeaderEnd);
    int64_t content_tokens = 0;
    for (std::string_view part : v.parts) {
      if (tok != nullptr) {
        ids.clear();
        tok->tokenizer().encode_into(part, ids);
        for (int32_t id : ids) r.prompt_keys.push_back(token_id_key(id));
        content_tokens += static_cast<int64_t>(ids.size());
      } else {
        content_tokens += append_word_keys(part, r.prompt_keys);
      }
    }
    r.prompt_keys.push_back(kKeyEos);
    tokens += kChatTokensPerMessage + content_tokens;
  }
  // The assistant reply's header (the generation prompt).
  r.prompt_keys.push_back(kKeyHeaderStart);
  r.prompt_keys.push_back(word_key("assistant"));
  r.prompt_keys.push_back(kKeyHeaderEnd);
  if (tokens > std::numeric_limits<int>::max()) {
    return bad_request("messages", "messages have too many tokens");
  }
  r.prompt_tokens = static_cast<int>(tokens);
  return std::nullopt;
}

// The prompt of a chat request (or /tokenize of one): its messages validated, hashed and counted.
std::optional<ApiError> read_messages(const json::object& o, const ServedModel& model,
                                      bool keep_ids, GenerateRequest& r) {
  const json::value* m = find(o, "messages");
  if (m == nullptr) return bad_request("messages", "messages is required");
  if (!m->is_array()) {
    return bad_request("messages", fmt::format("messages must be an array, got {}", describe(*m)));
  }
  const json::array& messages = m->get_array();
  if (messages.empty()) return bad_request("messages", "messages must not be empty");
  std::vector<MessageView> views(messages.size());
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (auto error = read_message(messages[i], i, views[i])) return error;
  }
  r.prompt_hash = chat_prompt_hash(views);
  const tokenizer::ServingTokenizer* tok = model.tokenizer;
  if (tok != nullptr && tok->has_chat_template()) {
    return chat_template_prompt(views, *tok, keep_ids, r);
  }
  return word_rule_chat_prompt(views, tok, r);
}

// The prompt's text for ServedModel::keep_prompt_text: the string prompt, or the last message's
// text (a string, or its text parts joined). Called after the prompt was validated.
std::string prompt_text(const json::object& o, Api api) {
  if (api == Api::kCompletions) {
    const json::value& p = o.at("prompt");
    if (p.is_string()) return std::string(p.get_string());
    if (p.is_array() && !p.get_array().empty() && p.get_array()[0].is_string()) {
      return std::string(p.get_array()[0].get_string());
    }
    return "";
  }
  const json::object& last = o.at("messages").get_array().back().get_object();
  const json::value* content = find(last, "content");
  if (content == nullptr) return "";
  if (content->is_string()) return std::string(content->get_string());
  std::string out;
  if (content->is_array()) {
    for (const json::value& part : content->get_array()) out += part.at("text").get_string();
  }
  return out;
}

// The body as a JSON object whose `model` (when given) is the served one: 400 for a body that is
// not a JSON object, 404 for another model (as vLLM).
std::variant<json::value, ApiError> parse_body(std::string_view body, const ServedModel& model) {
  boost::system::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec) {
    return bad_request(std::nullopt,
                       fmt::format("request body is not valid JSON: {}", ec.message()));
  }
  if (!root.is_object()) {
    return bad_request(std::nullopt,
                       fmt::format("request body must be a JSON object, got {}", describe(root)));
  }
  if (const json::value* name = find(root.get_object(), "model")) {
    if (!name->is_string()) {
      return bad_request("model", fmt::format("model must be a string, got {}", describe(*name)));
    }
    if (name->get_string() != model.name) {
      return ApiError{
          404, "NotFoundError",
          fmt::format("The model `{}` does not exist.", std::string_view(name->get_string())),
          "model"};
    }
  }
  return root;
}

ParseResult parse_request(std::string_view body, const ServedModel& model, Api api) {
  auto parsed = parse_body(body, model);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  const json::object& o = std::get<json::value>(parsed).get_object();

  GenerateRequest r;
  r.api = api;
  const char* input_name = api == Api::kChat ? "messages" : "prompt";
  if (auto err =
          api == Api::kChat ? read_messages(o, model, false, r) : read_prompt(o, model, false, r)) {
    return *err;
  }
  if (model.keep_prompt_text) r.prompt_text = prompt_text(o, api);

  std::optional<int64_t> n;
  if (auto err = read_int(o, "n", n)) return *err;
  if (n && *n != 1) {
    return bad_request("n",
                       fmt::format("n must be 1 (serve-sim generates one choice), got {}", *n));
  }

  if (auto err = read_bool(o, "stream", r.stream)) return *err;
  if (const json::value* so = find(o, "stream_options")) {
    if (!so->is_object()) {
      return bad_request("stream_options",
                         fmt::format("stream_options must be an object, got {}", describe(*so)));
    }
    if (!r.stream) {
      return bad_request("stream_options", "stream_options can only be set when stream is true");
    }
    bool continuous = false;
    if (auto err = read_bool(so->get_object(), "include_usage", r.include_usage)) {
      err->param = "stream_options";
      err->message = "stream_options." + err->message;
      return *err;
    }
    if (auto err = read_bool(so->get_object(), "continuous_usage_stats", continuous)) {
      err->param = "stream_options";
      err->message = "stream_options." + err->message;
      return *err;
    }
    // As in vLLM, per-chunk usage is only sent when final usage is requested too.
    r.continuous_usage = r.include_usage && continuous;
  }
  if (auto err = read_bool(o, "ignore_eos", r.ignore_eos)) return *err;

  // Output limit. Completions default to 16 tokens; chat to whatever fits the context.
  std::string limit_name = "max_tokens";
  std::optional<int64_t> max_tokens;
  if (api == Api::kChat) {
    if (auto err = read_int(o, "max_completion_tokens", max_tokens)) return *err;
    if (max_tokens) limit_name = "max_completion_tokens";
  }
  if (!max_tokens) {
    if (auto err = read_int(o, "max_tokens", max_tokens)) return *err;
  }
  if (max_tokens && *max_tokens < 1) {
    return bad_request(limit_name,
                       fmt::format("{} must be at least 1, got {}", limit_name, *max_tokens));
  }
  if (r.prompt_tokens >= model.max_model_len) {
    return bad_request(
        input_name,
        fmt::format("This model's maximum context length is {} tokens. However, your request has "
                    "{} input tokens. Please reduce the length of the input {}.",
                    model.max_model_len, r.prompt_tokens, input_name));
  }
  if (!max_tokens) max_tokens = api == Api::kChat ? model.max_model_len - r.prompt_tokens : 16;
  if (*max_tokens > static_cast<int64_t>(model.max_model_len) - r.prompt_tokens) {
    const int64_t requested = *max_tokens > std::numeric_limits<int64_t>::max() - r.prompt_tokens
                                  ? std::numeric_limits<int64_t>::max()
                                  : r.prompt_tokens + *max_tokens;
    return bad_request(
        limit_name,
        fmt::format("This model's maximum context length is {} tokens. However, you requested {} "
                    "tokens ({} in the {}, {} in the completion). Please reduce the length of the "
                    "{} or completion.",
                    model.max_model_len, requested, r.prompt_tokens, input_name, *max_tokens,
                    input_name));
  }
  r.max_tokens = static_cast<int>(*max_tokens);
  if (auto err = read_kv_transfer(o, r)) return *err;

  std::optional<int64_t> min_tokens;
  if (auto err = read_int(o, "min_tokens", min_tokens)) return *err;
  if (min_tokens) {
    if (*min_tokens < 0) {
      return bad_request("min_tokens",
                         fmt::format("min_tokens must be at least 0, got {}", *min_tokens));
    }
    if (*min_tokens > r.max_tokens) {
      return bad_request("min_tokens",
                         fmt::format("min_tokens must be less than or equal to {} ({}), got {}",
                                     limit_name, r.max_tokens, *min_tokens));
    }
    r.min_tokens = static_cast<int>(*min_tokens);
  }
  return r;
}

}  // namespace

ParseResult parse_completion_request(std::string_view body, const ServedModel& model) {
  return parse_request(body, model, Api::kCompletions);
}

ParseResult parse_chat_request(std::string_view body, const ServedModel& model) {
  return parse_request(body, model, Api::kChat);
}

ParseResult parse_tokenize_request(std::string_view body, const ServedModel& model) {
  auto parsed = parse_body(body, model);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  const json::object& o = std::get<json::value>(parsed).get_object();
  GenerateRequest r;
  const bool chat = find(o, "messages") != nullptr;
  r.api = chat ? Api::kChat : Api::kCompletions;
  bool add_special = true, add_generation_prompt = true;
  if (auto err = read_bool(o, "add_special_tokens", add_special)) return *err;
  if (auto err = read_bool(o, "add_generation_prompt", add_generation_prompt)) return *err;
  if (!add_generation_prompt) {
    return bad_request("add_generation_prompt",
                       "serve-sim's /tokenize counts chat requests as they are served: "
                       "add_generation_prompt must be true");
  }
  if (auto err = chat ? read_messages(o, model, true, r) : read_prompt(o, model, true, r)) {
    return *err;
  }
  // A text prompt without the special tokens a completions request gets (BOS).
  const json::value* prompt = find(o, "prompt");
  if (!chat && !add_special && model.tokenizer != nullptr && prompt != nullptr &&
      prompt->is_string()) {
    if (auto err =
            use_ids(model.tokenizer->tokenizer().encode(prompt->get_string()), true, "prompt", r)) {
      return *err;
    }
  }
  return r;
}

}  // namespace ib::sim
