#include "tokenizer/chat_template.h"

#include <boost/json.hpp>

#include "core/files.h"
#include "tokenizer/jinja.h"

namespace ib::tokenizer {

namespace fs = std::filesystem;
namespace json = boost::json;

struct ChatTemplate::Impl {
  std::shared_ptr<const jinja::Program> program;
};

Expected<ChatTemplate> ChatTemplate::parse(std::string_view text, std::string_view source) {
  auto program = jinja::parse(text, source);
  if (!program) return program.error();
  auto impl = std::make_shared<Impl>();
  impl->program = std::move(program.value());
  return ChatTemplate(std::move(impl));
}

Expected<std::string> ChatTemplate::render(const json::object& context,
                                           const RenderOptions& options) const {
  const std::time_t now = options.now ? *options.now : std::time(nullptr);
  return jinja::render(*impl_->program, context, now, options.max_iterations);
}

const std::string& ChatTemplate::source() const {
  return impl_->program->source;
}

namespace {

// bos_token / eos_token: a string, an AddedToken object ({"content": ...}), or null.
Status read_token(const json::object& config, std::string_view field, const std::string& file,
                  std::optional<std::string>& out) {
  const json::value* v = config.if_contains(field);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_string()) {
    out = std::string(v->get_string());
    return {};
  }
  if (v->is_object()) {
    const json::value* content = v->get_object().if_contains("content");
    if (content != nullptr && content->is_string()) {
      out = std::string(content->get_string());
      return {};
    }
  }
  return Error{file + ": " + std::string(field) +
               " is neither a string nor an AddedToken object with a string \"content\""};
}

Status read_flag(const json::object& config, std::string_view field, const std::string& file,
                 bool& out) {
  const json::value* v = config.if_contains(field);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_bool()) return Error{file + ": " + std::string(field) + " is not a boolean"};
  out = v->get_bool();
  return {};
}

}  // namespace

Expected<TokenizerConfig> load_tokenizer_config(const fs::path& path) {
  const std::string file = path.string();
  auto text = read_file(path);
  if (!text) return text.error();
  boost::system::error_code ec;
  json::value doc = json::parse(*text, ec);
  if (ec) return Error{file + ": not valid JSON: " + ec.message()};
  if (!doc.is_object()) return Error{file + ": not a JSON object"};
  const json::object& config = doc.get_object();

  TokenizerConfig out;
  out.source = file;
  for (const auto& [field, slot] :
       {std::pair{"bos_token", &out.bos_token}, std::pair{"eos_token", &out.eos_token}}) {
    if (Status s = read_token(config, field, file, *slot); !s) return s.error();
  }
  if (Status s = read_flag(config, "add_bos_token", file, out.add_bos_token); !s) return s.error();
  if (Status s = read_flag(config, "add_eos_token", file, out.add_eos_token); !s) return s.error();

  const json::value* tmpl = config.if_contains("chat_template");
  if (tmpl != nullptr && tmpl->is_string()) {
    out.chat_template = std::string(tmpl->get_string());
    out.chat_template_source = file + " chat_template";
  } else if (tmpl != nullptr && tmpl->is_array()) {
    // Several named templates, as transformers saves them: [{"name": ..., "template": ...}].
    for (const json::value& entry : tmpl->get_array()) {
      const json::object* o = entry.if_object();
      const json::value* name = o ? o->if_contains("name") : nullptr;
      const json::value* body = o ? o->if_contains("template") : nullptr;
      if (name == nullptr || !name->is_string() || body == nullptr || !body->is_string()) {
        return Error{
            file + ": chat_template: a list entry is not {\"name\": string, \"template\": string}"};
      }
      if (name->get_string() == "default") {
        out.chat_template = std::string(body->get_string());
        out.chat_template_source = file + " chat_template";
      }
    }
    if (!out.chat_template) {
      return Error{file +
                   ": chat_template: a list of named templates without one named \"default\""};
    }
  } else if (tmpl != nullptr && !tmpl->is_null()) {
    return Error{file + ": chat_template is neither a string nor a list of named templates"};
  } else {
    const fs::path sibling = path.parent_path() / "chat_template.jinja";
    std::error_code fec;
    if (fs::exists(sibling, fec)) {
      auto jinja = read_file(sibling);
      if (!jinja) return jinja.error();
      out.chat_template = std::move(*jinja);
      out.chat_template_source = sibling.string();
    }
  }
  return out;
}

json::object chat_context(std::span<const ChatMessage> messages, const TokenizerConfig& config,
                          bool add_generation_prompt, const json::object& extra) {
  json::object ctx;
  json::array list;
  for (const ChatMessage& m : messages) {
    list.push_back(json::object{{"role", m.role}, {"content", m.content}});
  }
  ctx["messages"] = std::move(list);
  // apply_chat_template passes tools and documents always (None when not given).
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  if (config.bos_token) ctx["bos_token"] = *config.bos_token;
  if (config.eos_token) ctx["eos_token"] = *config.eos_token;
  for (const auto& kv : extra) ctx[kv.key()] = kv.value();
  return ctx;
}

}  // namespace ib::tokenizer
