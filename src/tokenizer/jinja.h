// The Jinja subset behind ChatTemplate (chat_template.h): values with Python's semantics, the
// parsed tree, the parser (jinja_parse.cc) and the interpreter (jinja_render.cc). Internal to
// src/tokenizer/.
//
// The reference is Jinja2 3.1 as transformers configures it: ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and the loopcontrols extension, the default Undefined (renders as
// nothing, raises when used), autoescape off. Values follow Python: ints and floats apart, str()
// and repr() as Python prints them, dicts keep insertion order.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.h"

namespace ib::tokenizer::jinja {

struct Value;
struct Dict;
struct Namespace;
struct Callable;
struct Loop;

using List = std::vector<Value>;

/// A template value. Lists, tuples and dicts are immutable once built (the sandbox forbids
/// mutation) and so are shared; a namespace is mutable and shared by reference, as in Python.
struct Value {
  enum class Kind : uint8_t {
    kUndefined,  // `s` holds the message Jinja raises when it is used ("'x' is undefined")
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,  // UTF-8 in `s`
    kList,
    kTuple,
    kDict,
    kNamespace,
    kCallable,  // a macro, a global function or a bound method
    kLoop,      // the `loop` variable of a for loop
  };

  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                     // kList: how a range() prints ("range(0, 3)"), else empty
  std::shared_ptr<const List> list;  // kList, kTuple
  std::shared_ptr<const Dict> dict;
  std::shared_ptr<Namespace> ns;
  std::shared_ptr<const Callable> fn;
  std::shared_ptr<const Loop> loop;
  bool unsafe = false;  // kUndefined: an attribute the sandbox refuses (SecurityError when used)

  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value string(std::string v);
  static Value make_list(List items);
  static Value make_tuple(List items);
  static Value make_dict(Dict d);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  bool is_sequence() const { return kind == Kind::kList || kind == Kind::kTuple; }
  /// An int or a bool (a Python bool is an int).
  bool is_int_like() const { return kind == Kind::kInt || kind == Kind::kBool; }
  /// The integer of an int or a bool.
  int64_t int_value() const { return kind == Kind::kBool ? int64_t(b) : i; }
  /// A number as a double.
  double number_value() const { return kind == Kind::kFloat ? f : double(int_value()); }
};

/// A Python dict: insertion order, keys compared with Python's ==.
struct Dict {
  std::vector<std::pair<Value, Value>> items;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  /// Sets `key` (replacing an equal key in place, as Python does).
  void set(Value key, Value value);
};

/// jinja2.utils.Namespace: the one mutable object (`{% set ns.x = ... %}`).
struct Namespace {
  Dict attrs;
};

/// The state of a for loop's `loop` variable for one iteration.
struct Loop {
  int64_t index0 = 0;
  int64_t length = 0;
  std::shared_ptr<const List> items;  // what the loop iterates (previtem, nextitem)
};

/// An error raised while rendering: the message Jinja (or Python) would give, and the line of the
/// template that raised it (0 when not known yet). Caught by ChatTemplate::render.
struct RenderError : std::runtime_error {
  RenderError(const std::string& message, int at_line = 0)
      : std::runtime_error(message), line(at_line) {}
  int line;
};

// ---- Python semantics of values (jinja_value.cc) ----

/// Python's type(x).__name__ ("str", "int", "dict", "NoneType", "Undefined", ...).
std::string type_name(const Value& v);
/// Python's bool(x); Undefined is false.
bool truthy(const Value& v);
/// Python's str(x) as Jinja prints `{{ x }}` (Undefined prints nothing).
std::string to_str(const Value& v);
/// Python's repr(x).
std::string repr(const Value& v);
/// repr() of a str: quotes and escapes as Python chooses them.
std::string repr_string(std::string_view s);
/// repr() of a float: the shortest round-trip digits ("1.0", "1e+16", "0.1", "inf").
std::string repr_float(double d);
/// Python's ==.
bool equal(const Value& a, const Value& b);
/// Python's <, <=, >, >= ("<" "<=" ">" ">="); RenderError (TypeError) for unorderable types.
bool compare(const Value& a, const Value& b, std::string_view op);
/// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson calls it.
struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonOptions& options);
/// A Boost.JSON value as a template value (objects become dicts in key order).
Value from_json(const boost::json::value& v);

// ---- Unicode helpers with Python's definitions ----

/// The code points of UTF-8 text (an invalid byte becomes U+FFFD).
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
/// str.isspace() of one code point.
bool is_space(char32_t c);
/// str.strip() / lstrip() / rstrip(): `chars` unset strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
/// str.lower() / str.upper() (full case mapping, as Python).
std::string to_lower(std::string_view s);
std::string to_upper(std::string_view s);
/// str.title() and str.capitalize().
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);
/// str.splitlines() (without the line ends).
std::vector<std::string> split_lines(std::string_view s);
/// Code point count (Python len()).
int64_t utf8_length(std::string_view s);

// ---- The parsed tree (built by parse(), walked by render()) ----

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : uint8_t {
    kConst,    // value
    kName,     // name
    kGetAttr,  // args[0].name
    kGetItem,  // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]] (null args are omitted bounds)
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs); args[0] null in a {% filter %} block
    kTest,     // args[0] is name(args[1..], kwargs)
    kNeg,      // -args[0]
    kPos,      // +args[0]
    kNot,      // not args[0]
    kBinary,   // args[0] op args[1]: + - * / // % ** ~
    kAnd,      // args[0] and args[1]
    kOr,       // args[0] or args[1]
    kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    kCond,     // args[0] if args[1] else args[2] (args[2] null: undefined)
    kList,     // [args...]
    kTuple,    // (args...)
    kDict,     // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind = Kind::kConst;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind : uint8_t {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches (a null condition is the else branch)
    kFor,       // for targets in expr [if cond]: body [else: else_body]
    kSet,       // set targets = expr; `attr` set: targets[0].attr = expr
    kSetBlock,  // set targets[0] %}body{% endset
    kMacro,     // macro name(params): body
    kBreak,
    kContinue,
    kWith,         // with targets[i] = values[i]: body
    kFilterBlock,  // filter expr (a kFilter chain with a null subject) %}body{% endfilter
    kBody,         // body rendered as is ({% generation %})
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr, cond;
  std::vector<std::string> targets;
  bool unpack = false;  // targets form a tuple (`for k, v in ...`, `set a, b = ...`)
  std::string attr;     // kSet on a namespace attribute
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  std::string name;                                     // kMacro
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro: name and default (or null)
  std::vector<ExprPtr> values;                          // kWith
};

/// A macro value refers to its definition in the (immutable, shared) tree.
struct Callable {
  enum class Type : uint8_t { kMacro, kGlobal, kMethod };
  Type type = Type::kGlobal;
  std::string name;             // the global's or method's name
  Value self;                   // kMethod: the object it is bound to
  const Node* macro = nullptr;  // kMacro
};

struct Program {
  std::string source;  // for error messages: "SOURCE:LINE: message"
  Body body;
};

// Limits that keep any input (fuzzing included) from crashing or running away.
inline constexpr int kMaxParseDepth = 200;              // nested expressions and blocks
inline constexpr int kMaxCallDepth = 200;               // macro calls within macro calls
inline constexpr int64_t kMaxIterations = 10'000'000;   // loop iterations in one render
inline constexpr size_t kMaxOutputBytes = 64u << 20;    // rendered text, and any one string
inline constexpr int64_t kMaxMaterialized = 1'000'000;  // items made by range() or list * n

/// Parses template text. Errors read "SOURCE:LINE: message".
Expected<std::shared_ptr<const Program>> parse(std::string_view text, std::string_view source);

/// Renders with `context` as the variables. `now` is what strftime_now formats (UTC);
/// `max_iterations` bounds the loop iterations (kMaxIterations unless a test asks for fewer).
Expected<std::string> render(const Program& program, const boost::json::object& context,
                             std::time_t now, int64_t max_iterations = kMaxIterations);

/// Whether `name` is a filter / test the interpreter implements (the parser refuses others).
bool known_filter(std::string_view name);
bool known_test(std::string_view name);

}  // namespace ib::tokenizer::jinja
