// A small self-made tokenizer for tests and examples that must run without the fetched model
// vocabularies (which carry their models' licences and are never committed): byte-level BPE with
// Llama-3's split pattern, merges that make ~200 common English words single tokens, ChatML
// added tokens, and a tokenizer_config.json with add_bos_token and a ChatML chat template.
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

#include "core/expected.h"

namespace ib::tokenizer {

/// Writes tokenizer.json and tokenizer_config.json into `dir` (created when missing). Each of
/// `extra_words` becomes one token too, alone and after a space (lower-case ASCII words).
Status write_test_tokenizer(const std::filesystem::path& dir,
                            std::span<const std::string_view> extra_words = {});

/// The test tokenizer's chat template (ChatML, with the BOS token first).
extern const char* const kTestChatTemplate;

}  // namespace ib::tokenizer
