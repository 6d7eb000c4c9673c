#include "tokenizer/tokenizer.h"

#include "tokenizer/impl.h"

namespace ib::tokenizer {

void Tokenizer::Impl::set_token(int32_t id, std::string_view bytes, TokenEntry::Kind kind) {
  if (id < 0) return;
  if (size_t(id) >= tokens.size()) tokens.resize(size_t(id) + 1);
  tokens[size_t(id)] = TokenEntry{uint32_t(token_bytes.size()), uint32_t(bytes.size()), kind};
  token_bytes.append(bytes);
}

namespace {

using Impl = Tokenizer::Impl;

// Runs pre-tokenizer steps [step..] on `piece` and BPE on what comes out.
void pre_tokenize_and_encode(const Impl& impl, size_t step, std::string_view piece,
                             std::vector<int32_t>& out) {
  // Steps with nothing to do (ByteLevel without regex or prefix space) were dropped at load.
  if (step == impl.steps.size()) {
    impl.model.encode_piece(piece, out);
    return;
  }
  const PreTokenizerStep& s = impl.steps[step];
  std::string prefixed;
  if (s.add_prefix_space && !piece.empty() && piece[0] != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!s.regex) {
    pre_tokenize_and_encode(impl, step + 1, piece, out);
    return;
  }
  s.regex->split_isolated(piece, [&](size_t begin, size_t end) {
    pre_tokenize_and_encode(impl, step + 1, piece.substr(begin, end - begin), out);
  });
}

// Normalises `text` (no added token of the raw kind inside), matches the normalised added tokens,
// and encodes the rest.
void encode_plain(const Impl& impl, std::string_view text, std::vector<int32_t>& out) {
  // Reused per thread (encode_plain never runs inside itself).
  thread_local std::string normalized;
  normalized.clear();
  if (impl.normalizer.active() && impl.normalizer.normalize(text, normalized)) text = normalized;
  impl.normalized_added.split(
      text,
      [&](size_t begin, size_t end) {
        pre_tokenize_and_encode(impl, 0, text.substr(begin, end - begin), out);
      },
      [&](int32_t id) { out.push_back(id); });
}

}  // namespace

void Tokenizer::encode_into(std::string_view text, std::vector<int32_t>& out,
                            EncodeOptions options) const {
  const Impl& impl = *impl_;
  std::string repaired;
  if (!is_valid_utf8(text)) {
    append_utf8_lossy(repaired, text);
    text = repaired;
  }
  if (options.add_special_tokens) {
    out.insert(out.end(), impl.prefix_ids.begin(), impl.prefix_ids.end());
  }
  impl.raw_added.split(
      text,
      [&](size_t begin, size_t end) { encode_plain(impl, text.substr(begin, end - begin), out); },
      [&](int32_t id) { out.push_back(id); });
  if (options.add_special_tokens) {
    out.insert(out.end(), impl.suffix_ids.begin(), impl.suffix_ids.end());
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  encode_into(text, ids, options);
  return ids;
}

size_t Tokenizer::count(std::string_view text, EncodeOptions options) const {
  thread_local std::vector<int32_t> ids;
  ids.clear();
  encode_into(text, ids, options);
  return ids.size();
}

std::string Tokenizer::decode(std::span<const int32_t> ids, DecodeOptions options) const {
  const Impl& impl = *impl_;
  thread_local std::string bytes;
  bytes.clear();
  for (const int32_t id : ids) {
    if (id < 0 || size_t(id) >= impl.tokens.size()) continue;
    const TokenEntry& t = impl.tokens[size_t(id)];
    if (t.kind == TokenEntry::kNone) continue;
    if (t.kind == TokenEntry::kSpecial && options.skip_special_tokens) continue;
    bytes.append(impl.token_bytes, t.offset, t.size);
  }
  std::string out;
  out.reserve(bytes.size());
  append_utf8_lossy(out, bytes);
  return out;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view text) const {
  const Impl& impl = *impl_;
  std::optional<int32_t> found;
  auto match_whole = [&](const AddedTokenMatcher& m) {
    if (found) return;
    int tokens = 0;
    bool plain = false;
    int32_t last = -1;
    m.split(
        text, [&](size_t, size_t) { plain = true; },
        [&](int32_t id) {
          ++tokens;
          last = id;
        });
    if (tokens == 1 && !plain) found = last;
  };
  match_whole(impl.raw_added);
  match_whole(impl.normalized_added);
  if (found) return found;
  if (auto it = impl.model.vocab.find(text); it != impl.model.vocab.end()) return it->second;
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->tokens.size() &&
         impl_->tokens[size_t(id)].kind == TokenEntry::kSpecial;
}

int32_t Tokenizer::id_limit() const {
  return int32_t(impl_->tokens.size());
}

const std::string& Tokenizer::source() const {
  return impl_->source;
}

std::vector<SpecialToken> o200k_harmony_special_tokens() {
  std::vector<SpecialToken> t = {
      {"<|startoftext|>", 199998},
      {"<|endoftext|>", 199999},
      {"<|reserved_200000|>", 200000},
      {"<|reserved_200001|>", 200001},
      {"<|return|>", 200002},
      {"<|constrain|>", 200003},
      {"<|reserved_200004|>", 200004},
      {"<|channel|>", 200005},
      {"<|start|>", 200006},
      {"<|end|>", 200007},
      {"<|message|>", 200008},
      {"<|reserved_200009|>", 200009},
      {"<|reserved_200010|>", 200010},
      {"<|reserved_200011|>", 200011},
      {"<|call|>", 200012},
  };
  // tiktoken's o200k_harmony: reserved ids up to 201087, except 200018.
  for (int32_t id = 200013; id < 201088; ++id) {
    if (id == 200018) {
      t.push_back({"<|endofprompt|>", id});
    } else {
      t.push_back({"<|reserved_" + std::to_string(id) + "|>", id});
    }
  }
  return t;
}

}  // namespace ib::tokenizer
