// Loading a Hugging Face tokenizer.json (the format of tokenizers' serialization.rs) into
// Tokenizer::Impl. Each unsupported or malformed part is an Error naming the file and the field.
#include <boost/json.hpp>
#include <string>
#include <unordered_map>

#include "core/files.h"
#include "tokenizer/impl.h"
#include "tokenizer/tokenizer.h"

namespace ib::tokenizer {
namespace {

namespace json = boost::json;
using Impl = Tokenizer::Impl;

// The pattern of tokenizers' ByteLevel pre-tokenizer with use_regex (GPT-2's).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string_view sv(json::string_view s) {
  return {s.data(), s.size()};
}

// Errors name the file and the JSON path of the field: "<file>: model.merges[3]: ...".
class Loader {
 public:
  explicit Loader(std::string_view source) : source_(source) {}

  Error error(std::string_view path, std::string_view what) const {
    return Error{source_ + ": " + std::string(path) + ": " + std::string(what)};
  }

  static std::string at(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
  }
  static std::string at(std::string_view path, size_t index) {
    return std::string(path) + "[" + std::to_string(index) + "]";
  }

  // The member `key` of `obj`, or nullptr when it is absent or null.
  static const json::value* member(const json::object& obj, std::string_view key) {
    const json::value* v = obj.if_contains(json::string_view(key.data(), key.size()));
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  Expected<const json::object*> object_at(const json::object& obj, std::string_view path,
                                          std::string_view key, bool required) const {
    const json::value* v = member(obj, key);
    if (v == nullptr) {
      if (required) return error(at(path, key), "missing");
      return static_cast<const json::object*>(nullptr);
    }
    if (!v->is_object()) return error(at(path, key), "expected an object");
    return &v->get_object();
  }

  Expected<const json::array*> array_at(const json::object& obj, std::string_view path,
                                        std::string_view key) const {
    const json::value* v = member(obj, key);
    if (v == nullptr) return error(at(path, key), "missing");
    if (!v->is_array()) return error(at(path, key), "expected an array");
    return &v->get_array();
  }

  Expected<std::string_view> string_at(const json::object& obj, std::string_view path,
                                       std::string_view key) const {
    const json::value* v = member(obj, key);
    if (v == nullptr) return error(at(path, key), "missing");
    if (!v->is_string()) return error(at(path, key), "expected a string");
    return sv(v->get_string());
  }

  // A boolean member; `fallback` when absent or null.
  Expected<bool> bool_at(const json::object& obj, std::string_view path, std::string_view key,
                         bool fallback) const {
    const json::value* v = member(obj, key);
    if (v == nullptr) return fallback;
    if (!v->is_bool()) return error(at(path, key), "expected true or false");
    return v->get_bool();
  }

  Expected<int32_t> id_of(const json::value& v, std::string_view path) const {
    if (v.is_int64() && v.get_int64() >= 0 && v.get_int64() <= INT32_MAX) {
      return int32_t(v.get_int64());
    }
    if (v.is_uint64() && v.get_uint64() <= INT32_MAX) return int32_t(v.get_uint64());
    return error(path, "expected a token id (an integer from 0 to 2^31-1)");
  }

  Expected<std::string_view> type_of(const json::object& obj, std::string_view path) const {
    return string_at(obj, path, "type");
  }

  Status load(const json::object& root, Impl& impl);

 private:
  Status load_model(const json::object& model, Impl& impl);
  Status load_added_tokens(const json::object& root, Impl& impl);
  Status load_normalizer(const json::value& v, std::string_view path, NormalForm& form);
  Status load_pre_tokenizer(const json::value& v, std::string_view path, Impl& impl,
                            int& byte_levels);
  Status load_post_processor(const json::value& v, std::string_view path, Impl& impl);
  Status load_decoder(const json::object& root);

  std::string source_;
  // The vocabulary as written (byte-level text) -> id, into the parsed document.
  std::unordered_map<std::string_view, int32_t> vocab_text_;
};

Status Loader::load_model(const json::object& model, Impl& impl) {
  const std::string_view path = "model";
  if (const json::value* type = member(model, "type")) {
    if (!type->is_string()) return error("model.type", "expected a string");
    if (sv(type->get_string()) != "BPE") {
      return error("model.type",
                   "'" + std::string(sv(type->get_string())) + "' is not supported (only BPE)");
    }
  } else if (member(model, "merges") == nullptr) {
    return error("model.type", "missing (and no merges: not a BPE model)");
  }
  if (const json::value* d = member(model, "dropout")) {
    if (!d->is_number() || d->to_number<double>() != 0.0) {
      return error("model.dropout", "BPE dropout is not supported (random segmentation)");
    }
  }
  auto byte_fallback = bool_at(model, path, "byte_fallback", false);
  if (!byte_fallback) return byte_fallback.error();
  if (*byte_fallback) return error("model.byte_fallback", "true is not supported");
  for (std::string_view key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json::value* v = member(model, key);
    if (v != nullptr && (!v->is_string() || !v->get_string().empty())) {
      return error(at(path, key), "only null or \"\" is supported");
    }
  }
  auto ignore_merges = bool_at(model, path, "ignore_merges", false);
  if (!ignore_merges) return ignore_merges.error();
  impl.model.ignore_merges = *ignore_merges;

  auto vocab = object_at(model, path, "vocab", true);
  if (!vocab) return vocab.error();
  vocab_text_.reserve((*vocab)->size());
  impl.model.vocab.reserve((*vocab)->size());
  std::string bytes;
  for (const auto& kv : **vocab) {
    const std::string_view text = sv(kv.key());
    auto id = id_of(kv.value(), "model.vocab[\"" + std::string(text) + "\"]");
    if (!id) return id.error();
    vocab_text_.emplace(text, *id);
    bytes.clear();
    if (byte_level_to_bytes(text, bytes)) {
      impl.model.vocab.emplace(bytes, *id);
      impl.set_token(*id, bytes, TokenEntry::kModel);
    } else {
      // Not byte-level text (e.g. DeepSeek's "<｜begin▁of▁sentence｜>"): BPE never produces it,
      // and tokenizers' ByteLevel decoder gives such a token's text as it is.
      impl.set_token(*id, text, TokenEntry::kModel);
    }
  }
  for (int b = 0; b < 256; ++b) {
    auto it = impl.model.vocab.find(std::string_view(bytes.assign(1, char(b))));
    impl.model.byte_ids[size_t(b)] = it == impl.model.vocab.end() ? -1 : it->second;
  }
  if (const json::value* unk = member(model, "unk_token")) {
    if (!unk->is_string()) return error("model.unk_token", "expected a string");
    auto it = vocab_text_.find(sv(unk->get_string()));
    impl.model.unk_id = it == vocab_text_.end() ? -1 : it->second;
  }

  auto merges = array_at(model, path, "merges");
  if (!merges) return merges.error();
  std::string joined;
  for (size_t i = 0; i < (*merges)->size(); ++i) {
    const json::value& m = (**merges)[i];
    std::string_view left, right;
    if (m.is_string()) {
      // "a b": split at the first space, as tokenizers' splitn(2, ' ').
      const std::string_view s = sv(m.get_string());
      const size_t space = s.find(' ');
      if (space == std::string_view::npos) {
        return error(at("model.merges", i), "expected \"left right\" (two tokens, one space)");
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.get_array().size() == 2 && m.get_array()[0].is_string() &&
               m.get_array()[1].is_string()) {
      left = sv(m.get_array()[0].get_string());
      right = sv(m.get_array()[1].get_string());
    } else {
      return error(at("model.merges", i),
                   "expected a string \"left right\" or an array [\"left\", \"right\"]");
    }
    joined.assign(left).append(right);
    int32_t ids[3];
    const std::string_view parts[3] = {left, right, joined};
    for (int k = 0; k < 3; ++k) {
      auto it = vocab_text_.find(parts[k]);
      if (it == vocab_text_.end()) {
        return error(at("model.merges", i),
                     "token '" + std::string(parts[k]) + "' is not in model.vocab");
      }
      ids[k] = it->second;
    }
    impl.model.merges.insert(ids[0], ids[1], PairTable::Merge{uint32_t(i), ids[2]});
  }
  return Status::Ok();
}

Status Loader::load_added_tokens(const json::object& root, Impl& impl) {
  const json::value* v = member(root, "added_tokens");
  if (v == nullptr) return Status::Ok();
  if (!v->is_array()) return error("added_tokens", "expected an array");
  // Ids as tokenizers' AddedVocabulary::add_tokens gives them, which is not always the "id" in
  // the file: a token in the model's vocabulary keeps that id; another gets the vocabulary size,
  // or one more than the largest added id once that reaches the vocabulary size.
  const auto vocab_size = int64_t(vocab_text_.size());
  std::unordered_map<std::string, int32_t> added;
  int64_t max_added = -1;
  std::string bytes, normalized;
  const auto& tokens = v->get_array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string path = at("added_tokens", i);
    if (!tokens[i].is_object()) return error(path, "expected an object");
    const json::object& t = tokens[i].get_object();
    auto content = string_at(t, path, "content");
    if (!content) return content.error();
    for (std::string_view flag : {"single_word", "lstrip", "rstrip"}) {
      auto set = bool_at(t, path, flag, false);
      if (!set) return set.error();
      if (*set) {
        return error(at(path, flag),
                     "true is not supported (token '" + std::string(*content) + "')");
      }
    }
    auto special = bool_at(t, path, "special", false);
    if (!special) return special.error();
    // tokenizers' AddedToken default: normalized = !special.
    auto is_normalized = bool_at(t, path, "normalized", !*special);
    if (!is_normalized) return is_normalized.error();
    if (content->empty()) continue;

    int32_t id;
    if (auto a = added.find(std::string(*content)); a != added.end()) {
      id = a->second;
    } else if (auto m = vocab_text_.find(*content); m != vocab_text_.end()) {
      id = m->second;
    } else if (max_added < 0) {
      id = int32_t(vocab_size);
    } else {
      id = int32_t(max_added >= vocab_size || vocab_size == 0 ? max_added + 1 : vocab_size);
    }
    added[std::string(*content)] = id;
    max_added = std::max<int64_t>(max_added, id);

    if (*is_normalized && impl.normalizer.active()) {
      normalized.clear();
      if (!impl.normalizer.normalize(*content, normalized)) normalized.assign(*content);
      impl.normalized_added.add(normalized, id);
    } else if (*is_normalized) {
      impl.normalized_added.add(*content, id);
    } else {
      impl.raw_added.add(*content, id);
    }
    // Decoded like any token by the ByteLevel decoder: byte-level text back to bytes, other
    // text as it is.
    bytes.clear();
    if (!byte_level_to_bytes(*content, bytes)) bytes.assign(*content);
    impl.set_token(id, bytes, *special ? TokenEntry::kSpecial : TokenEntry::kAdded);
  }
  return Status::Ok();
}

Status Loader::load_normalizer(const json::value& v, std::string_view path, NormalForm& form) {
  if (v.is_null()) return Status::Ok();
  if (!v.is_object()) return error(path, "expected an object or null");
  const json::object& obj = v.get_object();
  auto type = type_of(obj, path);
  if (!type) return type.error();
  if (*type == "Sequence") {
    auto list = array_at(obj, path, "normalizers");
    if (!list) return list.error();
    for (size_t i = 0; i < (*list)->size(); ++i) {
      Status s = load_normalizer((**list)[i], at(at(path, "normalizers"), i), form);
      if (!s) return s;
    }
    return Status::Ok();
  }
  NormalForm f;
  if (*type == "NFC") {
    f = NormalForm::kNfc;
  } else if (*type == "NFD") {
    f = NormalForm::kNfd;
  } else if (*type == "NFKC") {
    f = NormalForm::kNfkc;
  } else if (*type == "NFKD") {
    f = NormalForm::kNfkd;
  } else {
    return error(at(path, "type"), "normalizer '" + std::string(*type) +
                                       "' is not supported (only NFC, NFD, NFKC, NFKD)");
  }
  if (form != NormalForm::kNone && form != f) {
    return error(path, "more than one normalization form in a sequence is not supported");
  }
  form = f;
  return Status::Ok();
}

Status Loader::load_pre_tokenizer(const json::value& v, std::string_view path, Impl& impl,
                                  int& byte_levels) {
  if (!v.is_object()) return error(path, "expected an object");
  const json::object& obj = v.get_object();
  auto type = type_of(obj, path);
  if (!type) return type.error();
  if (*type == "Sequence") {
    auto list = array_at(obj, path, "pretokenizers");
    if (!list) return list.error();
    for (size_t i = 0; i < (*list)->size(); ++i) {
      Status s =
          load_pre_tokenizer((**list)[i], at(at(path, "pretokenizers"), i), impl, byte_levels);
      if (!s) return s;
    }
    return Status::Ok();
  }
  if (byte_levels > 0) {
    return error(path, "a pre-tokenizer after ByteLevel is not supported (BPE runs on bytes)");
  }
  if (*type == "Split") {
    auto invert = bool_at(obj, path, "invert", false);
    if (!invert) return invert.error();
    if (*invert) return error(at(path, "invert"), "true is not supported");
    auto behavior = string_at(obj, path, "behavior");
    if (!behavior) return behavior.error();
    if (*behavior != "Isolated") {
      return error(at(path, "behavior"),
                   "'" + std::string(*behavior) + "' is not supported (only Isolated)");
    }
    auto pattern = object_at(obj, path, "pattern", true);
    if (!pattern) return pattern.error();
    std::string regex;
    const std::string pattern_path = at(path, "pattern");
    if (const json::value* r = member(**pattern, "Regex")) {
      if (!r->is_string()) return error(at(pattern_path, "Regex"), "expected a string");
      regex = sv(r->get_string());
    } else if (const json::value* s = member(**pattern, "String")) {
      if (!s->is_string()) return error(at(pattern_path, "String"), "expected a string");
      regex = Regex::escape(sv(s->get_string()));
    } else {
      return error(pattern_path, "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    auto compiled = Regex::compile(regex);
    if (!compiled) return error(pattern_path, compiled.error().message);
    impl.steps.push_back(PreTokenizerStep{std::move(*compiled), false});
    return Status::Ok();
  }
  if (*type == "ByteLevel") {
    ++byte_levels;
    auto prefix = bool_at(obj, path, "add_prefix_space", true);
    if (!prefix) return prefix.error();
    auto use_regex = bool_at(obj, path, "use_regex", true);
    if (!use_regex) return use_regex.error();
    PreTokenizerStep step;
    step.add_prefix_space = *prefix;
    if (*use_regex) {
      auto compiled = Regex::compile(kGpt2Pattern);
      if (!compiled) return error(path, compiled.error().message);
      step.regex = std::move(*compiled);
    }
    if (step.regex || step.add_prefix_space) impl.steps.push_back(std::move(step));
    return Status::Ok();
  }
  return error(at(path, "type"), "pre-tokenizer '" + std::string(*type) +
                                     "' is not supported (only Sequence, Split, ByteLevel)");
}

Status Loader::load_post_processor(const json::value& v, std::string_view path, Impl& impl) {
  if (v.is_null()) return Status::Ok();
  if (!v.is_object()) return error(path, "expected an object or null");
  const json::object& obj = v.get_object();
  auto type = type_of(obj, path);
  if (!type) return type.error();
  if (*type == "ByteLevel") return Status::Ok();  // offsets only
  if (*type == "Sequence") {
    auto list = array_at(obj, path, "processors");
    if (!list) return list.error();
    for (size_t i = 0; i < (*list)->size(); ++i) {
      Status s = load_post_processor((**list)[i], at(at(path, "processors"), i), impl);
      if (!s) return s;
    }
    return Status::Ok();
  }
  if (*type != "TemplateProcessing") {
    return error(at(path, "type"), "post-processor '" + std::string(*type) +
                                       "' is not supported (only ByteLevel, TemplateProcessing)");
  }
  auto single = array_at(obj, path, "single");
  if (!single) return single.error();
  auto specials = object_at(obj, path, "special_tokens", false);
  if (!specials) return specials.error();
  bool after_sequence = false;
  for (size_t i = 0; i < (*single)->size(); ++i) {
    const std::string item_path = at(at(path, "single"), i);
    const json::value& item = (**single)[i];
    if (!item.is_object()) return error(item_path, "expected an object");
    if (member(item.get_object(), "Sequence") != nullptr) {
      after_sequence = true;
      continue;
    }
    auto special = object_at(item.get_object(), item_path, "SpecialToken", true);
    if (!special) return special.error();
    auto name = string_at(**special, at(item_path, "SpecialToken"), "id");
    if (!name) return name.error();
    const json::value* entry = *specials == nullptr ? nullptr : member(**specials, *name);
    const std::string entry_path = at(at(path, "special_tokens"), *name);
    if (entry == nullptr || !entry->is_object()) return error(entry_path, "missing");
    auto ids = array_at(entry->get_object(), entry_path, "ids");
    if (!ids) return ids.error();
    for (size_t k = 0; k < (*ids)->size(); ++k) {
      auto id = id_of((**ids)[k], at(at(entry_path, "ids"), k));
      if (!id) return id.error();
      (after_sequence ? impl.suffix_ids : impl.prefix_ids).push_back(*id);
    }
  }
  return Status::Ok();
}

Status Loader::load_decoder(const json::object& root) {
  auto decoder = object_at(root, "", "decoder", true);
  if (!decoder) return decoder.error();
  auto type = type_of(**decoder, "decoder");
  if (!type) return type.error();
  if (*type != "ByteLevel") {
    return error("decoder.type",
                 "decoder '" + std::string(*type) + "' is not supported (only ByteLevel)");
  }
  return Status::Ok();
}

Status Loader::load(const json::object& root, Impl& impl) {
  auto model = object_at(root, "", "model", true);
  if (!model) return model.error();
  if (Status s = load_model(**model, impl); !s) return s;

  NormalForm form = NormalForm::kNone;
  if (const json::value* n = root.if_contains("normalizer")) {
    if (Status s = load_normalizer(*n, "normalizer", form); !s) return s;
  }
  impl.normalizer = Normalizer(form);
  if (Status s = load_added_tokens(root, impl); !s) return s;

  const json::value* pre = member(root, "pre_tokenizer");
  if (pre == nullptr) {
    return error("pre_tokenizer",
                 "missing; only byte-level BPE (a ByteLevel pre-tokenizer) is "
                 "supported");
  }
  int byte_levels = 0;
  if (Status s = load_pre_tokenizer(*pre, "pre_tokenizer", impl, byte_levels); !s) return s;
  if (byte_levels == 0) {
    return error("pre_tokenizer", "no ByteLevel step; only byte-level BPE is supported");
  }
  if (const json::value* post = root.if_contains("post_processor")) {
    if (Status s = load_post_processor(*post, "post_processor", impl); !s) return s;
  }
  if (Status s = load_decoder(root); !s) return s;
  return Status::Ok();
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_hf_json(std::string_view text, std::string_view source) {
  json::stream_parser parser;
  boost::system::error_code ec;
  const size_t consumed = parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    const size_t at = std::min(consumed, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + ptrdiff_t(at), '\n');
    return Error{std::string(source) + ": invalid JSON at byte " + std::to_string(at) + " (line " +
                 std::to_string(line) + "): " + ec.message()};
  }
  const json::value root = parser.release();
  if (!root.is_object()) return Error{std::string(source) + ": expected a JSON object"};
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  Loader loader(source);
  if (Status s = loader.load(root.get_object(), *impl); !s) return s.error();
  return Tokenizer(std::move(impl));
}

Expected<Tokenizer> Tokenizer::from_hf_json_file(const std::filesystem::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return from_hf_json(*text, path.string());
}

}  // namespace ib::tokenizer
