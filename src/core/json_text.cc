#include "core/json_text.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "core/strings.h"

namespace ib {

namespace json = boost::json;

namespace {

void append_string(std::string& out, json::string_view s) {
  out += '"';
  append_json_escaped(out, std::string_view(s.data(), s.size()));
  out += '"';
}

void append_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  const size_t start = out.size();
  fmt::format_to(std::back_inserter(out), "{}", d);
  // Whole numbers keep a decimal point, so that the value reads back as a double.
  if (out.find_first_of(".e", start) == std::string::npos) out += ".0";
}

void append_object(std::string& out, const json::object& o) {
  out += '{';
  bool first = true;
  for (const auto& kv : o) {
    if (!first) out += ',';
    first = false;
    append_string(out, kv.key());
    out += ':';
    append_json(out, kv.value());
  }
  out += '}';
}

void append_array(std::string& out, const json::array& a) {
  out += '[';
  bool first = true;
  for (const auto& e : a) {
    if (!first) out += ',';
    first = false;
    append_json(out, e);
  }
  out += ']';
}

}  // namespace

void append_json(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      return;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      return;
    case json::kind::int64:
      fmt::format_to(std::back_inserter(out), "{}", v.get_int64());
      return;
    case json::kind::uint64:
      fmt::format_to(std::back_inserter(out), "{}", v.get_uint64());
      return;
    case json::kind::double_:
      append_double(out, v.get_double());
      return;
    case json::kind::string:
      append_string(out, v.get_string());
      return;
    case json::kind::array:
      append_array(out, v.get_array());
      return;
    case json::kind::object:
      append_object(out, v.get_object());
      return;
  }
}

std::string json_text(const json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

std::string json_text(const json::object& o) {
  std::string out;
  append_object(out, o);
  return out;
}

std::string json_text(const json::array& a) {
  std::string out;
  append_array(out, a);
  return out;
}

}  // namespace ib
