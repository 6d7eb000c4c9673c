// `inferbench tokenize`: the ids of a text as the served model's tokenizer gives them (and, with
// --chat, the count of the request its chat template renders), for checks and debugging
// (docs/tokenizer.md).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/tokenizer_options.h"
#include "core/files.h"
#include "core/json_text.h"
#include "tokenizer/serving.h"

namespace ib::cli {

namespace {

struct TokenizeOptions {
  TokenizerOptions tokenizer;
  std::string file, system;
  bool json = false, chat = false, no_special = false, show_rendered = false, no_ids = false;
  std::vector<std::string> kwargs;  // KEY=true|false for the template (enable_thinking=false)
};

Expected<boost::json::object> parse_kwargs(const std::vector<std::string>& items) {
  boost::json::object out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error{fmt::format("--template-arg: '{}' is not KEY=VALUE", item)};
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(value, ec);
    if (ec) v = boost::json::string(value);  // a bare word is a string
    out[key] = std::move(v);
  }
  return out;
}

std::string ids_text(const std::vector<int32_t>& ids) { return fmt::format("{}", fmt::join(ids, " ")); }

int run(const TokenizeOptions& o) {
  auto tok = load_tokenizer(o.tokenizer);
  if (!tok) {
    return fail("tokenize", with_kind(tok.error(), ErrorKind::kUsage));
  }
  std::string text;
  if (o.file.empty() || o.file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto t = read_file(o.file);
    if (!t) {
      return fail("tokenize", with_kind(t.error(), ErrorKind::kUsage));
    }
    text = std::move(*t);
  }
  auto kwargs = parse_kwargs(o.kwargs);
  if (!kwargs) {
    return fail("tokenize", with_kind(kwargs.error(), ErrorKind::kUsage));
  }
  const tokenizer::ServingTokenizer& t = **tok;
  boost::json::object j;
  j["tokenizer"] = t.path();
  j["identity"] = t.identity();
  std::vector<int32_t> ids = o.no_special ? t.tokenizer().encode(text) : t.encode_prompt(text);
  const auto plain = static_cast<int64_t>(t.tokenizer().count(text));
  j["tokens"] = ids.size();
  j["special_tokens_added"] = static_cast<int64_t>(ids.size()) - plain;
  if (!o.no_ids) {
    boost::json::array a;
    for (int32_t id : ids) a.emplace_back(id);
    j["ids"] = std::move(a);
  }
  std::string rendered;
  std::vector<int32_t> chat_ids;
  if (o.chat) {
    std::vector<tokenizer::ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", text});
    auto r = t.render_chat(messages, *kwargs);
    if (!r) {
      return fail("tokenize", usage_error(fmt::format("--chat: {}", r.error().message)));
    }
    rendered = std::move(*r);
    chat_ids = t.tokenizer().encode(rendered);
    boost::json::object c;
    c["template"] = t.chat_template_source();
    c["tokens"] = chat_ids.size();
    c["content_tokens"] = plain;
    c["template_tokens"] = static_cast<int64_t>(chat_ids.size()) - plain;
    c["rendered"] = rendered;
    if (!o.no_ids) {
      boost::json::array a;
      for (int32_t id : chat_ids) a.emplace_back(id);
      c["ids"] = std::move(a);
    }
    j["chat"] = std::move(c);
  }
  if (o.json) {
    fmt::print("{}\n", json_text(j));
    return kExitOk;
  }
  fmt::print("tokenizer  {}\n", t.path());
  fmt::print("tokens     {}{}\n", ids.size(),
             ids.size() > static_cast<size_t>(plain)
                 ? fmt::format(" ({} special token{} added, as a /v1/completions prompt)",
                               ids.size() - static_cast<size_t>(plain),
                               ids.size() - static_cast<size_t>(plain) == 1 ? "" : "s")
                 : std::string());
  if (!o.no_ids) fmt::print("ids        {}\n", ids_text(ids));
  if (o.chat) {
    fmt::print("chat       {} tokens: {} of text, {} from the template ({})\n", chat_ids.size(),
               plain, static_cast<int64_t>(chat_ids.size()) - plain, t.chat_template_source());
    if (!o.no_ids) fmt::print("chat ids   {}\n", ids_text(chat_ids));
    if (o.show_rendered) fmt::print("rendered\n{}\n", rendered);
  }
  return kExitOk;
}

}  // namespace

RunFn register_tokenize(CLI::App& root) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* app = root.add_subcommand(
      "tokenize", "Print a text's token ids as the served model's tokenizer gives them");
  add_tokenizer_options(app, o->tokenizer, "the ids and counts printed are its")->required();
  app->add_option("file", o->file, "The text (default: standard input)");
  app->add_flag("--json", o->json, "Print JSON");
  app->add_flag("--chat", o->chat,
                "Also render the text as one user message through the chat template (with the "
                "generation prompt) and count that");
  app->add_option("--system", o->system, "With --chat: a system message before the text");
  app->add_option("--template-arg", o->kwargs,
                  "With --chat: KEY=VALUE passed to the template (e.g. enable_thinking=false); "
                  "repeatable");
  app->add_flag("--no-special", o->no_special,
                "Count the text alone, without the BOS a /v1/completions prompt gets");
  app->add_flag("--rendered", o->show_rendered, "With --chat: print the rendered text");
  app->add_flag("--no-ids", o->no_ids, "Print counts only");
  return [o] { return run(*o); };
}

}  // namespace ib::cli
