#include "tune/formula.h"
#include "core/numeric.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace ib::tune {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c) || c == '.';
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Control bytes are echoed as '?': one for one, so offsets in messages still point at the text.
std::string shown(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

}  // namespace

// Recursive descent, one function a grammar rule, emitting postfix steps as it goes. The
// recursion is bounded by kMaxDepth: each level of nesting is a '(' or a min/max call.
class Formula::Parser {
 public:
  Parser(std::string_view text, const std::function<bool(std::string_view)>& known_metric,
         Formula& out)
      : text_(text), known_metric_(known_metric), out_(out) {}

  std::optional<Error> run() {
    skip_space();
    if (pos_ == text_.size()) return fail("the expression is empty");
    if (!expr()) return error_;
    skip_space();
    if (pos_ < text_.size()) {
      if (text_[pos_] == ')') return fail(fmt::format("unmatched ')' at offset {}", pos_));
      return fail(fmt::format("unexpected '{}' at offset {}", shown(text_.substr(pos_, 1)), pos_));
    }
    return std::nullopt;
  }

 private:
  std::optional<Error> fail(std::string_view why) {
    error_ = Error{fmt::format("--objective '{}': {}", shown(text_), why)};
    return error_;
  }

  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  // The next non-space character, '\0' at the end.
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  void emit(Op op) {
    out_.program_.push_back(Step{op});
    // Operands push one value, binary operators pop two and push one, negation keeps the count.
    if (op == Op::kNumber || op == Op::kMetric) {
      out_.max_stack_ = std::max(out_.max_stack_, ++stack_);
    } else if (op != Op::kNeg) {
      --stack_;
    }
  }

  bool expr() {
    if (!term()) return false;
    for (char c = peek(); c == '+' || c == '-'; c = peek()) {
      ++pos_;
      if (!term()) return false;
      emit(c == '+' ? Op::kAdd : Op::kSub);
    }
    return true;
  }

  bool term() {
    if (!unary()) return false;
    for (char c = peek(); c == '*' || c == '/'; c = peek()) {
      ++pos_;
      if (!unary()) return false;
      emit(c == '*' ? Op::kMul : Op::kDiv);
    }
    return true;
  }

  bool unary() {
    if (peek() == '-') {
      ++pos_;
      if (!primary()) return false;
      emit(Op::kNeg);
      return true;
    }
    return primary();
  }

  bool primary() {
    const char c = peek();
    if (is_digit(c) || (c == '.' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
      return number();
    }
    if (is_name_start(c)) return name();
    if (c == '(') {
      const size_t open = pos_;
      if (!enter(open)) return false;
      ++pos_;
      if (!expr() || !close(open)) return false;
      --depth_;
      return true;
    }
    fail(fmt::format("expected a number, a metric or '(' at offset {}", pos_));
    return false;
  }

  bool enter(size_t at) {
    if (++depth_ > kMaxDepth) {
      fail(fmt::format("nested deeper than {} levels at offset {}", kMaxDepth, at));
      return false;
    }
    return true;
  }

  bool close(size_t open) {
    if (peek() != ')') {
      fail(fmt::format("expected ')' at offset {} (to close the '(' at offset {})", pos_, open));
      return false;
    }
    ++pos_;
    return true;
  }

  bool number() {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ == text_.size() || !is_digit(text_[pos_])) {
        // "2e" or "2e+x": an exponent without digits is a typo, not a number and a name.
        fail(fmt::format("malformed number '{}' at offset {}",
                         shown(text_.substr(start, pos_ - start)), start));
        return false;
      }
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    const std::string_view lexeme = text_.substr(start, pos_ - start);
    double v = 0;
    const auto [end, ec] = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), v);
    if (ec != std::errc() || end != lexeme.data() + lexeme.size() || !std::isfinite(v)) {
      fail(fmt::format("number '{}' is out of range at offset {}", lexeme, start));
      return false;
    }
    emit(Op::kNumber);
    out_.program_.back().number = v;
    return true;
  }

  bool name() {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    const std::string_view id = text_.substr(start, pos_ - start);
    if (id == "min" || id == "max") return call(id, start);
    if (!known_metric_(id)) {
      if (peek() == '(') {
        fail(fmt::format("unknown function '{}' at offset {} (there are min and max)", id, start));
      } else {
        fail(fmt::format("unknown metric '{}' at offset {}", id, start));
      }
      return false;
    }
    auto& metrics = out_.metrics_;
    const auto it = std::find(metrics.begin(), metrics.end(), id);
    const auto index = static_cast<size_t>(it - metrics.begin());
    if (it == metrics.end()) metrics.emplace_back(id);
    emit(Op::kMetric);
    out_.program_.back().metric = index;
    return true;
  }

  // min(a, b) and max(a, b).
  bool call(std::string_view fn, size_t start) {
    if (peek() != '(') {
      fail(fmt::format("expected '(' after '{}' at offset {}", fn, pos_));
      return false;
    }
    const size_t open = pos_;
    if (!enter(start)) return false;
    ++pos_;
    if (!expr()) return false;
    if (peek() != ',') {
      fail(fmt::format("expected ',' at offset {} ('{}' takes two arguments)", pos_, fn));
      return false;
    }
    ++pos_;
    if (!expr() || !close(open)) return false;
    --depth_;
    emit(fn == "min" ? Op::kMin : Op::kMax);
    return true;
  }

  std::string_view text_;
  const std::function<bool(std::string_view)>& known_metric_;
  Formula& out_;
  size_t pos_ = 0;
  int depth_ = 0;
  size_t stack_ = 0;
  std::optional<Error> error_;
};

Expected<Formula> Formula::parse(std::string_view text,
                                 const std::function<bool(std::string_view)>& known_metric) {
  // Not echoed: a text this long is no objective anyone typed.
  if (text.size() > kMaxLength) {
    return Error{fmt::format("--objective: {} characters, more than the {} allowed", text.size(),
                             kMaxLength)};
  }
  Formula f;
  f.text_ = std::string(text);
  Parser parser(text, known_metric, f);
  if (auto error = parser.run()) return std::move(*error);
  return f;
}

double Formula::eval(const std::function<double(std::string_view)>& value) const {
  std::vector<double> values;
  values.reserve(metrics_.size());
  for (const auto& m : metrics_) {
    const double v = value(m);
    if (!std::isfinite(v)) return kNaN;
    values.push_back(v);
  }
  std::vector<double> stack;
  stack.reserve(max_stack_);
  for (const Step& s : program_) {
    double r = 0;
    if (s.op == Op::kNumber) {
      r = s.number;
    } else if (s.op == Op::kMetric) {
      r = values[s.metric];
    } else if (s.op == Op::kNeg) {
      r = -stack.back();
      stack.pop_back();
    } else {
      const double b = stack.back();
      stack.pop_back();
      const double a = stack.back();
      stack.pop_back();
      switch (s.op) {
        case Op::kAdd:
          r = a + b;
          break;
        case Op::kSub:
          r = a - b;
          break;
        case Op::kMul:
          r = a * b;
          break;
        case Op::kDiv:
          if (b == 0) return kNaN;
          r = a / b;
          break;
        case Op::kMin:
          r = std::min(a, b);
          break;
        case Op::kMax:
          r = std::max(a, b);
          break;
        default:
          return kNaN;
      }
    }
    // An overflow anywhere makes the whole value meaningless, even where min/max would hide it.
    if (!std::isfinite(r)) return kNaN;
    stack.push_back(r);
  }
  return stack.size() == 1 ? stack.back() : kNaN;
}

bool Formula::is_single_metric() const {
  return program_.size() == 1 && program_.front().op == Op::kMetric;
}

}  // namespace ib::tune
