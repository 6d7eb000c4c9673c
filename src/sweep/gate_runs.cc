#include "sweep/gate_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include "core/strings.h"
#include "sweep/verify_change.h"
#include "verify/verdict.h"

namespace ib::sweep {

namespace json = boost::json;
using govern::GateCheck;
using govern::GateEvidence;
using govern::GateVerdict;

namespace {

// A server configuration the head asks for: one fingerprint of a changed key, with the points
// its rows name.
struct Wanted {
  std::string key;
  std::string fingerprint;
  std::string name;  // the first row's exp-name without its concurrency
  std::set<int64_t> concs, eval_concs;
  bool speculates = false;
  bool agentic = false;
  const recipe::RecipeRow* row = nullptr;
};

struct StoredRun {
  store::RunRecord run;
  std::vector<store::ServerConfigRecord> configs;
  std::vector<store::PointRecord> points;  // read for runs in the range only
  bool in_range = false;
};

// One stored server configuration with its run.
struct Found {
  const StoredRun* run = nullptr;
  const store::ServerConfigRecord* config = nullptr;
};

std::string short_rev(const std::string& rev) {
  return rev.empty() ? "no revision" : rev.substr(0, 12);
}

std::string run_name(const StoredRun& r) {
  return fmt::format("run {} ({}, {})", r.run.id, r.run.name, short_rev(r.run.git_revision));
}

std::string string_field(const json::object& o, const char* k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::vector<int64_t> concs_of(const recipe::RecipeRow& r) {
  std::vector<int64_t> out;
  const auto* v = r.fields.if_contains("conc");
  if (v && v->is_int64()) out.push_back(v->as_int64());
  if (v && v->is_array()) {
    for (const auto& c : v->as_array()) {
      if (c.is_int64()) out.push_back(c.as_int64());
    }
  }
  return out;
}

bool is_eval_point(const store::PointRecord& p) {
  return p.workload_key.rfind("gsm8k:", 0) == 0;
}

bool usable(const store::PointRecord& p) {
  return (p.status == metrics::PointStatus::kOk || p.status == metrics::PointStatus::kReused) &&
         p.validity.valid();
}

std::vector<Wanted> wanted_configs(const govern::GateContext& ctx) {
  std::vector<Wanted> out;
  for (const auto& k : ctx.changed->keys) {
    if (k.status == "removed") continue;
    for (const auto* r : ctx.head_rows_of(k.key)) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Wanted& w) {
        return w.key == k.key && w.fingerprint == r->fingerprint;
      });
      if (it == out.end()) {
        Wanted w;
        w.key = k.key;
        w.fingerprint = r->fingerprint;
        w.name = govern::point_name(*r, false);
        w.speculates = string_field(r->fields, "spec-decoding") != "none" &&
                       !string_field(r->fields, "spec-decoding").empty();
        w.agentic = r->scenario == recipe::Scenario::kAgenticCoding;
        w.row = r;
        out.push_back(std::move(w));
        it = std::prev(out.end());
      }
      const auto* eval = r->fields.if_contains("run-eval");
      const bool eval_row = eval && eval->is_bool() && eval->as_bool();
      for (int64_t c : concs_of(*r)) {
        it->concs.insert(c);
        if (eval_row) it->eval_concs.insert(c);
      }
    }
  }
  return out;
}

Expected<std::vector<StoredRun>> read_runs(const govern::GateContext& ctx, store::Store& db) {
  auto list = db.list_runs();
  if (!list) return list.error();
  std::vector<StoredRun> runs;
  for (auto& s : *list) {
    StoredRun r;
    r.run = std::move(s.run);
    r.in_range = ctx.in_range(r.run.git_revision);
    auto configs = db.server_configs(r.run.id);
    if (!configs) return configs.error();
    r.configs = std::move(*configs);
    if (r.in_range) {
      auto points = db.points(r.run.id);
      if (!points) return points.error();
      r.points = std::move(*points);
    }
    runs.push_back(std::move(r));
  }
  // Newest first: the evidence names the latest attempt.
  std::sort(runs.begin(), runs.end(),
            [](const StoredRun& a, const StoredRun& b) { return a.run.id > b.run.id; });
  return runs;
}

// The stored configurations of `key` with `fingerprint`, newest first, the ones whose server
// was observed (an effective configuration stored) before the others.
std::vector<Found> find_configs(const std::vector<StoredRun>& runs, const std::string& key,
                                const std::string& fingerprint, bool in_range) {
  std::vector<Found> out;
  for (const auto& r : runs) {
    if (in_range && !r.in_range) continue;
    for (const auto& c : r.configs) {
      if (c.config_key == key && c.fingerprint == fingerprint) out.push_back({&r, &c});
    }
  }
  std::stable_partition(out.begin(), out.end(),
                        [](const Found& f) { return !f.config->effective_config.empty(); });
  return out;
}

std::vector<const store::PointRecord*> points_of(const Found& f) {
  std::vector<const store::PointRecord*> out;
  for (const auto& p : f.run->points) {
    if (p.server_config_id == f.config->id) out.push_back(&p);
  }
  return out;
}

bool has_label(const std::vector<std::string>& labels, std::string_view l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

// What one stored configuration lacks of `w`: missing or unusable throughput and eval points.
// Empty: it covers `w`.
std::vector<std::string> shortfall(const Found& f, const Wanted& w, bool throughput, bool evals) {
  std::vector<std::string> out;
  std::set<int64_t> tp, ev;
  for (const auto* p : points_of(f)) {
    if (!usable(*p)) {
      out.push_back(fmt::format("point {} ({} at conc {}) is {}{}", p->id,
                                is_eval_point(*p) ? "eval" : "throughput", p->concurrency,
                                metrics::status_name(p->status),
                                p->validity.valid() ? (p->error.empty() ? "" : ": " + p->error)
                                                    : ": " + p->validity.text()));
      continue;
    }
    (is_eval_point(*p) ? ev : tp).insert(p->concurrency);
  }
  for (int64_t c : w.concs) {
    if (throughput && !tp.count(c)) out.push_back(fmt::format("no valid point at conc {}", c));
  }
  for (int64_t c : w.eval_concs) {
    if (evals && !ev.count(c)) out.push_back(fmt::format("no passing eval at conc {}", c));
  }
  return out;
}

GateCheck& with_verdict(GateCheck& c, GateVerdict v, std::string summary, std::string todo = {}) {
  c.verdict = v;
  c.summary = std::move(summary);
  c.todo = std::move(todo);
  return c;
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

// Check 1: for every wanted configuration, a run in the range whose points cover it, all valid,
// and (for eval rows) a passing eval; throughput and evals may come from different runs.
void decide_sweep_and_evals(const govern::GateContext& ctx, const std::vector<Wanted>& wanted,
                            const std::vector<StoredRun>& runs, GateCheck& c) {
  c.evidence.clear();
  if (wanted.empty()) {
    with_verdict(c, GateVerdict::kNotApplicable, "no config key was added or modified");
    return;
  }
  const bool evals_only = has_label(ctx.labels, "evals-only");
  size_t missing = 0, evals = 0;
  for (const auto& w : wanted) {
    const auto found = find_configs(runs, w.key, w.fingerprint, true);
    evals += w.eval_concs.empty() ? 0 : 1;
    auto covering = [&](bool throughput, bool ev) -> const Found* {
      for (const auto& f : found) {
        if (shortfall(f, w, throughput, ev).empty()) return &f;
      }
      return nullptr;
    };
    const Found* tp = evals_only ? nullptr : covering(true, false);
    const Found* ev = w.eval_concs.empty() ? nullptr : covering(false, true);
    const bool ok = (evals_only || tp) && (w.eval_concs.empty() || ev);
    const std::string where = w.name.empty() ? w.key : w.key + " (" + w.name + ")";
    if (ok) {
      std::string what = tp ? fmt::format("throughput at conc {} valid in {}",
                                          fmt::join(w.concs, ", "), run_name(*tp->run))
                            : std::string("throughput not required (evals-only)");
      if (ev) {
        what += fmt::format("; evals at conc {} passing in {}", fmt::join(w.eval_concs, ", "),
                            run_name(*ev->run));
      }
      c.evidence.push_back({"", 0, where, what, false});
      continue;
    }
    ++missing;
    if (found.empty()) {
      std::string other;
      for (const auto& r : runs) {
        for (const auto& sc : r.configs) {
          if (r.in_range && sc.config_key == w.key && other.empty()) {
            other =
                fmt::format(" ({} measured it with fingerprint {}, not the head's {})", run_name(r),
                            sc.fingerprint.substr(0, 12), w.fingerprint.substr(0, 12));
          }
        }
      }
      c.evidence.push_back(
          {"", 0, where, "no run of this configuration at a commit in the range" + other, false});
      continue;
    }
    // The newest attempt's shortfall.
    for (const auto& s : shortfall(found.front(), w, !evals_only, true)) {
      c.evidence.push_back({"", 0, where, run_name(*found.front().run) + ": " + s, false});
    }
  }
  if (missing > 0) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{} of {} changed server configuration{} lack{} a passing sweep{} "
                             "at a commit in the range ({} commit{})",
                             missing, wanted.size(), wanted.size() == 1 ? "" : "s",
                             missing == 1 ? "s" : "", evals > 0 ? " or eval" : "", ctx.range.size(),
                             ctx.range.size() == 1 ? "" : "s"),
                 "sweep the changed keys at the head of the change (inferbench sweep --labels "
                 "...), with their evals, until every point is valid and every eval passes");
    return;
  }
  with_verdict(c, GateVerdict::kPass,
               fmt::format("every changed server configuration ({}) has valid points at a commit "
                           "in the range{}",
                           wanted.size(),
                           evals > 0 ? fmt::format(", and {} passing evals", evals)
                                     : std::string(", and no changed row is an eval row")));
}

// Check 3: the run a merge would reuse (--reuse), and every reused point of the runs in the
// range: of a commit in the range, covering the keys, never under evals-only or agentx-fast.
void decide_reuse(const govern::GateContext& ctx, const std::vector<Wanted>& wanted,
                  const std::vector<StoredRun>& runs, const GateRunOptions& o, GateCheck& c) {
  c.evidence.clear();
  auto blocking = [&](const std::vector<std::string>& labels) {
    for (const char* l : {"evals-only", "agentx-fast"}) {
      if (has_label(labels, l)) return std::string(l);
    }
    return std::string();
  };
  size_t reused = 0;
  for (const auto& w : wanted) {
    for (const auto& f : find_configs(runs, w.key, w.fingerprint, true)) {
      for (const auto* p : points_of(f)) {
        if (p->status != metrics::PointStatus::kReused || !p->reused_from_run) continue;
        ++reused;
        auto src = std::find_if(runs.begin(), runs.end(), [&](const StoredRun& r) {
          return r.run.id == *p->reused_from_run;
        });
        const std::string where = fmt::format("{} point {}", run_name(*f.run), p->id);
        if (src == runs.end() || !src->in_range) {
          c.evidence.push_back(
              {"", 0, where,
               fmt::format("reuses run {}{}, not of a commit in the range", *p->reused_from_run,
                           src == runs.end() ? "" : " at " + short_rev(src->run.git_revision)),
               false});
        }
        if (auto b = blocking(f.run->run.labels); !b.empty()) {
          c.evidence.push_back({"", 0, where, "reused in a run labelled " + b, false});
        }
      }
    }
  }
  if (!o.reuse.empty()) {
    const StoredRun* r = nullptr;
    for (const auto& x : runs) {
      if (x.run.name == o.reuse || std::to_string(x.run.id) == o.reuse) r = &x;
    }
    if (r == nullptr) {
      c.evidence.push_back({"", 0, o.reuse, "no such run in the database", false});
    } else {
      if (!r->in_range) {
        c.evidence.push_back({"", 0, run_name(*r), "is not of a commit in the range", false});
      }
      std::vector<std::string> labels = ctx.labels;
      labels.insert(labels.end(), r->run.labels.begin(), r->run.labels.end());
      if (auto b = blocking(labels); !b.empty()) {
        c.evidence.push_back({"", 0, run_name(*r), b + " is applied: it blocks reuse", false});
      }
      for (const auto& w : wanted) {
        auto cfg = std::find_if(r->configs.begin(), r->configs.end(), [&](const auto& x) {
          return x.config_key == w.key && x.fingerprint == w.fingerprint;
        });
        if (cfg == r->configs.end()) {
          c.evidence.push_back({"", 0, run_name(*r), "does not cover " + w.key, false});
          continue;
        }
        for (const auto& s : shortfall({r, &*cfg}, w, true, true)) {
          c.evidence.push_back({"", 0, run_name(*r), w.key + ": " + s, false});
        }
      }
    }
  }
  if (o.reuse.empty() && reused == 0) {
    with_verdict(c, GateVerdict::kNotApplicable,
                 "nothing is reused: no --reuse run, and no reused point in the runs of the "
                 "changed keys");
  } else if (!c.evidence.empty()) {
    with_verdict(c, GateVerdict::kFail,
                 plural(c.evidence.size(), "finding", "findings") + " against reuse",
                 "reuse only a complete run of a commit in the range, and never while evals-only "
                 "or agentx-fast is applied; else sweep again");
  } else {
    with_verdict(c, GateVerdict::kPass,
                 fmt::format("{}{} of commits in the range, covering the changed keys",
                             o.reuse.empty() ? "" : "run " + o.reuse + " and ",
                             plural(reused, "reused point", "reused points")));
  }
}

namespace {

// The API a throughput point drove, from its workload key ("kind:{...}"): "chat" or
// "completions"; "" for an eval.
std::string point_api(const store::PointRecord& p) {
  const size_t colon = p.workload_key.find(':');
  const std::string kind = p.workload_key.substr(0, colon);
  if (kind == "gsm8k") return "";
  if (kind == "agentic-coding") return "chat";  // AgentX replays chat conversations
  boost::system::error_code ec;
  auto v = colon == std::string::npos ? json::value()
                                      : json::parse(p.workload_key.substr(colon + 1), ec);
  if (ec || !v.is_object()) return "unknown";
  const std::string api = string_field(v.as_object(), "api");
  return api.empty() ? "completions" : api;
}

// Check 6: a speculating configuration's throughput points went through chat completions (the
// server's chat template), not raw completions.
void decide_spec_chat(const std::vector<Wanted>& wanted, const std::vector<StoredRun>& runs,
                      GateCheck& c) {
  c.evidence.clear();
  size_t speculating = 0, seen = 0;
  for (const auto& w : wanted) {
    if (!w.speculates) continue;
    ++speculating;
    for (const auto& f : find_configs(runs, w.key, w.fingerprint, true)) {
      for (const auto* p : points_of(f)) {
        const std::string api = point_api(*p);
        if (api.empty()) continue;
        ++seen;
        if (api != "chat") {
          c.evidence.push_back(
              {"", 0, fmt::format("{} point {}", run_name(*f.run), p->id),
               fmt::format("{} (spec-decoding {}) at conc {} was sent as {} requests", w.key,
                           string_field(w.row->fields, "spec-decoding"), p->concurrency, api),
               false});
        }
      }
    }
  }
  if (speculating == 0) {
    with_verdict(c, GateVerdict::kNotApplicable, "no changed row speculates (spec-decoding none)");
  } else if (!c.evidence.empty()) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{} of {} speculating point{} did not go through the chat template",
                             c.evidence.size(), seen, seen == 1 ? "" : "s"),
                 "sweep speculating rows with --api chat: raw completions skip the chat template "
                 "the draft model was trained on, and the acceptance length is not the served one");
  } else if (seen == 0) {
    with_verdict(
        c, GateVerdict::kCannotDecide,
        fmt::format("{} speculating configuration{} changed, but no throughput point of "
                    "{} is stored at a commit in the range",
                    speculating, speculating == 1 ? "" : "s", speculating == 1 ? "it" : "them"),
        "sweep the changed keys (with --api chat)");
  } else {
    with_verdict(c, GateVerdict::kPass,
                 fmt::format("all {} throughput point{} of the {} speculating configuration{} "
                             "went through chat completions",
                             seen, seen == 1 ? "" : "s", speculating, speculating == 1 ? "" : "s"));
  }
}

// A base configuration paired with the head's, both stored: what checks 5, 9 and 10 compare.
struct StoredPair {
  std::string key, name;
  Found base, head;
};

// Pairs every wanted configuration of a modified key with the base row it replaces (the same
// exp-name without concurrency, or the only one on each side), where both sides are stored. A
// configuration that did not change (the same fingerprint) is left out unless `same` is set.
// `unpaired` gets a line per configuration without a stored base or head run.
std::vector<StoredPair> stored_pairs(const govern::GateContext& ctx,
                                     const std::vector<Wanted>& wanted,
                                     const std::vector<StoredRun>& runs,
                                     std::vector<std::string>* unpaired) {
  std::vector<StoredPair> out;
  for (const auto& w : wanted) {
    const auto base_rows = ctx.base_rows_of(w.key);
    if (base_rows.empty()) continue;  // an added key
    const recipe::RecipeRow* b = nullptr;
    for (const auto* r : base_rows) {
      if (govern::point_name(*r, false) == w.name) b = r;
    }
    if (b == nullptr && base_rows.size() == 1) b = base_rows.front();
    if (b == nullptr) {
      if (unpaired) unpaired->push_back(w.key + " (" + w.name + "): no base row of that name");
      continue;
    }
    const auto heads = find_configs(runs, w.key, w.fingerprint, true);
    std::vector<Found> bases;
    for (const auto& f : find_configs(runs, w.key, b->fingerprint, false)) {
      // A base run is measured outside the range (at base or before), unless the fingerprint is
      // the head's too (then any run of it will do, but not the same one).
      if (!f.run->in_range || b->fingerprint == w.fingerprint) bases.push_back(f);
    }
    if (heads.empty() || bases.empty()) {
      // An unchanged configuration of the key needs no judgement.
      if (unpaired && b->fingerprint != w.fingerprint) {
        unpaired->push_back(fmt::format("{} ({}): no stored {} run", w.key, w.name,
                                        bases.empty() ? "base" : "head"));
      }
      continue;
    }
    Found base = bases.front();
    for (const auto& f : bases) {
      if (f.run != heads.front().run) {
        base = f;
        break;
      }
    }
    out.push_back({w.key, w.name, base, heads.front()});
  }
  return out;
}

}  // namespace

namespace {

bool shared_reason(const govern::GateContext& ctx, const std::string& key) {
  for (const auto& k : ctx.changed->keys) {
    if (k.key != key) continue;
    for (const auto& r : k.reasons) {
      if (r.kind == "shared-file" || r.kind == "runner") return true;
    }
  }
  return false;
}

std::string pair_where(const StoredPair& p) {
  return fmt::format("{} vs {}", run_name(*p.base.run), run_name(*p.head.run));
}

// Check 10: verify's judgement of each modified configuration from its stored base and head
// runs. A no-op fails with the fields' evidence (a variable no process read, ...).
void decide_effect(const govern::GateContext& ctx, const std::vector<StoredPair>& pairs,
                   const std::vector<std::string>& unpaired, const GateRunOptions& o,
                   GateCheck& c) {
  c.evidence.clear();
  size_t modified = 0;
  for (const auto& k : ctx.changed->keys) modified += k.status == "modified" ? 1 : 0;
  if (modified == 0) {
    with_verdict(c, GateVerdict::kNotApplicable,
                 "no config key was modified (an added key is new, a removed one gone)");
    return;
  }
  size_t no_op = 0, effective = 0, undecided = 0;
  for (const auto& p : pairs) {
    if (p.base.config->fingerprint == p.head.config->fingerprint && !shared_reason(ctx, p.key)) {
      continue;  // this configuration of the key did not change
    }
    auto v = judge_stored(*p.base.config, p.base.run->run, *p.head.config, p.head.run->run,
                          o.ignore_settings);
    // Effective only on a field's positive evidence: a key verdict "effective" also covers
    // fields that could not be verified (a server that did not start).
    const bool is_effective =
        !v.no_op() && std::any_of(v.fields.begin(), v.fields.end(), [](const auto& f) {
          return f.verdict == "effective" || f.verdict == "read" || f.verdict == "workload";
        });
    no_op += v.no_op() ? 1 : 0;
    effective += is_effective ? 1 : 0;
    undecided += !v.no_op() && !is_effective ? 1 : 0;
    for (const auto& f : v.fields) {
      c.evidence.push_back({"", 0, f.field.empty() ? p.key : p.key + ": " + f.field,
                            fmt::format("{} ({}): {}{}", f.verdict, pair_where(p),
                                        f.evidence.empty() ? f.change : f.evidence,
                                        v.no_op() ? " — " + v.verdict : ""),
                            false});
    }
  }
  for (const auto& u : unpaired) c.evidence.push_back({"", 0, u, "not judged", false});
  if (no_op > 0) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{} changed configuration{} showed no effect: the servers at base and "
                             "head read and printed the same (verify's no-op)",
                             no_op, no_op == 1 ? "" : "s"),
                 "drop the change, or make it take effect (a variable the engine reads on this "
                 "image, an argument it accepts): inferbench verify shows what each server read");
  } else if (undecided > 0 || !unpaired.empty() || effective == 0) {
    with_verdict(
        c, GateVerdict::kCannotDecide,
        fmt::format("{} configuration{} effective, {} unverified, {} without a stored base and "
                    "head run",
                    effective, effective == 1 ? "" : "s", undecided, unpaired.size()),
        "sweep base's configuration too (or run inferbench verify --base), so both sides are "
        "observed");
  } else {
    with_verdict(c, GateVerdict::kPass,
                 fmt::format("every changed configuration ({}) showed an effect between its "
                             "stored base and head runs",
                             effective));
  }
}

// The settings that say how large the served model is (layers, experts, heads, widths) or that
// override its architecture.
bool architecture_setting(std::string_view name) {
  static const std::regex kArch(
      R"(num_hidden_layers|num_layers|n_layers|num_experts|n_routed_experts|num_local_experts|)"
      R"(experts_per_tok|num_attention_heads|num_key_value_heads|hidden_size|intermediate_size|)"
      R"(architecture|hf_overrides|override_args|first_k_dense|index_topk|skip_indexer)",
      std::regex::icase);
  return std::regex_search(name.begin(), name.end(), kArch);
}

// Check 5's run half: the architecture settings the servers showed, base vs head.
void add_served_architecture(const std::vector<StoredPair>& pairs, GateCheck& c) {
  size_t compared = 0, differ = 0;
  for (const auto& p : pairs) {
    const auto* bs = p.base.config->effective_config.if_contains("settings");
    const auto* hs = p.head.config->effective_config.if_contains("settings");
    if (!bs || !hs || !bs->is_object() || !hs->is_object()) continue;
    ++compared;
    std::set<std::string> names;
    for (const auto* s : {bs, hs}) {
      for (const auto& kv : s->as_object()) {
        if (architecture_setting(kv.key())) names.insert(std::string(kv.key()));
      }
    }
    for (const auto& n : names) {
      const auto* b = bs->as_object().if_contains(n);
      const auto* h = hs->as_object().if_contains(n);
      if (b && h && *b == *h) continue;
      ++differ;
      c.evidence.push_back({"", 0, p.key + ": " + n,
                            fmt::format("the served model's {} is {} at base, {} at head ({})", n,
                                        b ? json::serialize(*b) : "not shown",
                                        h ? json::serialize(*h) : "not shown", pair_where(p)),
                            false});
    }
  }
  if (differ > 0) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{}; the served architecture differs in {} setting{}", c.summary,
                             differ, differ == 1 ? "" : "s"),
                 c.todo.empty() ? "serve the model's own architecture (no overrides that remove "
                                  "layers, experts or heads)"
                                : c.todo);
  } else if (compared > 0) {
    c.summary += fmt::format(
        "; the servers of {} stored base and head run pair{} showed the same architecture "
        "settings",
        compared, compared == 1 ? "" : "s");
  } else {
    c.summary +=
        "; the served architecture was not compared (no stored base and head runs of a "
        "changed configuration)";
  }
}

// Which watched variables some process read; nullopt when reads were not traced.
std::optional<std::map<std::string, bool>> reads_of(const json::object& env_reads) {
  const auto* vars = env_reads.if_contains("variables");
  if (!vars || !vars->is_object()) return std::nullopt;
  std::map<std::string, bool> out;
  for (const auto& kv : vars->as_object()) {
    const auto* r = kv.value().is_object() ? kv.value().as_object().if_contains("read") : nullptr;
    out[std::string(kv.key())] = r && r->is_bool() && r->as_bool();
  }
  return out;
}

// Check 9's run half: an append-only key's unchanged points show, at head, the effective
// configuration and environment reads they showed at base.
void add_append_only_runs(const govern::GateContext& ctx, const std::vector<StoredPair>& pairs,
                          const GateRunOptions& o, GateCheck& c) {
  if (c.verdict == GateVerdict::kNotApplicable) return;
  size_t compared = 0, differ = 0;
  for (const auto& p : pairs) {
    if (std::find(ctx.append_only_keys.begin(), ctx.append_only_keys.end(), p.key) ==
            ctx.append_only_keys.end() ||
        p.base.config->fingerprint != p.head.config->fingerprint) {
      continue;
    }
    ++compared;
    auto v = judge_stored(*p.base.config, p.base.run->run, *p.head.config, p.head.run->run,
                          o.ignore_settings);
    std::vector<std::string> what;
    for (const auto& kv : v.effective_diff) what.push_back(std::string(kv.key()));
    const auto br = reads_of(p.base.config->env_reads);
    const auto hr = reads_of(p.head.config->env_reads);
    if (br && hr && *br != *hr) what.push_back("set of environment variables read");
    if (what.empty()) continue;
    ++differ;
    c.evidence.push_back({"", 0, p.key + " (" + p.name + ")",
                          fmt::format("an existing point's server showed a different {} ({})",
                                      fmt::join(what, ", "), pair_where(p)),
                          false});
  }
  if (differ > 0) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{} existing point{} changed", differ, differ == 1 ? "" : "s"),
                 "an append-only change must leave every existing point as it was: give the "
                 "change its own key or points");
  } else if (c.verdict == GateVerdict::kPass) {
    c.summary = fmt::format(
        "{}; {} existing point{} compared between stored base and head runs showed the same "
        "effective configuration and reads",
        c.summary.substr(0, c.summary.find(" (their effective")), compared,
        compared == 1 ? "" : "s");
  }
}

}  // namespace

namespace {

// Check 7's run half: writes into the engine's installed files that the environment tracer saw
// (EnvTraceReport's "engine_writes") in the head runs of the changed configurations.
void add_engine_writes(const govern::GateContext& ctx, const std::vector<Wanted>& wanted,
                       const std::vector<StoredRun>& runs, GateCheck& c) {
  size_t traced = 0, untraced = 0, writes = 0;
  for (const auto& w : wanted) {
    for (const auto& f : find_configs(runs, w.key, w.fingerprint, true)) {
      const auto* ew = f.config->env_reads.if_contains("engine_writes");
      if (!ew || !ew->is_array()) {
        ++untraced;
        continue;
      }
      ++traced;
      for (const auto& x : ew->as_array()) {
        if (!x.is_object()) continue;
        const std::string path = string_field(x.as_object(), "path");
        GateEvidence e{"", 0, path,
                       fmt::format("{}: {} wrote into the engine's installed files at run time "
                                   "({})",
                                   w.key, string_field(x.as_object(), "exe"), run_name(*f.run)),
                       false};
        for (const auto& text : ctx.waivers) {
          if (!path.empty() && text.find(path.substr(path.rfind('/') + 1)) != std::string::npos) {
            e.waived = true;
          }
        }
        writes += e.waived ? 0 : 1;
        c.evidence.push_back(std::move(e));
      }
    }
  }
  if (writes > 0) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{}; at run time, {} write{} into the engine's installed files",
                             c.verdict == GateVerdict::kFail ? c.summary : "no patch in the text",
                             writes, writes == 1 ? "" : "s"),
                 "run the engine as released; a patch that must stay needs docs/waiver/<PR>.md "
                 "naming the file: what is patched, why, the upstream link and when it goes");
    return;
  }
  const std::string cut = " (writes into the engine's installed files";
  if (auto at = c.summary.find(cut); at != std::string::npos) c.summary.resize(at);
  if (traced > 0) {
    c.summary += fmt::format("; the servers of {} head run{} wrote no engine file at run time",
                             traced, traced == 1 ? "" : "s");
  }
  if (untraced > 0) {
    c.summary += fmt::format(
        "; {} head run{} recorded no write trace (traced off, or stored before it existed)",
        untraced, untraced == 1 ? "" : "s");
  }
  if (traced == 0 && untraced == 0) c.summary += "; no head run to read writes from";
}

// Check 8's run half: each pinned configuration's realised acceptance length (the point result's
// spec_acceptance, from `expect: spec-acceptance`) against the golden one.
void add_realised_acceptance(const std::vector<Wanted>& wanted, const std::vector<StoredRun>& runs,
                             GateCheck& c) {
  if (c.verdict != GateVerdict::kCannotDecide) return;  // n/a, or failed on the recipe
  size_t passed = 0, failed = 0, pinned = 0;
  for (const auto& w : wanted) {
    if (!w.agentic || !w.speculates) continue;
    ++pinned;
    for (const auto& f : find_configs(runs, w.key, w.fingerprint, true)) {
      for (const auto* p : points_of(f)) {
        const auto* sa = p->result.if_contains("spec_acceptance");
        if (!sa || !sa->is_object()) continue;
        const auto& o = sa->as_object();
        const auto* ok = o.if_contains("passed");
        const bool pass = ok && ok->is_bool() && ok->as_bool();
        (pass ? passed : failed) += 1;
        if (pass) continue;
        const auto* realised = o.if_contains("realised");
        c.evidence.push_back(
            {"", 0, fmt::format("{} point {}", run_name(*f.run), p->id),
             fmt::format("{} at conc {}: realised acceptance length {}, golden {} (± {})", w.key,
                         p->concurrency, realised ? json::serialize(*realised) : "null",
                         o.contains("golden") ? json::serialize(o.at("golden")) : "?",
                         o.contains("tolerance") ? json::serialize(o.at("tolerance")) : "?"),
             false});
      }
    }
  }
  if (failed > 0) {
    with_verdict(c, GateVerdict::kFail,
                 fmt::format("{} point{} did not realise the golden acceptance length", failed,
                             failed == 1 ? "" : "s"),
                 "the pinned acceptance knobs must give the golden acceptance length: check the "
                 "draft length and the synthetic acceptance against the golden file");
  } else if (passed > 0) {
    with_verdict(c, GateVerdict::kPass,
                 fmt::format("{} pinned configuration{}: {} point{} realised the golden acceptance "
                             "length",
                             pinned, pinned == 1 ? "" : "s", passed, passed == 1 ? "" : "s"));
  } else {
    c.summary = fmt::format(
        "{} pinned configuration{}, but no stored point at a commit in the range checked its "
        "realised acceptance length (expect: spec-acceptance)",
        pinned, pinned == 1 ? "" : "s");
    c.todo = "sweep the pinned keys at the head of the change";
  }
}

}  // namespace

Status decide_gate_runs(const govern::GateContext& ctx, store::Store& db, const GateRunOptions& o,
                        govern::GateReport& report) {
  auto runs = read_runs(ctx, db);
  if (!runs) return runs.error();
  const auto wanted = wanted_configs(ctx);
  decide_sweep_and_evals(ctx, wanted, *runs, govern::check_of(report, 1));
  decide_reuse(ctx, wanted, *runs, o, govern::check_of(report, 3));
  decide_spec_chat(wanted, *runs, govern::check_of(report, 6));
  std::vector<std::string> unpaired;
  const auto pairs = stored_pairs(ctx, wanted, *runs, &unpaired);
  decide_effect(ctx, pairs, unpaired, o, govern::check_of(report, 10));
  add_served_architecture(pairs, govern::check_of(report, 5));
  add_engine_writes(ctx, wanted, *runs, govern::check_of(report, 7));
  add_realised_acceptance(wanted, *runs, govern::check_of(report, 8));
  add_append_only_runs(ctx, pairs, o, govern::check_of(report, 9));
  return Status::Ok();
}

}  // namespace ib::sweep
