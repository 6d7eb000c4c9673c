#include "sweep/planner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/files.h"
#include "core/sha256.h"
#include "recipe/golden_al.h"
#include "sweep/server_spec.h"
#include "workload/agentic_workload.h"
#include "workload/fixed_seq_len.h"
#include "workload/trace_workload.h"

namespace ib::sweep {

namespace json = boost::json;
namespace fs = std::filesystem;
using recipe::RecipeRow;

std::string SweepPlanned::digest() const {
  std::vector<std::string> lines;
  for (const auto& g : groups) {
    for (const auto& c : g.configs) {
      for (const auto& p : c.points()) {
        const auto& w = p.eval ? c.eval : c.workload;
        lines.push_back(fmt::format("{} {} {}", c.fingerprint, p.eval ? "eval" : "throughput",
                                    w ? w->key(p.conc) : std::to_string(p.conc)));
      }
    }
  }
  std::sort(lines.begin(), lines.end());
  return sha256_hex(fmt::format("{}", fmt::join(lines, "\n")));
}

size_t SweepPlanned::points() const {
  size_t n = 0;
  for (const auto& g : groups) {
    for (const auto& c : g.configs) n += c.concs.size() + c.eval_concs.size();
  }
  return n;
}

std::vector<ConfigPlan::Point> ConfigPlan::points() const {
  std::vector<Point> out;
  for (int64_t c : concs) out.push_back({c, false});
  for (int64_t c : eval_concs) out.push_back({c, true});
  return out;
}

std::shared_ptr<const workload::Workload> eval_workload_for_row(const RecipeRow& row,
                                                                const WorkloadOverrides& ov) {
  workload::gsm8k::EvalParams p;
  p.prompt = ov.eval_prompt;
  p.limit = ov.eval_limit;
  int64_t ctx = 16384;
  if (const auto* m = row.fields.if_contains("max-model-len"); m && m->is_int64()) {
    ctx = m->as_int64();
  }
  p.max_tokens = workload::gsm8k::max_tokens_for_context(ctx);
  return std::make_shared<workload::gsm8k::Gsm8kWorkload>(std::move(p));
}

namespace {

std::string agentic_needs_traces(const RecipeRow& row) {
  return fmt::format(
      "{}: agentic-coding rows need traces to replay: --traces PATH or workload.traces in the "
      "recipe (Weka trace files, .jsonl corpora or folders; InferenceX replays "
      "semianalysisai/cc-traces-weka-062126)",
      row.config_key);
}

bool has_recipe_traces(const RecipeRow& row,
                       const std::map<std::string, const recipe::ConfigEntry*>& entries) {
  auto e = entries.find(row.config_key);
  return e != entries.end() && e->second && e->second->workload &&
         !e->second->workload->traces.empty();
}

// The row's tokenizer (--tokenizer, else the recipe's workload.tokenizer), loaded once per
// (path, template) for the whole sweep; null when neither names one.
Expected<std::shared_ptr<const tokenizer::ServingTokenizer>> tokenizer_for_row(
    const RecipeRow& row, const recipe::ConfigEntry* entry, const WorkloadOverrides& ov) {
  const recipe::WorkloadSpec* w = entry && entry->workload ? &*entry->workload : nullptr;
  const bool from_option = !ov.tokenizer.empty();
  const std::string path = from_option ? ov.tokenizer : w ? w->tokenizer : "";
  const std::string chat_template = !ov.chat_template.empty() ? ov.chat_template
                                    : w                       ? w->chat_template
                                                              : "";
  if (path.empty()) {
    if (!chat_template.empty()) {
      return Error{
          fmt::format("{}: a chat template is given without a tokenizer (--tokenizer or "
                      "workload.tokenizer)",
                      row.config_key)};
    }
    return std::shared_ptr<const tokenizer::ServingTokenizer>();
  }
  static std::map<std::string, std::shared_ptr<const tokenizer::ServingTokenizer>> loaded;
  const std::string key = path + "\n" + chat_template;
  auto it = loaded.find(key);
  if (it == loaded.end()) {
    auto tok = tokenizer::ServingTokenizer::load(path, chat_template);
    if (!tok) {
      const std::string where = from_option
                                    ? std::string("--tokenizer")
                                    : fmt::format("{}:{}: {}.workload.tokenizer", entry->file,
                                                  w->tokenizer_line, row.config_key);
      return Error{fmt::format("{}: {}", where, tok.error().message)};
    }
    it = loaded.emplace(key, std::move(*tok)).first;
  }
  return it->second;
}

// agentic-coding: the traces are loaded and turned into trees once per set of paths, whatever
// the number of rows that replay them.
// timed-trace rows: the trace read and its prompts built once per way of replaying it, whatever
// the number of rows (caps) that replay it.
Expected<std::shared_ptr<const workload::Workload>> trace_workload_for_row(
    const RecipeRow& row, const recipe::ConfigEntry* entry, const WorkloadOverrides& ov) {
  const json::object& f = row.fields;
  const std::string where = entry ? fmt::format("{}:{}: {}.scenarios.timed-trace", entry->file,
                                                entry->line, row.config_key)
                                  : row.config_key;
  workload::TraceReplayParams p;
  p.path = std::string(f.at("trace").as_string());
  p.format = *workload::parse_trace_format(f.at("trace-format").as_string());
  if (const auto* b = f.if_contains("block-size")) p.block_size = b->as_int64();
  if (const auto* m = f.if_contains("max-requests")) p.max_requests = m->as_int64();
  if (const auto* t = f.if_contains("time-scale")) p.time_scale = t->to_number<double>();
  if (const auto* l = f.if_contains("max-lag-ms")) p.max_lag_ms = l->to_number<double>();
  if (const auto* w = f.if_contains("window")) {
    auto window = workload::parse_trace_window(w->as_string());
    if (!window) return Error{fmt::format("{}.window: {}", where, window.error().message)};
    p.window = *window;
  }
  const recipe::WorkloadSpec* ws = entry && entry->workload ? &*entry->workload : nullptr;
  if (ws && ws->seed) p.seed = static_cast<uint64_t>(*ws->seed);
  if (ov.seed) p.seed = *ov.seed;
  p.chat = ov.api == "chat";
  auto tok = tokenizer_for_row(row, entry, ov);
  if (!tok) return tok.error();
  p.tokenizer = *tok;
  if (auto st = p.validate(where); !st) return st.error();
  static std::map<std::string, std::shared_ptr<workload::TraceWorkload>> loaded;
  const std::string key = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", p.path, f.at("trace-format").as_string(), p.block_size,
      p.window ? fmt::format("{}:{}", p.window->start_s, p.window->end_s) : "", p.time_scale,
      p.max_requests, p.seed, p.chat, p.tokenizer ? p.tokenizer->identity() : "", p.max_lag_ms);
  auto it = loaded.find(key);
  if (it == loaded.end()) {
    auto wl = workload::TraceWorkload::load(p);
    if (!wl) return Error{fmt::format("{}: {}", where, wl.error().message)};
    it = loaded.emplace(key, std::move(*wl)).first;
  }
  return std::shared_ptr<const workload::Workload>(it->second);
}

// The recipe's flush-cache (or --flush-cache) on the configuration.
void set_cache_flush(ConfigPlan& c, const recipe::ConfigEntry* entry, const WorkloadOverrides& ov) {
  const recipe::WorkloadSpec* w = entry && entry->workload ? &*entry->workload : nullptr;
  if (w) c.flush_path = w->flush_cache;
  if (!ov.flush_cache.empty()) c.flush_path = ov.flush_cache == "off" ? "" : ov.flush_cache;
  if (w && w->flush_timeout) c.flush_timeout_s = *w->flush_timeout;
  if (ov.flush_timeout) c.flush_timeout_s = *ov.flush_timeout;
}

Expected<std::shared_ptr<const workload::Workload>> agentic_workload_for_row(
    const RecipeRow& row, const recipe::ConfigEntry* entry, const WorkloadOverrides& ov) {
  workload::AgenticParams p;
  const recipe::WorkloadSpec* w = entry && entry->workload ? &*entry->workload : nullptr;
  p.traces = !ov.traces.empty() ? ov.traces : (w ? w->traces : std::vector<std::string>{});
  if (p.traces.empty()) return Error{agentic_needs_traces(row)};
  if (row.fields.contains("duration") && row.fields.at("duration").is_number()) {
    p.duration_s = row.fields.at("duration").to_number<double>();
  }
  if (ov.agentx_fast) p.apply_fast();
  if (w) {
    if (w->max_traces) p.max_traces = *w->max_traces;
    if (w->warmup_requests_per_lane)
      p.warmup_requests_per_lane = static_cast<int>(*w->warmup_requests_per_lane);
    if (w->duration) p.duration_s = *w->duration;
    if (w->time_scale) p.time_scale = *w->time_scale;
    if (w->seed) p.seed = static_cast<uint64_t>(*w->seed);
  }
  const std::string routing = !ov.session_routing.empty() ? ov.session_routing
                              : w                         ? w->session_routing
                                                          : std::string();
  if (!routing.empty()) {
    auto r = workload::parse_session_routing(routing);
    if (!r) {
      return Error{fmt::format(
          "{}: session-routing must be none, dynamo-header, dynamo-nvext or smg-routing-key (got "
          "'{}')",
          row.config_key, printable(routing, 40))};
    }
    p.session_routing = *r;
  }
  if (w && w->session_timeout) p.session_timeout_s = *w->session_timeout;
  if (ov.session_timeout) p.session_timeout_s = *ov.session_timeout;
  if (ov.max_traces) p.max_traces = *ov.max_traces;
  if (ov.warmup_requests_per_lane) p.warmup_requests_per_lane = *ov.warmup_requests_per_lane;
  if (ov.agentic_duration_s) p.duration_s = *ov.agentic_duration_s;
  if (ov.time_scale) p.time_scale = *ov.time_scale;
  if (ov.seed) p.seed = *ov.seed;
  if (auto s = p.validate(row.config_key + ".workload"); !s) return s.error();
  auto tok = tokenizer_for_row(row, entry, ov);
  if (!tok) return tok.error();
  p.tokenizer = *tok;
  static std::map<std::string, std::shared_ptr<workload::AgenticWorkload>> loaded;
  const std::string key = fmt::format("{}|{}", fmt::join(p.traces, "\n"), p.max_traces);
  auto it = loaded.find(key);
  if (it == loaded.end()) {
    auto wl = workload::AgenticWorkload::load(p);
    if (!wl) {
      // Name where the traces were given: the option, or the recipe's field.
      const std::string where =
          !ov.traces.empty() ? std::string("--traces")
                             : fmt::format("{}:{}: {}.workload.traces", entry ? entry->file : "",
                                           entry ? entry->line : 0, row.config_key);
      return Error{fmt::format("{}: {}", where, wl.error().message)};
    }
    it = loaded.emplace(key, std::move(*wl)).first;
  }
  return std::shared_ptr<const workload::Workload>(it->second->with_params(p));
}

}  // namespace

Expected<std::shared_ptr<const workload::Workload>> workload_for_row(
    const RecipeRow& row, const recipe::ConfigEntry* entry, const WorkloadOverrides& ov) {
  if (row.scenario == recipe::Scenario::kAgenticCoding) {
    return agentic_workload_for_row(row, entry, ov);
  }
  if (row.scenario == recipe::Scenario::kTimedTrace) return trace_workload_for_row(row, entry, ov);
  workload::FixedSeqLenParams p;
  p.isl = static_cast<int>(row.fields.at("isl").as_int64());
  p.osl = static_cast<int>(row.fields.at("osl").as_int64());
  if (entry && entry->workload) {
    const recipe::WorkloadSpec& w = *entry->workload;
    if (w.prompts_per_conc) p.prompts_per_conc = static_cast<int>(*w.prompts_per_conc);
    if (w.min_prompts) p.min_prompts = static_cast<int>(*w.min_prompts);
    if (w.warmups_per_conc) p.warmups_per_conc = static_cast<int>(*w.warmups_per_conc);
    if (w.seed) p.seed = static_cast<uint64_t>(*w.seed);
    if (w.range_ratio) p.range_ratio = *w.range_ratio;
  }
  if (ov.prompts_per_conc) p.prompts_per_conc = *ov.prompts_per_conc;
  if (ov.min_prompts) p.min_prompts = *ov.min_prompts;
  if (ov.warmups_per_conc) p.warmups_per_conc = *ov.warmups_per_conc;
  if (ov.seed) p.seed = *ov.seed;
  if (ov.range_ratio) p.range_ratio = *ov.range_ratio;
  p.api = ov.api;
  p.as_text = ov.api == "chat";
  if (auto s = p.validate(row.config_key + ".workload"); !s) return s.error();
  auto tok = tokenizer_for_row(row, entry, ov);
  if (!tok) return tok.error();
  p.tokenizer = *tok;
  if (p.tokenizer) {
    workload::RandomWorkload probe;
    probe.isl = p.isl;
    probe.osl = p.osl;
    probe.range_ratio = p.range_ratio;
    probe.as_text = p.as_text;
    probe.tokenizer = p.tokenizer;
    if (auto s = workload::validate(probe); !s) {
      return Error{fmt::format("{}: {}", row.config_key, s.error().message)};
    }
  }
  return std::shared_ptr<const workload::Workload>(
      std::make_shared<workload::FixedSeqLenWorkload>(p));
}

namespace {

// Whether the row's recipe says how each role of its deployment starts.
bool serves_by_role(const RecipeRow& row) {
  const auto* serve = row.fields.if_contains("serve");
  return serve && serve->is_object() && serve->as_object().contains("router") &&
         !serve->as_object().contains("command");
}

// GPUs of one role of a multi-node row: num-worker x tp x pp.
int role_gpus(const json::object& fields, const char* role) {
  const auto* w = fields.if_contains(role);
  if (w == nullptr || !w->is_object()) return 0;
  auto num = [&](const char* k, int64_t dflt) {
    const auto* v = w->as_object().if_contains(k);
    return v && v->is_int64() ? v->as_int64() : dflt;
  };
  return static_cast<int>(std::max<int64_t>(1, num("num-worker", 1)) * num("tp", 1) * num("pp", 1));
}

std::string launcher_for(const RecipeRow& row, const PlanOptions& o) {
  if (!o.launcher.empty()) return o.launcher;
  if (o.runners) {
    const auto& runner = row.fields.at("runner").as_string();
    if (auto it = o.runners->hardware.find(std::string(runner)); it != o.runners->hardware.end()) {
      return it->second.launcher;
    }
  }
  return "local";
}

}  // namespace

Expected<std::shared_ptr<const verify::ExpectSpec>> expect_of(const recipe::ConfigEntry& entry) {
  if (!entry.expect) return std::shared_ptr<const verify::ExpectSpec>();
  auto parsed = verify::parse_expect(*entry.expect, entry.key + ".expect");
  if (!parsed) {
    return input_error(fmt::format("{}:{}: {}", entry.file, entry.line, parsed.error().message));
  }
  return std::make_shared<const verify::ExpectSpec>(std::move(*parsed));
}

// `expect: spec-acceptance` for one server: the golden value at its draft length, and the
// synthetic-acceptance knobs its command line or environment pins, which must say the same.
Expected<std::optional<load::SpecAcceptanceTarget>> spec_acceptance_for_row(
    const recipe::RecipeRow& row, const recipe::ConfigEntry& entry,
    const verify::SpecAcceptanceExpect& x, const std::vector<std::string>& extra_args) {
  const std::string where =
      fmt::format("{}:{}: {}.expect.spec-acceptance", entry.file, entry.line, entry.key);
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  if (auto server = server_spec_for_row(row, extra_args, "inferbench")) {
    argv = server->argv;
    env.assign(server->env.begin(), server->env.end());
  }
  const recipe::SpecKnobs knobs = recipe::find_spec_knobs(argv, env);
  const auto* sd = row.fields.if_contains("spec-decoding");
  const bool none_row = sd && sd->is_string() && sd->as_string() == "none";
  if (knobs.off || (none_row && !knobs.draft_tokens)) {
    return std::optional<load::SpecAcceptanceTarget>();  // not speculating
  }
  if (x.draft_tokens && knobs.draft_tokens && *x.draft_tokens != *knobs.draft_tokens) {
    return input_error(fmt::format("{}.draft-tokens: {}, but the serve command drafts {} ({})",
                                   where, *x.draft_tokens, *knobs.draft_tokens,
                                   knobs.draft_tokens_from));
  }
  load::SpecAcceptanceTarget t;
  t.tolerance = x.tolerance;
  if (x.al) {
    t.golden = *x.al;
    t.source = "al in the recipe";
  } else {
    const std::optional<int> k = x.draft_tokens ? x.draft_tokens : knobs.draft_tokens;
    if (!k) {
      return input_error(
          fmt::format("{}.draft-tokens: not given, and the serve command names no draft length "
                      "(--speculative-config num_speculative_tokens, --speculative-num-steps, "
                      "--num-speculative-tokens, --spec-decode)",
                      where));
    }
    fs::path file = x.golden;
    if (file.is_relative()) file = (fs::path(entry.file).parent_path() / file).lexically_normal();
    std::error_code ec;
    if (fs::is_directory(file, ec)) {
      return input_error(
          fmt::format("{}.golden: {}: a folder, not a golden file (name one of its files)", where,
                      file.string()));
    }
    auto text = read_file(file);
    if (!text) return input_error(fmt::format("{}.golden: {}", where, text.error().message));
    auto golden = recipe::parse_golden_al(*text, file.string());
    if (!golden) return golden.error();
    auto pick = recipe::pick_golden(*golden, x.model, x.thinking, *k);
    if (!pick) return input_error(fmt::format("{}: {}", where, pick.error().message));
    t.golden = pick->al;
    t.source = pick->where;
  }
  // InferenceX's rule: the pinned synthetic acceptance is the golden value (to its two decimals).
  for (const auto& pin : knobs.pins) {
    if (std::abs(pin.al - t.golden) > 0.005) {
      return input_error(fmt::format(
          "{}: the serve command pins acceptance length {} ({}), not the golden {} ({})", where,
          pin.al, pin.knob, t.golden, t.source));
    }
  }
  return std::optional<load::SpecAcceptanceTarget>(std::move(t));
}

namespace {

// An environment variable that pins acceptance must be read by the server (env-read), like any
// other knob the recipe relies on: a server that ignores it realises something else.
std::shared_ptr<const verify::ExpectSpec> with_pinned_reads(
    std::shared_ptr<const verify::ExpectSpec> expect, const ConfigPlan& c,
    const std::vector<std::string>& extra_args) {
  auto server = server_spec_for_row(c.row, extra_args, "inferbench");
  if (!server) return expect;
  std::vector<std::pair<std::string, std::string>> env(server->env.begin(), server->env.end());
  auto copy = std::make_shared<verify::ExpectSpec>(*expect);
  for (const auto& pin : recipe::find_spec_knobs(server->argv, env).pins) {
    if (pin.environment && std::find(copy->env_read.begin(), copy->env_read.end(), pin.variable) ==
                               copy->env_read.end()) {
      copy->env_read.push_back(pin.variable);
    }
  }
  return copy;
}

}  // namespace

Status validate_expect_blocks(const std::vector<recipe::RecipeRow>& rows,
                              const std::vector<recipe::ConfigEntry>& entries) {
  std::map<std::string, const recipe::ConfigEntry*> by_key;
  for (const auto& e : entries) by_key[e.key] = &e;
  for (const auto& row : rows) {
    const auto e = by_key.find(row.config_key);
    if (e == by_key.end() || !e->second->expect) continue;
    auto spec = expect_of(*e->second);
    if (!spec) return spec.error();
    if (*spec && (*spec)->spec_acceptance) {
      auto target = spec_acceptance_for_row(row, *e->second, *(*spec)->spec_acceptance, {});
      if (!target) return target.error();
    }
  }
  return Status::Ok();
}

Expected<std::vector<ConfigPlan>> group_configs(
    const std::vector<RecipeRow>& rows,
    const std::map<std::string, const recipe::ConfigEntry*>& entries, const PlanOptions& o) {
  std::vector<ConfigPlan> out;
  std::map<std::string, size_t> index;
  for (const RecipeRow& row : rows) {
    // A command that uses {conc} is a different server at each concurrency.
    const bool per_conc =
        json::serialize(row.fields.contains("serve") ? row.fields.at("serve") : json::value())
            .find("{conc}") != std::string::npos;
    std::string fp = config_fingerprint(row, o.extra_server_args);
    // The fingerprint covers ISL/OSL: each sequence-length pair is its own curve and server.
    std::string key = fp;
    if (per_conc) {
      key += '/';  // a char, not "/": GCC 12 -Wrestrict false positive at -O3 (bug 105329)
      key += json::serialize(row.fields.at("conc"));
    }
    auto it = index.find(key);
    if (it == index.end()) {
      ConfigPlan c;
      c.row = row;
      c.fingerprint = fp;
      c.launcher = launcher_for(row, o);
      c.gpus = row_gpus(row.fields);
      if (row.multinode) {
        c.prefill_gpus = role_gpus(row.fields, "prefill");
        c.decode_gpus = role_gpus(row.fields, "decode");
      }
      const bool agentic = row.scenario == recipe::Scenario::kAgenticCoding;
      if (agentic && o.workload.traces.empty() && !has_recipe_traces(row, entries)) {
        c.unsupported = agentic_needs_traces(row);
      } else if (row.multinode && c.launcher != "endpoint" &&
                 !((c.launcher == "local" || c.launcher == "slurm") && serves_by_role(row))) {
        c.unsupported =
            serves_by_role(row)
                ? fmt::format(
                      "a disaggregated deployment runs on the local launcher (its roles as "
                      "processes on this machine) or the slurm launcher (on the nodes of one "
                      "job), not on {}; or use --launcher endpoint with a running deployment",
                      c.launcher)
                : "multi-node rows need a multi-node launch (prefill and decode workers): give "
                  "the recipe serve blocks by role (serve: {prefill, decode, router}; "
                  "docs/recipes.md) for the local or slurm launcher, or use --launcher endpoint "
                  "with a running deployment";
      } else {
        auto e = entries.find(row.config_key);
        const recipe::ConfigEntry* entry = e == entries.end() ? nullptr : e->second;
        auto w = sweep::workload_for_row(row, entry, o.workload);
        if (!w) return w.error();
        c.workload = std::move(*w);
        set_cache_flush(c, entry, o.workload);
      }
      if (auto e = entries.find(row.config_key);
          o.check_expect && e != entries.end() && e->second) {
        auto parsed = expect_of(*e->second);
        if (!parsed) return parsed.error();
        c.expect = std::move(*parsed);
        if (c.expect && c.expect->spec_acceptance) {
          auto target = spec_acceptance_for_row(c.row, *e->second, *c.expect->spec_acceptance,
                                                o.extra_server_args);
          if (!target) return target.error();
          c.spec_acceptance = std::move(*target);
          if (c.spec_acceptance) c.expect = with_pinned_reads(c.expect, c, o.extra_server_args);
        }
      }
      index[key] = out.size();
      out.push_back(std::move(c));
      it = index.find(key);
    }
    auto& concs = out[it->second].concs;
    const json::value& cv = row.fields.at("conc");
    if (cv.is_int64()) {
      concs.push_back(cv.as_int64());
    } else {
      for (const auto& v : cv.as_array()) concs.push_back(v.as_int64());
    }
  }
  for (auto& c : out) {
    if (!o.concurrencies.empty()) c.concs = o.concurrencies;
    std::sort(c.concs.begin(), c.concs.end());
    c.concs.erase(std::unique(c.concs.begin(), c.concs.end()), c.concs.end());
  }
  return out;
}

Expected<SweepPlanned> plan_sweep(const govern::SweepPlan& plan,
                                  const std::map<std::string, const recipe::ConfigEntry*>& entries,
                                  const PlanOptions& o) {
  SweepPlanned out;
  out.notes = plan.notes;
  for (int64_t c : o.concurrencies) {
    if (c < 1) return Error{fmt::format("--concurrency values must be at least 1 (got {})", c)};
  }
  const ConfigPlan* canary = nullptr;
  if (plan.canary) {
    // One point: the row's concurrency, or the lowest of --concurrency.
    auto configs = group_configs({*plan.canary}, entries, o);
    if (!configs) return configs.error();
    for (auto& c : *configs) {  // erase, not resize: GCC 12 warns falsely (-Warray-bounds) at -O3
      if (c.concs.size() > 1) c.concs.erase(c.concs.begin() + 1, c.concs.end());
    }
    out.groups.push_back({"canary", true, std::move(*configs)});
    if (!out.groups.front().configs.empty()) canary = &out.groups.front().configs.front();
  }
  std::vector<const govern::PlanGroup*> eval_groups;
  for (const auto& g : plan.groups) {
    if (g.eval) {
      eval_groups.push_back(&g);
      continue;
    }
    auto configs = group_configs(g.rows, entries, o);
    if (!configs) return configs.error();
    GroupPlan gp{g.name, g.fail_fast || o.fail_fast, std::move(*configs)};
    // The canary's point is measured once, by the canary.
    if (canary && !canary->concs.empty()) {
      for (auto& c : gp.configs) {
        if (c.fingerprint != canary->fingerprint) continue;
        std::erase(c.concs, canary->concs.front());
      }
      std::erase_if(gp.configs, [](const ConfigPlan& c) { return c.concs.empty(); });
    }
    if (!gp.configs.empty()) out.groups.push_back(std::move(gp));
  }
  // Evals: on the server of the throughput points of the same configuration when the sweep has
  // them (InferenceX's run-eval on a throughput job), else on a server of their own (eval-only).
  for (const govern::PlanGroup* g : eval_groups) {
    std::vector<RecipeRow> rows = g->rows;
    for (RecipeRow& r : rows) {
      // A multi-node row's eval runs at its eval-conc only.
      if (const auto* ec = r.fields.if_contains("eval-conc"); ec && ec->is_int64()) {
        r.fields["conc"] = ec->as_int64();
      }
    }
    auto configs = group_configs(rows, entries, o);
    if (!configs) return configs.error();
    GroupPlan evals{g->name, g->fail_fast || o.fail_fast, {}};
    for (ConfigPlan& c : *configs) {
      c.eval_concs = std::move(c.concs);
      c.concs.clear();
      if (c.unsupported.empty()) c.eval = eval_workload_for_row(c.row, o.workload);
      ConfigPlan* host = nullptr;
      for (auto& og : out.groups) {
        if (og.name == "canary") continue;
        for (auto& oc : og.configs) {
          if (oc.fingerprint == c.fingerprint && oc.launcher == c.launcher && oc.eval == nullptr &&
              oc.unsupported.empty()) {
            host = &oc;
          }
        }
      }
      if (host != nullptr && c.eval) {
        host->eval = c.eval;
        host->eval_concs = c.eval_concs;
      } else {
        evals.configs.push_back(std::move(c));
      }
    }
    if (!evals.configs.empty()) out.groups.push_back(std::move(evals));
  }
  // Every point's size, before any server starts (a point's prompts are held in memory).
  for (const auto& g : out.groups) {
    for (const auto& c : g.configs) {
      if (!c.workload) continue;
      for (int64_t conc : c.concs) {
        if (auto s = c.workload->check_point(conc); !s) {
          return Error{fmt::format("{}: {}", c.row.config_key, s.error().message)};
        }
      }
    }
  }
  return out;
}

}  // namespace ib::sweep
