#include "recipe/eval_thresholds.h"

#include <fmt/format.h>

#include "recipe/recipe.h"
#include "recipe/yaml_reader.h"

namespace ib::recipe {

namespace {

// task -> score in [0, 1], for one mapping.
std::map<std::string, double> read_tasks(YamlReader& r, const YAML::Node& node,
                                         const std::string& path) {
  std::map<std::string, double> out;
  auto fields = r.open_mapping(node, path);
  if (!fields) return out;
  for (const auto& [task, value] : fields->values) {
    if (auto v = r.number(value, field_path(path, task), 0, 1)) out[task] = *v;
  }
  return out;
}

}  // namespace

EvalThresholds::Resolved EvalThresholds::resolve(const std::string& prefix,
                                                 const std::string& task, double fallback) const {
  if (auto m = by_model.find(prefix); !prefix.empty() && m != by_model.end()) {
    if (auto t = m->second.find(task); t != m->second.end()) {
      return {t->second, fmt::format("models.{}.{} in {}", prefix, task, file)};
    }
  }
  if (auto t = defaults.find(task); t != defaults.end()) {
    return {t->second, fmt::format("default.{} in {}", task, file)};
  }
  return {fallback, "--min-score"};
}

Expected<EvalThresholds> parse_eval_thresholds(const std::string& text, const std::string& file) {
  std::vector<Diagnostic> diagnostics;
  YamlReader r(file, &diagnostics);
  EvalThresholds out;
  out.file = file;
  auto doc = r.parse(text);
  if (doc) {
    if (doc->IsNull()) {
      return Error{fmt::format("{}: empty; a thresholds file holds `default:` and/or `models:`",
                               file)};
    }
    if (auto fields = r.mapping(*doc, "", {"default", "models"})) {
      if (fields->has("default")) out.defaults = read_tasks(r, fields->at("default"), "default");
      if (fields->has("models")) {
        if (auto models = r.open_mapping(fields->at("models"), "models")) {
          for (const auto& [prefix, tasks] : models->values) {
            out.by_model[prefix] = read_tasks(r, tasks, field_path("models", prefix));
          }
        }
      }
    }
  }
  if (!diagnostics.empty()) return Error{join_diagnostics(diagnostics)};
  return out;
}

Expected<EvalThresholds> load_eval_thresholds(const std::filesystem::path& path) {
  auto text = read_yaml_file(path);
  if (!text) return text.error();
  return parse_eval_thresholds(*text, path.string());
}

}  // namespace ib::recipe
