#include "tune/knob.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "core/redact.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "recipe/fingerprint.h"

namespace ib::tune {

namespace json = boost::json;

std::string_view to_string(KnobKind kind) {
  switch (kind) {
    case KnobKind::kEnv:
      return "env";
    case KnobKind::kArg:
      return "arg";
    case KnobKind::kField:
      return "field";
  }
  return "?";
}

namespace {

constexpr std::string_view kUnset = "(unset)";
constexpr std::string_view kAbsent = "(absent)";

// The spec as messages show it: a credential-looking variable's values are never echoed.
std::string shown_spec(std::string_view spec) {
  if (spec.starts_with("env:")) {
    const auto eq = spec.find('=');
    const std::string_view name = spec.substr(4, eq == std::string_view::npos ? eq : eq - 4);
    if (eq != std::string_view::npos && is_secret_name(name)) {
      return fmt::format("env:{}={}", name, kRedacted);
    }
  }
  return printable(redact_text(spec), 80);
}

Error knob_error(std::string_view spec, const std::string& why) {
  return Error{fmt::format("--knob '{}': {}", shown_spec(spec), why)};
}

// "a,b,c" with `removal` (when given) standing for nullopt. Errors: an empty value, a value
// twice.
// `hide`: the values are credentials, never echoed.
Expected<std::vector<std::optional<std::string>>> split_values(
    std::string_view spec, std::string_view text, std::optional<std::string_view> removal,
    bool hide) {
  std::vector<std::optional<std::string>> out;
  std::set<std::string> seen;
  for (const std::string& v : split(std::string(text), ',')) {
    if (v.empty()) return knob_error(spec, "an empty value (values are separated by commas)");
    if (!seen.insert(v).second) {
      return knob_error(spec, hide ? std::string("a value is given twice")
                                   : fmt::format("value '{}' is given twice", v));
    }
    if (v == removal) {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(v);
    }
  }
  return out;
}

Status check_count(std::string_view spec, const std::string& field, std::string_view v) {
  int64_t n = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > recipe::limits::kMaxParallel) {
    return knob_error(spec, fmt::format("{} must be an integer from 1 to {}, not '{}'", field,
                                        recipe::limits::kMaxParallel, v));
  }
  return Status::Ok();
}

// A role's worker-pool field ("decode.tp"): the role and the pool's field; nullopt otherwise.
std::optional<std::pair<std::string, std::string>> role_field(const std::string& field) {
  for (const char* role : {"prefill", "decode"}) {
    const std::string prefix = std::string(role) + ".";
    if (field.starts_with(prefix)) return std::pair{std::string(role), field.substr(prefix.size())};
  }
  return std::nullopt;
}

Status check_field_value(std::string_view spec, const std::string& field, const std::string& v) {
  if (field == "pd") {
    const auto colon = v.find(':');
    if (colon == std::string::npos) {
      return knob_error(spec, fmt::format("pd is prefill:decode workers (2:1), not '{}'", v));
    }
    if (auto s = check_count(spec, "pd's prefill workers", std::string_view(v).substr(0, colon));
        !s.ok()) {
      return s;
    }
    return check_count(spec, "pd's decode workers", std::string_view(v).substr(colon + 1));
  }
  if (auto rf = role_field(field)) return check_field_value(spec, rf->second, v);
  if (field == "dp-attn") {
    if (v != "true" && v != "false") {
      return knob_error(spec, fmt::format("dp-attn is true or false, not '{}'", v));
    }
    return Status::Ok();
  }
  if (field == "spec-decoding") {
    if (v != "mtp" && v != "draft_model" && v != "none") {
      return knob_error(spec,
                        fmt::format("spec-decoding is mtp, draft_model or none, not '{}'", v));
    }
    return Status::Ok();
  }
  return check_count(spec, field, v);
}

// Where a flag is in an argv: the element index, and whether it is "--flag=value".
struct FlagAt {
  std::vector<std::string>* argv = nullptr;
  size_t index = 0;
  bool joined = false;
};

std::vector<FlagAt> find_flag(recipe::ServeSpec& serve, const std::string& flag) {
  std::vector<FlagAt> found;
  for (auto* argv : {&serve.command, &serve.extra_args}) {
    for (size_t i = 0; i < argv->size(); ++i) {
      const std::string& a = (*argv)[i];
      if (a == flag) found.push_back({argv, i, false});
      if (a.size() > flag.size() && a.starts_with(flag) && a[flag.size()] == '=') {
        found.push_back({argv, i, true});
      }
    }
  }
  return found;
}

// The value a flag has where it is: "--f=v" -> v, "--f v" -> v, a bare "--f" -> "".
std::string value_at(const FlagAt& at, const std::string& flag) {
  const auto& argv = *at.argv;
  if (at.joined) return argv[at.index].substr(flag.size() + 1);
  if (at.index + 1 < argv.size() && !argv[at.index + 1].starts_with("-")) return argv[at.index + 1];
  return "";
}

json::array to_json_array(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

json::object& raw_serve(recipe::ConfigEntry& e) {
  if (!e.raw.is_object()) e.raw = json::object();
  json::value& s = e.raw.as_object()["serve"];
  if (!s.is_object()) s = json::object();
  return s.as_object();
}

// "decode.NAME" -> {"decode", "NAME"}: a knob on one role of a serve block by role; a name
// without a role's prefix -> {"", name}.
std::pair<std::string, std::string> split_role(const std::string& name) {
  const auto dot = name.find('.');
  if (dot != std::string::npos) {
    for (const char* role : recipe::kServeRoles) {
      if (name.compare(0, dot, role) == 0 && std::string_view(role).size() == dot) {
        return {std::string(role), name.substr(dot + 1)};
      }
    }
  }
  return {"", name};
}

// The serve block an env or arg knob changes, with its raw text: the entry's, or the named
// role's where the entry starts each role with its own.
struct ServeTarget {
  recipe::ServeSpec* spec = nullptr;
  json::object* raw = nullptr;
  std::string name;  // the variable or the flag, without the role
};

Expected<ServeTarget> serve_target(recipe::ConfigEntry& e, const std::string& knob_name) {
  auto [role, name] = split_role(knob_name);
  if (!e.serve) {
    return Error{
        fmt::format("{}: no serve block: env and arg knobs change the server the recipe "
                    "starts, and this entry starts none",
                    e.key)};
  }
  if (!e.serve->has_roles()) {
    if (!role.empty()) {
      return Error{
          fmt::format("{}: its serve block is one server, not roles; drop '{}.'", e.key, role)};
    }
    return ServeTarget{&*e.serve, &raw_serve(e), name};
  }
  if (role.empty()) {
    return Error{
        fmt::format("{}: its serve block starts each role (prefill, decode, router) with "
                    "its own; name the role: {}.{}",
                    e.key, e.serve->roles.front().first, name)};
  }
  for (auto& [r, spec] : e.serve->roles) {
    if (r != role) continue;
    json::value& raw = raw_serve(e)[role];
    if (!raw.is_object()) raw = json::object();
    return ServeTarget{&spec, &raw.as_object(), name};
  }
  return Error{fmt::format("{}: its serve block has no {} role", e.key, role)};
}

json::value field_json(const std::string& field, const std::string& v) {
  if (field == "dp-attn") return json::value(v == "true");
  if (field == "spec-decoding") return json::value(v);
  return json::value(std::stoll(v));
}

// A disaggregated row's pool of `role` ("prefill" | "decode"); nullptr when it has none.
template <class Entry>
auto worker_of(Entry& s, const std::string& role) {
  auto& w = role == "prefill" ? s.prefill : s.decode;
  return w ? &*w : nullptr;
}

void set_worker_field(recipe::Worker& w, const std::string& field, const std::string& v) {
  if (field == "num-worker") w.num_worker = std::stoll(v);
  if (field == "tp") w.tp = std::stoll(v);
  if (field == "ep") w.ep = std::stoll(v);
  if (field == "dp-attn") w.dp_attn = v == "true";
}

// A disaggregated row's worker pools (checked by the caller: both are there).
// The same change in the recipe's own text: "pd" and role fields in the row's worker pools.
void set_raw_field(json::object& row, const std::string& field, const std::string& v) {
  auto pool = [&](const char* role) -> json::object& {
    json::value& w = row[role];
    if (!w.is_object()) w = json::object();
    return w.as_object();
  };
  if (field == "pd") {
    const auto colon = v.find(':');
    pool("prefill")["num-worker"] = std::stoll(v.substr(0, colon));
    pool("decode")["num-worker"] = std::stoll(v.substr(colon + 1));
  } else if (auto rf = role_field(field)) {
    pool(rf->first.c_str())[rf->second] = field_json(rf->second, v);
  } else {
    row[field] = field_json(field, v);
  }
}

void set_field(recipe::SearchSpaceEntry& s, const std::string& field, const std::string& v) {
  if (field == "pd") {
    const auto colon = v.find(':');
    s.prefill->num_worker = std::stoll(v.substr(0, colon));
    s.decode->num_worker = std::stoll(v.substr(colon + 1));
    return;
  }
  if (auto rf = role_field(field)) return set_worker_field(*worker_of(s, rf->first), rf->second, v);
  if (field == "tp") s.tp = std::stoll(v);
  if (field == "pp") s.pp = std::stoll(v);
  if (field == "ep") s.ep = std::stoll(v);
  if (field == "dcp-size") s.dcp_size = std::stoll(v);
  if (field == "pcp-size") s.pcp_size = std::stoll(v);
  if (field == "dp-attn") s.dp_attn = v == "true";
  if (field == "spec-decoding") s.spec_decoding = v;
}

std::optional<std::string> field_of(const recipe::SearchSpaceEntry& s, const std::string& field) {
  if (field == "pd") {
    if (!s.prefill || !s.decode) return std::nullopt;
    return fmt::format("{}:{}", s.prefill->num_worker, s.decode->num_worker);
  }
  if (auto rf = role_field(field)) {
    const recipe::Worker* w = worker_of(s, rf->first);
    if (w == nullptr) return std::nullopt;
    if (rf->second == "num-worker") return std::to_string(w->num_worker);
    if (rf->second == "tp") return std::to_string(w->tp);
    if (rf->second == "ep") return std::to_string(w->ep);
    if (rf->second == "dp-attn") return w->dp_attn ? "true" : "false";
    return std::nullopt;
  }
  if (field == "tp") return s.tp ? std::optional(std::to_string(*s.tp)) : std::nullopt;
  if (field == "pp") return std::to_string(s.pp);
  if (field == "ep") return std::to_string(s.ep);
  if (field == "dcp-size") return std::to_string(s.dcp_size);
  if (field == "pcp-size") return std::to_string(s.pcp_size);
  if (field == "dp-attn") return s.dp_attn ? "true" : "false";
  if (field == "spec-decoding") return s.spec_decoding;
  return std::nullopt;
}

}  // namespace

Expected<Knob> parse_knob(std::string_view spec) {
  Knob k;
  k.spec = std::string(spec);
  const auto colon = spec.find(':');
  const std::string_view kind = colon == std::string_view::npos ? spec : spec.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  if (kind == "env") {
    k.kind = KnobKind::kEnv;
    const auto eq = rest.find('=');
    if (eq == std::string_view::npos) {
      return knob_error(spec, "env knobs need values (env:NAME=a,b; '(unset)' removes it)");
    }
    k.name = std::string(rest.substr(0, eq));
    const std::string var = split_role(k.name).second;
    if (!recipe::is_env_name(var)) {
      return knob_error(spec,
                        fmt::format("'{}' is not an environment variable name", printable(var)));
    }
    auto v = split_values(spec, rest.substr(eq + 1), kUnset, is_secret_name(var));
    if (!v) return v.error();
    k.values = std::move(*v);
    // Values of a credential-looking variable are hidden in every output, as a recipe's are.
    for (const auto& value : k.values) {
      if (value && is_secret_name(var)) add_secret(*value);
    }
    return k;
  }
  if (kind == "arg") {
    k.kind = KnobKind::kArg;
    const auto eq = rest.find('=');
    k.name = std::string(rest.substr(0, eq));
    const std::string flag = split_role(k.name).second;
    if (!flag.starts_with("-") || flag == "-" || flag == "--") {
      return knob_error(spec, "a server argument starts with '-' (arg:--max-num-seqs=64,128)");
    }
    if (std::any_of(k.name.begin(), k.name.end(), [](char c) {
          return std::isspace(static_cast<unsigned char>(c)) || c == ',';
        })) {
      return knob_error(spec, "a server argument has no spaces or commas");
    }
    if (eq == std::string_view::npos) {
      k.toggle = true;
      return k;
    }
    auto v = split_values(spec, rest.substr(eq + 1), kAbsent, false);
    if (!v) return v.error();
    k.values = std::move(*v);
    // `--api-key X` and its kin: hidden in every output.
    for (const auto& value : k.values) {
      if (value) add_secrets_from_argv({flag, *value});
    }
    return k;
  }
  if (kind == "field") {
    k.kind = KnobKind::kField;
    const auto eq = rest.find('=');
    k.name = std::string(rest.substr(0, eq));
    if (std::find(std::begin(kTunableFields), std::end(kTunableFields), k.name) ==
        std::end(kTunableFields)) {
      std::string all;
      for (auto f : kTunableFields) all += (all.empty() ? "" : ", ") + std::string(f);
      std::string why =
          fmt::format("'{}' cannot be tuned; tunable fields: {}", printable(k.name), all);
      if (k.name == "image" || k.name == "model" || k.name == "precision" ||
          k.name == "framework" || k.name == "runner") {
        why = fmt::format(
            "{} is an identity field: a different {} is another recipe (a "
            "confounder), not a tuning; tunable fields: {}",
            k.name, k.name, all);
      }
      return knob_error(spec, why);
    }
    if (eq == std::string_view::npos)
      return knob_error(spec, "field knobs need values (field:tp=1,2)");
    auto v = split_values(spec, rest.substr(eq + 1), std::nullopt, false);
    if (!v) return v.error();
    for (const auto& value : *v) {
      if (auto s = check_field_value(spec, k.name, *value); !s.ok()) return s.error();
    }
    k.values = std::move(*v);
    return k;
  }
  return knob_error(spec, fmt::format("unknown kind '{}' (env:NAME=a,b, arg:--flag=a,b, arg:--flag "
                                      "or field:tp=1,2)",
                                      printable(kind, 20)));
}

std::string Change::describe() const {
  switch (kind) {
    case KnobKind::kEnv:
      return value ? fmt::format("env {}={}", name, *value) : fmt::format("env {} unset", name);
    case KnobKind::kArg:
      if (toggle) return fmt::format("arg {} {}", name, value ? "added" : "removed");
      return value ? fmt::format("arg {}={}", name, *value) : fmt::format("arg {} removed", name);
    case KnobKind::kField:
      return fmt::format("field {}={}", name, value.value_or(""));
  }
  return "";
}

std::optional<std::string> base_value(const recipe::ConfigEntry& base, const Knob& knob) {
  switch (knob.kind) {
    case KnobKind::kEnv: {
      recipe::ConfigEntry e = base;
      auto t = serve_target(e, knob.name);
      if (!t) return std::nullopt;
      auto it = t->spec->env.find(t->name);
      if (it == t->spec->env.end()) return std::nullopt;
      return it->second;
    }
    case KnobKind::kArg: {
      recipe::ConfigEntry e = base;
      auto t = serve_target(e, knob.name);
      if (!t) return std::nullopt;
      auto at = find_flag(*t->spec, t->name);
      if (at.empty()) return std::nullopt;
      if (knob.toggle) return std::string("present");
      return value_at(at.front(), t->name);
    }
    case KnobKind::kField:
      for (const auto& s : base.fixed_seq_len) {
        for (const auto& e : s.search_space) return field_of(e, knob.name);
      }
      for (const auto& s : base.agentic_coding) {
        for (const auto& e : s.search_space) return field_of(e, knob.name);
      }
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// An arg knob's change in its serve block (typed and raw).
Status apply_arg(const std::string& key, const ServeTarget& target, const Change& change) {
  const std::string& flag = target.name;
  recipe::ServeSpec& spec = *target.spec;
  auto at = find_flag(spec, flag);
  if (at.size() > 1) {
    return Error{
        fmt::format("{}: {} appears {} times in the serve command and extra-args; "
                    "a knob changes one",
                    key, flag, at.size())};
  }
  std::vector<std::string>* changed = nullptr;
  if (at.empty()) {
    if (change.value) {
      spec.extra_args.push_back(flag);
      if (!change.toggle) spec.extra_args.push_back(*change.value);
      changed = &spec.extra_args;
    }
  } else {
    auto& argv = *at[0].argv;
    const size_t i = at[0].index;
    const bool has_next = !at[0].joined && i + 1 < argv.size() && !argv[i + 1].starts_with("-");
    if (change.toggle || !change.value) {
      // Removed: the flag, and its value when it has one (a toggle has none).
      const size_t n = (!change.toggle && has_next) ? 2 : 1;
      argv.erase(argv.begin() + static_cast<std::ptrdiff_t>(i),
                 argv.begin() + static_cast<std::ptrdiff_t>(i + n));
    } else if (at[0].joined) {
      argv[i] = flag + "=" + *change.value;
    } else if (has_next) {
      argv[i + 1] = *change.value;
    } else {
      argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(i + 1), *change.value);
    }
    changed = &argv;
  }
  if (changed != nullptr) {
    json::object& serve = *target.raw;
    const bool is_command = changed == &spec.command;
    if (!is_command && changed->empty()) {
      serve.erase("extra-args");
    } else {
      serve[is_command ? "command" : "extra-args"] = to_json_array(*changed);
    }
  }
  return Status::Ok();
}

// A field knob's change in every search-space row (typed and raw).
Status apply_field(recipe::ConfigEntry& e, const std::string& key, const Change& change) {
  if (!change.value) return Error{fmt::format("field {}: a value is needed", change.name)};
  bool any = false;
  const bool by_role = change.name == "pd" || role_field(change.name).has_value();
  const bool parallel = change.name != "spec-decoding" && !by_role;
  auto set = [&](recipe::SearchSpaceEntry& sp) -> Status {
    const bool disagg = sp.prefill && sp.decode;
    if (by_role && !disagg) {
      return Error{
          fmt::format("field {}: {} is not disaggregated (no prefill and decode "
                      "workers); its parallelism is tp, ep, ...",
                      change.name, key)};
    }
    if (parallel && disagg) {
      return Error{
          fmt::format("field {}: {} is disaggregated; its workers' parallelism is "
                      "prefill.{} and decode.{}, their counts pd",
                      change.name, key, change.name, change.name)};
    }
    set_field(sp, change.name, *change.value);
    any = true;
    return Status::Ok();
  };
  for (auto& sc : e.fixed_seq_len) {
    for (auto& sp : sc.search_space) {
      if (auto st = set(sp); !st.ok()) return st;
    }
  }
  for (auto& sc : e.agentic_coding) {
    for (auto& sp : sc.search_space) {
      if (auto st = set(sp); !st.ok()) return st;
    }
  }
  if (!any) return Error{fmt::format("{}: no search-space row to set {} in", key, change.name)};
  if (auto* sc = e.raw.is_object() ? e.raw.as_object().if_contains("scenarios") : nullptr;
      sc && sc->is_object()) {
    for (auto& kv : sc->as_object()) {
      if (!kv.value().is_array()) continue;
      for (auto& row : kv.value().as_array()) {
        auto* space = row.is_object() ? row.as_object().if_contains("search-space") : nullptr;
        if (space == nullptr || !space->is_array()) continue;
        for (auto& sp : space->as_array()) {
          if (sp.is_object()) set_raw_field(sp.as_object(), change.name, *change.value);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<recipe::ConfigEntry> apply_change(const recipe::ConfigEntry& base, const Change& change) {
  recipe::ConfigEntry e = base;
  ServeTarget target;
  if (change.kind != KnobKind::kField) {
    auto t = serve_target(e, change.name);
    if (!t) return t.error();
    target = *t;
  }
  switch (change.kind) {
    case KnobKind::kEnv: {
      json::object& serve = *target.raw;
      json::value& env = serve["env"];
      if (!env.is_object()) env = json::object();
      if (change.value) {
        target.spec->env[target.name] = *change.value;
        env.as_object()[target.name] = *change.value;
      } else {
        target.spec->env.erase(target.name);
        env.as_object().erase(target.name);
        if (env.as_object().empty()) serve.erase("env");
      }
      break;
    }
    case KnobKind::kArg:
      if (auto st = apply_arg(base.key, target, change); !st.ok()) return st.error();
      break;
    case KnobKind::kField:
      if (auto st = apply_field(e, base.key, change); !st.ok()) return st.error();
      break;
  }
  return e;
}

std::string Candidate::describe() const {
  std::string out;
  for (const auto& c : changes) out += (out.empty() ? "" : " + ") + c.describe();
  return out;
}

namespace {

Expected<Candidate> make_candidate(const recipe::ConfigEntry& base, std::vector<Change> changes) {
  Candidate c;
  recipe::ConfigEntry e = base;
  for (const auto& ch : changes) {
    auto next = apply_change(e, ch);
    if (!next) return next.error();
    e = std::move(*next);
  }
  std::string id_text = base.key;
  for (const auto& ch : changes) id_text += "\n" + ch.describe();
  c.id = sha256_hex(id_text).substr(0, 10);
  c.config_key = base.key + "~" + c.id;
  e.key = c.config_key;
  c.entry = std::move(e);
  c.changes = std::move(changes);
  return c;
}

}  // namespace

Expected<CandidateSet> single_candidates(const recipe::ConfigEntry& base,
                                         const std::vector<Knob>& knobs, size_t max_candidates) {
  CandidateSet out;
  std::set<std::string> entries{recipe::canonical_json(base.raw)};
  for (const Knob& k : knobs) {
    const auto was = base_value(base, k);
    std::vector<std::optional<std::string>> values = k.values;
    if (k.toggle) values = {was ? std::nullopt : std::optional<std::string>("present")};
    for (const auto& v : values) {
      Change ch{k.kind, k.name, v, was, k.toggle};
      if (!k.toggle && v == was) {
        out.notes.push_back(
            fmt::format("{}: the base has this already; not a candidate", ch.describe()));
        continue;
      }
      auto c = make_candidate(base, {ch});
      if (!c) return knob_error(k.spec, c.error().message);
      if (!entries.insert(recipe::canonical_json(c->entry.raw)).second) {
        out.notes.push_back(
            fmt::format("{}: the same recipe entry as an earlier candidate; not a candidate again",
                        ch.describe()));
        continue;
      }
      out.candidates.push_back(std::move(*c));
      if (out.candidates.size() > max_candidates) {
        return Error{
            fmt::format("--knob: more than {} candidates (--max-candidates); fewer "
                        "values per knob, or raise the limit",
                        max_candidates)};
      }
    }
  }
  return out;
}

Expected<Candidate> pair_candidate(const recipe::ConfigEntry& base, const Candidate& a,
                                   const Candidate& b) {
  for (const auto& x : a.changes) {
    for (const auto& y : b.changes) {
      // pd sets both pools' worker counts: it and prefill.num-worker change the same field.
      const auto counts = [](const std::string& n) {
        return n == "pd" || n == "prefill.num-worker" || n == "decode.num-worker";
      };
      const bool same_count = x.kind == KnobKind::kField && y.kind == KnobKind::kField &&
                              counts(x.name) && counts(y.name) &&
                              (x.name == "pd" || y.name == "pd");
      if ((x.kind == y.kind && x.name == y.name) || same_count) {
        return Error{fmt::format("{} and {} change the same {} '{}'", a.describe(), b.describe(),
                                 to_string(x.kind), x.name)};
      }
    }
  }
  std::vector<Change> changes = a.changes;
  changes.insert(changes.end(), b.changes.begin(), b.changes.end());
  return make_candidate(base, std::move(changes));
}

}  // namespace ib::tune
