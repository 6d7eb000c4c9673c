#include "govern/labels.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/strings.h"
#include "recipe/fingerprint.h"

namespace ib::govern {

namespace json = boost::json;
using recipe::RecipeRow;

const std::vector<std::string>& primary_labels() {
  static const std::vector<std::string> kLabels = {
      "sweep-enabled", "full-sweep-fail-fast", "full-sweep-enabled",
      "full-sweep-fail-fast-no-canary", "non-canary-full-sweep-enabled"};
  return kLabels;
}

bool Labels::canary() const {
  return primary == "full-sweep-fail-fast" || primary == "full-sweep-enabled";
}

bool Labels::fail_fast() const {
  return primary == "full-sweep-fail-fast" || primary == "full-sweep-fail-fast-no-canary";
}

std::vector<std::string> Labels::all() const {
  std::vector<std::string> out = {primary};
  if (all_evals) out.push_back("all-evals");
  if (evals_only) out.push_back("evals-only");
  if (agentx_fast) out.push_back("agentx-fast");
  if (skip_queue) out.push_back("skip_queue");
  out.insert(out.end(), policy.begin(), policy.end());
  return out;
}

Expected<Labels> parse_labels(const std::vector<std::string>& items) {
  static const std::set<std::string> kPolicy = {"ci-patchwork", "engine-patch",
                                                "ci-patchwork-waived", "ci-checklist-complete"};
  Labels labels;
  std::vector<std::string> primaries;
  std::vector<std::string> problems;
  for (const std::string& item : items) {
    for (const std::string& field : split(item, ',')) {
      const std::string l(trim(field));
      if (l.empty()) continue;
      const auto& p = primary_labels();
      if (std::find(p.begin(), p.end(), l) != p.end()) {
        primaries.push_back(l);
      } else if (l == "all-evals") {
        labels.all_evals = true;
      } else if (l == "evals-only") {
        labels.evals_only = true;
      } else if (l == "agentx-fast") {
        labels.agentx_fast = true;
      } else if (l == "skip_queue") {
        labels.skip_queue = true;
      } else if (kPolicy.count(l)) {
        labels.policy.push_back(l);
      } else {
        problems.push_back(
            fmt::format("unknown label '{}' (primary labels: {}; modifiers: "
                        "all-evals, evals-only, agentx-fast, skip_queue)",
                        l, fmt::join(primary_labels(), ", ")));
      }
    }
  }
  if (primaries.empty()) {
    problems.push_back(fmt::format("exactly one primary label is needed, one of: {}",
                                   fmt::join(primary_labels(), ", ")));
  } else if (primaries.size() > 1) {
    problems.push_back(
        fmt::format("exactly one primary label is allowed, got {}", fmt::join(primaries, ", ")));
  } else {
    labels.primary = primaries.front();
  }
  if (labels.evals_only && labels.agentx_fast) {
    problems.push_back(
        "evals-only (no throughput) contradicts agentx-fast (AgentX throughput only)");
  }
  if (!problems.empty()) return Error{fmt::format("labels: {}", fmt::join(problems, "; "))};
  return labels;
}

std::vector<RecipeRow> trim_concurrency(const std::vector<RecipeRow>& rows) {
  std::vector<RecipeRow> out;
  std::map<std::string, size_t> kept;  // curve key -> index in out
  for (const RecipeRow& row : rows) {
    if (row.multinode) {
      RecipeRow r = row;
      if (auto* c = r.fields["conc"].if_array(); c && !c->empty()) {
        int64_t min = c->front().as_int64();
        for (const auto& v : *c) min = std::min(min, v.as_int64());
        *c = json::array{min};
      }
      out.push_back(std::move(r));
      continue;
    }
    json::object key = row.fields;
    key.erase("conc");
    key.erase("exp-name");
    std::string k = recipe::canonical_json(key);
    auto it = kept.find(k);
    if (it == kept.end()) {
      kept[k] = out.size();
      out.push_back(row);
    } else if (row.fields.at("conc").as_int64() < out[it->second].fields.at("conc").as_int64()) {
      out[it->second] = row;
    }
  }
  return out;
}

namespace {

std::string seq_bucket(const RecipeRow& row) {
  if (row.scenario == recipe::Scenario::kAgenticCoding) return "agentic";
  if (row.scenario == recipe::Scenario::kTimedTrace) return "trace";
  return recipe::seq_len_name(row.fields.at("isl").as_int64(), row.fields.at("osl").as_int64());
}

std::string family_of(const RecipeRow& row) {
  std::string bucket = seq_bucket(row);
  if (bucket == "agentic") return row.multinode ? "multi-node-agentic" : "agentic";
  return fmt::format("{}-{}", row.multinode ? "multi-node" : "single-node", bucket);
}

bool is_eval(const RecipeRow& row) {
  const auto* e = row.fields.if_contains("run-eval");
  return (e && e->is_bool() && e->as_bool()) || row.fields.contains("eval-conc");
}

int64_t min_conc(const RecipeRow& row) {
  const json::value& c = row.fields.at("conc");
  if (c.is_int64()) return c.as_int64();
  int64_t m = INT64_MAX;
  for (const auto& v : c.as_array()) m = std::min(m, v.as_int64());
  return m;
}

}  // namespace

size_t SweepPlan::throughput_rows() const {
  size_t n = canary ? 1 : 0;
  for (const auto& g : groups) n += g.eval ? 0 : g.rows.size();
  return n;
}

size_t SweepPlan::eval_rows() const {
  size_t n = 0;
  for (const auto& g : groups) n += g.eval ? g.rows.size() : 0;
  return n;
}

SweepPlan make_sweep_plan(const std::vector<RecipeRow>& rows, const Labels& labels) {
  SweepPlan plan;
  plan.labels = labels;
  // Throughput rows carry no eval marks (InferenceX generates them with --no-evals); eval rows are
  // the marked ones, or with all-evals every eligible fixed-seq-len row.
  std::vector<RecipeRow> throughput;
  std::vector<RecipeRow> evals;
  for (const RecipeRow& row : rows) {
    if (labels.all_evals
            ? (row.scenario == recipe::Scenario::kFixedSeqLen && (is_eval(row) || seq_bucket(row) == "8k1k"))
            : is_eval(row)) {
      RecipeRow e = row;
      e.fields["run-eval"] = true;
      if (labels.all_evals) e.fields["eval-all-concs"] = true;
      evals.push_back(std::move(e));
    }
    RecipeRow t = row;
    t.fields["run-eval"] = false;
    t.fields.erase("eval-conc");
    throughput.push_back(std::move(t));
  }
  if (labels.evals_only) {
    throughput.clear();
    plan.notes.push_back("evals-only: no throughput rows");
  }
  if (labels.agentx_fast) {
    std::erase_if(throughput, [](const RecipeRow& r) { return r.scenario != recipe::Scenario::kAgenticCoding; });
    evals.clear();
    plan.notes.push_back(
        "agentx-fast: AgentX throughput rows only, with AIPERF_EXPERIMENTAL_FAST=1 (1200 s "
        "profile, 1 warmup request per lane)");
  }
  if (labels.trim_conc()) {
    size_t before = throughput.size();
    throughput = trim_concurrency(throughput);
    plan.notes.push_back(fmt::format(
        "sweep-enabled: concurrency trimmed to the lowest point per configuration ({} -> {} rows)",
        before, throughput.size()));
  }
  if (labels.canary() && !labels.evals_only) {
    std::optional<size_t> best;
    for (size_t i = 0; i < throughput.size(); ++i) {
      const RecipeRow& r = throughput[i];
      std::string f = family_of(r);
      if (f != "single-node-1k1k" && f != "single-node-8k1k") continue;
      if (!best || min_conc(r) < min_conc(throughput[*best])) best = i;
    }
    if (best) {
      plan.canary = throughput[*best];
      throughput.erase(throughput.begin() + static_cast<std::ptrdiff_t>(*best));
      plan.notes.push_back(
          fmt::format("canary: {} at conc {} runs first; everything else waits "
                      "for it to pass",
                      plan.canary->config_key, min_conc(*plan.canary)));
    } else {
      plan.notes.push_back("canary: no single-node 1k1k or 8k1k row to run as canary; skipped");
    }
  }
  std::vector<std::string> order;
  std::map<std::string, PlanGroup> groups;
  for (RecipeRow& r : throughput) {
    std::string f = family_of(r);
    if (!groups.count(f)) {
      order.push_back(f);
      groups[f].name = f;
      groups[f].fail_fast = labels.fail_fast();
    }
    groups[f].rows.push_back(std::move(r));
  }
  for (const auto& f : order) plan.groups.push_back(std::move(groups[f]));
  if (!evals.empty()) {
    PlanGroup g;
    g.name = "evals";
    g.eval = true;
    g.fail_fast = labels.fail_fast();
    g.rows = std::move(evals);
    plan.groups.push_back(std::move(g));
  }
  if (labels.fail_fast()) {
    plan.notes.push_back("fail-fast: a failure stops the rest of its own family only");
  }
  return plan;
}

json::object SweepPlan::to_json() const {
  json::object o;
  json::array ls;
  for (const auto& l : labels.all()) ls.emplace_back(l);
  o["labels"] = std::move(ls);
  o["trim-conc"] = labels.trim_conc();
  o["canary"] = canary ? json::value(canary->to_json()) : json::value(nullptr);
  json::array gs;
  for (const auto& g : groups) {
    json::object go;
    go["name"] = g.name;
    go["fail-fast"] = g.fail_fast;
    go["eval"] = g.eval;
    json::array rs;
    for (const auto& r : g.rows) rs.push_back(r.to_json());
    go["rows"] = std::move(rs);
    gs.push_back(std::move(go));
  }
  o["groups"] = std::move(gs);
  o["throughput-rows"] = throughput_rows();
  o["eval-rows"] = eval_rows();
  json::array ns;
  for (const auto& n : notes) ns.emplace_back(n);
  o["notes"] = std::move(ns);
  return o;
}

}  // namespace ib::govern
