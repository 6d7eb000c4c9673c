#include "tokenizer/testing.h"

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/files.h"
#include "tokenizer/unicode.h"

namespace ib::tokenizer {

namespace json = boost::json;

const char* const kTestChatTemplate =
    "{{ bos_token }}{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] | trim }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

namespace {

// Common English words (and some of GSM8K's): each becomes one token after a space.
constexpr const char* kWords[] = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "up", "out", "many",
    "then", "them", "these", "may", "she", "some", "other", "into", "could", "two", "first",
    "new", "how", "much", "does", "did", "each", "per", "day", "days", "week", "year", "years",
    "money", "total", "cost", "costs", "buy", "buys", "bought", "sold", "sells", "pay", "paid",
    "dollars", "hours", "minutes", "every", "she", "her", "his", "him", "what", "many", "left",
    "after", "before", "than", "twice", "half", "three", "four", "five", "six", "seven",
    "eight", "nine", "ten", "number", "price", "each", "makes", "make", "takes", "take", "gets",
    "get", "has", "wants", "need", "needs", "store", "school", "class", "students", "books",
    "apples", "eggs", "cups", "miles", "people", "friends", "family", "children", "times",
    "more", "less", "rest", "only", "also", "same", "than", "over", "about", "long", "work",
    "works", "worked", "spends", "spent", "saves", "earn", "earns", "earned", "if", "what",
    "John", "James", "Mary", "Tom", "She", "He", "The", "How", "If", "In", "A", "There"};

}  // namespace

Status write_test_tokenizer(const std::filesystem::path& dir,
                            std::span<const std::string_view> extra_words) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{dir.string() + ": " + ec.message()};
  json::object vocab;
  for (int b = 0; b < 256; ++b) vocab[bytes_to_byte_level(std::string(1, char(b)))] = b;
  json::array merges;
  std::set<std::string> made;
  // Each word with a leading space, built left to right: " w" + "o" -> " wo", ...; the extra
  // words also without the space.
  std::vector<std::string> chains;
  for (const char* w : kWords) chains.push_back(std::string(" ") + w);
  for (std::string_view w : extra_words) {
    chains.push_back(" " + std::string(w));
    chains.emplace_back(w);
  }
  for (const std::string& chain : chains) {
    std::string piece = bytes_to_byte_level(chain.substr(0, 1));
    const std::string word = chain.substr(1);
    for (size_t i = 0; i < word.size(); ++i) {
      const std::string next = bytes_to_byte_level(word.substr(i, 1));
      const std::string joined = piece + next;
      if (made.insert(joined).second) {
        vocab[joined] = int64_t(vocab.size());
        merges.emplace_back(piece + " " + next);
      }
      piece = joined;
    }
  }
  const auto n = int64_t(vocab.size());
  auto added = [](int64_t id, const char* content) {
    return json::object{{"id", id},          {"content", content}, {"single_word", false},
                        {"lstrip", false},   {"rstrip", false},    {"normalized", false},
                        {"special", true}};
  };
  json::object tok{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       json::array{added(n, "<|bos|>"), added(n + 1, "<|im_start|>"), added(n + 2, "<|im_end|>")}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array{
             json::object{
                 {"type", "Split"},
                 {"pattern",
                  {{"Regex",
                    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                 {"behavior", "Isolated"},
                 {"invert", false}},
             json::object{{"type", "ByteLevel"},
                          {"add_prefix_space", false},
                          {"trim_offsets", true},
                          {"use_regex", false}}}}}},
      {"post_processor",
       {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false},
        {"use_regex", true}}},
      {"decoder",
       {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
        {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", std::move(vocab)},
        {"merges", std::move(merges)}}}};
  if (auto s = write_file_atomic(dir / "tokenizer.json", json::serialize(tok)); !s.ok()) return s;
  json::object config{{"add_bos_token", true},
                      {"bos_token", "<|bos|>"},
                      {"eos_token", "<|im_end|>"},
                      {"chat_template", kTestChatTemplate},
                      {"tokenizer_class", "LlamaTokenizerFast"}};
  return write_file_atomic(dir / "tokenizer_config.json", json::serialize(config));
}

}  // namespace ib::tokenizer
