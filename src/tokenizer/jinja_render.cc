// The interpreter: walks the tree of jinja.h with Jinja2 3.1's semantics under transformers'
// ImmutableSandboxedEnvironment: scoping (a for loop's body is a fresh scope per iteration, `if`
// is none, macros see the template's top level at call time), the default Undefined, Python
// operators and str methods, the builtin filters and tests, the sandbox's refusal of mutating
// methods, and transformers' tojson, raise_exception and strftime_now.
//
// Errors are RenderError exceptions inside this file; render() turns them into Error values.
#include <unicode/uchar.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "tokenizer/chat_template.h"
#include "tokenizer/jinja.h"
#include "tokenizer/unicode.h"

namespace ib::tokenizer::jinja {

namespace {

// Variables of one scope; lookups walk to the parent (the template's top level, then the
// context). Scopes live on the C++ stack for the duration of what they scope.
struct Scope {
  explicit Scope(const Scope* p) : parent(p) {}
  const Scope* parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      for (const auto& [k, v] : s->vars) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, old] : vars) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  }
};

enum class Flow { kNormal, kBreak, kContinue };

[[noreturn]] void type_error(const std::string& message) {
  throw RenderError(message);
}

// Jinja raises when an Undefined is used for anything but printing, testing and iterating.
[[noreturn]] void undefined_error(const Value& v) {
  throw RenderError(v.s.empty() ? "undefined value" : v.s);
}

void fail_if_undefined(const Value& v) {
  if (v.is_undefined()) undefined_error(v);
}

// jinja2.utils.object_type_repr, for "has no attribute" messages.
std::string object_type_repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kNamespace:
      return "jinja2.utils.Namespace object";
    case Value::Kind::kLoop:
      return "jinja2.runtime.LoopContext object";
    case Value::Kind::kCallable:
      if (v.fn->type == Callable::Type::kMacro) return "jinja2.runtime.Macro object";
      return type_name(v) + " object";
    default:
      return type_name(v) + " object";
  }
}

Value missing_attribute(const Value& obj, const Value& key) {
  return Value::undefined(repr_string(object_type_repr(obj)) + " has no attribute " + repr(key));
}

Value unsafe_attribute(const Value& obj, std::string_view name) {
  Value u = Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                             type_name(obj) + "' object is unsafe.");
  u.unsafe = true;
  return u;
}

Value method(const Value& self, std::string_view name) {
  auto fn = std::make_shared<Callable>();
  fn->type = Callable::Type::kMethod;
  fn->name = std::string(name);
  fn->self = self;
  Value v;
  v.kind = Value::Kind::kCallable;
  v.fn = std::move(fn);
  return v;
}

Value global_function(std::string_view name) {
  auto fn = std::make_shared<Callable>();
  fn->type = Callable::Type::kGlobal;
  fn->name = std::string(name);
  Value v;
  v.kind = Value::Kind::kCallable;
  v.fn = std::move(fn);
  return v;
}

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Python attributes of builtin types that templates may call. Mutating methods exist too but
// ImmutableSandboxedEnvironment refuses them.
std::optional<Value> builtin_attribute(const Value& obj, std::string_view name) {
  switch (obj.kind) {
    case Value::Kind::kString:
      if (one_of(name, {"startswith", "endswith",     "split",       "rsplit",  "strip",
                        "lstrip",     "rstrip",       "lower",       "upper",   "title",
                        "capitalize", "replace",      "find",        "rfind",   "index",
                        "rindex",     "count",        "join",        "format",  "isdigit",
                        "isalpha",    "isalnum",      "isspace",     "islower", "isupper",
                        "splitlines", "removeprefix", "removesuffix"})) {
        return method(obj, name);
      }
      return std::nullopt;
    case Value::Kind::kDict:
      if (one_of(name, {"items", "keys", "values", "get", "copy"})) return method(obj, name);
      if (one_of(name, {"pop", "popitem", "setdefault", "update", "clear"})) {
        return unsafe_attribute(obj, name);
      }
      return std::nullopt;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      if (one_of(name, {"index", "count"})) return method(obj, name);
      if (obj.kind == Value::Kind::kList && one_of(name, {"append", "extend", "insert", "pop",
                                                          "remove", "reverse", "sort", "clear"})) {
        return unsafe_attribute(obj, name);
      }
      return std::nullopt;
    case Value::Kind::kLoop: {
      const Loop& l = *obj.loop;
      if (name == "index") return Value::integer(l.index0 + 1);
      if (name == "index0") return Value::integer(l.index0);
      if (name == "revindex") return Value::integer(l.length - l.index0);
      if (name == "revindex0") return Value::integer(l.length - l.index0 - 1);
      if (name == "first") return Value::boolean(l.index0 == 0);
      if (name == "last") return Value::boolean(l.index0 + 1 == l.length);
      if (name == "length") return Value::integer(l.length);
      if (name == "depth") return Value::integer(1);
      if (name == "depth0") return Value::integer(0);
      if (name == "previtem") {
        if (l.index0 == 0) return Value::undefined("there is no previous item");
        return (*l.items)[size_t(l.index0 - 1)];
      }
      if (name == "nextitem") {
        if (l.index0 + 1 >= l.length) return Value::undefined("there is no next item");
        return (*l.items)[size_t(l.index0 + 1)];
      }
      if (name == "cycle") return method(obj, name);
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// Environment.getattr: `obj.name` (a Python attribute first, then an item).
Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (std::optional<Value> a = builtin_attribute(obj, name)) return *a;
  if (obj.kind == Value::Kind::kDict) {
    if (const Value* v = obj.dict->find(std::string_view(name))) return *v;
  } else if (obj.kind == Value::Kind::kNamespace) {
    if (const Value* v = obj.ns->attrs.find(std::string_view(name))) return *v;
  }
  return missing_attribute(obj, Value::string(name));
}

// Environment.getitem: `obj[key]` (an item first, then a Python attribute).
Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  const bool int_key = key.kind == Value::Kind::kInt || key.kind == Value::Kind::kBool;
  if (obj.kind == Value::Kind::kDict) {
    if (const Value* v = obj.dict->find(key)) return *v;
  } else if (obj.is_sequence() && int_key) {
    int64_t n = key.int_value();
    const auto size = int64_t(obj.list->size());
    if (n < 0) n += size;
    if (n >= 0 && n < size) return (*obj.list)[size_t(n)];
  } else if (obj.is_string() && int_key) {
    const std::u32string text = decode_utf8(obj.s);
    int64_t n = key.int_value();
    const auto size = int64_t(text.size());
    if (n < 0) n += size;
    if (n >= 0 && n < size) return Value::string(encode_utf8(text.substr(size_t(n), 1)));
  } else if (obj.kind == Value::Kind::kNamespace && key.is_string()) {
    if (const Value* v = obj.ns->attrs.find(std::string_view(key.s))) return *v;
  }
  if (key.is_string()) {
    if (std::optional<Value> a = builtin_attribute(obj, key.s)) return *a;
  }
  return missing_attribute(obj, key);
}

// The items a for loop (or list()) sees.
List iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return *v.list;
    case Value::Kind::kDict: {
      List keys;
      keys.reserve(v.dict->items.size());
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      for (char32_t c : decode_utf8(v.s))
        chars.push_back(Value::string(encode_utf8(std::u32string(1, c))));
      return chars;
    }
    default:
      type_error("'" + type_name(v) + "' object is not iterable");
  }
}

// The same, shared rather than copied when `v` is a list or tuple already.
std::shared_ptr<const List> iterate_shared(const Value& v) {
  if (v.is_sequence()) return v.list;
  return std::make_shared<const List>(iterate(v));
}

std::string checked(std::string s) {
  if (s.size() > kMaxOutputBytes) throw RenderError("string longer than 64 MiB");
  return s;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::kString:
      if (!item.is_string()) {
        type_error("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return container.s.find(item.s) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return std::any_of(container.list->begin(), container.list->end(),
                         [&](const Value& x) { return equal(x, item); });
    case Value::Kind::kDict:
      if (item.kind == Value::Kind::kList || item.kind == Value::Kind::kDict) {
        type_error("unhashable type: '" + type_name(item) + "'");
      }
      return container.dict->find(item) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    default:
      type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

std::string operand_error(std::string_view op, const Value& a, const Value& b) {
  return "unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) + "' and '" +
         type_name(b) + "'";
}

Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    if (n > 0 && seq.s.size() * uint64_t(n) > kMaxOutputBytes) {
      throw RenderError("string longer than 64 MiB");
    }
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    return Value::string(std::move(out));
  }
  if (n > 0 && seq.list->size() * uint64_t(n) > uint64_t(kMaxMaterialized)) {
    throw RenderError("list too long");
  }
  List out;
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return seq.kind == Value::Kind::kTuple ? Value::make_tuple(std::move(out))
                                         : Value::make_list(std::move(out));
}

double py_fmod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

std::string percent_format(const std::string& fmt, const Value& args);

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::string(checked(to_str(a) + to_str(b)));
  if (op == "%" && a.is_string()) return Value::string(checked(percent_format(a.s, b)));
  fail_if_undefined(a);
  fail_if_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_int_like() && b.is_int_like()) {
      const int64_t x = a.int_value(), y = b.int_value();
      int64_t r = 0;
      if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value::integer(r);
      if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value::integer(r);
      if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value::integer(r);
      if (op == "/") {
        if (y == 0) throw RenderError("division by zero");
        return Value::floating(double(x) / double(y));
      }
      if (op == "//" || op == "%") {
        if (y == 0) {
          throw RenderError(op == "%" ? "integer modulo by zero"
                                      : "integer division or modulo by zero");
        }
        if (x == INT64_MIN && y == -1) throw RenderError("integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        return Value::integer(op == "//" ? q : m);
      }
      if (op == "**") {
        if (y < 0) return Value::floating(std::pow(double(x), double(y)));
        int64_t result = 1;
        for (int64_t k = 0; k < y; ++k) {
          if (__builtin_mul_overflow(result, x, &result)) throw RenderError("integer overflow");
          if (result == 0 || result == 1) break;
        }
        return Value::integer(result);
      }
      throw RenderError("integer overflow");
    }
    const double x = a.number_value(), y = b.number_value();
    if (op == "+") return Value::floating(x + y);
    if (op == "-") return Value::floating(x - y);
    if (op == "*") return Value::floating(x * y);
    if (op == "/" || op == "//" || op == "%") {
      if (y == 0) {
        throw RenderError(op == "/"    ? "float division by zero"
                          : op == "//" ? "float floor division by zero"
                                       : "float modulo");
      }
      if (op == "/") return Value::floating(x / y);
      if (op == "//") return Value::floating(std::floor(x / y));
      return Value::floating(py_fmod(x, y));
    }
    if (op == "**") return Value::floating(std::pow(x, y));
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::string(checked(a.s + b.s));
    if (a.is_sequence() && a.kind == b.kind) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return a.kind == Value::Kind::kTuple ? Value::make_tuple(std::move(out))
                                           : Value::make_list(std::move(out));
    }
    if (a.is_string() || a.is_sequence()) {
      type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " +
                 type_name(a));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_sequence()) && b.is_int_like()) return repeat(a, b.int_value());
    if ((b.is_string() || b.is_sequence()) && a.is_int_like()) return repeat(b, a.int_value());
  }
  type_error(operand_error(op, a, b));
}

// Python's slice.indices() and the slice itself.
Value slice(const Value& obj, const std::optional<int64_t>& start,
            const std::optional<int64_t>& stop, const std::optional<int64_t>& step_arg) {
  const int64_t step = step_arg.value_or(1);
  if (step == 0) throw RenderError("slice step cannot be zero");
  std::u32string text;
  int64_t size = 0;
  if (obj.is_string()) {
    text = decode_utf8(obj.s);
    size = int64_t(text.size());
  } else if (obj.is_sequence()) {
    size = int64_t(obj.list->size());
  } else {
    fail_if_undefined(obj);
    type_error("'" + type_name(obj) + "' object is not subscriptable");
  }
  auto adjust = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) {
      x += size;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= size) {
      x = step < 0 ? size - 1 : size;
    }
    return x;
  };
  const int64_t b = adjust(start, step < 0 ? size - 1 : 0);
  const int64_t e = adjust(stop, step < 0 ? -1 : size);
  std::vector<size_t> picks;
  for (int64_t k = b; step > 0 ? k < e : k > e; k += step) picks.push_back(size_t(k));
  if (obj.is_string()) {
    std::u32string out;
    for (size_t k : picks) out += text[k];
    return Value::string(encode_utf8(out));
  }
  List out;
  for (size_t k : picks) out.push_back((*obj.list)[k]);
  return obj.kind == Value::Kind::kTuple ? Value::make_tuple(std::move(out))
                                         : Value::make_list(std::move(out));
}

// Arguments of a call, bound by position or keyword as a Python signature would.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;

  const Value* get(size_t index, std::string_view name) const {
    if (index < pos.size()) return &pos[index];
    for (const auto& [k, v] : kw) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  Value get_or(size_t index, std::string_view name, Value def) const {
    const Value* v = get(index, name);
    return v ? *v : std::move(def);
  }
  // Refuses arguments beyond the `names` of the signature (`what` names the callee).
  void check(std::string_view what, std::initializer_list<std::string_view> names) const {
    if (pos.size() > names.size()) {
      type_error(std::string(what) + "() takes at most " + std::to_string(names.size()) +
                 " argument(s) (" + std::to_string(pos.size()) + " given)");
    }
    for (const auto& [k, v] : kw) {
      if (std::find(names.begin(), names.end(), k) == names.end()) {
        type_error(std::string(what) + "() got an unexpected keyword argument '" + k + "'");
      }
    }
  }
};

std::string require_string(const Value& v, std::string_view what) {
  if (!v.is_string()) {
    fail_if_undefined(v);
    type_error(std::string(what) + " must be str, not " + type_name(v));
  }
  return v.s;
}

int64_t require_int(const Value& v, std::string_view what) {
  if (!v.is_int_like()) {
    fail_if_undefined(v);
    type_error(std::string(what) + ": '" + type_name(v) +
               "' object cannot be interpreted as an integer");
  }
  return v.int_value();
}

std::optional<std::string> optional_chars(const Args& a, size_t index, std::string_view name) {
  const Value* v = a.get(index, name);
  if (v == nullptr || v->is_none()) return std::nullopt;
  return require_string(*v, "strip arg");
}

// str.split / str.rsplit.
List split(const std::string& s, const Value* sep_arg, int64_t maxsplit, bool from_right) {
  List out;
  if (sep_arg == nullptr || sep_arg->is_none()) {
    const std::u32string text = decode_utf8(s);
    std::vector<std::pair<size_t, size_t>> words;  // [begin, end) runs of non-space
    size_t k = 0;
    while (k < text.size()) {
      while (k < text.size() && is_space(text[k])) ++k;
      if (k == text.size()) break;
      size_t e = k;
      while (e < text.size() && !is_space(text[e])) ++e;
      words.emplace_back(k, e);
      k = e;
    }
    if (maxsplit >= 0 && int64_t(words.size()) > maxsplit + 1) {
      // The unsplit remainder keeps its whitespace on the far side (Python's rule).
      if (!from_right) {
        const size_t rest = words[size_t(maxsplit)].first;
        words.resize(size_t(maxsplit));
        words.emplace_back(rest, text.size());
      } else {
        const size_t keep = size_t(maxsplit);
        const size_t rest_end = words[words.size() - keep - 1].second;
        std::vector<std::pair<size_t, size_t>> tail(words.end() - std::ptrdiff_t(keep),
                                                    words.end());
        words.clear();
        words.emplace_back(0, rest_end);
        words.insert(words.end(), tail.begin(), tail.end());
      }
    }
    for (const auto& [b, e] : words)
      out.push_back(Value::string(encode_utf8(text.substr(b, e - b))));
    return out;
  }
  const std::string sep = require_string(*sep_arg, "separator");
  if (sep.empty()) throw RenderError("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
      const size_t at = s.find(sep, start);
      if (at == std::string::npos) break;
      parts.push_back(s.substr(start, at - start));
      start = at + sep.size();
    }
    parts.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit < 0 || int64_t(rev.size()) < maxsplit) {
      if (end < sep.size()) break;
      const size_t at = s.rfind(sep, end - sep.size());
      if (at == std::string::npos) break;
      rev.push_back(s.substr(at + sep.size(), end - at - sep.size()));
      end = at;
    }
    rev.push_back(s.substr(0, end));
    parts.assign(rev.rbegin(), rev.rend());
  }
  for (std::string& p : parts) out.push_back(Value::string(std::move(p)));
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    const std::u32string text = decode_utf8(s);
    int64_t done = 0;
    for (char32_t c : text) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      append_utf8(out, c);
    }
    if (count < 0 || done < count) out += to;
    return checked(std::move(out));
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += to;
    if (out.size() > kMaxOutputBytes) throw RenderError("string longer than 64 MiB");
    start = at + from.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return checked(std::move(out));
}

// Code point offset of a byte offset in valid UTF-8.
int64_t char_offset(const std::string& s, size_t byte) {
  return utf8_length(std::string_view(s).substr(0, byte));
}

// str.format with positional ({} {0}) and named ({name}) fields, !r/!s, no format specs.
std::string str_format(const std::string& fmt, const Args& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    const char c = fmt[k];
    if (c == '}') {
      if (k + 1 < fmt.size() && fmt[k + 1] == '}')
        ++k;
      else
        throw RenderError("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
      continue;
    }
    const size_t close = fmt.find('}', k);
    if (close == std::string::npos) throw RenderError("Single '{' encountered in format string");
    std::string field = fmt.substr(k + 1, close - k - 1);
    k = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos || field.find('.') != std::string::npos ||
        field.find('[') != std::string::npos) {
      throw RenderError("str.format: format specs and field access are not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < a.pos.size() ? &a.pos[auto_index] : nullptr;
      ++auto_index;
    } else if (std::all_of(field.begin(), field.end(),
                           [](char d) { return d >= '0' && d <= '9'; })) {
      const size_t n = std::stoul(field);
      v = n < a.pos.size() ? &a.pos[n] : nullptr;
    } else {
      for (const auto& [name, value] : a.kw) {
        if (name == field) v = &value;
      }
    }
    if (v == nullptr) throw RenderError("str.format: no argument for field '{" + field + "}'");
    out += conversion == 'r' ? repr(*v) : to_str(*v);
  }
  return out;
}

// printf-style `fmt % args` for %s %r %d %i %f (with a precision) and %%.
std::string percent_format(const std::string& fmt, const Value& args) {
  List items = args.kind == Value::Kind::kTuple ? *args.list : List{args};
  size_t next = 0;
  std::string out;
  for (size_t k = 0; k < fmt.size(); ++k) {
    if (fmt[k] != '%') {
      out += fmt[k];
      continue;
    }
    if (++k >= fmt.size()) throw RenderError("incomplete format");
    int precision = -1;
    if (fmt[k] == '.') {
      precision = 0;
      while (++k < fmt.size() && fmt[k] >= '0' && fmt[k] <= '9')
        precision = precision * 10 + (fmt[k] - '0');
      if (k >= fmt.size()) throw RenderError("incomplete format");
    }
    const char conv = fmt[k];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= items.size()) throw RenderError("not enough arguments for format string");
    const Value& v = items[next++];
    if (conv == 's') {
      out += to_str(v);
    } else if (conv == 'r') {
      out += repr(v);
    } else if (conv == 'd' || conv == 'i') {
      if (!v.is_number()) type_error("%d format: a real number is required, not " + type_name(v));
      out += std::to_string(v.is_int_like() ? v.int_value() : int64_t(v.f));
    } else if (conv == 'f') {
      if (!v.is_number()) type_error("must be real number, not " + type_name(v));
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", precision < 0 ? 6 : std::min(precision, 100),
                    v.number_value());
      out += buf;
    } else {
      throw RenderError(std::string("unsupported format character '") + conv + "'");
    }
  }
  // Python raises this only for a tuple or a lone non-mapping value: a list or dict (anything
  // with __getitem__) is taken as a mapping that %(name)s fields would read.
  const bool mapping_like = args.kind == Value::Kind::kList || args.kind == Value::Kind::kDict ||
                            args.kind == Value::Kind::kUndefined;
  if (next < items.size() && !mapping_like) {
    throw RenderError("not all arguments converted during string formatting");
  }
  return out;
}

// Python's str.isalnum() of one code point (and re's \w without the underscore): letters and
// every kind of number (Nd, Nl, No: '½' counts).
bool is_alnum(char32_t c) {
  switch (u_charType(UChar32(c))) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      return true;
    default:
      return false;
  }
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  const std::u32string text = decode_utf8(s);
  return !text.empty() && std::all_of(text.begin(), text.end(), pred);
}

// str.islower / str.isupper: some cased character and none of the other case.
bool cased_as(const std::string& s, bool lower) {
  bool any = false;
  for (char32_t c : decode_utf8(s)) {
    if (u_isULowercase(UChar32(c))) {
      if (!lower) return false;
      any = true;
    } else if (u_isUUppercase(UChar32(c)) || u_istitle(UChar32(c))) {
      if (lower) return false;
      any = true;
    }
  }
  return any;
}

// str.startswith / str.endswith (a prefix or a tuple of them).
Value str_starts_or_ends_with(const std::string& s, const std::string& name, const Args& a) {
  a.check(name, {"prefix"});
  const Value* p = a.get(0, "prefix");
  if (p == nullptr) type_error(name + "() takes at least 1 argument (0 given)");
  List options = p->kind == Value::Kind::kTuple ? *p->list : List{*p};
  for (const Value& o : options) {
    const std::string x = require_string(o, name + " first arg");
    const bool hit = name == "startswith"
                         ? s.compare(0, x.size(), x) == 0 && s.size() >= x.size()
                         : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
    if (hit) return Value::boolean(true);
  }
  return Value::boolean(false);
}

// str.replace(old, new, count).
Value str_replace(const std::string& s, const std::string& name, const Args& a) {
  a.check(name, {"old", "new", "count"});
  const Value* from = a.get(0, "old");
  const Value* to = a.get(1, "new");
  if (from == nullptr || to == nullptr) type_error("replace() takes at least 2 arguments");
  const int64_t count = require_int(a.get_or(2, "count", Value::integer(-1)), "count");
  return Value::string(replace_all(s, require_string(*from, "replace() argument 1"),
                                   require_string(*to, "replace() argument 2"), count));
}

// str.find / rfind / index / rindex / count.
Value str_find(const std::string& s, const std::string& name, const Args& a) {
  a.check(name, {"sub"});
  const Value* sub_arg = a.get(0, "sub");
  if (sub_arg == nullptr) type_error(name + "() takes at least 1 argument (0 given)");
  const std::string sub = require_string(*sub_arg, name + "() argument");
  if (name == "count") {
    if (sub.empty()) return Value::integer(utf8_length(s) + 1);
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return Value::integer(n);
  }
  const size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) {
    if (name == "index" || name == "rindex") throw RenderError("substring not found");
    return Value::integer(-1);
  }
  return Value::integer(char_offset(s, at));
}

// str.join(iterable): `s` between the items, which must be strings.
Value str_join(const std::string& s, const std::string& name, const Args& a) {
  a.check(name, {"iterable"});
  const Value* items = a.get(0, "iterable");
  if (items == nullptr) type_error("join() takes exactly one argument (0 given)");
  std::string out;
  size_t k = 0;
  for (const Value& item : iterate(*items)) {
    if (!item.is_string()) {
      type_error("sequence item " + std::to_string(k) + ": expected str instance, " +
                 type_name(item) + " found");
    }
    if (k++) out += s;
    out += item.s;
    if (out.size() > kMaxOutputBytes) throw RenderError("string longer than 64 MiB");
  }
  return Value::string(std::move(out));
}

// str.removeprefix / str.removesuffix.
Value str_remove_affix(const std::string& s, const std::string& name, const Args& a) {
  a.check(name, {"fix"});
  const Value* fix = a.get(0, "fix");
  if (fix == nullptr) type_error(name + "() takes exactly one argument (0 given)");
  const std::string x = require_string(*fix, name + "() argument");
  if (name == "removeprefix" && s.compare(0, x.size(), x) == 0)
    return Value::string(s.substr(x.size()));
  if (name == "removesuffix" && !x.empty() && s.size() >= x.size() &&
      s.compare(s.size() - x.size(), x.size(), x) == 0) {
    return Value::string(s.substr(0, s.size() - x.size()));
  }
  return Value::string(s);
}

Value call_string_method(const std::string& s, const std::string& name, const Args& a) {
  if (name == "startswith" || name == "endswith") return str_starts_or_ends_with(s, name, a);
  if (name == "split" || name == "rsplit") {
    a.check(name, {"sep", "maxsplit"});
    const int64_t maxsplit = require_int(a.get_or(1, "maxsplit", Value::integer(-1)), "maxsplit");
    return Value::make_list(split(s, a.get(0, "sep"), maxsplit, name == "rsplit"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    a.check(name, {"chars"});
    return Value::string(
        strip(s, optional_chars(a, 0, "chars"), name != "rstrip", name != "lstrip"));
  }
  if (name == "lower") return Value::string(to_lower(s));
  if (name == "upper") return Value::string(to_upper(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "replace") return str_replace(s, name, a);
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return str_find(s, name, a);
  }
  if (name == "join") return str_join(s, name, a);
  if (name == "format") return Value::string(checked(str_format(s, a)));
  if (name == "isdigit")
    return Value::boolean(all_chars(s, [](char32_t c) { return bool(u_isdigit(UChar32(c))); }));
  if (name == "isalpha")
    return Value::boolean(all_chars(s, [](char32_t c) { return bool(u_isalpha(UChar32(c))); }));
  if (name == "isalnum") return Value::boolean(all_chars(s, is_alnum));
  if (name == "isspace") return Value::boolean(all_chars(s, is_space));
  if (name == "islower") return Value::boolean(cased_as(s, true));
  if (name == "isupper") return Value::boolean(cased_as(s, false));
  if (name == "splitlines") {
    List out;
    for (std::string& line : split_lines(s)) out.push_back(Value::string(std::move(line)));
    return Value::make_list(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") return str_remove_affix(s, name, a);
  type_error("str has no method '" + name + "'");
}

Value call_method(const Callable& fn, const Args& a) {
  const Value& self = fn.self;
  if (self.is_string()) return call_string_method(self.s, fn.name, a);
  if (self.kind == Value::Kind::kDict) {
    const Dict& d = *self.dict;
    if (fn.name == "items") {
      List out;
      for (const auto& [k, v] : d.items) out.push_back(Value::make_tuple({k, v}));
      return Value::make_list(std::move(out));
    }
    if (fn.name == "keys" || fn.name == "values") {
      List out;
      for (const auto& [k, v] : d.items) out.push_back(fn.name == "keys" ? k : v);
      return Value::make_list(std::move(out));
    }
    if (fn.name == "get") {
      a.check("get", {"key", "default"});
      const Value* key = a.get(0, "key");
      if (key == nullptr) type_error("get expected at least 1 argument, got 0");
      if (const Value* v = d.find(*key)) return *v;
      return a.get_or(1, "default", Value::none());
    }
    if (fn.name == "copy") return self;
  }
  if (self.is_sequence()) {
    const Value* x = a.get(0, "value");
    if (x == nullptr) type_error(fn.name + "() takes exactly one argument (0 given)");
    if (fn.name == "count") {
      return Value::integer(std::count_if(self.list->begin(), self.list->end(),
                                          [&](const Value& v) { return equal(v, *x); }));
    }
    for (size_t k = 0; k < self.list->size(); ++k) {
      if (equal((*self.list)[k], *x)) return Value::integer(int64_t(k));
    }
    throw RenderError(repr(*x) + " is not in list");
  }
  if (self.kind == Value::Kind::kLoop && fn.name == "cycle") {
    if (a.pos.empty()) throw RenderError("no items for cycling given");
    return a.pos[size_t(self.loop->index0 % int64_t(a.pos.size()))];
  }
  type_error("'" + fn.name + "' is not callable here");
}

// ---- filters and tests ----

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// jinja2.filters.do_title: upper-case the first character after -, whitespace or an opening
// bracket, lower-case the rest.
std::string jinja_title(const std::string& s) {
  const std::u32string text = decode_utf8(s);
  auto separator = [](char32_t c) {
    return is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::string out;
  size_t k = 0;
  while (k < text.size()) {
    size_t e = k;
    const bool sep = separator(text[k]);
    while (e < text.size() && separator(text[e]) == sep) ++e;
    const std::u32string_view item = std::u32string_view(text).substr(k, e - k);
    if (sep) {
      out += encode_utf8(item);
    } else {
      out += to_upper(encode_utf8(item.substr(0, 1))) + to_lower(encode_utf8(item.substr(1)));
    }
    k = e;
  }
  return out;
}

int64_t length_of(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return utf8_length(v.s);
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return int64_t(v.list->size());
    case Value::Kind::kDict:
      return int64_t(v.dict->items.size());
    case Value::Kind::kLoop:
      return v.loop->length;
    default:
      type_error("object of type '" + type_name(v) + "' has no len()");
  }
}

// Python int(str) (base 10): optional sign, digits with single underscores, outer whitespace.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  const std::string t = strip(text, std::nullopt, true, true);
  std::string digits;
  size_t k = 0;
  bool negative = false;
  if (k < t.size() && (t[k] == '+' || t[k] == '-')) negative = t[k++] == '-';
  // A 0x / 0o / 0b prefix is allowed when it matches the base (base 0: it picks the base).
  if (k + 1 < t.size() && t[k] == '0') {
    const char p = char(std::tolower(static_cast<unsigned char>(t[k + 1])));
    const int prefixed = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefixed != 0 && (base == prefixed || base == 0)) {
      base = prefixed;
      k += 2;
      if (k < t.size() && t[k] == '_') ++k;
    }
  }
  if (base == 0) base = 10;
  if (k == t.size()) return std::nullopt;
  for (; k < t.size(); ++k) {
    if (t[k] == '_' && !digits.empty() && k + 1 < t.size() && t[k + 1] != '_') continue;
    digits += t[k];
  }
  int64_t v = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) return std::nullopt;
  return negative ? -v : v;
}

std::optional<double> parse_float(const std::string& text) {
  const std::string t = strip(text, std::nullopt, true, true);
  if (t.empty()) return std::nullopt;
  std::string lower = to_lower(t);
  if (lower == "nan" || lower == "+nan" || lower == "-nan") return std::nan("");
  if (lower == "inf" || lower == "+inf" || lower == "infinity" || lower == "+infinity")
    return HUGE_VAL;
  if (lower == "-inf" || lower == "-infinity") return -HUGE_VAL;
  if (lower.find_first_not_of("0123456789+-.e_") != std::string::npos) return std::nullopt;
  std::string clean;
  for (char c : t) {
    if (c != '_') clean += c;
  }
  char* end = nullptr;
  const double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

std::optional<Value> to_int(const Value& v, int base) {
  if (v.is_int_like()) return Value::integer(v.int_value());
  if (v.kind == Value::Kind::kFloat) {
    if (!std::isfinite(v.f)) throw RenderError("cannot convert float infinity or NaN to integer");
    if (std::fabs(v.f) >= 9.2e18) throw RenderError("integer overflow");
    return Value::integer(int64_t(v.f));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.s, base)) return Value::integer(*i);
    if (auto d = parse_float(v.s)) return to_int(Value::floating(*d), 10);
  }
  return std::nullopt;
}

double round_half_even(double x, int64_t precision) {
  if (!std::isfinite(x)) return x;
  if (precision == 0) return std::nearbyint(x);
  if (precision > 0 && precision < 300) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", int(std::min<int64_t>(precision, 100)), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, double(-precision));
  return std::nearbyint(x / scale) * scale;
}

// Lowercases strings for the case-insensitive comparisons of sort, unique, min and max.
Value fold_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(to_lower(v.s));
  return v;
}

// ---- filters ----
//
// Each builtin filter is a function of its subject and arguments; kFilters maps every name
// (aliases included) to one, and apply_filter looks the name up once. `name` is the name the
// template wrote, for the filters whose messages or behaviour depend on it.

using FilterFn = Value (*)(const std::string& name, const Value& v, const Args& a);

Value apply_filter(const std::string& name, const Value& v, const Args& a);
bool apply_test(const std::string& name, const Value& v, const Args& a);

// make_attrgetter: a dotted path of items ("a.b", "items.0").
Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value key = Value::string(part);
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (auto i = parse_int(part, 10)) key = Value::integer(*i);
    }
    v = get_item(v, key);
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// `item` itself, or its `attr` path when the filter was given an attribute (`attr` not None).
Value item_or_attribute(const Value& item, const Value& attr) {
  return attr.is_none() ? item : attribute_path(item, to_str(attr));
}

// length, count
Value filter_length(const std::string&, const Value& v, const Args&) {
  return Value::integer(length_of(v));
}

// string, safe
Value filter_string(const std::string&, const Value& v, const Args&) {
  return Value::string(to_str(v));
}

// e, escape
Value filter_escape(const std::string&, const Value& v, const Args&) {
  return Value::string(html_escape(to_str(v)));
}

Value filter_lower(const std::string&, const Value& v, const Args&) {
  return Value::string(to_lower(to_str(v)));
}

Value filter_upper(const std::string&, const Value& v, const Args&) {
  return Value::string(to_upper(to_str(v)));
}

Value filter_capitalize(const std::string&, const Value& v, const Args&) {
  return Value::string(py_capitalize(to_str(v)));
}

Value filter_title(const std::string&, const Value& v, const Args&) {
  return Value::string(jinja_title(to_str(v)));
}

Value filter_trim(const std::string&, const Value& v, const Args& a) {
  a.check("trim", {"chars"});
  return Value::string(strip(to_str(v), optional_chars(a, 0, "chars"), true, true));
}

Value filter_tojson(const std::string&, const Value& v, const Args& a) {
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  a.check("tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions o;
  o.ensure_ascii = truthy(a.get_or(0, "ensure_ascii", Value::boolean(false)));
  const Value indent = a.get_or(1, "indent", Value::none());
  if (indent.is_string()) {
    o.indent = indent.s;
  } else if (indent.is_int_like()) {
    o.indent = std::string(size_t(std::clamp<int64_t>(indent.int_value(), 0, 1000)), ' ');
  } else if (!indent.is_none()) {
    type_error("tojson: indent must be an int or a str");
  }
  if (o.indent) o.item_separator = ",";
  const Value seps = a.get_or(2, "separators", Value::none());
  if (!seps.is_none()) {
    if (!seps.is_sequence() || seps.list->size() != 2 || !(*seps.list)[0].is_string() ||
        !(*seps.list)[1].is_string()) {
      type_error("tojson: separators must be a pair of strings");
    }
    o.item_separator = (*seps.list)[0].s;
    o.key_separator = (*seps.list)[1].s;
  }
  o.sort_keys = truthy(a.get_or(3, "sort_keys", Value::boolean(false)));
  return Value::string(checked(to_json(v, o)));
}

Value filter_int(const std::string&, const Value& v, const Args& a) {
  a.check("int", {"default", "base"});
  const int64_t base = require_int(a.get_or(1, "base", Value::integer(10)), "int base");
  if (base != 0 && (base < 2 || base > 36))
    throw RenderError("int() base must be >= 2 and <= 36, or 0");
  if (auto i = to_int(v, int(base))) return *i;
  return a.get_or(0, "default", Value::integer(0));
}

Value filter_float(const std::string&, const Value& v, const Args& a) {
  a.check("float", {"default"});
  if (v.is_number()) return Value::floating(v.number_value());
  if (v.is_string()) {
    if (auto d = parse_float(v.s)) return Value::floating(*d);
  }
  return a.get_or(0, "default", Value::floating(0.0));
}

Value filter_abs(const std::string&, const Value& v, const Args&) {
  fail_if_undefined(v);
  if (v.kind == Value::Kind::kFloat) return Value::floating(std::fabs(v.f));
  if (v.is_int_like()) {
    if (v.int_value() == INT64_MIN) throw RenderError("integer overflow");
    return Value::integer(std::abs(v.int_value()));
  }
  type_error("bad operand type for abs(): '" + type_name(v) + "'");
}

Value filter_round(const std::string&, const Value& v, const Args& a) {
  a.check("round", {"precision", "method"});
  const int64_t precision =
      require_int(a.get_or(0, "precision", Value::integer(0)), "round precision");
  const std::string how = to_str(a.get_or(1, "method", Value::string("common")));
  fail_if_undefined(v);
  if (!v.is_number()) type_error("type " + type_name(v) + " doesn't define __round__ method");
  if (how == "common") {
    if (v.is_int_like()) return Value::integer(v.int_value());
    return Value::floating(round_half_even(v.f, precision));
  }
  if (how != "floor" && how != "ceil") throw RenderError("method must be common, ceil or floor");
  const double scale = std::pow(10.0, double(precision));
  const double x = v.number_value() * scale;
  return Value::floating((how == "floor" ? std::floor(x) : std::ceil(x)) / scale);
}

// d, default
Value filter_default(const std::string& name, const Value& v, const Args& a) {
  a.check(name, {"default_value", "boolean"});
  const bool boolean = truthy(a.get_or(1, "boolean", Value::boolean(false)));
  if (v.is_undefined() || (boolean && !truthy(v)))
    return a.get_or(0, "default_value", Value::string(""));
  return v;
}

// first, last
Value filter_first_or_last(const std::string& name, const Value& v, const Args&) {
  const List items = iterate(v);
  if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
  return name == "first" ? items.front() : items.back();
}

Value filter_list(const std::string&, const Value& v, const Args&) {
  return Value::make_list(iterate(v));
}

Value filter_items(const std::string&, const Value& v, const Args&) {
  if (v.is_undefined()) return Value::make_list({});
  if (v.kind != Value::Kind::kDict) type_error("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_tuple({k, x}));
  return Value::make_list(std::move(out));
}

Value filter_dictsort(const std::string&, const Value& v, const Args& a) {
  a.check("dictsort", {"case_sensitive", "by", "reverse"});
  if (v.kind != Value::Kind::kDict) type_error("dictsort: a mapping is required");
  const bool cs = truthy(a.get_or(0, "case_sensitive", Value::boolean(false)));
  const std::string by = to_str(a.get_or(1, "by", Value::string("key")));
  const bool reverse = truthy(a.get_or(2, "reverse", Value::boolean(false)));
  if (by != "key" && by != "value")
    throw RenderError("You can only sort by either \"key\" or \"value\"");
  std::vector<std::pair<Value, Value>> items = v.dict->items;
  const bool by_key = by == "key";
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    const Value& p = by_key ? x.first : x.second;
    const Value& q = by_key ? y.first : y.second;
    return reverse ? compare(fold_case(q, cs), fold_case(p, cs), "<")
                   : compare(fold_case(p, cs), fold_case(q, cs), "<");
  });
  List out;
  for (auto& [k, x] : items) out.push_back(Value::make_tuple({k, x}));
  return Value::make_list(std::move(out));
}

Value filter_join(const std::string&, const Value& v, const Args& a) {
  a.check("join", {"d", "attribute"});
  const std::string sep = to_str(a.get_or(0, "d", Value::string("")));
  const Value attr = a.get_or(1, "attribute", Value::none());
  std::string out;
  size_t k = 0;
  for (const Value& item : iterate(v)) {
    if (k++) out += sep;
    out += to_str(item_or_attribute(item, attr));
    if (out.size() > kMaxOutputBytes) throw RenderError("string longer than 64 MiB");
  }
  return Value::string(std::move(out));
}

Value filter_replace(const std::string&, const Value& v, const Args& a) {
  a.check("replace", {"old", "new", "count"});
  const Value* from = a.get(0, "old");
  const Value* to = a.get(1, "new");
  if (from == nullptr || to == nullptr) type_error("replace() takes at least 2 arguments");
  const Value count = a.get_or(2, "count", Value::none());
  return Value::string(replace_all(to_str(v), to_str(*from), to_str(*to),
                                   count.is_none() ? -1 : require_int(count, "count")));
}

Value filter_reverse(const std::string&, const Value& v, const Args&) {
  if (v.is_string()) {
    std::u32string text = decode_utf8(v.s);
    std::reverse(text.begin(), text.end());
    return Value::string(encode_utf8(text));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}

Value filter_sort(const std::string&, const Value& v, const Args& a) {
  a.check("sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = truthy(a.get_or(0, "reverse", Value::boolean(false)));
  const bool cs = truthy(a.get_or(1, "case_sensitive", Value::boolean(false)));
  const Value attr = a.get_or(2, "attribute", Value::none());
  List items = iterate(v);
  auto key = [&](const Value& x) { return fold_case(item_or_attribute(x, attr), cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? compare(key(y), key(x), "<") : compare(key(x), key(y), "<");
  });
  return Value::make_list(std::move(items));
}

Value filter_unique(const std::string&, const Value& v, const Args& a) {
  a.check("unique", {"case_sensitive", "attribute"});
  const bool cs = truthy(a.get_or(0, "case_sensitive", Value::boolean(false)));
  const Value attr = a.get_or(1, "attribute", Value::none());
  List out, seen;
  for (const Value& item : iterate(v)) {
    Value k = fold_case(item_or_attribute(item, attr), cs);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) {
      seen.push_back(std::move(k));
      out.push_back(item);
    }
  }
  return Value::make_list(std::move(out));
}

// min, max
Value filter_min_or_max(const std::string& name, const Value& v, const Args& a) {
  a.check(name, {"case_sensitive", "attribute"});
  const bool cs = truthy(a.get_or(0, "case_sensitive", Value::boolean(false)));
  const Value attr = a.get_or(1, "attribute", Value::none());
  const List items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) { return fold_case(item_or_attribute(x, attr), cs); };
  size_t best = 0;
  for (size_t k = 1; k < items.size(); ++k) {
    const bool better = name == "min" ? compare(key(items[k]), key(items[best]), "<")
                                      : compare(key(items[k]), key(items[best]), ">");
    if (better) best = k;
  }
  return items[best];
}

Value filter_sum(const std::string&, const Value& v, const Args& a) {
  a.check("sum", {"attribute", "start"});
  const Value attr = a.get_or(0, "attribute", Value::none());
  Value total = a.get_or(1, "start", Value::integer(0));
  for (const Value& item : iterate(v))
    total = arithmetic("+", total, item_or_attribute(item, attr));
  return total;
}

Value filter_attr(const std::string&, const Value& v, const Args& a) {
  a.check("attr", {"name"});
  return get_attr(v, to_str(a.get_or(0, "name", Value::string(""))));
}

Value filter_map(const std::string&, const Value& v, const Args& a) {
  List out;
  if (!truthy(v)) return Value::make_list({});  // do_map: `if value:` before iterating
  const Value* attr = nullptr;
  for (const auto& [k, x] : a.kw) {
    if (k == "attribute") attr = &x;
  }
  if (attr != nullptr) {
    const Value* def = nullptr;
    for (const auto& [k, x] : a.kw) {
      if (k == "default")
        def = &x;
      else if (k != "attribute")
        type_error("map: unexpected keyword argument '" + k + "'");
    }
    for (const Value& item : iterate(v)) {
      Value x = attribute_path(item, to_str(*attr));
      out.push_back(x.is_undefined() && def ? *def : x);
    }
    return Value::make_list(std::move(out));
  }
  if (a.pos.empty()) return Value::make_list(iterate(v));
  const std::string fname = to_str(a.pos[0]);
  if (!known_filter(fname)) throw RenderError("No filter named '" + fname + "'.");
  Args rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const Value& item : iterate(v)) out.push_back(apply_filter(fname, item, rest));
  return Value::make_list(std::move(out));
}

// select, reject, selectattr, rejectattr
Value filter_select(const std::string& name, const Value& v, const Args& a) {
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep = name == "select" || name == "selectattr";
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) type_error(name + ": missing the attribute");
    attr = to_str(a.pos[next++]);
  }
  std::string test_name;
  if (next < a.pos.size()) test_name = to_str(a.pos[next++]);
  if (!test_name.empty() && !known_test(test_name))
    throw RenderError("No test named '" + test_name + "'.");
  Args rest;
  rest.pos.assign(a.pos.begin() + std::ptrdiff_t(std::min(next, a.pos.size())), a.pos.end());
  rest.kw = a.kw;
  List out;
  if (!truthy(v)) return Value::make_list({});  // select_or_reject: `if value:` first
  for (const Value& item : iterate(v)) {
    const Value x = by_attr ? attribute_path(item, attr) : item;
    const bool pass = test_name.empty() ? truthy(x) : apply_test(test_name, x, rest);
    if (pass == keep) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}

Value filter_indent(const std::string&, const Value& v, const Args& a) {
  a.check("indent", {"width", "first", "blank"});
  const Value width = a.get_or(0, "width", Value::integer(4));
  const std::string pad =
      width.is_string()
          ? width.s
          : std::string(size_t(std::clamp<int64_t>(require_int(width, "indent width"), 0, 1000)),
                        ' ');
  const bool first = truthy(a.get_or(1, "first", Value::boolean(false)));
  const bool blank = truthy(a.get_or(2, "blank", Value::boolean(false)));
  // do_indent appends "\n" to its argument as it is: only strings work.
  fail_if_undefined(v);
  if (!v.is_string()) {
    type_error("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  }
  const std::vector<std::string> lines = split_lines(v.s + "\n");
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k) out += '\n';
    if (k > 0 && (blank || !lines[k].empty())) out += pad;
    out += lines[k];
    if (out.size() > kMaxOutputBytes) throw RenderError("string longer than 64 MiB");
  }
  return Value::string(first ? pad + out : out);
}

Value filter_wordcount(const std::string&, const Value& v, const Args&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : decode_utf8(to_str(v))) {
    const bool w = c == '_' || is_alnum(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value filter_format(const std::string&, const Value& v, const Args& a) {
  if (!a.kw.empty()) type_error("format: keyword arguments are not supported");
  return Value::string(checked(percent_format(to_str(v), Value::make_tuple(a.pos))));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

// The builtin filters (the parser refuses any other name).
constexpr FilterEntry kFilters[] = {
    {"abs", filter_abs},
    {"attr", filter_attr},
    {"capitalize", filter_capitalize},
    {"count", filter_length},
    {"d", filter_default},
    {"default", filter_default},
    {"dictsort", filter_dictsort},
    {"e", filter_escape},
    {"escape", filter_escape},
    {"first", filter_first_or_last},
    {"float", filter_float},
    {"format", filter_format},
    {"indent", filter_indent},
    {"int", filter_int},
    {"items", filter_items},
    {"join", filter_join},
    {"last", filter_first_or_last},
    {"length", filter_length},
    {"list", filter_list},
    {"lower", filter_lower},
    {"map", filter_map},
    {"max", filter_min_or_max},
    {"min", filter_min_or_max},
    {"reject", filter_select},
    {"rejectattr", filter_select},
    {"replace", filter_replace},
    {"reverse", filter_reverse},
    {"round", filter_round},
    {"safe", filter_string},
    {"select", filter_select},
    {"selectattr", filter_select},
    {"sort", filter_sort},
    {"string", filter_string},
    {"sum", filter_sum},
    {"title", filter_title},
    {"tojson", filter_tojson},
    {"trim", filter_trim},
    {"unique", filter_unique},
    {"upper", filter_upper},
    {"wordcount", filter_wordcount},
};

// The filter named `name`, or null.
FilterFn find_filter(std::string_view name) {
  static const std::map<std::string_view, FilterFn, std::less<>> by_name = [] {
    std::map<std::string_view, FilterFn, std::less<>> m;
    for (const FilterEntry& f : kFilters) m.emplace(f.name, f.fn);
    return m;
  }();
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

Value apply_filter(const std::string& name, const Value& v, const Args& a) {
  const FilterFn fn = find_filter(name);
  if (fn == nullptr) throw RenderError("unknown filter '" + name + "'");
  return fn(name, v, a);
}

// ---- tests ----
//
// As the filters: kTests maps every test name to a function, apply_test looks it up once.

// What a test sees: its name as written, the subject and the arguments.
struct TestCall {
  const std::string& name;
  const Value& v;
  const Args& a;

  // The argument of a test that takes one (`x is divisibleby 3`).
  const Value& arg() const {
    if (a.pos.empty()) type_error("test '" + name + "' takes one argument");
    return a.pos[0];
  }
};

using TestFn = bool (*)(const TestCall& t);

// odd, even: value % 2 == 1 (or == 0); 0.5 is neither.
bool test_odd_or_even(const TestCall& t) {
  const Value r = arithmetic("%", t.v, Value::integer(2));
  return equal(r, Value::integer(t.name == "odd" ? 1 : 0));
}

bool test_sameas(const TestCall& t) {
  const Value& o = t.arg();
  if (t.v.kind != o.kind) return false;
  if (t.v.is_sequence()) return t.v.list == o.list;
  if (t.v.kind == Value::Kind::kDict) return t.v.dict == o.dict;
  return equal(t.v, o);
}

bool test_eq(const TestCall& t) {
  return equal(t.v, t.arg());
}
bool test_ne(const TestCall& t) {
  return !equal(t.v, t.arg());
}
bool test_lt(const TestCall& t) {
  return compare(t.v, t.arg(), "<");
}
bool test_le(const TestCall& t) {
  return compare(t.v, t.arg(), "<=");
}
bool test_gt(const TestCall& t) {
  return compare(t.v, t.arg(), ">");
}
bool test_ge(const TestCall& t) {
  return compare(t.v, t.arg(), ">=");
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
  // A test without a parameter refuses one (`x is callable y` parses `y` as an argument).
  bool unary;
};

// The builtin tests (the parser refuses any other name).
constexpr TestEntry kTests[] = {
    {"defined", [](const TestCall& t) { return !t.v.is_undefined(); }, true},
    {"undefined", [](const TestCall& t) { return t.v.is_undefined(); }, true},
    {"none", [](const TestCall& t) { return t.v.is_none(); }, true},
    {"boolean", [](const TestCall& t) { return t.v.kind == Value::Kind::kBool; }, true},
    {"true", [](const TestCall& t) { return t.v.kind == Value::Kind::kBool && t.v.b; }, true},
    {"false", [](const TestCall& t) { return t.v.kind == Value::Kind::kBool && !t.v.b; }, true},
    {"integer", [](const TestCall& t) { return t.v.kind == Value::Kind::kInt; }, true},
    {"float", [](const TestCall& t) { return t.v.kind == Value::Kind::kFloat; }, true},
    {"number", [](const TestCall& t) { return t.v.is_number(); }, true},
    {"string", [](const TestCall& t) { return t.v.is_string(); }, true},
    {"mapping", [](const TestCall& t) { return t.v.kind == Value::Kind::kDict; }, true},
    {"iterable",
     [](const TestCall& t) {
       return t.v.is_undefined() || t.v.is_string() || t.v.is_sequence() ||
              t.v.kind == Value::Kind::kDict || t.v.kind == Value::Kind::kLoop;
     },
     true},
    {"sequence",
     [](const TestCall& t) {
       return t.v.is_undefined() || t.v.is_string() || t.v.is_sequence() ||
              t.v.kind == Value::Kind::kDict;
     },
     true},
    {"callable", [](const TestCall& t) { return t.v.kind == Value::Kind::kCallable; }, true},
    {"escaped", [](const TestCall&) { return false; }, true},
    {"lower", [](const TestCall& t) { return t.v.is_string() && cased_as(t.v.s, true); }, true},
    {"upper", [](const TestCall& t) { return t.v.is_string() && cased_as(t.v.s, false); }, true},
    {"odd", test_odd_or_even, true},
    {"even", test_odd_or_even, true},
    {"filter", [](const TestCall& t) { return t.v.is_string() && known_filter(t.v.s); }, true},
    {"test", [](const TestCall& t) { return t.v.is_string() && known_test(t.v.s); }, true},
    {"divisibleby", [](const TestCall& t) { return !truthy(arithmetic("%", t.v, t.arg())); },
     false},
    {"sameas", test_sameas, false},
    {"eq", test_eq, false},
    {"equalto", test_eq, false},
    {"==", test_eq, false},
    {"ne", test_ne, false},
    {"!=", test_ne, false},
    {"lt", test_lt, false},
    {"lessthan", test_lt, false},
    {"<", test_lt, false},
    {"le", test_le, false},
    {"<=", test_le, false},
    {"gt", test_gt, false},
    {"greaterthan", test_gt, false},
    {">", test_gt, false},
    {"ge", test_ge, false},
    {">=", test_ge, false},
    {"in", [](const TestCall& t) { return contains(t.arg(), t.v); }, false},
};

// The test named `name`, or null.
const TestEntry* find_test(std::string_view name) {
  static const std::map<std::string_view, const TestEntry*, std::less<>> by_name = [] {
    std::map<std::string_view, const TestEntry*, std::less<>> m;
    for (const TestEntry& t : kTests) m.emplace(t.name, &t);
    return m;
  }();
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

bool apply_test(const std::string& name, const Value& v, const Args& a) {
  const TestEntry* test = find_test(name);
  if (test == nullptr) throw RenderError("unknown test '" + name + "'");
  if (test->unary && (!a.pos.empty() || !a.kw.empty())) {
    const std::string given = std::to_string(1 + a.pos.size() + a.kw.size());
    if (name == "callable")
      type_error("callable() takes exactly one argument (" + given + " given)");
    type_error("test_" + name + "() takes 1 positional argument but " + given + " were given");
  }
  return test->fn(TestCall{name, v, a});
}

}  // namespace

bool known_filter(std::string_view name) {
  return find_filter(name) != nullptr;
}
bool known_test(std::string_view name) {
  return find_test(name) != nullptr;
}

namespace {

class Renderer {
 public:
  Renderer(const Program& program, const boost::json::object& context, std::time_t now,
           int64_t max_iterations)
      : program_(program),
        context_(nullptr),
        root_(&context_),
        now_(now),
        max_iterations_(max_iterations) {
    for (const auto& kv : context) context_.set(std::string(kv.key()), from_json(kv.value()));
  }

  std::string run() {
    std::string out;
    exec_body(program_.body, root_, out);
    return out;
  }

  int line() const { return line_; }

 private:
  // ---- statements ----

  void append(std::string& out, std::string_view text) {
    out += text;
    total_ += text.size();
    if (out.size() > kMaxOutputBytes || total_ > 4 * kMaxOutputBytes) {
      throw RenderError("output longer than 64 MiB");
    }
  }

  Flow exec_body(const Body& body, Scope& scope, std::string& out) {
    for (const NodePtr& n : body) {
      const Flow f = exec(*n, scope, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec(const Node& n, Scope& scope, std::string& out) {
    line_ = n.line;
    switch (n.kind) {
      case Node::Kind::kText:
        append(out, n.text);
        break;
      case Node::Kind::kOutput:
        append(out, to_str(eval(*n.expr, scope)));
        break;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : n.branches) {
          if (cond == nullptr || truthy(eval(*cond, scope))) return exec_body(body, scope, out);
        }
        break;
      case Node::Kind::kFor:
        return exec_for(n, scope, out);
      case Node::Kind::kSet: {
        Value v = eval(*n.expr, scope);
        if (!n.attr.empty()) {
          const Value* target = scope.find(n.targets[0]);
          if (target == nullptr || target->kind != Value::Kind::kNamespace) {
            throw RenderError("cannot assign attribute on non-namespace object");
          }
          target->ns->attrs.set(Value::string(n.attr), std::move(v));
        } else {
          assign(n.targets, n.unpack, v, scope);
        }
        break;
      }
      case Node::Kind::kSetBlock: {
        // The body has a scope of its own; break/continue inside it skip the assignment.
        std::string captured;
        Scope inner(&scope);
        if (const Flow f = exec_body(n.body, inner, captured); f != Flow::kNormal) return f;
        scope.set(n.targets[0], Value::string(std::move(captured)));
        break;
      }
      case Node::Kind::kMacro: {
        auto fn = std::make_shared<Callable>();
        fn->type = Callable::Type::kMacro;
        fn->name = n.name;
        fn->macro = &n;
        Value v;
        v.kind = Value::Kind::kCallable;
        v.fn = std::move(fn);
        scope.set(n.name, std::move(v));
        break;
      }
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
      case Node::Kind::kWith: {
        Scope inner(&scope);
        for (size_t k = 0; k < n.targets.size(); ++k)
          inner.set(n.targets[k], eval(*n.values[k], scope));
        return exec_body(n.body, inner, out);
      }
      case Node::Kind::kFilterBlock: {
        std::string captured;
        Scope inner(&scope);
        if (const Flow f = exec_body(n.body, inner, captured); f != Flow::kNormal) return f;
        append(out, to_str(eval_filter_chain(*n.expr, Value::string(std::move(captured)), scope)));
        break;
      }
      case Node::Kind::kBody:
        return exec_body(n.body, scope, out);
    }
    return Flow::kNormal;
  }

  void assign(const std::vector<std::string>& targets, bool unpack, const Value& v, Scope& scope) {
    if (!unpack) {
      scope.set(targets[0], v);
      return;
    }
    const List items = iterate(v);
    if (items.size() > targets.size()) {
      throw RenderError("too many values to unpack (expected " + std::to_string(targets.size()) +
                        ")");
    }
    if (items.size() < targets.size()) {
      throw RenderError("not enough values to unpack (expected " + std::to_string(targets.size()) +
                        ", got " + std::to_string(items.size()) + ")");
    }
    for (size_t k = 0; k < targets.size(); ++k) scope.set(targets[k], items[k]);
  }

  Flow exec_for(const Node& n, Scope& scope, std::string& out) {
    std::shared_ptr<const List> all = iterate_shared(eval(*n.expr, scope));
    if (n.cond) {
      List kept;
      for (const Value& item : *all) {
        tick();
        Scope probe(&scope);
        assign(n.targets, n.unpack, item, probe);
        if (truthy(eval(*n.cond, probe))) kept.push_back(item);
      }
      all = std::make_shared<const List>(std::move(kept));
    }
    const List& items = *all;
    const auto length = int64_t(items.size());
    // Jinja's generated code clears its "no iteration" flag at the end of the body, so `else`
    // also runs when every iteration left early by break or continue.
    bool completed = false;
    for (int64_t k = 0; k < length; ++k) {
      tick();
      Scope body(&scope);
      body.vars.reserve(n.targets.size() + 1);
      assign(n.targets, n.unpack, items[size_t(k)], body);
      auto loop = std::make_shared<Loop>();
      loop->index0 = k;
      loop->length = length;
      loop->items = all;
      Value lv;
      lv.kind = Value::Kind::kLoop;
      lv.loop = std::move(loop);
      body.set("loop", std::move(lv));
      const Flow f = exec_body(n.body, body, out);
      if (f == Flow::kBreak) break;
      if (f == Flow::kNormal) completed = true;
    }
    if (!completed && !n.else_body.empty()) {
      Scope inner(&scope);
      exec_body(n.else_body, inner, out);
    }
    return Flow::kNormal;
  }

  void tick() {
    if (++iterations_ > max_iterations_) {
      throw RenderError(max_iterations_ == kMaxIterations
                            ? std::string("more than 10^7 loop iterations")
                            : "more than " + std::to_string(max_iterations_) + " loop iterations");
    }
  }

  // Items that range() creates count against a budget of their own: memory, not time, is what
  // a huge range costs.
  void materialize(int64_t n) {
    materialized_ += n;
    if (materialized_ > kMaxMaterialized) throw RenderError("range() made more than 10^6 items");
  }

  // ---- expressions ----

  Value lookup(const std::string& name, const Scope& scope) {
    if (const Value* v = scope.find(name)) return *v;
    if (one_of(name, {"range", "namespace", "dict", "raise_exception", "strftime_now"})) {
      return global_function(name);
    }
    return Value::undefined("'" + name + "' is undefined");
  }

  Value eval(const Expr& e, Scope& scope) {
    line_ = e.line;
    switch (e.kind) {
      case Expr::Kind::kConst:
        return e.value;
      case Expr::Kind::kName:
        return lookup(e.name, scope);
      case Expr::Kind::kGetAttr:
        return get_attr(eval(*e.args[0], scope), e.name);
      case Expr::Kind::kGetItem: {
        Value obj = eval(*e.args[0], scope);
        return get_item(obj, eval(*e.args[1], scope));
      }
      case Expr::Kind::kSlice:
        return eval_slice(e, scope);
      case Expr::Kind::kCall: {
        Value callee = eval(*e.args[0], scope);
        Args a = eval_args(e, scope);
        return call(callee, a);
      }
      case Expr::Kind::kFilter:
        return eval_filter_chain(e, Value(), scope);
      case Expr::Kind::kTest: {
        Value subject = eval(*e.args[0], scope);
        Args a = eval_args(e, scope);
        return Value::boolean(apply_test(e.name, subject, a));
      }
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos:
        return eval_unary(e, scope);
      case Expr::Kind::kNot:
        return Value::boolean(!truthy(eval(*e.args[0], scope)));
      case Expr::Kind::kBinary: {
        Value a = eval(*e.args[0], scope);
        Value b = eval(*e.args[1], scope);
        line_ = e.line;
        return arithmetic(e.name, a, b);
      }
      case Expr::Kind::kAnd: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? eval(*e.args[1], scope) : a;
      }
      case Expr::Kind::kOr: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? a : eval(*e.args[1], scope);
      }
      case Expr::Kind::kCompare:
        return eval_compare(e, scope);
      case Expr::Kind::kCond:
        if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
        if (e.args[2]) return eval(*e.args[2], scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List items;
        items.reserve(e.args.size());
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
        return e.kind == Expr::Kind::kList ? Value::make_list(std::move(items))
                                           : Value::make_tuple(std::move(items));
      }
      case Expr::Kind::kDict:
        return eval_dict(e, scope);
    }
    return Value();
  }

  // obj[start:stop:step]
  Value eval_slice(const Expr& e, Scope& scope) {
    Value obj = eval(*e.args[0], scope);
    auto bound = [&](const ExprPtr& p) -> std::optional<int64_t> {
      if (!p) return std::nullopt;
      Value v = eval(*p, scope);
      if (v.is_none()) return std::nullopt;
      if (!v.is_int_like()) {
        type_error("slice indices must be integers or None or have an __index__ method");
      }
      return v.int_value();
    };
    const auto start = bound(e.args[1]);
    const auto stop = bound(e.args[2]);
    const auto step = bound(e.args[3]);
    return slice(obj, start, stop, step);
  }

  // -x and +x
  Value eval_unary(const Expr& e, Scope& scope) {
    Value v = eval(*e.args[0], scope);
    fail_if_undefined(v);
    if (!v.is_number()) {
      type_error(std::string("bad operand type for unary ") +
                 (e.kind == Expr::Kind::kNeg ? "-" : "+") + ": '" + type_name(v) + "'");
    }
    if (e.kind == Expr::Kind::kPos) return v.is_int_like() ? Value::integer(v.int_value()) : v;
    if (v.kind == Value::Kind::kFloat) return Value::floating(-v.f);
    if (v.int_value() == INT64_MIN) throw RenderError("integer overflow");
    return Value::integer(-v.int_value());
  }

  // A chain of comparisons (`a < b <= c`): false at the first that fails, as in Python.
  Value eval_compare(const Expr& e, Scope& scope) {
    Value left = eval(*e.args[0], scope);
    for (size_t k = 0; k < e.ops.size(); ++k) {
      Value right = eval(*e.args[k + 1], scope);
      line_ = e.line;
      const std::string& op = e.ops[k];
      bool ok = false;
      if (op == "==")
        ok = equal(left, right);
      else if (op == "!=")
        ok = !equal(left, right);
      else if (op == "in")
        ok = contains(right, left);
      else if (op == "notin")
        ok = !contains(right, left);
      else
        ok = compare(left, right, op);
      if (!ok) return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }

  // A dict literal; lists and dicts cannot be keys.
  Value eval_dict(const Expr& e, Scope& scope) {
    Dict d;
    for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
      Value key = eval(*e.args[k], scope);
      if (key.is_sequence() && key.kind == Value::Kind::kList)
        type_error("unhashable type: 'list'");
      if (key.kind == Value::Kind::kDict) type_error("unhashable type: 'dict'");
      d.set(std::move(key), eval(*e.args[k + 1], scope));
    }
    return Value::make_dict(std::move(d));
  }

  Args eval_args(const Expr& e, Scope& scope) {
    Args a;
    for (size_t k = 1; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k], scope));
    for (const auto& [name, expr] : e.kwargs) a.kw.emplace_back(name, eval(*expr, scope));
    return a;
  }

  // A filter chain; a null innermost subject stands for `subject` ({% filter %} blocks).
  Value eval_filter_chain(const Expr& e, Value subject, Scope& scope) {
    Value v;
    if (e.args[0] == nullptr) {
      v = std::move(subject);
    } else if (e.args[0]->kind == Expr::Kind::kFilter) {
      v = eval_filter_chain(*e.args[0], std::move(subject), scope);
    } else {
      v = eval(*e.args[0], scope);
    }
    Args a = eval_args(e, scope);
    line_ = e.line;
    return apply_filter(e.name, v, a);
  }

  Value call(const Value& callee, const Args& a) {
    if (callee.is_undefined()) undefined_error(callee);
    if (callee.kind != Value::Kind::kCallable)
      type_error("'" + type_name(callee) + "' object is not callable");
    const Callable& fn = *callee.fn;
    switch (fn.type) {
      case Callable::Type::kMacro:
        return call_macro(fn, a);
      case Callable::Type::kMethod:
        return call_method(fn, a);
      case Callable::Type::kGlobal:
        return call_global(fn.name, a);
    }
    return Value();
  }

  Value call_macro(const Callable& fn, const Args& a) {
    const Node& m = *fn.macro;
    if (a.pos.size() > m.params.size()) {
      throw RenderError("macro '" + m.name + "' takes not more than " +
                        std::to_string(m.params.size()) + " argument(s)");
    }
    for (const auto& kv : a.kw) {
      const auto& k = kv.first;  // not a structured binding: clang 14 cannot capture one
      const bool known = std::any_of(m.params.begin(), m.params.end(),
                                     [&](const auto& p) { return p.first == k; });
      if (!known) throw RenderError("macro '" + m.name + "' takes no keyword argument '" + k + "'");
    }
    if (++call_depth_ > kMaxCallDepth) throw RenderError("maximum recursion depth exceeded");
    Scope local(&root_);
    for (size_t k = 0; k < m.params.size(); ++k) {
      const auto& [pname, def] = m.params[k];
      if (const Value* v = a.get(k, pname)) {
        local.set(pname, *v);
      } else if (def) {
        local.set(pname, eval(*def, local));
      } else {
        local.set(pname, Value::undefined("parameter " + repr_string(pname) + " was not provided"));
      }
    }
    std::string out;
    exec_body(m.body, local, out);
    --call_depth_;
    return Value::string(std::move(out));
  }

  Value call_global(const std::string& name, const Args& a) {
    if (name == "raise_exception") {
      a.check(name, {"message"});
      throw RenderError(to_str(a.get_or(0, "message", Value::string(""))));
    }
    if (name == "strftime_now") {
      a.check(name, {"format"});
      const Value* f = a.get(0, "format");
      if (f == nullptr)
        type_error("strftime_now() missing 1 required positional argument: 'format'");
      return Value::string(strftime(require_string(*f, "strftime_now() argument")));
    }
    if (name == "range") {
      if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3) {
        type_error("range expected 1 to 3 integer arguments");
      }
      int64_t start = 0, stop = 0, step = 1;
      if (a.pos.size() == 1) {
        stop = require_int(a.pos[0], "range");
      } else {
        start = require_int(a.pos[0], "range");
        stop = require_int(a.pos[1], "range");
        if (a.pos.size() == 3) step = require_int(a.pos[2], "range");
      }
      if (step == 0) throw RenderError("range() arg 3 must not be zero");
      List out;
      for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
        materialize(1);
        out.push_back(Value::integer(k));
      }
      // A list that prints as Python's range object does.
      Value r = Value::make_list(std::move(out));
      r.s = "range(" + std::to_string(start) + ", " + std::to_string(stop) +
            (step != 1 ? ", " + std::to_string(step) : "") + ")";
      return r;
    }
    if (name == "namespace" || name == "dict") {
      Dict d;
      if (!a.pos.empty()) {
        if (a.pos.size() > 1 || a.pos[0].kind != Value::Kind::kDict) {
          type_error(name + "() takes a mapping and keyword arguments");
        }
        d = *a.pos[0].dict;
      }
      for (const auto& [k, v] : a.kw) d.set(Value::string(k), v);
      if (name == "dict") return Value::make_dict(std::move(d));
      Value v;
      v.kind = Value::Kind::kNamespace;
      v.ns = std::make_shared<Namespace>();
      v.ns->attrs = std::move(d);
      return v;
    }
    type_error("'" + name + "' is not callable");
  }

  std::string strftime(const std::string& format) const {
    std::tm tm{};
    gmtime_r(&now_, &tm);
    if (format.empty()) return {};
    for (size_t size = 256; size <= (1u << 20); size *= 4) {
      std::string buf(size, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
      if (n > 0) return buf.substr(0, n);
    }
    return {};
  }

  const Program& program_;
  Scope context_;  // the caller's variables
  Scope root_;     // the template's top level (its sets and macros)
  std::time_t now_;
  int64_t max_iterations_;
  int64_t iterations_ = 0;
  int64_t materialized_ = 0;
  size_t total_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
};

}  // namespace

Expected<std::string> render(const Program& program, const boost::json::object& context,
                             std::time_t now, int64_t max_iterations) {
  static_assert(RenderOptions().max_iterations == kMaxIterations);
  Renderer r(program, context, now, max_iterations);
  try {
    return r.run();
  } catch (const RenderError& e) {
    const int line = e.line != 0 ? e.line : r.line();
    return Error{program.source + ":" + std::to_string(line) + ": " + e.what()};
  } catch (const std::bad_alloc&) {
    return Error{program.source + ":" + std::to_string(r.line()) + ": out of memory"};
  }
}

}  // namespace ib::tokenizer::jinja
