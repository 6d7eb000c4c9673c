// Chat templates come from a model's tokenizer_config.json or a --chat-template file: outside
// input. The first byte picks what the rest is: a template parsed and rendered with a typical
// conversation (a syntax or runtime error is fine; a crash, a hang or unbounded memory is not),
// a tokenizer_config.json, or a tokenizer.json.
#include <filesystem>
#include <string>

#include "core/files.h"
#include "core/temp_dir.h"
#include "fuzz_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ib::fuzz::Input in(data, size);
  const uint8_t choice = in.byte();
  const std::string text(in.rest());
  switch (choice % 3) {
    case 0:
    case 1: {
      auto t = ib::tokenizer::ChatTemplate::parse(text, "fuzz.jinja");
      if (!t) break;
      const std::vector<ib::tokenizer::ChatMessage> messages = {
          {"system", "You are helpful."}, {"user", "Hi <|im_start|> {{ x }}"},
          {"assistant", " two words\n"},   {"user", ""}};
      ib::tokenizer::TokenizerConfig config;
      config.bos_token = "<s>";
      config.eos_token = "</s>";
      boost::json::object extra;
      extra["enable_thinking"] = (choice & 4) != 0;
      (void)t->render(ib::tokenizer::chat_context(messages, config, (choice & 8) != 0, extra),
                      ib::tokenizer::RenderOptions{.now = 1700000000});
      break;
    }
    default: {
      // The loaders read files: write the input to one.
      static ib::TempDir dir("ib-fuzz-tok");
      const std::filesystem::path file = dir.path() / ((choice & 4) ? "tokenizer_config.json"
                                                                     : "tokenizer.json");
      if (!ib::write_file_atomic(file, text).ok()) break;
      if (choice & 4) {
        (void)ib::tokenizer::load_tokenizer_config(file);
      } else {
        (void)ib::tokenizer::Tokenizer::from_hf_json(text, "fuzz.json");
      }
      break;
    }
  }
  return 0;
}
