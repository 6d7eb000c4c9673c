#include "sweep/server_spec.h"

#include <fmt/format.h>

#include <set>

#include "core/redact.h"
#include "launch/slurm.h"
#include "core/sha256.h"
#include "recipe/fingerprint.h"
#include "recipe/recipe.h"

namespace ib::sweep {

namespace json = boost::json;

namespace {

std::string text_of(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_null()) return "";
  return json::serialize(v);
}

}  // namespace

std::map<std::string, std::string> row_placeholders(const json::object& f) {
  std::map<std::string, std::string> v;
  for (const char* name :
       {"model", "image", "precision", "framework", "tp", "pp", "ep", "dp-attn", "dcp-size",
        "pcp-size", "spec-decoding", "isl", "osl", "max-model-len"}) {
    if (const auto* x = f.if_contains(name)) v[name] = text_of(*x);
  }
  // agentic-coding rows: KV offloading and the CPU DRAM budget (InferenceX's
  // TOTAL_CPU_DRAM_GB), for servers that offload KV blocks to host memory.
  for (const char* name : {"kv-offloading", "total-cpu-dram-gb", "duration"}) {
    if (const auto* x = f.if_contains(name)) v[name] = text_of(*x);
  }
  if (const auto* b = f.if_contains("kv-offload-backend"); b && b->is_object()) {
    if (const auto* n = b->as_object().if_contains("name")) v["kv-offload-backend"] = text_of(*n);
  }
  v["served-model"] = v.count("model") ? v["model"] : "";
  if (const auto* c = f.if_contains("conc"); c && c->is_int64()) v["conc"] = text_of(*c);
  return v;
}

std::string substitute(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find('{', i);
    if (open == std::string::npos) break;
    size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    out.append(text, i, open - i);
    std::string name = text.substr(open + 1, close - open - 1);
    if (auto it = values.find(name); it != values.end()) {
      out += it->second;
    } else {
      out.append(text, open, close - open + 1);
    }
    i = close + 1;
  }
  out.append(text, i, std::string::npos);
  return out;
}

int row_gpus(const json::object& f) {
  auto num = [](const json::object& o, const char* k, int64_t dflt) {
    const auto* v = o.if_contains(k);
    return v && v->is_int64() ? v->as_int64() : dflt;
  };
  if (f.contains("prefill") && f.contains("decode")) {
    int64_t total = 0;
    for (const char* side : {"prefill", "decode"}) {
      const auto& w = f.at(side).as_object();
      total += std::max<int64_t>(1, num(w, "num-worker", 1)) * num(w, "tp", 1) * num(w, "pp", 1);
    }
    return static_cast<int>(std::max<int64_t>(1, total));
  }
  return static_cast<int>(
      std::max<int64_t>(1, num(f, "tp", 1) * num(f, "pp", 1) * num(f, "pcp-size", 1)));
}

namespace {

struct Command {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string health_path = "/health";
};

// One serve block's command, substituted with `values`; `late` names the placeholders a launcher
// fills in later (beside {host} and {port}).
Expected<Command> command_of(const json::object& s, const recipe::RecipeRow& row,
                             const std::map<std::string, std::string>& values,
                             const std::vector<std::string>& extra_args,
                             const std::filesystem::path& self, const std::string& where,
                             const std::set<std::string>& late) {
  Command c;
  for (const char* list : {"command", "extra-args"}) {
    if (const auto* a = s.if_contains(list); a && a->is_array()) {
      for (const auto& arg : a->as_array()) c.argv.push_back(substitute(text_of(arg), values));
    }
  }
  for (const auto& a : extra_args) c.argv.push_back(substitute(a, values));
  if (c.argv.empty()) return Error{fmt::format("{}.command is empty", where)};
  // A known placeholder the row has no value for (an agentic row has no {isl} or
  // {max-model-len}) would reach the server as literal text.
  for (const auto& arg : c.argv) {
    for (size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
      const size_t close = arg.find('}', open);
      if (close == std::string::npos) break;
      const std::string name = arg.substr(open + 1, close - open - 1);
      if (recipe::serve_placeholders().count(name) && !values.count(name) && name != "host" &&
          name != "port" && !late.count(name)) {
        return Error{fmt::format(
            "{}.command uses {{{}}}, which {} do not have", where, name,
            values.count("role") ? fmt::format("{} roles", values.at("role"))
                                 : fmt::format("{} rows", recipe::scenario_name(row.scenario)))};
      }
    }
  }
  if (c.argv[0] == "inferbench") c.argv[0] = self.string();
  if (const auto* env = s.if_contains("env"); env && env->is_object()) {
    for (const auto& kv : env->as_object()) c.env[std::string(kv.key())] = text_of(kv.value());
  }
  if (const auto* h = s.if_contains("health-path"); h && h->is_string()) {
    c.health_path = std::string(h->as_string());
  }
  // What the server gets unchanged is hidden in everything we print or store about it.
  add_secrets_from_argv(c.argv);
  add_secrets_from_env(c.env);
  return c;
}

int64_t int_field(const json::object& o, const char* k, int64_t dflt) {
  const auto* v = o.if_contains(k);
  return v && v->is_int64() ? v->as_int64() : dflt;
}

// A disaggregated row's processes: each prefill and decode worker (num-worker of each, the
// role's parallelism in {tp}, {ep}, {dp-attn}, {pp}, its additional-settings in its environment),
// then the router. The command line's extra server arguments go to every worker.
Expected<std::vector<launch::RoleSpec>> role_specs(const json::object& serve,
                                                   const recipe::RecipeRow& row,
                                                   const std::vector<std::string>& extra_args,
                                                   const std::filesystem::path& self, bool sim) {
  std::vector<launch::RoleSpec> out;
  for (const char* role : recipe::kServeRoles) {
    const auto* block = serve.if_contains(role);
    if (block == nullptr || !block->is_object()) {
      return Error{fmt::format("serve.{} is missing: a disaggregated row starts every role", role)};
    }
    const bool router = std::string_view(role) == "router";
    const json::object* worker = nullptr;
    if (!router) {
      const auto* w = row.fields.if_contains(role);
      if (w == nullptr || !w->is_object()) {
        return Error{fmt::format("serve.{} is given, but the row has no {} workers", role, role)};
      }
      worker = &w->as_object();
    }
    const int64_t workers = router ? 1 : std::max<int64_t>(1, int_field(*worker, "num-worker", 1));
    for (int64_t i = 0; i < workers; ++i) {
      auto values = row_placeholders(row.fields);
      values["role"] = role;
      values["worker-index"] = std::to_string(i);
      values["num-worker"] = std::to_string(workers);
      if (worker != nullptr) {
        for (const char* k : {"tp", "pp", "ep", "dp-attn", "dcp-size", "pcp-size"}) {
          if (const auto* v = worker->if_contains(k)) values[k] = text_of(*v);
        }
      }
      const std::set<std::string> late =
          router ? std::set<std::string>{"prefill-urls", "decode-urls"}
                 : std::set<std::string>{"node-rank", "nnodes", "leader-host"};
      auto c = command_of(block->as_object(), row, values,
                          router ? std::vector<std::string>{} : extra_args, self,
                          fmt::format("serve.{}", role), late);
      if (!c) return c.error();
      launch::RoleSpec r;
      r.role = role;
      r.index = static_cast<int>(i);
      r.argv = std::move(c->argv);
      r.env = std::move(c->env);
      r.health_path = std::move(c->health_path);
      if (const auto* n = block->as_object().if_contains("node"); router && n && n->is_string()) {
        r.node = std::string(n->as_string());
      }
      if (worker != nullptr) {
        // InferenceX's additional-settings are KEY=VALUE exports for that role's workers.
        if (const auto* extra = worker->if_contains("additional-settings");
            extra && extra->is_array()) {
          for (const auto& kv : extra->as_array()) {
            const std::string text = text_of(kv);
            const size_t eq = text.find('=');
            if (eq == std::string::npos || eq == 0) continue;
            r.env[text.substr(0, eq)] = text.substr(eq + 1);
          }
        }
        r.gpus =
            sim ? 0 : static_cast<int>(int_field(*worker, "tp", 1) * int_field(*worker, "pp", 1));
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

Expected<launch::ServerSpec> server_spec_for_row(const recipe::RecipeRow& row,
                                                 const std::vector<std::string>& extra_args,
                                                 const std::filesystem::path& self) {
  const auto* serve = row.fields.if_contains("serve");
  if (serve == nullptr || !serve->is_object()) {
    return Error{
        "the recipe has no `serve` block, so there is no server to start (use "
        "--launcher endpoint --endpoint URL for a running one)"};
  }
  const auto& s = serve->as_object();
  const auto* fw = row.fields.if_contains("framework");
  const bool sim = fw && fw->is_string() && fw->as_string() == "serve-sim";
  launch::ServerSpec spec;
  spec.name = row.config_key;
  if (!s.contains("command") && s.contains("router")) {
    auto roles = role_specs(s, row, extra_args, self, sim);
    if (!roles) return roles.error();
    spec.roles = std::move(*roles);
    for (const auto& r : spec.roles) spec.gpus += r.gpus;
    return spec;
  }
  auto c = command_of(s, row, row_placeholders(row.fields), extra_args, self, "serve", {});
  if (!c) return c.error();
  spec.argv = std::move(c->argv);
  spec.env = std::move(c->env);
  spec.health_path = std::move(c->health_path);
  // The simulator needs no GPU; every real engine gets the row's GPUs (Slurm --gpus).
  spec.gpus = sim ? 0 : row_gpus(row.fields);
  return spec;
}

std::string config_fingerprint(const recipe::RecipeRow& row,
                               const std::vector<std::string>& extra_args) {
  if (extra_args.empty()) return row.fingerprint;
  json::array args;
  for (const auto& a : extra_args) args.emplace_back(a);
  json::object o{{"recipe-fingerprint", row.fingerprint}, {"extra-server-args", std::move(args)}};
  return sha256_hex(recipe::canonical_json(o));
}

std::string slurm_placement_text(const launch::ServerSpec& spec, int gpus_per_node,
                                 const std::string& gpu_power) {
  auto plan = launch::plan_topology(spec.roles, gpus_per_node);
  if (!plan) return fmt::format("  cannot be placed: {}\n", plan.error().message);
  launch::SlurmOptions o;
  o.gpus_per_node = gpus_per_node;
  o.gpu_power = gpu_power;
  return redact_text(launch::topology_plan_text(*plan, spec.roles, o));
}

namespace {

json::array words(std::initializer_list<const char*> list) {
  json::array out;
  for (const char* w : list) out.emplace_back(w);
  return out;
}

// serve-sim in `role` ("" for one server) as a serve block's command.
json::object sim_block(const std::string& role) {
  json::array argv = words({"inferbench", "serve-sim"});
  if (!role.empty()) {
    argv.emplace_back("--role");
    argv.emplace_back(role);
  }
  if (role == "router") {
    for (const auto& w : words({"--model", "{served-model}", "--prefill", "{prefill-urls}",
                                "--decode", "{decode-urls}", "--host", "{host}", "--port", "{port}",
                                // As a Dynamo frontend configured for session affinity: a replayed
                                // session that names itself stays on its workers.
                                "--router-session-affinity-ttl-secs", "3600"})) {
      argv.push_back(w);
    }
    return json::object{{"command", std::move(argv)}};
  }
  for (const auto& w : words({"--model", "{served-model}", "--tp", "{tp}", "--spec-decoding",
                              "{spec-decoding}", "--host", "{host}", "--port", "{port}"})) {
    argv.push_back(w);
  }
  return json::object{{"command", std::move(argv)}};
}

}  // namespace

size_t stand_in_serve_sim(std::vector<recipe::RecipeRow>& rows) {
  size_t changed = 0;
  for (auto& row : rows) {
    if (row.fields.contains("serve")) continue;
    const auto* prefill = row.fields.if_contains("prefill");
    const auto* decode = row.fields.if_contains("decode");
    if (prefill && decode && prefill->is_object() && decode->is_object()) {
      row.fields["serve"] = json::object{{"prefill", sim_block("prefill")},
                                         {"decode", sim_block("decode")},
                                         {"router", sim_block("router")}};
    } else {
      row.fields["serve"] = sim_block("");
    }
    const auto* fw = row.fields.if_contains("framework");
    row.fields["stand-in-for"] = fw != nullptr ? *fw : json::value("unknown");
    row.fields["framework"] = "serve-sim";
    row.fingerprint = recipe::recipe_fingerprint(row.fields);
    ++changed;
  }
  return changed;
}

}  // namespace ib::sweep
