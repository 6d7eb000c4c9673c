// Loading a tiktoken rank file (`<base64 of the token's bytes> <rank>` per line; the rank is the
// id) into Tokenizer::Impl. tiktoken's BPE merges the adjacent pair whose joined bytes have the
// lowest rank; the pair table holds, for every token, each split of it into two tokens, so the
// shared BPE (bpe.cc) runs it unchanged.
#include <string>

#include "core/files.h"
#include "tokenizer/impl.h"
#include "tokenizer/tokenizer.h"

namespace ib::tokenizer {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with '=' padding. False on a malformed input.
bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  if (in.size() % 4 != 0) return false;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') {
      // Padding only at the end, at most two.
      if (in.size() - i > 2 || in.find_first_not_of('=', i) != std::string_view::npos) {
        return false;
      }
      break;
    }
    const int v = base64_value(in[i]);
    if (v < 0) return false;
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  return true;
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_tiktoken(std::string_view ranks, std::string_view source,
                                             std::string_view pattern,
                                             const std::vector<SpecialToken>& special_tokens) {
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  const std::string where(source);
  std::string bytes;
  size_t line_no = 0, pos = 0;
  while (pos < ranks.size()) {
    size_t eol = ranks.find('\n', pos);
    if (eol == std::string_view::npos) eol = ranks.size();
    std::string_view line = ranks.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const auto bad = [&](std::string_view what) {
      return Error{where + ":" + std::to_string(line_no) + ": " + std::string(what)};
    };
    if (space == std::string_view::npos) return bad("expected '<base64> <rank>'");
    if (!base64_decode(line.substr(0, space), bytes) || bytes.empty()) {
      return bad("invalid base64 token");
    }
    const std::string_view rank_text = line.substr(space + 1);
    int64_t rank = 0;
    if (rank_text.empty() || rank_text.size() > 10) return bad("invalid rank");
    for (char c : rank_text) {
      if (c < '0' || c > '9') return bad("invalid rank");
      rank = rank * 10 + (c - '0');
    }
    if (rank > INT32_MAX) return bad("invalid rank");
    if (!impl->model.vocab.emplace(bytes, int32_t(rank)).second) {
      return bad("the same token bytes appear twice");
    }
    impl->set_token(int32_t(rank), bytes, TokenEntry::kModel);
  }
  if (impl->model.vocab.empty()) return Error{where + ": no tokens"};

  for (int b = 0; b < 256; ++b) {
    auto it = impl->model.vocab.find(std::string_view(bytes.assign(1, char(b))));
    impl->model.byte_ids[size_t(b)] = it == impl->model.vocab.end() ? -1 : it->second;
  }
  for (const auto& [token, id] : impl->model.vocab) {
    const std::string_view t = token;
    for (size_t k = 1; k < t.size(); ++k) {
      auto left = impl->model.vocab.find(t.substr(0, k));
      if (left == impl->model.vocab.end()) continue;
      auto right = impl->model.vocab.find(t.substr(k));
      if (right == impl->model.vocab.end()) continue;
      impl->model.merges.insert(left->second, right->second, PairTable::Merge{uint32_t(id), id});
    }
  }
  impl->model.ignore_merges = true;  // tiktoken looks the whole piece up first

  auto regex = Regex::compile(pattern);
  if (!regex) return Error{where + ": split pattern: " + regex.error().message};
  impl->steps.push_back(PreTokenizerStep{std::move(*regex), false});
  for (const SpecialToken& s : special_tokens) {
    if (s.content.empty() || s.id < 0) {
      return Error{where + ": special token '" + s.content + "': empty text or negative id"};
    }
    impl->raw_added.add(s.content, s.id);
    impl->set_token(s.id, s.content, TokenEntry::kSpecial);
  }
  return Tokenizer(std::move(impl));
}

Expected<Tokenizer> Tokenizer::from_tiktoken_file(const std::filesystem::path& path,
                                                  std::string_view pattern,
                                                  const std::vector<SpecialToken>& special_tokens) {
  auto text = read_file(path);
  if (!text) return text.error();
  return from_tiktoken(*text, path.string(), pattern, special_tokens);
}

}  // namespace ib::tokenizer
