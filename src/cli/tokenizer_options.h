// `--tokenizer PATH` and `--chat-template FILE` (docs/tokenizer.md): the same options, the same
// words and the same errors on every command that takes them (bench, sweep, serve-sim, tokenize).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "core/expected.h"
#include "tokenizer/serving.h"

namespace ib::cli {

struct TokenizerOptions {
  std::string path;
  std::string chat_template;
};

/// Adds both options; `purpose` says what the tokenizer does for this command ("prompts become
/// ..."). Returns --tokenizer (to mark it required where it is).
CLI::Option* add_tokenizer_options(CLI::App* app, TokenizerOptions& o, const std::string& purpose);

/// The tokenizer the options name; null when none. Errors: "--chat-template applies with
/// --tokenizer", and "--tokenizer: ..." naming the file and field.
Expected<std::shared_ptr<const tokenizer::ServingTokenizer>> load_tokenizer(
    const TokenizerOptions& o);

}  // namespace ib::cli
