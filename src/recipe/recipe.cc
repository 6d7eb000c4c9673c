#include "recipe/recipe.h"

#include <filesystem>

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/files.h"
#include "core/redact.h"
#include "core/strings.h"

namespace ib::recipe {

std::vector<int64_t> expand_concurrency(int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> out;
  for (int64_t conc = start; conc <= end;) {
    out.push_back(conc);
    if (conc == end) break;
    conc = conc * step > end ? end : conc * step;
  }
  return out;
}

// Placeholders `serve.command` and `serve.extra-args` may use (docs/recipes.md).
const std::set<std::string>& serve_placeholders() {
  static const std::set<std::string> kNames = {
      "model", "served-model", "image", "precision", "framework", "tp", "pp", "ep", "dp-attn",
      "dcp-size", "pcp-size", "spec-decoding", "isl", "osl", "max-model-len", "conc", "host",
      "port", "kv-offloading", "kv-offload-backend", "total-cpu-dram-gb", "duration",
      // Per-role serve blocks of a disaggregated entry (docs/recipes.md, "Disaggregated
      // deployments"): the role and the worker, and (router) where the workers listen.
      "role", "worker-index", "num-worker", "prefill-urls", "decode-urls",
      // A worker over several nodes (the Slurm launcher): its node's rank, its node count, the
      // address of its rank 0.
      "node-rank", "nnodes", "leader-host"};
  return kNames;
}

bool is_env_name(std::string_view name) {
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (name.empty() || !alpha(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

namespace {

class MasterParser {
 public:
  MasterParser(YamlReader* reader, const std::vector<Diagnostic>* diags)
      : r_(*reader), diags_(diags) {}

  std::optional<ConfigEntry> entry(const std::string& key, const YAML::Mark& key_mark,
                                   const YAML::Node& node) {
    ConfigEntry e;
    e.key = key;
    e.file = r_.file();
    e.line = key_mark.line + 1;
    e.raw = to_json(node);
    size_t before = errors();
    if (key.find('*') != std::string::npos) {
      r_.error(key_mark, key, "config keys may not contain '*' (reserved for changelog wildcards)");
    }
    auto f = r_.mapping(
        node, key,
        {"image", "model", "model-prefix", "precision", "framework", "runner", "multinode",
         "disagg", "router", "kv-p2p-transfer", "scenarios", "serve", "expect", "workload"});
    if (!f) return std::nullopt;
    for (const char* name :
         {"image", "model", "model-prefix", "precision", "framework", "runner"}) {
      if (!r_.require(*f, key, name)) continue;
      auto s = r_.string(f->at(name), field_path(key, name));
      if (!s) continue;
      std::string field = name;
      if (field == "image") e.image = *s;
      if (field == "model") e.model = *s;
      if (field == "model-prefix") e.model_prefix = *s;
      if (field == "precision") e.precision = *s;
      if (field == "framework") e.framework = *s;
      if (field == "runner") e.runner = *s;
    }
    if (r_.require(*f, key, "multinode")) {
      e.multinode = r_.boolean(f->at("multinode"), field_path(key, "multinode")).value_or(false);
    }
    if (f->has("disagg")) {
      e.disagg = r_.boolean(f->at("disagg"), field_path(key, "disagg")).value_or(false);
      if (e.disagg && !e.multinode) {
        r_.error(f->at("disagg"), field_path(key, "disagg"),
                 "disagg: true requires multinode: true");
      }
    }
    if (f->has("router")) e.router = router(f->at("router"), field_path(key, "router"));
    if (f->has("kv-p2p-transfer")) {
      e.kv_p2p_transfer = r_.string(f->at("kv-p2p-transfer"), field_path(key, "kv-p2p-transfer"));
      if (!e.multinode) {
        r_.error(f->at("kv-p2p-transfer"), field_path(key, "kv-p2p-transfer"),
                 "kv-p2p-transfer is only allowed with multinode: true");
      }
    }
    if (f->has("serve")) {
      e.serve = serve(f->at("serve"), field_path(key, "serve"));
      if (e.serve && e.serve->has_roles() && !e.disagg) {
        r_.error(f->at("serve"), field_path(key, "serve"),
                 "serve blocks by role (prefill, decode, router) are for disaggregated entries "
                 "(disagg: true); give this entry one serve block");
      }
      // `changed` compares values, not how they are marked: {value: V, secret: true} is V there.
      if (auto* s = e.raw.is_object() ? e.raw.as_object().if_contains("serve") : nullptr)
        collapse_secret_markers(*s);
    }
    if (f->has("expect")) e.expect = to_json(f->at("expect"));
    if (f->has("workload")) e.workload = workload(f->at("workload"), field_path(key, "workload"));
    if (r_.require(*f, key, "scenarios"))
      scenarios(f->at("scenarios"), field_path(key, "scenarios"), &e);

    if (e.disagg && !e.kv_p2p_transfer) {
      for (const auto& s : e.fixed_seq_len) {
        for (const auto& entry : s.search_space) {
          if (!entry.kv_p2p_transfer) {
            r_.error(f->mark, field_path(key, "kv-p2p-transfer"),
                     "disagg: true requires kv-p2p-transfer at the top level or in every "
                     "search-space entry");
            goto done;
          }
        }
      }
    done:;
    }
    if (errors() != before) return std::nullopt;
    return e;
  }

 private:
  size_t errors() const { return diags_->size(); }

  std::optional<Router> router(const YAML::Node& node, const std::string& path) {
    auto f = r_.mapping(node, path, {"name", "version"});
    if (!f) return std::nullopt;
    Router out;
    bool ok = r_.require(*f, path, "name") & r_.require(*f, path, "version");
    if (!ok) return std::nullopt;
    auto name = r_.string(f->at("name"), field_path(path, "name"));
    auto version = r_.string(f->at("version"), field_path(path, "version"));
    if (!name || !version) return std::nullopt;
    if (version->rfind("image:", 0) == 0) {
      r_.error(f->at("version"), field_path(path, "version"),
               "router version may not start with \"image:\"");
      return std::nullopt;
    }
    return Router{*name, *version};
  }

  std::optional<WorkloadSpec> workload(const YAML::Node& node, const std::string& path) {
    auto f = r_.mapping(
        node, path,
        {"prompts-per-conc", "min-prompts", "warmups-per-conc", "seed", "range-ratio", "traces",
         "max-traces", "warmup-requests-per-lane", "duration", "time-scale", "tokenizer",
         "chat-template", "session-routing", "session-timeout", "flush-cache", "flush-timeout"});
    if (!f) return std::nullopt;
    WorkloadSpec out;
    auto count = [&](const char* name, int64_t min, int64_t max, std::optional<int64_t>* to) {
      if (f->has(name)) *to = r_.integer(f->at(name), field_path(path, name), min, max);
    };
    count("prompts-per-conc", 1, limits::kMaxPromptsPerConc, &out.prompts_per_conc);
    count("min-prompts", 1, limits::kMaxPrompts, &out.min_prompts);
    count("warmups-per-conc", 0, limits::kMaxPromptsPerConc, &out.warmups_per_conc);
    count("seed", 0, INT64_MAX, &out.seed);
    if (f->has("range-ratio")) {
      auto v = r_.number(f->at("range-ratio"), field_path(path, "range-ratio"));
      if (v && !(*v > 0 && *v <= 1)) {
        r_.error(f->at("range-ratio"), field_path(path, "range-ratio"),
                 fmt::format("expected a number in (0, 1], got {}", *v));
      } else {
        out.range_ratio = v;
      }
    }
    count("max-traces", 1, limits::kMaxTraces, &out.max_traces);
    count("warmup-requests-per-lane", 0, limits::kMaxPromptsPerConc,
          &out.warmup_requests_per_lane);
    auto positive = [&](const char* name, double max, std::optional<double>* to) {
      if (!f->has(name)) return;
      auto v = r_.number(f->at(name), field_path(path, name));
      if (v && !(*v > 0)) {
        r_.error(f->at(name), field_path(path, name),
                 fmt::format("expected a positive number, got {}", *v));
      } else if (v && *v > max) {
        r_.error(f->at(name), field_path(path, name),
                 fmt::format("expected a positive number at most {}, got {}", max, *v));
      } else {
        *to = v;
      }
    };
    positive("duration", limits::kMaxDurationSeconds, &out.duration);
    positive("time-scale", limits::kMaxTimeScale, &out.time_scale);
    if (f->has("traces")) {
      const std::string tpath = field_path(path, "traces");
      std::vector<std::string> list;
      if (f->at("traces").IsScalar()) {
        if (auto one = r_.string(f->at("traces"), tpath)) list.push_back(*one);
      } else if (auto many = r_.string_list(f->at("traces"), tpath)) {
        list = *many;
      }
      const std::filesystem::path base = std::filesystem::path(r_.file()).parent_path();
      for (auto& t : list) {
        std::filesystem::path p(t);
        out.traces.push_back(p.is_absolute() ? t : (base / p).lexically_normal().string());
      }
    }
    // Paths relative to the recipe file's folder, like traces.
    auto file_field = [&](const char* name, std::string* to, int* line) {
      if (!f->has(name)) return;
      auto v = r_.string(f->at(name), field_path(path, name));
      if (!v) return;
      if (v->empty()) {
        r_.error(f->at(name), field_path(path, name), "expected a path, got an empty string");
        return;
      }
      std::filesystem::path p(*v);
      const std::filesystem::path base = std::filesystem::path(r_.file()).parent_path();
      *to = p.is_absolute() ? *v : (base / p).lexically_normal().string();
      *line = f->at(name).Mark().line + 1;
    };
    file_field("tokenizer", &out.tokenizer, &out.tokenizer_line);
    file_field("chat-template", &out.chat_template, &out.tokenizer_line);
    routed_fields(*f, path, out);
    return out;
  }

  // session-routing, session-timeout, flush-cache, flush-timeout (recipe.h, WorkloadSpec).
  void routed_fields(const Fields& f, const std::string& path, WorkloadSpec& out) {
    if (f.has("session-routing")) {
      const std::string p = field_path(path, "session-routing");
      if (auto v = r_.string(f.at("session-routing"), p)) {
        if (*v == "none" || *v == "dynamo-header" || *v == "dynamo-nvext" ||
            *v == "smg-routing-key") {
          out.session_routing = *v;
        } else {
          r_.error(f.at("session-routing"), p,
                   fmt::format("expected none, dynamo-header, dynamo-nvext or smg-routing-key, "
                               "got '{}'",
                               printable(*v, 40)));
        }
      }
    }
    if (f.has("session-timeout")) {
      out.session_timeout =
          r_.integer(f.at("session-timeout"), field_path(path, "session-timeout"), 1, 30 * 86400);
    }
    if (f.has("flush-cache")) {
      const std::string p = field_path(path, "flush-cache");
      const YAML::Node& n = f.at("flush-cache");
      const std::string text = n.IsScalar() ? n.Scalar() : std::string();
      if (text == "true") {
        out.flush_cache = "/flush_cache";
      } else if (text == "false") {
        out.flush_cache.clear();
      } else if (n.IsScalar() && text.size() > 1 && text[0] == '/' &&
                 text.find_first_of(" ?#\r\n\t") == std::string::npos) {
        out.flush_cache = text;
      } else {
        r_.error(n, p,
                 fmt::format("expected true, false or an endpoint path such as "
                             "/reset_prefix_cache, got {}",
                             n.IsScalar() ? "'" + printable(text, 40) + "'" : describe(n)));
      }
    }
    out.flush_timeout = positive_field(f, path, "flush-timeout", 3600, "seconds");
  }

  // A value that may be marked secret: the plain scalar, or {value: V, secret: true|false}. A
  // secret value is registered with the redaction policy (core/redact.h), so that every output
  // hides it; the server still gets it as written.
  std::optional<std::string> maybe_secret(const YAML::Node& node, const std::string& path,
                                          bool any_scalar) {
    if (!node.IsMap()) {
      if (!any_scalar) return r_.string(node, path);
      if (!node.IsScalar()) {
        r_.error(node, path, "expected a scalar value or {value: ..., secret: true}, got " +
                                 describe(node));
        return std::nullopt;
      }
      // Values are strings as the environment sees them; numbers and booleans are written as
      // in the file, so `SGLANG_X: 1` is "1".
      return node.Scalar();
    }
    auto f = r_.mapping(node, path, {"value", "secret"});
    if (!f || !r_.require(*f, path, "value")) return std::nullopt;
    const std::string vpath = field_path(path, "value");
    const YAML::Node& v = f->at("value");
    std::optional<std::string> value;
    if (!any_scalar) {
      value = r_.string(v, vpath);
    } else if (!v.IsScalar()) {
      r_.error(v, vpath, "expected a scalar value, got " + describe(v));
    } else {
      value = v.Scalar();
    }
    bool secret = false;
    if (f->has("secret")) {
      if (auto b = r_.boolean(f->at("secret"), field_path(path, "secret"))) secret = *b;
    }
    if (value && secret) {
      if (value->size() < kMinSecretLength) {
        r_.error(v, vpath,
                 fmt::format("a secret value must be at least {} characters long to be hidden "
                             "reliably in output (it is {})",
                             kMinSecretLength, value->size()));
      } else if (value->find('{') != std::string::npos) {
        r_.error(v, vpath,
                 "a secret value may not use placeholders: write the value the server gets");
      } else {
        add_secret(*value);
      }
    }
    return value;
  }

  std::optional<std::vector<std::string>> arg_list(const YAML::Node& node,
                                                   const std::string& path) {
    if (!r_.sequence(node, path)) return std::nullopt;
    std::vector<std::string> out;
    bool ok = true;
    for (size_t i = 0; i < node.size(); ++i) {
      if (auto a = maybe_secret(node[i], index_path(path, i), false)) {
        out.push_back(std::move(*a));
      } else {
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return out;
  }

  static void collapse_secret_markers(boost::json::value& serve) {
    if (!serve.is_object()) return;
    for (const char* role : kServeRoles) {
      if (auto* r = serve.as_object().if_contains(role)) collapse_secret_markers(*r);
    }
    auto collapse = [](boost::json::value& v) {
      if (auto* o = v.if_object(); o && o->contains("value")) {
        boost::json::value inner = o->at("value");
        v = std::move(inner);
      }
    };
    auto& s = serve.as_object();
    if (auto* env = s.if_contains("env"); env && env->is_object()) {
      for (auto& kv : env->as_object()) collapse(kv.value());
    }
    for (const char* list : {"command", "extra-args"}) {
      if (auto* a = s.if_contains(list); a && a->is_array()) {
        for (auto& item : a->as_array()) collapse(item);
      }
    }
  }

  // A serve block: one server's, or (disaggregated) one per role.
  std::optional<ServeSpec> serve(const YAML::Node& node, const std::string& path) {
    const bool by_role = node.IsMap() && (node["prefill"] || node["decode"] || node["router"]);
    if (!by_role) return server_block(node, path);
    auto f = r_.mapping(node, path, {"prefill", "decode", "router"});
    if (!f) return std::nullopt;
    ServeSpec out;
    bool ok = true;
    for (const char* role : kServeRoles) {
      if (!r_.require(*f, path, role)) {
        ok = false;
        continue;
      }
      auto block =
          server_block(f->at(role), field_path(path, role), std::string_view(role) == "router");
      if (!block) {
        ok = false;
        continue;
      }
      out.roles.emplace_back(role, std::move(*block));
    }
    if (!ok) return std::nullopt;
    return out;
  }

  std::optional<ServeSpec> server_block(const YAML::Node& node, const std::string& path,
                                        bool router = false) {
    std::set<std::string> keys = {"command", "env", "extra-args", "health-path"};
    if (router) keys.insert("node");
    auto f = r_.mapping(node, path, keys);
    if (!f) return std::nullopt;
    ServeSpec out;
    if (router && f->has("node")) {
      // Where a multi-node launcher runs the router (docs/recipes.md).
      if (auto n = r_.string(f->at("node"), field_path(path, "node"))) {
        if (*n != "first-decode" && *n != "first-prefill" && *n != "own") {
          r_.error(f->at("node"), field_path(path, "node"),
                   fmt::format("is first-decode, first-prefill or own, not '{}'", printable(*n)));
        }
        out.node = *n;
      }
    }
    if (r_.require(*f, path, "command")) {
      if (auto argv = arg_list(f->at("command"), field_path(path, "command"))) {
        if (argv->empty())
          r_.error(f->at("command"), field_path(path, "command"), "expected a non-empty argv list");
        out.command = *argv;
        check_placeholders(f->at("command"), field_path(path, "command"), out.command);
      }
    }
    if (f->has("extra-args")) {
      if (auto args = arg_list(f->at("extra-args"), field_path(path, "extra-args"))) {
        out.extra_args = *args;
        check_placeholders(f->at("extra-args"), field_path(path, "extra-args"), out.extra_args);
      }
    }
    if (f->has("env")) {
      std::string env_path = field_path(path, "env");
      if (auto env = r_.open_mapping(f->at("env"), env_path)) {
        for (const auto& [name, value] : env->values) {
          std::string p = field_path(env_path, name);
          if (!is_env_name(name)) {
            r_.error(env->key_marks.at(name), p, "not a valid environment variable name");
          }
          if (auto v = maybe_secret(value, p, true)) out.env[name] = *v;
        }
      }
    }
    // Credentials passed by name or flag (OPENAI_API_KEY, --api-key X) are hidden wherever they
    // turn up, like the values marked secret.
    add_secrets_from_env(out.env);
    add_secrets_from_argv(out.command);
    add_secrets_from_argv(out.extra_args);
    if (f->has("health-path")) {
      if (auto h = r_.string(f->at("health-path"), field_path(path, "health-path"))) {
        if (h->front() != '/')
          r_.error(f->at("health-path"), field_path(path, "health-path"), "must start with '/'");
        out.health_path = *h;
      }
    }
    return out;
  }

  void check_placeholders(const YAML::Node& list, const std::string& path,
                          const std::vector<std::string>& args) {
    // "{name}" with no brace inside; found by hand (std::regex recurses per character, and an
    // argument can be long).
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      for (size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
        const size_t close = arg.find_first_of("{}", open + 1);
        if (close == std::string::npos) break;
        if (arg[close] == '{') continue;  // "{{x}": the inner "{x}" is the candidate
        const std::string name = arg.substr(open + 1, close - open - 1);
        // Only a name can be a placeholder: a JSON argument (vLLM's --hf-overrides,
        // --speculative-config, --compilation-config) keeps its braces.
        const bool a_name =
            !name.empty() && name.find_first_not_of(
                                 "abcdefghijklmnopqrstuvwxyz"
                                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == std::string::npos;
        if (a_name && !serve_placeholders().count(name)) {
          r_.error(list[i], index_path(path, i),
                   fmt::format("unknown placeholder {{{}}}", printable(name)));
        }
        open = close;
      }
    }
  }

  void scenarios(const YAML::Node& node, const std::string& path, ConfigEntry* e) {
    auto f = r_.mapping(node, path, {"fixed-seq-len", "agentic-coding", "timed-trace"});
    if (!f) return;
    if (!f->has("fixed-seq-len") && !f->has("agentic-coding") && !f->has("timed-trace")) {
      r_.error(node, path,
               "at least one scenario (fixed-seq-len, agentic-coding or timed-trace) is required");
      return;
    }
    if (f->has("timed-trace")) {
      std::string p = field_path(path, "timed-trace");
      const YAML::Node& list = f->at("timed-trace");
      if (r_.sequence(list, p)) {
        for (size_t i = 0; i < list.size(); ++i) timed_trace(list[i], index_path(p, i), e);
      }
    }
    if (f->has("fixed-seq-len")) {
      std::string p = field_path(path, "fixed-seq-len");
      const YAML::Node& list = f->at("fixed-seq-len");
      if (r_.sequence(list, p)) {
        for (size_t i = 0; i < list.size(); ++i) fixed_seq(list[i], index_path(p, i), e);
      }
    }
    if (f->has("agentic-coding")) {
      std::string p = field_path(path, "agentic-coding");
      const YAML::Node& list = f->at("agentic-coding");
      if (r_.sequence(list, p)) {
        for (size_t i = 0; i < list.size(); ++i) agentic(list[i], index_path(p, i), e);
      }
    }
  }

  void fixed_seq(const YAML::Node& node, const std::string& path, ConfigEntry* e) {
    auto f = r_.mapping(node, path, {"isl", "osl", "search-space"});
    if (!f) return;
    FixedSeqLen s;
    if (r_.require(*f, path, "isl"))
      s.isl = r_.integer(f->at("isl"), field_path(path, "isl"), 1, limits::kMaxSeqLen).value_or(0);
    if (r_.require(*f, path, "osl"))
      s.osl = r_.integer(f->at("osl"), field_path(path, "osl"), 1, limits::kMaxSeqLen).value_or(0);
    s.search_space = search_space(*f, path, *e);
    e->fixed_seq_len.push_back(std::move(s));
  }

  void timed_trace(const YAML::Node& node, const std::string& path, ConfigEntry* e) {
    auto f = r_.mapping(node, path,
                        {"trace", "format", "block-size", "window", "time-scale", "max-requests",
                         "max-lag-ms", "search-space"});
    if (!f) return;
    TimedTraceScenario t;
    t.line = node.Mark().line + 1;
    if (r_.require(*f, path, "trace")) {
      if (auto v = r_.string(f->at("trace"), field_path(path, "trace")); v && !v->empty()) {
        const std::filesystem::path p(*v);
        const std::filesystem::path base = std::filesystem::path(r_.file()).parent_path();
        t.trace = p.is_absolute() ? *v : (base / p).lexically_normal().string();
      } else if (v) {
        r_.error(f->at("trace"), field_path(path, "trace"), "expected a path, got an empty string");
      }
    }
    if (r_.require(*f, path, "format")) {
      if (auto v = r_.string(f->at("format"), field_path(path, "format"))) {
        if (*v == "mooncake" || *v == "bailian" || *v == "burstgpt" || *v == "azure") {
          t.format = *v;
        } else {
          r_.error(f->at("format"), field_path(path, "format"),
                   fmt::format("expected mooncake, bailian, burstgpt or azure, got '{}'",
                               printable(*v, 40)));
        }
      }
    }
    if (f->has("block-size")) {
      t.block_size = r_.integer(f->at("block-size"), field_path(path, "block-size"), 1, 1 << 20);
    }
    if (f->has("max-requests")) {
      t.max_requests =
          r_.integer(f->at("max-requests"), field_path(path, "max-requests"), 0, 10'000'000);
    }
    if (f->has("window")) {
      if (auto v = r_.string(f->at("window"), field_path(path, "window"))) t.window = *v;
    }
    t.time_scale =
        positive_field(*f, path, "time-scale", 1e6, "a positive number (0.5: twice the rate)");
    t.max_lag_ms = positive_field(*f, path, "max-lag-ms", 1e9, "a positive number of milliseconds");
    t.search_space = search_space(*f, path, *e);
    e->timed_trace.push_back(std::move(t));
  }

  // A fixed-seq-len or timed-trace scenario's search space: required, not empty, each entry
  // single- or multi-node as the config entry is.
  std::vector<SearchSpaceEntry> search_space(const Fields& f, const std::string& path,
                                             const ConfigEntry& e) {
    std::vector<SearchSpaceEntry> out;
    if (!r_.require(f, path, "search-space")) return out;
    const std::string p = field_path(path, "search-space");
    const YAML::Node& list = f.at("search-space");
    if (!r_.sequence(list, p)) return out;
    if (list.size() == 0) r_.error(list, p, "search-space may not be empty");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string ip = index_path(p, i);
      auto entry = e.multinode ? multinode_entry(list[i], ip, e, false)
                               : single_node_entry(list[i], ip, e, false);
      if (entry) out.push_back(std::move(*entry));
    }
    return out;
  }

  // f[name] when given: a number in (0, max]; else an error naming the field (`what` it must be).
  std::optional<double> positive_field(const Fields& f, const std::string& path, const char* name,
                                       double max, const char* what) {
    if (!f.has(name)) return std::nullopt;
    const std::string p = field_path(path, name);
    auto v = r_.number(f.at(name), p);
    if (v && !(*v > 0 && *v <= max)) {
      r_.error(f.at(name), p, fmt::format("expected {} (at most {}), got {}", what, max, *v));
      return std::nullopt;
    }
    return v;
  }

  void agentic(const YAML::Node& node, const std::string& path, ConfigEntry* e) {
    auto f = r_.mapping(node, path, {"search-space", "dram-utilization"});
    if (!f) return;
    AgenticCoding a;
    if (e->runner.rfind("cluster:", 0) != 0 && !e->runner.empty()) {
      r_.error(
          node, field_path(e->key, "runner"),
          fmt::format("agentic-coding needs a runner label starting with \"cluster:\", got \"{}\"",
                      printable(e->runner)));
    }
    if (f->has("dram-utilization")) {
      std::string p = field_path(path, "dram-utilization");
      if (auto v = r_.number(f->at("dram-utilization"), p)) {
        if (!(*v > 0 && *v <= 1)) {
          r_.error(f->at("dram-utilization"), p,
                   fmt::format("expected a number in (0, 1], got {}", *v));
        } else {
          a.dram_utilization = *v;
        }
      }
    }
    if (r_.require(*f, path, "search-space")) {
      std::string p = field_path(path, "search-space");
      const YAML::Node& list = f->at("search-space");
      if (r_.sequence(list, p)) {
        if (list.size() == 0) r_.error(list, p, "search-space may not be empty");
        for (size_t i = 0; i < list.size(); ++i) {
          std::string ip = index_path(p, i);
          const YAML::Node& item = list[i];
          bool multi = item.IsMap() && (item["prefill"] || item["decode"]);
          auto entry =
              multi ? multinode_entry(item, ip, *e, true) : single_node_entry(item, ip, *e, true);
          if (!entry) continue;
          if (entry->kv_offloading == "dram" && !a.dram_utilization) {
            r_.error(
                item, field_path(ip, "kv-offloading"),
                "kv-offloading: dram requires dram-utilization on the agentic-coding scenario");
          }
          a.search_space.push_back(std::move(*entry));
        }
      }
    }
    e->agentic_coding.push_back(std::move(a));
  }

  // Fields shared by single- and multi-node entries: spec-decoding, router, concurrency, and for
  // agentic entries the KV offloading settings.
  void common(const Fields& f, const std::string& path, const ConfigEntry& e, bool agentic,
              SearchSpaceEntry* out) {
    if (f.has("spec-decoding")) {
      std::string p = field_path(path, "spec-decoding");
      if (auto s = r_.string(f.at("spec-decoding"), p)) {
        if (*s != "mtp" && *s != "draft_model" && *s != "none") {
          r_.error(f.at("spec-decoding"), p,
                   fmt::format("expected one of mtp, draft_model, none, got \"{}\"",
                               printable(*s)));
        } else {
          out->spec_decoding = *s;
        }
      }
    }
    if (f.has("router")) {
      out->router = router(f.at("router"), field_path(path, "router"));
      if (e.router) {
        r_.error(
            f.at("router"), field_path(path, "router"),
            "router is set at the top level and in the search-space entry; set it in one place");
      }
    }
    if (f.has("kv-p2p-transfer")) {
      out->kv_p2p_transfer =
          r_.string(f.at("kv-p2p-transfer"), field_path(path, "kv-p2p-transfer"));
      if (e.kv_p2p_transfer) {
        r_.error(f.at("kv-p2p-transfer"), field_path(path, "kv-p2p-transfer"),
                 "kv-p2p-transfer is set at the top level and in the search-space entry; set it in "
                 "one place");
      }
    }
    concurrency(f, path, out);
    if (agentic) {
      if (f.has("kv-offloading")) {
        std::string p = field_path(path, "kv-offloading");
        if (auto s = r_.string(f.at("kv-offloading"), p)) {
          if (*s != "none" && *s != "dram") {
            r_.error(f.at("kv-offloading"), p,
                     fmt::format("expected none or dram, got \"{}\"", printable(*s)));
          } else {
            out->kv_offloading = *s;
          }
        }
      } else if (out->tp) {
        r_.error(f.mark, field_path(path, "kv-offloading"), "required field is missing");
      }
      std::string bp = field_path(path, "kv-offload-backend");
      if (f.has("kv-offload-backend")) {
        if (out->kv_offloading == "none") {
          r_.error(f.at("kv-offload-backend"), bp,
                   "kv-offload-backend is only allowed when kv-offloading is not none");
        } else if (auto bf = r_.mapping(f.at("kv-offload-backend"), bp, {"name", "version"})) {
          OffloadBackend b;
          if (r_.require(*bf, bp, "name"))
            b.name = r_.string(bf->at("name"), field_path(bp, "name")).value_or("");
          if (bf->has("version"))
            b.version = r_.string(bf->at("version"), field_path(bp, "version"));
          out->kv_offload_backend = b;
        }
      } else if (out->kv_offloading != "none") {
        r_.error(f.mark, bp, "kv-offload-backend is required when kv-offloading is not none");
      }
    }
  }

  void concurrency(const Fields& f, const std::string& path, SearchSpaceEntry* out) {
    bool range = f.has("conc-start") || f.has("conc-end");
    bool list = f.has("conc-list");
    if (range && list) {
      r_.error(f.at("conc-list"), field_path(path, "conc-list"),
               "give either conc-start/conc-end or conc-list, not both");
      return;
    }
    if (!range && !list) {
      r_.error(f.mark, field_path(path, "conc-list"),
               "give either conc-start/conc-end or conc-list");
      return;
    }
    if (list) {
      std::string p = field_path(path, "conc-list");
      if (auto values = r_.integer_list(f.at("conc-list"), p, 1, limits::kMaxConcurrency,
                                        limits::kMaxConcValues)) {
        if (values->empty()) r_.error(f.at("conc-list"), p, "conc-list may not be empty");
        out->conc = *values;
      }
      return;
    }
    bool both = r_.require(f, path, "conc-start") & r_.require(f, path, "conc-end");
    if (!both) return;
    auto start =
        r_.integer(f.at("conc-start"), field_path(path, "conc-start"), 1, limits::kMaxConcurrency);
    auto end =
        r_.integer(f.at("conc-end"), field_path(path, "conc-end"), 1, limits::kMaxConcurrency);
    if (!start || !end) return;
    if (*start > *end) {
      r_.error(f.at("conc-start"), field_path(path, "conc-start"),
               fmt::format("conc-start ({}) is greater than conc-end ({})", *start, *end));
      return;
    }
    out->conc = expand_concurrency(*start, *end);
  }

  void topology(const Fields& f, const std::string& path, int64_t* tp, int64_t* pp, int64_t* dcp,
                int64_t* pcp, int64_t* ep, bool* dp_attn) {
    auto size = [&](const char* name, int64_t* to) {
      if (f.has(name)) {
        *to = r_.integer(f.at(name), field_path(path, name), 1, limits::kMaxParallel).value_or(*to);
      }
    };
    size("tp", tp);
    size("pp", pp);
    size("dcp-size", dcp);
    size("pcp-size", pcp);
    size("ep", ep);
    if (f.has("dp-attn"))
      *dp_attn = r_.boolean(f.at("dp-attn"), field_path(path, "dp-attn")).value_or(false);
    if (*dcp > 0 && *tp % *dcp != 0) {
      r_.error(f.has("dcp-size") ? f.at("dcp-size") : f.at("tp"), field_path(path, "dcp-size"),
               fmt::format("tp ({}) must be a multiple of dcp-size ({})", *tp, *dcp));
    }
  }

  std::optional<SearchSpaceEntry> single_node_entry(const YAML::Node& node, const std::string& path,
                                                    const ConfigEntry& e, bool agentic) {
    std::set<std::string> allowed = {
        "tp",     "pp",         "ep",       "dp-attn",  "dcp-size", "pcp-size", "spec-decoding",
        "router", "conc-start", "conc-end", "conc-list"};
    if (agentic) allowed.insert({"kv-offloading", "kv-offload-backend"});
    auto f = r_.mapping(node, path, allowed);
    if (!f) return std::nullopt;
    SearchSpaceEntry out;
    int64_t tp = 1;
    if (r_.require(*f, path, "tp")) {
      topology(*f, path, &tp, &out.pp, &out.dcp_size, &out.pcp_size, &out.ep, &out.dp_attn);
    }
    out.tp = tp;
    common(*f, path, e, agentic, &out);
    return out;
  }

  std::optional<SearchSpaceEntry> multinode_entry(const YAML::Node& node, const std::string& path,
                                                  const ConfigEntry& e, bool agentic) {
    std::set<std::string> allowed = {"spec-decoding",   "prefill",    "decode",   "router",
                                     "kv-p2p-transfer", "conc-start", "conc-end", "conc-list"};
    if (agentic) allowed.insert({"kv-offloading", "kv-offload-backend", "ep", "dp-attn"});
    auto f = r_.mapping(node, path, allowed);
    if (!f) return std::nullopt;
    SearchSpaceEntry out;
    if (r_.require(*f, path, "prefill"))
      out.prefill = worker(f->at("prefill"), field_path(path, "prefill"));
    if (r_.require(*f, path, "decode"))
      out.decode = worker(f->at("decode"), field_path(path, "decode"));
    if (out.prefill && out.decode &&
        out.prefill->hardware.has_value() != out.decode->hardware.has_value()) {
      r_.error(f->at("decode"), field_path(path, "decode.hardware"),
               "hardware must be set on both prefill and decode, or on neither");
    }
    if (f->has("ep")) {
      out.ep = r_.integer(f->at("ep"), field_path(path, "ep"), 1, limits::kMaxParallel).value_or(1);
    }
    if (f->has("dp-attn"))
      out.dp_attn = r_.boolean(f->at("dp-attn"), field_path(path, "dp-attn")).value_or(false);
    common(*f, path, e, agentic, &out);
    return out;
  }

  std::optional<Worker> worker(const YAML::Node& node, const std::string& path) {
    auto f = r_.mapping(node, path,
                        {"num-worker", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn",
                         "hardware", "additional-settings"});
    if (!f) return std::nullopt;
    Worker w;
    if (r_.require(*f, path, "num-worker")) {
      w.num_worker =
          r_.integer(f->at("num-worker"), field_path(path, "num-worker"), 0, limits::kMaxParallel)
              .value_or(0);
    }
    r_.require(*f, path, "tp");
    topology(*f, path, &w.tp, &w.pp, &w.dcp_size, &w.pcp_size, &w.ep, &w.dp_attn);
    if (f->has("hardware")) w.hardware = r_.string(f->at("hardware"), field_path(path, "hardware"));
    if (f->has("additional-settings")) {
      std::string p = field_path(path, "additional-settings");
      if (auto settings = r_.string_list(f->at("additional-settings"), p)) {
        for (size_t i = 0; i < settings->size(); ++i) {
          if ((*settings)[i].find('=') == std::string::npos) {
            r_.error(f->at("additional-settings")[i], index_path(p, i),
                     fmt::format("expected KEY=VALUE, got \"{}\"", printable((*settings)[i])));
          }
        }
        w.additional_settings = *settings;
      }
    }
    return w;
  }

  YamlReader& r_;
  const std::vector<Diagnostic>* diags_;
};

}  // namespace

namespace {
void parse_master_document(const std::string& text, const std::string& file,
                           std::vector<ConfigEntry>* entries,
                           std::vector<Diagnostic>* diagnostics) {
  YamlReader reader(file, diagnostics);
  auto doc = reader.parse(text);
  if (!doc) return;
  if (doc->IsNull()) return;  // an empty file has no entries
  auto top = reader.open_mapping(*doc, "");
  if (!top) return;
  MasterParser parser(&reader, diagnostics);
  // Iterate in document order (Fields is sorted by name) so that rows follow the file.
  for (auto it = doc->begin(); it != doc->end(); ++it) {
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    if (!key_node.IsScalar()) continue;
    const std::string& key = key_node.Scalar();
    if (key.rfind('.', 0) == 0)
      continue;  // a template for merge keys (".defaults: &d"), not a config key
    if (top->key_marks.at(key).pos != key_node.Mark().pos) continue;  // a duplicate, reported
    if (auto e = parser.entry(key, key_node.Mark(), value)) entries->push_back(std::move(*e));
  }
}
}  // namespace

void parse_master_config(const std::string& text, const std::string& file,
                         std::vector<ConfigEntry>* entries, std::vector<Diagnostic>* diagnostics) {
  size_t first_diagnostic = diagnostics->size();
  parse_master_document(text, file, entries, diagnostics);
  // Report in file order, whatever order the checks ran in.
  std::stable_sort(diagnostics->begin() + static_cast<std::ptrdiff_t>(first_diagnostic),
                   diagnostics->end(), [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
}

Expected<std::vector<ConfigEntry>> select_keys(const std::vector<ConfigEntry>& entries,
                                               const std::vector<std::string>& globs) {
  if (globs.empty()) return entries;
  std::vector<ConfigEntry> selected;
  std::set<std::string> matched;
  for (const auto& e : entries) {
    for (const auto& glob : globs) {
      if (fnmatch(glob.c_str(), e.key.c_str(), 0) == 0) {
        matched.insert(glob);
        selected.push_back(e);
        break;
      }
    }
  }
  std::string problems;
  for (const auto& glob : globs) {
    if (!matched.count(glob))
      problems +=
          fmt::format("{}--keys {}: matches no config key", problems.empty() ? "" : "\n", glob);
  }
  if (!problems.empty()) return Error{problems};
  return selected;
}

namespace {

// The (name, bytes) pairs' entries; with `require_keys`, a file that parses cleanly but defines no
// config key is an error.
Expected<std::vector<ConfigEntry>> load_texts(
    const std::vector<std::pair<std::string, std::string>>& files, bool require_keys) {
  std::vector<ConfigEntry> entries;
  std::vector<Diagnostic> diagnostics;
  std::map<std::string, std::string> seen;  // key -> "file:line"
  for (const auto& [name, text] : files) {
    size_t first = entries.size();
    size_t first_diagnostic = diagnostics.size();
    parse_master_config(text, name, &entries, &diagnostics);
    if (require_keys && entries.size() == first && diagnostics.size() == first_diagnostic) {
      Diagnostic d;
      d.message = fmt::format("no config keys in {} (the file is empty, or holds only comments or "
                              "templates); a recipe maps config keys to entries (docs/recipes.md)",
                              printable(name, 400));
      diagnostics.push_back(std::move(d));
    }
    for (size_t i = first; i < entries.size(); ++i) {
      const auto& e = entries[i];
      auto [it, inserted] = seen.emplace(e.key, fmt::format("{}:{}", e.file, e.line));
      if (!inserted) {
        diagnostics.push_back({e.file, e.line, 1, e.key,
                               fmt::format("config key is already defined at {}", it->second),
                               ""});
      }
    }
  }
  if (!diagnostics.empty()) return Error{join_diagnostics(diagnostics)};
  return entries;
}

bool is_yaml_name(const std::filesystem::path& p) {
  const auto ext = p.extension();
  return ext == ".yaml" || ext == ".yml";
}

// The YAML files directly in `dir`, sorted; the error names the directory.
Expected<std::vector<std::filesystem::path>> yaml_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && is_yaml_name(it->path())) files.push_back(it->path());
  }
  if (ec) return Error{fmt::format("{}: cannot list the directory: {}", dir.string(), ec.message())};
  if (files.empty()) {
    return Error{fmt::format("{}: a directory without *.yaml or *.yml files; give recipe files, or "
                             "a directory that holds them",
                             dir.string())};
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// A YAML file's bytes; one larger than YamlLimits::max_bytes is an error before it is read, and a
// directory is an error (an ifstream opens one and reads it as empty).
Expected<std::string> read_yaml_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    return Error{fmt::format("{}: is a directory; give a YAML file", path.string())};
  }
  if (std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(path, ec);
    const size_t max = YamlLimits{}.max_bytes;
    if (!ec && size > max) {
      return Error{fmt::format("{}: {} bytes is more than the limit for a YAML document ({} MiB)",
                               path.string(), size, max >> 20)};
    }
  }
  return read_file(path);
}

Expected<std::vector<ConfigEntry>> load_master_texts(
    const std::vector<std::pair<std::string, std::string>>& files) {
  return load_texts(files, false);
}

Expected<std::vector<std::filesystem::path>> expand_recipe_paths(
    const std::vector<std::filesystem::path>& paths) {
  std::vector<std::filesystem::path> out;
  std::vector<std::string> problems;
  for (const auto& path : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
      problems.push_back(fmt::format("{}: no such file or directory", path.string()));
    } else if (std::filesystem::is_directory(status)) {
      auto files = yaml_files_in(path);
      if (!files) {
        problems.push_back(files.error().message);
        continue;
      }
      out.insert(out.end(), files->begin(), files->end());
    } else {
      out.push_back(path);
    }
  }
  if (!problems.empty()) return Error{join(problems, "\n")};
  return out;
}

std::vector<std::string> describe_expansion(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::string> lines;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) continue;
    auto files = yaml_files_in(path);
    if (!files) continue;  // expand_recipe_paths() reports it
    std::vector<std::string> names;
    for (const auto& f : *files) names.push_back(printable(f.filename().string()));
    lines.push_back(fmt::format("{}: a directory; reading its {} YAML file{}: {}",
                                printable(path.string(), 400), names.size(),
                                names.size() == 1 ? "" : "s", join(names, ", ")));
  }
  return lines;
}

Expected<std::vector<ConfigEntry>> load_master_configs(
    const std::vector<std::filesystem::path>& paths) {
  auto files = expand_recipe_paths(paths);
  if (!files) return files.error();
  std::vector<std::pair<std::string, std::string>> texts;
  std::vector<std::string> unreadable;  // each names its file
  for (const auto& path : *files) {
    auto text = read_yaml_file(path);
    if (!text) {
      unreadable.push_back(text.error().message);
      continue;
    }
    texts.emplace_back(path.string(), std::move(*text));
  }
  if (!unreadable.empty()) return Error{join(unreadable, "\n")};
  return load_texts(texts, true);
}

void parse_runners(const std::string& text, const std::string& file, RunnersFile* out,
                   std::vector<Diagnostic>* diagnostics) {
  YamlReader r(file, diagnostics);
  auto doc = r.parse(text);
  if (!doc) return;
  auto top = r.mapping(*doc, "", {"labels", "hardware"});
  if (!top) return;
  if (top->has("labels")) {
    if (auto labels = r.open_mapping(top->at("labels"), "labels")) {
      for (const auto& [label, node] : labels->values) {
        std::string p = field_path("labels", label);
        auto names = r.string_list(node, p);
        if (!names) continue;
        if (names->empty()) r.error(node, p, "a label needs at least one runner");
        out->labels[label] = *names;
      }
    }
  }
  if (top->has("hardware")) {
    if (auto hardware = r.open_mapping(top->at("hardware"), "hardware")) {
      for (const auto& [label, node] : hardware->values) {
        std::string p = field_path("hardware", label);
        auto f = r.mapping(node, p, {"available-cpu-dram-mib", "gpus-per-node", "launcher"});
        if (!f) continue;
        RunnerHardware h;
        if (r.require(*f, p, "available-cpu-dram-mib")) {
          h.available_cpu_dram_mib =
              r.integer(f->at("available-cpu-dram-mib"), field_path(p, "available-cpu-dram-mib"), 1,
                        limits::kMaxDramMib)
                  .value_or(0);
        }
        if (r.require(*f, p, "gpus-per-node")) {
          h.gpus_per_node = r.integer(f->at("gpus-per-node"), field_path(p, "gpus-per-node"), 1,
                                      limits::kMaxParallel)
                                .value_or(0);
        }
        if (f->has("launcher")) {
          std::string lp = field_path(p, "launcher");
          if (auto l = r.string(f->at("launcher"), lp)) {
            if (*l != "local" && *l != "slurm" && *l != "endpoint") {
              r.error(f->at("launcher"), lp,
                      fmt::format("expected local, slurm or endpoint, got \"{}\"", printable(*l)));
            }
            h.launcher = *l;
          }
        }
        out->hardware[label] = h;
      }
    }
  }
}

Expected<RunnersFile> load_runners(const std::filesystem::path& file) {
  auto text = read_yaml_file(file);
  if (!text) return Error{text.error().message};
  RunnersFile out;
  std::vector<Diagnostic> diagnostics;
  parse_runners(*text, file.string(), &out, &diagnostics);
  if (!diagnostics.empty()) return Error{join_diagnostics(diagnostics)};
  return out;
}

}  // namespace ib::recipe
