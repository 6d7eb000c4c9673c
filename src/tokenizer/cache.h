// Where scripts/fetch-tokenizers.sh keeps tokenizer files (they are never in the repository).
#pragma once

#include <filesystem>

namespace ib::tokenizer {

/// $INFERBENCH_TOKENIZERS, else $XDG_CACHE_HOME/inferbench/tokenizers, else
/// $HOME/.cache/inferbench/tokenizers (the fetch script's rule). Empty when none of the
/// variables is set.
std::filesystem::path tokenizer_cache_dir();

}  // namespace ib::tokenizer
