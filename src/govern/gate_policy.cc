#include "govern/gate_policy.h"

#include <fmt/format.h>

#include "recipe/yaml_reader.h"

namespace ib::govern {

using recipe::field_path;
using recipe::index_path;

bool is_iso_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (d[i] < '0' || d[i] > '9') return false;
  }
  const int y = std::stoi(d.substr(0, 4)), m = std::stoi(d.substr(5, 2)),
            day = std::stoi(d.substr(8, 2));
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || day < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return day <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

namespace {

void read_deprecations(recipe::YamlReader& r, const YAML::Node& node, const std::string& path,
                       const std::string& name_field, std::vector<GatePolicy::Deprecation>* out) {
  if (!r.sequence(node, path)) return;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item = index_path(path, i);
    auto f = r.mapping(node[i], item, {name_field, "from", "why"});
    if (!f) continue;
    GatePolicy::Deprecation d;
    d.line = node[i].Mark().line + 1;
    bool ok = r.require(*f, item, name_field) && r.require(*f, item, "from");
    if (!ok) continue;
    auto name = r.string(f->at(name_field), field_path(item, name_field));
    auto from = r.string(f->at("from"), field_path(item, "from"));
    if (from && !is_iso_date(*from)) {
      r.error(f->at("from"), field_path(item, "from"),
              fmt::format("expected a date YYYY-MM-DD, got \"{}\"", *from));
      from.reset();
    }
    if (f->has("why")) {
      if (auto w = r.string(f->at("why"), field_path(item, "why"), false)) d.why = *w;
    }
    if (!name || !from) continue;
    d.pattern = *name;
    d.from = *from;
    out->push_back(std::move(d));
  }
}

}  // namespace

Expected<GatePolicy> parse_gate_policy(const std::string& text, const std::string& file) {
  std::vector<recipe::Diagnostic> diagnostics;
  recipe::YamlReader r(file, &diagnostics);
  GatePolicy out;
  out.file = file;
  auto doc = r.parse(text);
  if (doc && doc->IsNull()) {
    return input_error(fmt::format(
        "{}: empty; a gate policy holds `upstream-images:` and/or `deprecated:`", file));
  }
  if (doc) {
    if (auto fields = r.mapping(*doc, "", {"upstream-images", "deprecated"})) {
      if (fields->has("upstream-images")) {
        if (auto fw = r.open_mapping(fields->at("upstream-images"), "upstream-images")) {
          for (const auto& [name, list] : fw->values) {
            const std::string path = field_path("upstream-images", name);
            auto patterns = r.string_list(list, path);
            if (!patterns) continue;
            if (patterns->empty()) {
              r.error(list, path, "expected at least one image pattern");
              continue;
            }
            out.upstream_images[name] = *patterns;
            out.upstream_lines[name] = fw->key_marks.at(name).line + 1;
          }
        }
      }
      if (fields->has("deprecated")) {
        if (auto dep = r.mapping(fields->at("deprecated"), "deprecated", {"models", "scenarios"})) {
          if (dep->has("models")) {
            read_deprecations(r, dep->at("models"), "deprecated.models", "model", &out.models);
          }
          if (dep->has("scenarios")) {
            read_deprecations(r, dep->at("scenarios"), "deprecated.scenarios", "scenario",
                              &out.scenarios);
          }
        }
      }
    }
  }
  if (!diagnostics.empty()) {
    return input_error(recipe::join_diagnostics(diagnostics));
  }
  return out;
}

}  // namespace ib::govern
