// Python semantics of template values: str(), repr(), ==, <, json.dumps, and the Unicode
// definitions Python's str methods use (whitespace, case mapping, line breaks).
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja.h"
#include "tokenizer/unicode.h"

namespace ib::tokenizer::jinja {

namespace json = boost::json;

Value Value::undefined(std::string hint) {
  Value v;
  v.s = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.b = b;
  return v;
}

Value Value::integer(int64_t n) {
  Value v;
  v.kind = Kind::kInt;
  v.i = n;
  return v;
}

Value Value::floating(double d) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = d;
  return v;
}

Value Value::string(std::string str) {
  Value v;
  v.kind = Kind::kString;
  v.s = std::move(str);
  return v;
}

Value Value::make_list(List items) {
  Value v;
  v.kind = Kind::kList;
  v.list = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::make_tuple(List items) {
  Value v = make_list(std::move(items));
  v.kind = Kind::kTuple;
  return v;
}

Value Value::make_dict(Dict d) {
  Value v;
  v.kind = Kind::kDict;
  v.dict = std::make_shared<const Dict>(std::move(d));
  return v;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.s));
  for (const auto& [k, v] : items) {
    if (equal(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.s == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kTuple:
      return "tuple";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "Namespace";
    case Value::Kind::kCallable:
      if (v.fn->type == Callable::Type::kMacro) return "Macro";
      return v.fn->type == Callable::Type::kMethod ? "builtin_function_or_method" : "function";
    case Value::Kind::kLoop:
      return "LoopContext";
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.b;
    case Value::Kind::kInt:
      return v.i != 0;
    case Value::Kind::kFloat:
      return v.f != 0;
    case Value::Kind::kString:
      return !v.s.empty();
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return !v.list->empty();
    case Value::Kind::kDict:
      return !v.dict->items.empty();
    default:
      return true;
  }
}

std::string repr_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // The shortest digits that read back as `d`, then Python's layout: positional for exponents
  // -4..15 (always with a fractional part), else d.ddde+XX.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, size_t(res.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  const int exp = std::stoi(std::string(sci.substr(e + 1)));
  const int decpt = exp + 1;
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (decpt <= 0) return out + "0." + std::string(size_t(-decpt), '0') + digits;
  if (size_t(decpt) >= digits.size()) {
    return out + digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
}

namespace {

// str.isprintable() of one code point: everything but the categories Cc, Cf, Cs, Co, Cn, Zl, Zp
// and Zs (the space itself is printable).
bool is_printable(char32_t c) {
  if (c == ' ') return true;
  if (c < 0x7f) return c >= 0x20;
  switch (u_charType(UChar32(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

void append_hex(std::string& out, const char* prefix, uint32_t cp, int width) {
  char b[16];
  std::snprintf(b, sizeof b, "%s%0*x", prefix, width, cp);
  out += b;
}

std::string repr_sequence(const List& items, char open, char close, bool tuple) {
  std::string out(1, open);
  for (size_t k = 0; k < items.size(); ++k) {
    if (k) out += ", ";
    out += repr(items[k]);
  }
  if (tuple && items.size() == 1) out += ',';
  return out + close;
}

std::string repr_dict(const Dict& d) {
  std::string out = "{";
  for (size_t k = 0; k < d.items.size(); ++k) {
    if (k) out += ", ";
    out += repr(d.items[k].first) + ": " + repr(d.items[k].second);
  }
  return out + "}";
}

}  // namespace

std::string repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decode_utf8(s)) {
    if (c == char32_t(quote) || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (is_printable(c)) {
      append_utf8(out, c);
    } else if (c < 0x100) {
      append_hex(out, "\\x", c, 2);
    } else if (c < 0x10000) {
      append_hex(out, "\\u", c, 4);
    } else {
      append_hex(out, "\\U", c, 8);
    }
  }
  return out + quote;
}

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kString:
      return repr_string(v.s);
    default:
      return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.b ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.i);
    case Value::Kind::kFloat:
      return repr_float(v.f);
    case Value::Kind::kString:
      return v.s;
    case Value::Kind::kList:
      if (!v.s.empty()) return v.s;  // range(): "range(0, 3)"
      return repr_sequence(*v.list, '[', ']', false);
    case Value::Kind::kTuple:
      return repr_sequence(*v.list, '(', ')', true);
    case Value::Kind::kDict:
      return repr_dict(*v.dict);
    case Value::Kind::kNamespace:
      return "<Namespace " + repr_dict(v.ns->attrs) + ">";
    case Value::Kind::kCallable:
      if (v.fn->type == Callable::Type::kMacro) return "<Macro " + repr_string(v.fn->name) + ">";
      if (v.fn->type == Callable::Type::kMethod) {
        return "<built-in method " + v.fn->name + " of " + type_name(v.fn->self) + " object>";
      }
      return "<function " + v.fn->name + ">";
    case Value::Kind::kLoop:
      return "<LoopContext " + std::to_string(v.loop->index0 + 1) + "/" +
             std::to_string(v.loop->length) + ">";
  }
  return {};
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int_like() && b.is_int_like()) return a.int_value() == b.int_value();
    return a.number_value() == b.number_value();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.s == b.s;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k) {
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      }
      return true;
    case Value::Kind::kDict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (other == nullptr || !equal(v, *other)) return false;
      }
      return true;
    case Value::Kind::kNamespace:
      return a.ns == b.ns;
    case Value::Kind::kCallable:
      return a.fn == b.fn;
    case Value::Kind::kLoop:
      return a.loop == b.loop;
    default:
      return false;
  }
}

namespace {

bool apply_order(int cmp, std::string_view op) {
  if (op == "<") return cmp < 0;
  if (op == "<=") return cmp <= 0;
  if (op == ">") return cmp > 0;
  return cmp >= 0;
}

// -1, 0 or 1, or throws TypeError as Python does for unorderable operands.
int three_way(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) throw RenderError(a.s.empty() ? "undefined value" : a.s);
  if (b.is_undefined()) throw RenderError(b.s.empty() ? "undefined value" : b.s);
  if (a.is_number() && b.is_number()) {
    if (a.is_int_like() && b.is_int_like()) return a.int_value() < b.int_value() ? -1 : a.int_value() > b.int_value();
    const double x = a.number_value(), y = b.number_value();
    if (std::isnan(x) || std::isnan(y)) return 2;  // every comparison with nan is false
    return x < y ? -1 : x > y;
  }
  if (a.is_string() && b.is_string())
    return a.s < b.s ? -1 : a.s > b.s;  // UTF-8 keeps code point order
  if (a.is_sequence() && a.kind == b.kind) {
    const List& x = *a.list;
    const List& y = *b.list;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (!equal(x[k], y[k])) return three_way(x[k], y[k], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  throw RenderError("'" + std::string(op) + "' not supported between instances of '" +
                    type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

bool compare(const Value& a, const Value& b, std::string_view op) {
  const int c = three_way(a, b, op);
  if (c == 2) return false;
  return apply_order(c, op);
}

// ---- json.dumps ----

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : decode_utf8(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c > 0x7e)) {
      if (c >= 0x10000) {
        const uint32_t v = c - 0x10000;
        append_hex(out, "\\u", 0xd800 + (v >> 10), 4);
        append_hex(out, "\\u", 0xdc00 + (v & 0x3ff), 4);
      } else {
        append_hex(out, "\\u", c, 4);
      }
    } else {
      append_utf8(out, c);
    }
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return repr_float(d);
}

std::string json_key(const Value& k) {
  switch (k.kind) {
    case Value::Kind::kString:
      return k.s;
    case Value::Kind::kInt:
      return std::to_string(k.i);
    case Value::Kind::kFloat:
      return json_float(k.f);
    case Value::Kind::kBool:
      return k.b ? "true" : "false";
    case Value::Kind::kNone:
      return "null";
    default:
      throw RenderError("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void dump(std::string& out, const Value& v, const JsonOptions& o, int level) {
  if (level > kMaxParseDepth) throw RenderError("tojson: value nested too deeply");
  auto newline = [&](int depth) {
    if (!o.indent) return;
    out += '\n';
    for (int k = 0; k < depth; ++k) out += *o.indent;
  };
  switch (v.kind) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.b ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.i);
      return;
    case Value::Kind::kFloat:
      out += json_float(v.f);
      return;
    case Value::Kind::kString:
      json_string(out, v.s, o.ensure_ascii);
      return;
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += o.item_separator;
        newline(level + 1);
        dump(out, (*v.list)[k], o, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto* x, const auto* y) {
          return compare(x->first, y->first, "<");
        });
      }
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += o.item_separator;
        newline(level + 1);
        json_string(out, json_key(items[k]->first), o.ensure_ascii);
        out += o.key_separator;
        dump(out, items[k]->second, o, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      throw RenderError("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  dump(out, v, options, 0);
  return out;
}

Value from_json(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return Value::none();
    case json::kind::bool_:
      return Value::boolean(v.get_bool());
    case json::kind::int64:
      return Value::integer(v.get_int64());
    case json::kind::uint64:
      if (v.get_uint64() <= uint64_t(INT64_MAX)) return Value::integer(int64_t(v.get_uint64()));
      return Value::floating(double(v.get_uint64()));
    case json::kind::double_:
      return Value::floating(v.get_double());
    case json::kind::string:
      return Value::string(std::string(v.get_string()));
    case json::kind::array: {
      List items;
      items.reserve(v.get_array().size());
      for (const json::value& e : v.get_array()) items.push_back(from_json(e));
      return Value::make_list(std::move(items));
    }
    case json::kind::object: {
      Dict d;
      d.items.reserve(v.get_object().size());
      for (const auto& kv : v.get_object()) {
        d.items.emplace_back(Value::string(std::string(kv.key())), from_json(kv.value()));
      }
      return Value::make_dict(std::move(d));
    }
  }
  return Value::none();
}

// ---- Unicode ----

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t k = 0;
  while (k < s.size()) {
    const int n = utf8_step(s.substr(k));
    if (n < 0) {
      out += U'\uFFFD';
      k += size_t(-n);
      continue;
    }
    const auto b = [&](size_t j) { return char32_t(static_cast<uint8_t>(s[k + j])); };
    char32_t c = b(0);
    if (n == 2) c = ((c & 0x1f) << 6) | (b(1) & 0x3f);
    if (n == 3) c = ((c & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
    if (n == 4)
      c = ((c & 0x07) << 18) | ((b(1) & 0x3f) << 12) | ((b(2) & 0x3f) << 6) | (b(3) & 0x3f);
    out += c;
    k += size_t(n);
  }
  return out;
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

int64_t utf8_length(std::string_view s) {
  int64_t n = 0;
  for (size_t k = 0; k < s.size(); ++n) {
    const int step = utf8_step(s.substr(k));
    k += size_t(step < 0 ? -step : step);
  }
  return n;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
  const std::u32string text = decode_utf8(s);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strippable = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_space(c);
  };
  size_t b = 0, e = text.size();
  if (left) {
    while (b < e && strippable(text[b])) ++b;
  }
  if (right) {
    while (e > b && strippable(text[e - 1])) --e;
  }
  if (b == 0 && e == text.size()) return std::string(s);
  return encode_utf8(std::u32string_view(text).substr(b, e - b));
}

namespace {

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
}

}  // namespace

std::string to_lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  std::string out;
  icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), int32_t(s.size())))
      .toLower(icu::Locale::getRoot())
      .toUTF8String(out);
  return out;
}

std::string to_upper(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }
  std::string out;
  icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), int32_t(s.size())))
      .toUpper(icu::Locale::getRoot())
      .toUTF8String(out);
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : decode_utf8(s)) {
    const auto mapped = previous_cased ? u_tolower(UChar32(c)) : u_totitle(UChar32(c));
    append_utf8(out, char32_t(mapped));
    previous_cased = u_hasBinaryProperty(UChar32(c), UCHAR_CASED);
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  const std::u32string text = decode_utf8(s);
  if (text.empty()) return {};
  std::string out;
  append_utf8(out, char32_t(u_totitle(UChar32(text[0]))));
  return out + to_lower(encode_utf8(std::u32string_view(text).substr(1)));
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> lines;
  const std::u32string text = decode_utf8(s);
  size_t start = 0, k = 0;
  while (k < text.size()) {
    const char32_t c = text[k];
    const bool brk = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d ||
                     c == 0x1e || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) {
      ++k;
      continue;
    }
    lines.push_back(encode_utf8(std::u32string_view(text).substr(start, k - start)));
    k += (c == '\r' && k + 1 < text.size() && text[k + 1] == '\n') ? 2 : 1;
    start = k;
  }
  if (start < text.size()) lines.push_back(encode_utf8(std::u32string_view(text).substr(start)));
  return lines;
}

}  // namespace ib::tokenizer::jinja
