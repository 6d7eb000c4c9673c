#include "tune/winner.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace ib::tune {

namespace json = boost::json;

namespace {

bool scalar(const json::value& v) {
  return !v.is_object() && !v.is_array();
}

void emit(YAML::Emitter& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::object:
      out << YAML::BeginMap;
      for (const auto& [k, x] : v.get_object()) {
        out << YAML::Key << std::string(k) << YAML::Value;
        emit(out, x);
      }
      out << YAML::EndMap;
      break;
    case json::kind::array: {
      bool flat = true;
      for (const auto& x : v.get_array()) flat = flat && scalar(x);
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& x : v.get_array()) emit(out, x);
      out << YAML::EndSeq;
      break;
    }
    case json::kind::string:
      out << YAML::DoubleQuoted << std::string(v.get_string());
      break;
    case json::kind::bool_:
      out << v.get_bool();
      break;
    case json::kind::int64:
      out << v.get_int64();
      break;
    case json::kind::uint64:
      out << v.get_uint64();
      break;
    case json::kind::double_:
      out << v.get_double();
      break;
    case json::kind::null:
      out << YAML::Null;
      break;
  }
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::vector<govern::FieldChange> recipe_diff(const recipe::ConfigEntry& base,
                                             const recipe::ConfigEntry& winner) {
  return govern::diff_fields(base.raw, winner.raw);
}

std::string winner_recipe_yaml(const std::string& key, const recipe::ConfigEntry& winner) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << key << YAML::Value;
  emit(out, winner.raw);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string changelog_entry(const std::string& key, const std::vector<std::string>& description) {
  std::string out = fmt::format("\n- config-keys:\n    - {}\n  description:\n", key);
  for (const auto& d : description) out += "    - " + quoted(d) + "\n";
  out += "  pr-link: XXX\n";
  return out;
}

}  // namespace ib::tune
