#include "recipe/fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/sha256.h"

namespace ib::recipe {

namespace {

void append_escaped_code_point(std::string& out, uint32_t cp) {
  if (cp >= 0x10000) {
    cp -= 0x10000;
    out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
  } else {
    out += fmt::format("\\u{:04x}", cp);
  }
}

void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            append_escaped_code_point(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence; a malformed byte is escaped as itself.
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    uint32_t cp = len == 4 ? c & 0x07 : len == 3 ? c & 0x0F : c & 0x1F;
    bool ok = len > 1 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      append_escaped_code_point(out, c);
      ++i;
      continue;
    }
    append_escaped_code_point(out, cp);
    i += len;
  }
  out += '"';
}

void append_double(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "NaN";
  } else if (std::isinf(d)) {
    out += d > 0 ? "Infinity" : "-Infinity";
  } else {
    std::string s = fmt::format("{}", d);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    out += s;
  }
}

void append(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null:
      out += "null";
      break;
    case boost::json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      break;
    case boost::json::kind::int64:
      out += std::to_string(v.get_int64());
      break;
    case boost::json::kind::uint64:
      out += std::to_string(v.get_uint64());
      break;
    case boost::json::kind::double_:
      append_double(out, v.get_double());
      break;
    case boost::json::kind::string:
      append_string(out, v.get_string());
      break;
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out += ',';
        first = false;
        append(out, item);
      }
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      const auto& obj = v.get_object();
      std::vector<const boost::json::key_value_pair*> items;
      for (const auto& kv : obj) items.push_back(&kv);
      // Byte-wise order of UTF-8 equals code-point order (Python's sort of str keys).
      std::sort(items.begin(), items.end(), [](auto* a, auto* b) {
        return std::string_view(a->key()) < std::string_view(b->key());
      });
      out += '{';
      bool first = true;
      for (const auto* kv : items) {
        if (!first) out += ',';
        first = false;
        append_string(out, kv->key());
        out += ':';
        append(out, kv->value());
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string canonical_json(const boost::json::value& value) {
  std::string out;
  append(out, value);
  return out;
}

std::string recipe_fingerprint(const boost::json::object& row) {
  boost::json::object curve = row;
  for (const char* k :
       {"conc", "exp-name", "recipe-fingerprint", "eval-conc", "eval-only", "eval-all-concs"}) {
    curve.erase(k);
  }
  if (curve.contains("run-eval")) curve["run-eval"] = false;
  return sha256_hex(canonical_json(curve));
}

}  // namespace ib::recipe
