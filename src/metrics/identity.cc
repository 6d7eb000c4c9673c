#include "metrics/identity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_text.h"

namespace ib::metrics {

namespace json = boost::json;

const IdentityFieldInfo& field_info(IdentityField f) {
  return kIdentityFields[static_cast<size_t>(f)];
}

std::optional<IdentityField> identity_field(std::string_view name) {
  if (name == "framework") return IdentityField::kEngine;
  for (const auto& info : kIdentityFields) {
    if (name == info.key || name == info.title) return info.field;
    // The recipe's and older files' kebab-case spelling: "engine-version".
    if (name.size() == info.key.size()) {
      bool same = true;
      for (size_t i = 0; i < name.size() && same; ++i) {
        same = name[i] == info.key[i] || (name[i] == '-' && info.key[i] == '_');
      }
      if (same) return info.field;
    }
  }
  return std::nullopt;
}

json::object Identity::to_json(bool unknown) const {
  json::object o;
  for (const auto& info : kIdentityFields) {
    const std::string& v = get(info.field);
    if (unknown || !v.empty()) o[info.key] = v;
  }
  return o;
}

Identity Identity::from_json(const json::object& o) {
  Identity id;
  for (const auto& [k, v] : o) {
    const auto f = identity_field(k);
    if (!f || !v.is_string() || !id.get(*f).empty()) continue;
    id.set(*f, std::string(v.get_string()));
  }
  return id;
}

namespace {

// A plain value as text ("" for absent or null; true -> "true"; numbers as JSON writes them).
std::string str_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_bool()) return v->get_bool() ? "true" : "false";
  return json_text(*v);
}

std::string worker_parallelism(const json::object& w) {
  std::string out = "TP" + (str_at(w, "tp").empty() ? std::string("1") : str_at(w, "tp"));
  const std::string ep = str_at(w, "ep");
  if (!ep.empty() && ep != "1") out.append(" EP").append(ep);
  const std::string pp = str_at(w, "pp");
  if (!pp.empty() && pp != "1") out.append(" PP").append(pp);
  if (str_at(w, "dp-attn") == "true") out.append(" DPA");
  return out;
}

std::string side_text(const std::set<std::string>& values) {
  return values.empty() ? std::string("unknown") : fmt::format("{}", fmt::join(values, ", "));
}

}  // namespace

std::string parallelism_of(const json::object& row) {
  const auto* prefill = row.if_contains("prefill");
  const auto* decode = row.if_contains("decode");
  if (prefill && decode && prefill->is_object() && decode->is_object()) {
    auto workers = [](const json::object& w) {
      const std::string n = str_at(w, "num-worker");
      return (n.empty() ? std::string("1") : n) + "x" + worker_parallelism(w);
    };
    return "P" + workers(prefill->get_object()) + " D" + workers(decode->get_object());
  }
  return worker_parallelism(row);
}

Identity config_identity(const json::object& row, const json::object& settings) {
  using F = IdentityField;
  Identity id;
  id.set(F::kModel, str_at(row, "model"));
  id.set(F::kImage, str_at(row, "image"));
  std::string engine = str_at(row, "framework");
  id.set(F::kEngine, engine.empty() ? str_at(settings, "engine") : engine);
  id.set(F::kEngineVersion, str_at(settings, "engine-version"));
  id.set(F::kPrecision, str_at(row, "precision"));
  id.set(F::kRunner, str_at(row, "runner"));
  std::string hardware = str_at(row, "hardware");
  if (hardware.empty()) hardware = str_at(settings, "hardware");
  id.set(F::kHardware, hardware.empty() ? str_at(row, "runner") : hardware);
  const std::string spec = str_at(row, "spec-decoding");
  id.set(F::kSpecDecoding, spec.empty() ? std::string("none") : spec);
  id.set(F::kParallelism, parallelism_of(row));
  return id;
}

std::string Confounder::text() const {
  return fmt::format("{}: {} vs {}", title(), side_text(base), side_text(head));
}

json::object Confounder::to_json() const {
  return {{"field", key()},
          {"title", title()},
          {"base", json::array(base.begin(), base.end())},
          {"head", json::array(head.begin(), head.end())},
          {"confounding", confounding},
          {"accepted", accepted}};
}

std::optional<Confounder> Confounder::from_json(const json::value& v) {
  auto values = [](const json::value* a) {
    std::set<std::string> out;
    if (a == nullptr || !a->is_array()) return out;
    for (const auto& e : a->get_array()) {
      if (e.is_string()) out.emplace(e.get_string());
    }
    return out;
  };
  if (v.is_string()) {
    const std::string_view text = v.get_string();
    const size_t colon = text.find(": ");
    const size_t vs = text.find(" vs ", colon == std::string_view::npos ? 0 : colon);
    if (colon == std::string_view::npos || vs == std::string_view::npos) return std::nullopt;
    const auto f = identity_field(text.substr(0, colon));
    if (!f) return std::nullopt;
    return Confounder{*f,
                      {std::string(text.substr(colon + 2, vs - colon - 2))},
                      {std::string(text.substr(vs + 4))},
                      field_info(*f).confounding,
                      false};
  }
  if (!v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  const auto* field = o.if_contains("field");
  const auto f = field && field->is_string() ? identity_field(field->get_string()) : std::nullopt;
  if (!f) return std::nullopt;
  const auto* accepted = o.if_contains("accepted");
  return Confounder{*f, values(o.if_contains("base")), values(o.if_contains("head")),
                    field_info(*f).confounding,
                    accepted && accepted->is_bool() && accepted->get_bool()};
}

std::vector<Confounder> confounders(const std::vector<Identity>& base,
                                    const std::vector<Identity>& head,
                                    const std::set<IdentityField>& skip) {
  auto known = [](const std::vector<Identity>& side, IdentityField f) {
    std::set<std::string> out;
    for (const auto& id : side) {
      if (!id.get(f).empty()) out.insert(id.get(f));
    }
    return out;
  };
  std::vector<Confounder> out;
  for (const auto& info : kIdentityFields) {
    if (!info.compared || skip.count(info.field)) continue;
    auto b = known(base, info.field);
    auto h = known(head, info.field);
    if (b == h) continue;
    out.push_back(Confounder{info.field, std::move(b), std::move(h), info.confounding, false});
  }
  return out;
}

}  // namespace ib::metrics
