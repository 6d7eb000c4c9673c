// Parity of the chat template interpreter with python3-jinja2 as transformers configures it, on
// the real models' templates (the chat_template of each cached tokenizer_config.json, or the
// chat_template.jinja beside it) and on tests/data/chat-templates/*.jinja: every case of
// <cache>/goldens/chat_templates.json (written by scripts/chat-template-goldens.py, which
// scripts/fetch-tokenizers.sh runs) must render byte for byte as jinja2 did, or fail with the
// message jinja2 raised.
//
// Without the goldens these tests skip, unless IB_REQUIRE_TOKENIZERS=1 (CI), where they fail.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <iostream>
#include <map>

#include "core/files.h"
#include "tokenizer/cache.h"
#include "tokenizer/test_cache.h"
#include "tokenizer/chat_template.h"

namespace ib::tokenizer {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using ::ib::tokenizer::testing::require_files;

// The goldens document, or why there is none.
struct Goldens {
  json::value doc;
  std::string missing;
};

const Goldens& goldens() {
  static const Goldens g = [] {
    Goldens out;
    const fs::path dir = tokenizer_cache_dir();
    if (dir.empty()) {
      out.missing = "no tokenizer cache folder (HOME and INFERBENCH_TOKENIZERS unset)";
      return out;
    }
    const fs::path file = dir / "goldens" / "chat_templates.json";
    auto text = read_file(file);
    if (!text) {
      out.missing = file.string() + " is missing";
      return out;
    }
    boost::system::error_code ec;
    out.doc = json::parse(*text, ec);
    if (ec || !out.doc.is_object()) out.missing = file.string() + " is not valid JSON";
    return out;
  }();
  return g;
}

#define SKIP_WITHOUT_GOLDENS()                                                                   \
  do {                                                                                           \
    if (const std::string& why = goldens().missing; !why.empty()) {                              \
      if (require_files()) {                                                                     \
        FAIL() << "IB_REQUIRE_TOKENIZERS=1 but " << why << " (run scripts/fetch-tokenizers.sh)"; \
      }                                                                                          \
      GTEST_SKIP() << why                                                                        \
                   << "; run scripts/fetch-tokenizers.sh to make the chat template goldens";     \
    }                                                                                            \
  } while (0)

std::string str(const json::value& v) {
  return std::string(v.as_string());
}

// The template of a case, read as the library reads it: load_tokenizer_config for a cached
// tokenizer_config.json, the file itself for the repository's templates.
Expected<TokenizerConfig> load_case_template(const json::object& c) {
  const std::string file = str(c.at("template_file"));
  if (str(c.at("template_origin")) == "cache")
    return load_tokenizer_config(tokenizer_cache_dir() / file);
  const fs::path path = fs::path(INFERBENCH_SOURCE_DIR) / file;
  auto text = read_file(path);
  if (!text) return text.error();
  TokenizerConfig config;
  config.source = path.string();
  config.chat_template = std::move(*text);
  config.chat_template_source = path.string();
  config.bos_token = "<s>";
  config.eos_token = "</s>";
  return config;
}

TEST(ChatTemplateGolden, RendersEveryCaseLikeJinja2) {
  SKIP_WITHOUT_GOLDENS();
  const json::object& doc = goldens().doc.as_object();
  RenderOptions options;
  options.now = std::time_t(doc.at("now").to_number<int64_t>());
  const json::object& texts = doc.at("templates").as_object();

  struct Loaded {
    TokenizerConfig config;
    std::optional<ChatTemplate> tmpl;
  };
  std::map<std::string, Loaded> loaded;              // by family
  std::map<std::string, std::pair<int, int>> tally;  // family -> (equal, cases)
  for (const json::value& v : doc.at("cases").as_array()) {
    const json::object& c = v.as_object();
    const std::string family = str(c.at("family"));
    const std::string name = family + "/" + str(c.at("name"));
    auto& [equal, total] = tally[family];
    ++total;
    if (!loaded.count(family)) {
      auto config = load_case_template(c);
      ASSERT_TRUE(config.ok()) << name << ": " << config.error().message;
      ASSERT_TRUE(config->chat_template.has_value()) << name << ": no template";
      // The loader found the same text the generator rendered.
      ASSERT_EQ(*config->chat_template, str(texts.at(family))) << name;
      auto parsed = ChatTemplate::parse(*config->chat_template, config->chat_template_source);
      ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error().message;
      loaded[family] = Loaded{std::move(*config), std::move(*parsed)};
    }
    const Loaded& l = loaded.at(family);
    const json::object& context = c.at("context").as_object();

    // For plain conversations chat_context() must build the generator's context.
    if (c.at("plain").as_bool()) {
      std::vector<ChatMessage> messages;
      for (const json::value& m : context.at("messages").as_array()) {
        messages.push_back({str(m.at("role")), str(m.at("content"))});
      }
      const json::object built = chat_context(
          messages, l.config, c.at("add_generation_prompt").as_bool(), c.at("kwargs").as_object());
      EXPECT_EQ(json::value(built), json::value(context)) << name << ": chat_context differs";
    }

    auto out = l.tmpl->render(context, options);
    if (const json::value* expected = c.if_contains("expected")) {
      if (!out.ok()) {
        ADD_FAILURE() << name << ": " << out.error().message;
        continue;
      }
      EXPECT_EQ(*out, str(*expected)) << name;
      if (*out == str(*expected)) ++equal;
    } else {
      const std::string error = str(c.at("error"));
      if (out.ok()) {
        ADD_FAILURE() << name << ": rendered, but jinja2 raised " << str(c.at("error_type")) << ": "
                      << error;
        continue;
      }
      EXPECT_NE(out.error().message.find(error), std::string::npos)
          << name << ": " << out.error().message << "\n  jinja2: " << error;
      if (out.error().message.find(error) != std::string::npos) ++equal;
    }
  }
  for (const auto& [family, t] : tally) {
    std::cout << "chat template goldens: " << family << ": " << t.first << "/" << t.second
              << " as jinja2\n";
  }
  EXPECT_FALSE(tally.empty());
}

// The real templates are data: parsing them must not depend on the cases.
TEST(ChatTemplateGolden, ParsesEveryCachedTemplate) {
  SKIP_WITHOUT_GOLDENS();
  for (const auto& [family, text] : goldens().doc.at("templates").as_object()) {
    auto t = ChatTemplate::parse(std::string(text.as_string()), std::string(family));
    EXPECT_TRUE(t.ok()) << family << ": " << t.error().message;
  }
}

}  // namespace
}  // namespace ib::tokenizer
