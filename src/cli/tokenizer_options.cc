#include "cli/tokenizer_options.h"

namespace ib::cli {

CLI::Option* add_tokenizer_options(CLI::App* app, TokenizerOptions& o, const std::string& purpose) {
  CLI::Option* tok = app->add_option(
      "--tokenizer", o.path,
      "The served model's tokenizer: a tokenizer.json, a folder with tokenizer.json and "
      "tokenizer_config.json (its chat template), or a .tiktoken file; " +
          purpose + " (docs/tokenizer.md)");
  app->add_option("--chat-template", o.chat_template,
                  "With --tokenizer: the server's Jinja chat template file, replacing the "
                  "tokenizer's own (vLLM's --chat-template)");
  return tok;
}

Expected<std::shared_ptr<const tokenizer::ServingTokenizer>> load_tokenizer(
    const TokenizerOptions& o) {
  if (!o.chat_template.empty() && o.path.empty()) {
    return Error{"--chat-template applies with --tokenizer"};
  }
  if (o.path.empty()) return std::shared_ptr<const tokenizer::ServingTokenizer>();
  auto tok = tokenizer::ServingTokenizer::load(o.path, o.chat_template);
  if (!tok) return Error{"--tokenizer: " + tok.error().message};
  return *tok;
}

}  // namespace ib::cli
