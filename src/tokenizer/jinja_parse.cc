// The Jinja lexer and parser: template text to the tree of jinja.h.
//
// The lexer reproduces jinja2.lexer with trim_blocks and lstrip_blocks: newlines normalised to
// \n and one trailing newline dropped; `{%-`/`-%}` strip all whitespace on their side; a block
// or comment tag alone on its line (only spaces and tabs before it) loses that indentation unless
// written `{%+`; the newline right after `%}` or `#}` is dropped unless written `+%}`. The parser
// follows jinja2.parser's grammar and precedence. Constructs outside the subset (include,
// extends, call blocks, recursive loops, unknown filters or tests, ...) are refused here, with the
// line, so that render() never meets them.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "tokenizer/jinja.h"
#include "tokenizer/unicode.h"

namespace ib::tokenizer::jinja {
namespace {

struct SyntaxError {
  std::string message;
  int line;
};

enum class Tok : uint8_t {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof,
};

struct Token {
  Tok type;
  std::string text;  // data, name, operator, or the decoded string literal
  int line;
  int64_t i = 0;
  double f = 0;
};

// The byte length of the Python whitespace character (str.isspace) at `pos`, or 0.
size_t space_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  const auto c = static_cast<uint8_t>(s[pos]);
  if (c < 0x80) return is_space(c) ? 1 : 0;
  const int n = utf8_step(s.substr(pos));
  if (n <= 0) return 0;
  const std::u32string cp = decode_utf8(s.substr(pos, size_t(n)));
  return is_space(cp[0]) ? size_t(n) : 0;
}

size_t skip_spaces(std::string_view s, size_t pos) {
  while (size_t n = space_at(s, pos)) pos += n;
  return pos;
}

bool all_spaces(std::string_view s) {
  return !s.empty() && skip_spaces(s, 0) == s.size();
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<uint8_t>(c) >= 0x80;
}
bool name_char(char c) {
  return name_start(c) || is_digit(c);
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) {
    // Newlines as \n (jinja2 splits on \r\n, \r and \n and joins with \n), and without the
    // final one (keep_trailing_newline=False).
    src_.reserve(text.size());
    for (size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '\r') {
        src_ += '\n';
        if (k + 1 < text.size() && text[k + 1] == '\n') ++k;
      } else {
        src_ += text[k];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    for (size_t k = 0; k < src_.size(); ++k) {
      if (src_[k] == '\n') newlines_.push_back(k);
    }
  }

  std::vector<Token> run() {
    const std::string_view s = src_;
    size_t pos = 0;
    bool line_starting = true;
    while (pos < s.size()) {
      size_t tag = pos;
      while ((tag = s.find('{', tag)) != std::string_view::npos) {
        if (tag + 1 < s.size() && (s[tag + 1] == '{' || s[tag + 1] == '%' || s[tag + 1] == '#')) {
          break;
        }
        ++tag;
      }
      if (tag == std::string_view::npos) {
        emit(Tok::kData, std::string(s.substr(pos)), pos);
        break;
      }
      const char kind = s[tag + 1];
      size_t q = tag + 2;
      char sign = 0;
      if (q < s.size() && (s[q] == '-' || s[q] == '+')) sign = s[q++];
      size_t raw_end = 0;
      if (kind == '%') raw_end = match_raw_begin(q);
      emit_text(s.substr(pos, tag - pos), pos, sign, kind != '{', line_starting);
      if (kind == '#') {
        pos = lex_comment(q, tag);
      } else if (raw_end != 0) {
        pos = lex_raw(raw_end, tag);
      } else {
        pos = lex_tag(q, kind == '%', tag);
      }
      line_starting = pos > 0 && s[pos - 1] == '\n';
    }
    emit(Tok::kEof, "", s.size());
    return std::move(tokens_);
  }

 private:
  int line_at(size_t pos) const {
    return int(std::lower_bound(newlines_.begin(), newlines_.end(), pos) - newlines_.begin()) + 1;
  }

  [[noreturn]] void fail(const std::string& message, size_t pos) const {
    throw SyntaxError{message, line_at(pos)};
  }

  void emit(Tok type, std::string text, size_t pos) {
    tokens_.push_back(Token{type, std::move(text), line_at(pos)});
  }

  // Text before a tag, with the tag's whitespace control applied (jinja2's OptionalLStrip).
  void emit_text(std::string_view text, size_t pos, char sign, bool lstrip, bool line_starting) {
    std::string out;
    if (sign == '-') {
      out = strip(text, std::nullopt, false, true);
    } else {
      out = std::string(text);
      if (sign != '+' && lstrip) {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && all_spaces(text.substr(l_pos))) out.resize(l_pos);
      }
    }
    if (!out.empty()) emit(Tok::kData, std::move(out), pos);
  }

  // `{%(-|+|)\s*raw\s*(-%}\s*|%})` from just after the sign: the end of the match, or 0.
  size_t match_raw_begin(size_t q) const {
    const std::string_view s = src_;
    size_t p = skip_spaces(s, q);
    if (s.substr(p, 3) != "raw") return 0;
    p = skip_spaces(s, p + 3);
    if (s.substr(p, 3) == "-%}") return skip_spaces(s, p + 3);
    if (s.substr(p, 2) == "%}") return p + 2;
    return 0;
  }

  size_t lex_comment(size_t q, size_t tag) {
    const std::string_view s = src_;
    const size_t e = s.find("#}", q);
    if (e == std::string_view::npos) fail("Missing end of comment tag", tag);
    if (e > q && s[e - 1] == '-') return skip_spaces(s, e + 2);
    if (e > q && s[e - 1] == '+') return e + 2;
    return e + 2 < s.size() && s[e + 2] == '\n' ? e + 3 : e + 2;  // trim_blocks
  }

  size_t lex_raw(size_t begin, size_t tag) {
    const std::string_view s = src_;
    const bool line_starting = s[begin - 1] == '\n';
    for (size_t p = s.find("{%", begin); p != std::string_view::npos; p = s.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = 0;
      if (q < s.size() && (s[q] == '-' || s[q] == '+')) sign = s[q++];
      q = skip_spaces(s, q);
      if (s.substr(q, 6) != "endraw") continue;
      q = skip_spaces(s, q + 6);
      size_t end = 0;
      if (s.substr(q, 3) == "+%}") {
        end = q + 3;
      } else if (s.substr(q, 3) == "-%}") {
        end = skip_spaces(s, q + 3);
      } else if (s.substr(q, 2) == "%}") {
        end = q + 2 < s.size() && s[q + 2] == '\n' ? q + 3 : q + 2;
      } else {
        continue;
      }
      emit_text(s.substr(begin, p - begin), begin, sign, true, line_starting);
      return end;
    }
    fail("Missing end of raw directive", tag);
  }

  // The tokens of a {% %} or {{ }} tag from `q` (after the sign) through its end.
  size_t lex_tag(size_t q, bool block, size_t tag) {
    const std::string_view s = src_;
    emit(block ? Tok::kBlockBegin : Tok::kVarBegin, "", tag);
    std::string balance;
    size_t p = q;
    while (true) {
      if (p >= s.size()) {
        fail(std::string("unexpected end of template, expected '") + (block ? "%}" : "}}") + "'",
             tag);
      }
      if (balance.empty()) {
        size_t end = 0;
        if (block) {
          if (s.substr(p, 3) == "+%}") {
            end = p + 3;
          } else if (s.substr(p, 3) == "-%}") {
            end = skip_spaces(s, p + 3);
          } else if (s.substr(p, 2) == "%}") {
            end = p + 2 < s.size() && s[p + 2] == '\n' ? p + 3 : p + 2;
          }
        } else if (s.substr(p, 3) == "-}}") {
          end = skip_spaces(s, p + 3);
        } else if (s.substr(p, 2) == "}}") {
          end = p + 2;
        }
        if (end != 0) {
          emit(block ? Tok::kBlockEnd : Tok::kVarEnd, "", p);
          return end;
        }
      }
      if (const size_t n = space_at(s, p)) {
        p += n;
        continue;
      }
      const char c = s[p];
      if (is_digit(c)) {
        p = lex_number(p);
      } else if (name_start(c)) {
        size_t e = p;
        while (e < s.size() && name_char(s[e])) ++e;
        emit(Tok::kName, std::string(s.substr(p, e - p)), p);
        p = e;
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else {
        p = lex_operator(p, balance);
      }
    }
  }

  // `(\d+_)*\d+` at p: its end, or p.
  size_t digit_run(size_t p) const {
    const std::string_view s = src_;
    size_t e = p;
    while (e < s.size() && is_digit(s[e])) {
      while (e < s.size() && is_digit(s[e])) ++e;
      if (e + 1 < s.size() && s[e] == '_' && is_digit(s[e + 1])) ++e;
    }
    return e;
  }

  size_t exponent(size_t p) const {
    const std::string_view s = src_;
    if (p >= s.size() || (s[p] != 'e' && s[p] != 'E')) return 0;
    size_t q = p + 1;
    if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
    const size_t e = digit_run(q);
    return e > q ? e : 0;
  }

  size_t lex_number(size_t p) {
    const std::string_view s = src_;
    auto clean = [](std::string_view t) {
      std::string out;
      for (char c : t) {
        if (c != '_') out += c;
      }
      return out;
    };
    // float_re: digits with a fraction and/or an exponent, not right after a '.'.
    if (p == 0 || s[p - 1] != '.') {
      const size_t a = digit_run(p);
      size_t end = 0;
      if (a < s.size() && s[a] == '.' && digit_run(a + 1) > a + 1) {
        const size_t b = digit_run(a + 1);
        const size_t x = exponent(b);
        end = x ? x : b;
      } else if (const size_t x = exponent(a)) {
        end = x;
      }
      if (end != 0) {
        Token t{Tok::kFloat, std::string(s.substr(p, end - p)), line_at(p)};
        t.f = std::strtod(clean(t.text).c_str(), nullptr);
        tokens_.push_back(std::move(t));
        return end;
      }
    }
    int base = 10;
    size_t start = p, end = p;
    if (s[p] == '0' && p + 1 < s.size() &&
        std::string_view("bBoOxX").find(s[p + 1]) != std::string_view::npos) {
      const char b = char(std::tolower(s[p + 1]));
      base = b == 'b' ? 2 : b == 'o' ? 8 : 16;
      auto ok = [&](char c) {
        if (base == 2) return c == '0' || c == '1';
        if (base == 8) return c >= '0' && c <= '7';
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      };
      end = p + 2;
      while (end < s.size()) {
        if (ok(s[end])) {
          ++end;
        } else if (s[end] == '_' && end + 1 < s.size() && ok(s[end + 1])) {
          end += 2;
        } else {
          break;
        }
      }
      if (end == p + 2) fail("invalid integer literal", p);
      start = p + 2;
    } else if (s[p] == '0') {
      end = p + 1;
      while (end < s.size()) {
        if (s[end] == '0') {
          ++end;
        } else if (s[end] == '_' && end + 1 < s.size() && s[end + 1] == '0') {
          end += 2;
        } else {
          break;
        }
      }
    } else {
      end = digit_run(p);
    }
    const std::string digits = clean(s.substr(start, end - start));
    Token t{Tok::kInt, std::string(s.substr(p, end - p)), line_at(p)};
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.i, base);
    if (res.ec != std::errc()) fail("integer literal '" + t.text + "' is too large", p);
    tokens_.push_back(std::move(t));
    return end;
  }

  static int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A quoted literal, unescaped as Python's unicode-escape codec does.
  size_t lex_string(size_t p) {
    const std::string_view s = src_;
    const char quote = s[p];
    size_t e = p + 1;
    while (e < s.size() && s[e] != quote) e += s[e] == '\\' ? 2 : 1;
    if (e >= s.size()) fail("unterminated string literal", p);
    const std::string_view body = s.substr(p + 1, e - p - 1);
    std::string out;
    for (size_t k = 0; k < body.size(); ++k) {
      if (body[k] != '\\' || k + 1 >= body.size()) {
        out += body[k];
        continue;
      }
      const char c = body[++k];
      switch (c) {
        case '\n':
          break;  // line continuation
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t j = 1; j <= n; ++j) {
            const int h = k + j < body.size() ? hex_value(body[k + j]) : -1;
            if (h < 0) fail("invalid \\" + std::string(1, c) + " escape in a string literal", p);
            cp = cp * 16 + uint32_t(h);
          }
          if (cp > 0x10ffff) fail("invalid \\U escape in a string literal", p);
          append_utf8(out, (cp >= 0xd800 && cp < 0xe000) ? U'\uFFFD' : char32_t(cp));
          k += n;
          break;
        }
        case 'N':
          fail("\\N{...} escapes are not supported", p);
        default:
          if (c >= '0' && c <= '7') {
            uint32_t cp = 0;
            size_t j = 0;
            while (j < 3 && k + j < body.size() && body[k + j] >= '0' && body[k + j] <= '7') {
              cp = cp * 8 + uint32_t(body[k + j] - '0');
              ++j;
            }
            append_utf8(out, char32_t(cp));
            k += j - 1;
          } else {
            out += '\\';
            out += c;
          }
      }
    }
    Token t{Tok::kString, std::move(out), line_at(p)};
    tokens_.push_back(std::move(t));
    return e + 1;
  }

  size_t lex_operator(size_t p, std::string& balance) {
    const std::string_view s = src_;
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (s.substr(p, 2) == op) {
        emit(Tok::kOp, std::string(op), p);
        return p + 2;
      }
    }
    const char c = s[p];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      fail(std::string("unexpected char '") + c + "'", p);
    }
    if (c == '(' || c == '[' || c == '{') balance += c == '(' ? ')' : c == '[' ? ']' : '}';
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(std::string("unexpected '") + c + "'", p);
      if (balance.back() != c) {
        fail(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", p);
      }
      balance.pop_back();
    }
    emit(Tok::kOp, std::string(1, c), p);
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> newlines_;
  std::vector<Token> tokens_;
};

// Tags of Jinja that the subset refuses with a clear message (rather than "unknown tag").
bool unsupported_tag(std::string_view name) {
  return name == "include" || name == "extends" || name == "block" || name == "import" ||
         name == "from" || name == "call" || name == "autoescape" || name == "do";
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_template() {
    std::string ended;
    Body body = subparse({}, ended);
    return body;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxParseDepth) parser.fail("template nested too deeply");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  const Token& cur() const { return toks_[at_]; }
  const Token& look(size_t k = 1) const { return toks_[std::min(at_ + k, toks_.size() - 1)]; }
  void advance() {
    if (at_ + 1 < toks_.size()) ++at_;
  }
  bool is_op(std::string_view op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().type == Tok::kName && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::kData:
        return "template data";
      case Tok::kVarBegin:
        return "begin of print statement";
      case Tok::kVarEnd:
        return "end of print statement";
      case Tok::kBlockBegin:
        return "begin of statement block";
      case Tok::kBlockEnd:
        return "end of statement block";
      case Tok::kEof:
        return "end of template";
      case Tok::kString:
        return "string";
      default:
        return t.text;
    }
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw SyntaxError{message, cur().line};
  }

  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got '" + describe(cur()) + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::kName) fail("expected a name, got '" + describe(cur()) + "'");
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != Tok::kBlockEnd) {
      fail("expected end of statement block, got '" + describe(cur()) + "'");
    }
    advance();
  }

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // Nodes until a block tag named in `ends` (left unconsumed, its name in `ended`).
  Body subparse(const std::vector<std::string_view>& ends, std::string& ended) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::kEof) {
        if (!ends.empty()) {
          std::string want;
          for (std::string_view e : ends)
            want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          fail("unexpected end of template, expected " + want);
        }
        return body;
      }
      if (t.type == Tok::kData) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kText;
        n->line = t.line;
        n->text = t.text;
        body.push_back(std::move(n));
        advance();
      } else if (t.type == Tok::kVarBegin) {
        advance();
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kOutput;
        n->line = t.line;
        n->expr = parse_tuple(true, {}, false);
        if (cur().type != Tok::kVarEnd) {
          fail("expected end of print statement, got '" + describe(cur()) + "'");
        }
        advance();
        body.push_back(std::move(n));
      } else if (t.type == Tok::kBlockBegin) {
        advance();
        if (cur().type != Tok::kName) fail("tag name expected");
        for (std::string_view e : ends) {
          if (cur().text == e) {
            ended = cur().text;
            return body;
          }
        }
        body.push_back(parse_statement());
        expect_block_end();
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
  }

  // The body of a block statement: the block end, then nodes up to one of `ends`, whose name is
  // consumed (`ended`); the caller expects the closing block end.
  Body statements(const std::vector<std::string_view>& ends, std::string& ended) {
    expect_block_end();
    Body body = subparse(ends, ended);
    advance();
    return body;
  }

  NodePtr parse_statement() {
    const Token& t = cur();
    const std::string tag = t.text;
    auto n = std::make_unique<Node>();
    n->line = t.line;
    std::string ended;
    if (tag == "for") {
      advance();
      parse_for(*n);
    } else if (tag == "if") {
      advance();
      parse_if(*n);
    } else if (tag == "set") {
      advance();
      parse_set(*n);
    } else if (tag == "macro") {
      advance();
      parse_macro(*n);
    } else if (tag == "break" || tag == "continue") {
      advance();
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop");
      n->kind = tag == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
    } else if (tag == "print") {
      advance();
      n->kind = Node::Kind::kOutput;
      n->expr = parse_tuple(true, {}, false);
    } else if (tag == "with") {
      advance();
      parse_with(*n);
    } else if (tag == "filter") {
      advance();
      n->kind = Node::Kind::kFilterBlock;
      n->expr = parse_filter(nullptr, true);
      n->body = statements({"endfilter"}, ended);
    } else if (tag == "generation") {
      // transformers' AssistantTracker marks assistant text for masks; it renders as is.
      advance();
      n->kind = Node::Kind::kBody;
      n->body = statements({"endgeneration"}, ended);
    } else if (unsupported_tag(tag)) {
      fail("the '" + tag + "' tag is not supported");
    } else {
      fail("Encountered unknown tag '" + tag + "'");
    }
    return n;
  }

  // The rest of {% for targets in expr [if cond] %}...{% else %}...{% endfor %}.
  void parse_for(Node& n) {
    std::string ended;
    n.kind = Node::Kind::kFor;
    parse_targets(n.targets, n.unpack, "in");
    if (!skip_name("in")) fail("expected 'in' in a for loop, got '" + describe(cur()) + "'");
    n.expr = parse_tuple(false, {"recursive"}, false);
    if (skip_name("if")) n.cond = parse_expression(true);
    if (is_name("recursive")) fail("recursive for loops are not supported");
    ++loop_depth_;
    n.body = statements({"endfor", "else"}, ended);
    if (ended == "else") n.else_body = statements({"endfor"}, ended);
    --loop_depth_;
  }

  // The rest of {% if %}...{% elif %}...{% else %}...{% endif %}.
  void parse_if(Node& n) {
    std::string ended;
    n.kind = Node::Kind::kIf;
    ExprPtr cond = parse_tuple(false, {}, false);
    while (true) {
      Body body = statements({"elif", "else", "endif"}, ended);
      n.branches.emplace_back(std::move(cond), std::move(body));
      if (ended == "elif") {
        cond = parse_tuple(false, {}, false);
        continue;
      }
      if (ended == "else") n.branches.emplace_back(nullptr, statements({"endif"}, ended));
      break;
    }
  }

  // The rest of {% set targets = expr %}, {% set ns.attr = expr %} or a block set.
  void parse_set(Node& n) {
    std::string ended;
    n.kind = Node::Kind::kSet;
    if (cur().type == Tok::kName && look().type == Tok::kOp && look().text == ".") {
      n.targets.push_back(expect_name());
      advance();
      n.attr = expect_name();
    } else {
      parse_targets(n.targets, n.unpack, "=");
    }
    if (skip_op("=")) {
      n.expr = parse_tuple(true, {}, false);
    } else {
      if (!n.attr.empty() || n.unpack) fail("a block set needs one plain name");
      if (is_op("|")) fail("filters on a block set ({% set x | f %}) are not supported");
      n.kind = Node::Kind::kSetBlock;
      n.body = statements({"endset"}, ended);
    }
  }

  // The rest of {% macro name(params) %}...{% endmacro %}.
  void parse_macro(Node& n) {
    std::string ended;
    n.kind = Node::Kind::kMacro;
    n.name = expect_name();
    expect_op("(");
    while (!skip_op(")")) {
      if (!n.params.empty()) expect_op(",");
      if (skip_op(")")) break;
      std::string param = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expression(true);
      n.params.emplace_back(std::move(param), std::move(def));
    }
    const int saved = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot leave a macro
    n.body = statements({"endmacro"}, ended);
    loop_depth_ = saved;
  }

  // The rest of {% with a = x, b = y %}...{% endwith %}.
  void parse_with(Node& n) {
    std::string ended;
    n.kind = Node::Kind::kWith;
    while (cur().type != Tok::kBlockEnd) {
      if (!n.targets.empty()) expect_op(",");
      n.targets.push_back(expect_name());
      expect_op("=");
      n.values.push_back(parse_expression(true));
    }
    n.body = statements({"endwith"}, ended);
  }

  // Assignment targets: `x`, `a, b` or `(a, b)` up to `end` (a name like "in" or an operator).
  void parse_targets(std::vector<std::string>& targets, bool& unpack, std::string_view end) {
    const bool paren = skip_op("(");
    while (true) {
      targets.push_back(expect_name());
      if (!skip_op(",")) break;
      unpack = true;
      if (paren ? is_op(")") : (is_name(end) || is_op(end))) break;
    }
    if (paren) {
      expect_op(")");
      unpack = true;
    }
    if (cur().type == Tok::kOp && cur().text == ".") fail("can only assign to names here");
  }

  bool tuple_end(const std::vector<std::string_view>& extra) const {
    const Token& t = cur();
    if (t.type == Tok::kVarEnd || t.type == Tok::kBlockEnd || t.type == Tok::kEof) return true;
    if (t.type == Tok::kOp && t.text == ")") return true;
    if (t.type == Tok::kName) {
      for (std::string_view e : extra) {
        if (t.text == e) return true;
      }
    }
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, const std::vector<std::string_view>& extra,
                      bool explicit_parens) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail("expected an expression, got '" + describe(cur()) + "'");
    }
    auto e = make(Expr::Kind::kTuple, line);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    if (!with_condexpr) return parse_or();
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      advance();
      auto c = make(Expr::Kind::kCond, line);
      ExprPtr test = parse_or();
      ExprPtr other = skip_name("else") ? parse_expression(true) : nullptr;
      c->args.push_back(std::move(expr));
      c->args.push_back(std::move(test));
      c->args.push_back(std::move(other));
      expr = std::move(c);
    }
    return expr;
  }

  ExprPtr binary(Expr::Kind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(kind, line);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      advance();
      left = binary(Expr::Kind::kOr, "or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      advance();
      left = binary(Expr::Kind::kAnd, "and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      auto e = make(Expr::Kind::kNot, cur().line);
      advance();
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    std::vector<ExprPtr> operands;
    std::vector<std::string> ops;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                 t.text == "<=" || t.text == ">" || t.text == ">=")) {
        ops.push_back(t.text);
        advance();
      } else if (is_name("in")) {
        ops.push_back("in");
        advance();
      } else if (is_name("not") && look().type == Tok::kName && look().text == "in") {
        ops.push_back("notin");
        advance();
        advance();
      } else {
        break;
      }
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return first;
    auto e = make(Expr::Kind::kCompare, line);
    e->args.push_back(std::move(first));
    for (auto& o : operands) e->args.push_back(std::move(o));
    e->ops = std::move(ops);
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = cur().text;
      const int line = cur().line;
      advance();
      left = binary(Expr::Kind::kBinary, op, std::move(left), parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const int line = cur().line;
      advance();
      left = binary(Expr::Kind::kBinary, "~", std::move(left), parse_math2(), line);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = cur().text;
      const int line = cur().line;
      advance();
      left = binary(Expr::Kind::kBinary, op, std::move(left), parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      advance();
      left = binary(Expr::Kind::kBinary, "**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(is_op("-") ? Expr::Kind::kNeg : Expr::Kind::kPos, cur().line);
      advance();
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = cur();
    const int line = t.line;
    if (t.type == Tok::kName) {
      auto e = make(Expr::Kind::kConst, line);
      if (t.text == "true" || t.text == "True") {
        e->value = Value::boolean(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value::boolean(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value::none();
      } else {
        e->kind = Expr::Kind::kName;
        e->name = t.text;
      }
      advance();
      return e;
    }
    if (t.type == Tok::kString) {
      std::string s;
      while (cur().type == Tok::kString) {  // adjacent literals concatenate
        s += cur().text;
        advance();
      }
      auto e = make(Expr::Kind::kConst, line);
      e->value = Value::string(std::move(s));
      return e;
    }
    if (t.type == Tok::kInt || t.type == Tok::kFloat) {
      auto e = make(Expr::Kind::kConst, line);
      e->value = t.type == Tok::kInt ? Value::integer(t.i) : Value::floating(t.f);
      advance();
      return e;
    }
    if (is_op("(")) {
      advance();
      ExprPtr e = parse_tuple(true, {}, true);
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      advance();
      auto e = make(Expr::Kind::kList, line);
      while (!is_op("]")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("]")) break;
        e->args.push_back(parse_expression(true));
      }
      expect_op("]");
      return e;
    }
    if (is_op("{")) {
      advance();
      auto e = make(Expr::Kind::kDict, line);
      while (!is_op("}")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("}")) break;
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
      }
      expect_op("}");
      return e;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().type == Tok::kName) {
        auto e = make(Expr::Kind::kGetAttr, line);
        e->name = cur().text;
        advance();
        e->args.push_back(std::move(node));
        return e;
      }
      if (cur().type != Tok::kInt) fail("expected name or number after '.'");
      auto e = make(Expr::Kind::kGetItem, line);
      auto index = make(Expr::Kind::kConst, line);
      index->value = Value::integer(cur().i);
      advance();
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(index));
      return e;
    }
    expect_op("[");
    std::vector<ExprPtr> subs;
    while (!is_op("]")) {
      if (!subs.empty()) expect_op(",");
      subs.push_back(parse_subscribed());
    }
    expect_op("]");
    if (subs.size() == 1 && subs[0]->kind == Expr::Kind::kSlice && subs[0]->name == ":") {
      subs[0]->name.clear();
      subs[0]->args.insert(subs[0]->args.begin(), std::move(node));
      return std::move(subs[0]);
    }
    auto e = make(Expr::Kind::kGetItem, line);
    e->args.push_back(std::move(node));
    if (subs.size() == 1) {
      e->args.push_back(std::move(subs[0]));
    } else {
      auto tuple = make(Expr::Kind::kTuple, line);
      for (auto& s : subs) {
        if (s->kind == Expr::Kind::kSlice && s->name == ":") {
          fail("slices inside a tuple subscript are not supported");
        }
        tuple->args.push_back(std::move(s));
      }
      e->args.push_back(std::move(tuple));
    }
    return e;
  }

  // One subscript: an expression, or a slice (a kSlice whose args are start, stop, step).
  ExprPtr parse_subscribed() {
    const int line = cur().line;
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    advance();  // ':'
    auto slice = make(Expr::Kind::kSlice, line);
    slice->name = ":";  // a bare slice, until parse_subscript gives it its object
    slice->args.push_back(std::move(start));
    if (!is_op(":") && !is_op("]") && !is_op(",")) {
      slice->args.push_back(parse_expression(true));
    } else {
      slice->args.push_back(nullptr);
    }
    if (skip_op(":") && !is_op("]") && !is_op(",")) {
      slice->args.push_back(parse_expression(true));
    } else {
      slice->args.push_back(nullptr);
    }
    return slice;
  }

  // `( args )` into e->args (after any already there) and e->kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
      if (cur().type == Tok::kName && look().type == Tok::kOp && look().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("positional argument after a keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(Expr::Kind::kCall, cur().line);
    e->args.push_back(std::move(node));
    parse_call_args(*e);
    return e;
  }

  // `| name(args)` filters (one or, with `start_inline`, a chain starting without the pipe).
  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) advance();
      start_inline = false;
      const int line = cur().line;
      std::string name = expect_name();
      while (skip_op(".")) name += "." + expect_name();
      if (!known_filter(name)) fail("unknown filter '" + name + "'");
      auto e = make(Expr::Kind::kFilter, line);
      e->name = std::move(name);
      e->args.push_back(std::move(node));
      if (is_op("(")) parse_call_args(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = cur().line;
    advance();  // 'is'
    const bool negated = skip_name("not");
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    if (!known_test(name)) fail("unknown test '" + name + "'");
    auto e = make(Expr::Kind::kTest, line);
    e->name = std::move(name);
    e->args.push_back(std::move(node));
    const Token& t = cur();
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((t.type == Tok::kName || t.type == Tok::kString || t.type == Tok::kInt ||
                t.type == Tok::kFloat || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return e;
    auto n = make(Expr::Kind::kNot, line);
    n->args.push_back(std::move(e));
    return n;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> toks_;
  size_t at_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Expected<std::shared_ptr<const Program>> parse(std::string_view text, std::string_view source) {
  try {
    auto program = std::make_shared<Program>();
    program->source = std::string(source);
    Parser parser(Lexer(text).run());
    program->body = parser.parse_template();
    return std::shared_ptr<const Program>(std::move(program));
  } catch (const SyntaxError& e) {
    return Error{std::string(source) + ":" + std::to_string(e.line) + ": " + e.message};
  }
}

}  // namespace ib::tokenizer::jinja
