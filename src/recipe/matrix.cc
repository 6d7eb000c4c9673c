#include "recipe/matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "recipe/fingerprint.h"

namespace ib::recipe {

namespace json = boost::json;

std::string seq_len_name(int64_t isl, int64_t osl) {
  if (isl == 1024 && osl == 1024) return "1k1k";
  if (isl == 8192 && osl == 1024) return "8k1k";
  return fmt::format("{}_{}", isl, osl);
}

int64_t total_cpu_dram_gb(const RunnerHardware& hw, double dram_utilization, int64_t gpu_count) {
  constexpr int64_t kCapMib = 2'861'022;  // 3 TB decimal
  double mib = static_cast<double>(std::min(hw.available_cpu_dram_mib, kCapMib));
  double bytes = mib * 1'048'576.0 * dram_utilization * static_cast<double>(gpu_count) /
                 static_cast<double>(hw.gpus_per_node);
  return static_cast<int64_t>(bytes / 1e9);
}

std::string_view scenario_name(Scenario s) {
  switch (s) {
    case Scenario::kAgenticCoding:
      return "agentic-coding";
    case Scenario::kTimedTrace:
      return "timed-trace";
    default:
      return "fixed-seq-len";
  }
}

json::object RecipeRow::to_json() const {
  json::object out;
  out["config-key"] = config_key;
  for (const auto& kv : fields) out[kv.key()] = kv.value();
  if (!out.contains("scenario-type")) out["scenario-type"] = scenario_name(scenario);
  out["recipe-fingerprint"] = fingerprint;
  return out;
}

namespace {

json::value conc_list(const std::vector<int64_t>& conc) {
  json::array a;
  for (int64_t c : conc) a.push_back(c);
  return a;
}

json::object worker_json(const Worker& w) {
  json::object o;
  o["num-worker"] = w.num_worker;
  o["tp"] = w.tp;
  o["pp"] = w.pp;
  o["dcp-size"] = w.dcp_size;
  o["pcp-size"] = w.pcp_size;
  o["ep"] = w.ep;
  o["dp-attn"] = w.dp_attn;
  json::array settings;
  for (const auto& s : w.additional_settings) settings.push_back(json::string(s));
  o["additional-settings"] = settings;
  if (w.hardware) o["hardware"] = *w.hardware;
  return o;
}

json::object router_json(const Router& r) {
  json::object o;
  o["name"] = r.name;
  o["version"] = r.version;
  return o;
}

json::object serve_json(const ServeSpec& s) {
  json::object o;
  if (s.has_roles()) {
    for (const auto& [role, block] : s.roles) o[role] = serve_json(block);
    return o;
  }
  json::array cmd;
  for (const auto& a : s.command) cmd.push_back(json::string(a));
  o["command"] = cmd;
  json::object env;
  for (const auto& [k, v] : s.env) env[k] = v;
  o["env"] = env;
  json::array extra;
  for (const auto& a : s.extra_args) extra.push_back(json::string(a));
  o["extra-args"] = extra;
  o["health-path"] = s.health_path;
  // The router's node on a multi-node launcher; absent when not given (fingerprints of recipes
  // without it stay as they were).
  if (!s.node.empty()) o["node"] = s.node;
  return o;
}

json::object identity(const ConfigEntry& e) {
  json::object o;
  o["image"] = e.image;
  o["model"] = e.model;
  o["model-prefix"] = e.model_prefix;
  o["precision"] = e.precision;
  o["framework"] = e.framework;
  o["runner"] = e.runner;
  return o;
}

// Router, KV transfer and serve are appended last; each is set in one place only (validated).
void append_optional(const ConfigEntry& e, const SearchSpaceEntry& s, json::object& o,
                     bool multinode) {
  if (multinode) {
    const auto& kv = s.kv_p2p_transfer ? s.kv_p2p_transfer : e.kv_p2p_transfer;
    if (kv) o["kv-p2p-transfer"] = *kv;
  }
  const auto& router = s.router ? s.router : e.router;
  if (router) o["router"] = router_json(*router);
  if (e.serve) o["serve"] = serve_json(*e.serve);
}

void append_offload(const SearchSpaceEntry& s, json::object& o) {
  o["kv-offloading"] = s.kv_offloading;
  if (s.kv_offload_backend) {
    json::object b;
    b["name"] = s.kv_offload_backend->name;
    if (s.kv_offload_backend->version) b["version"] = *s.kv_offload_backend->version;
    o["kv-offload-backend"] = b;
  }
}

std::string offload_tag(const SearchSpaceEntry& s) {
  if (s.kv_offloading == "none") return "kvnone";
  return fmt::format("kv{}-{}", s.kv_offloading,
                     s.kv_offload_backend ? s.kv_offload_backend->name : "");
}

std::string worker_tag(const Worker& w) {
  std::string t = fmt::format("{}x{}", w.num_worker, w.tp);
  if (w.ep > 1) t += fmt::format("ep{}", w.ep);
  if (w.dp_attn) t += "dpa";
  return t;
}

// Multi-node DRAM footprint: the prefill worker's GPUs on one node; a pool that spans whole
// nodes counts as one full node (the DRAM offload budget of InferenceX's
// generate_sweep_configs.py).
int64_t multinode_gpu_count(const Worker& prefill, int64_t gpus_per_node) {
  int64_t gpus = prefill.tp * prefill.pp * prefill.pcp_size;
  if (gpus >= gpus_per_node && gpus % gpus_per_node == 0) return gpus_per_node;
  return gpus;
}

int64_t dram_gb(const ConfigEntry& e, const AgenticCoding& a, const RunnersFile* runners,
                int64_t gpu_count, const Worker* prefill) {
  if (!runners || !a.dram_utilization) return 0;
  auto it = runners->hardware.find(e.runner);
  if (it == runners->hardware.end() || it->second.gpus_per_node <= 0) return 0;
  if (prefill) gpu_count = multinode_gpu_count(*prefill, it->second.gpus_per_node);
  return total_cpu_dram_gb(it->second, *a.dram_utilization, gpu_count);
}

// A single-node entry's parallelism fields, in InferenceX's order.
void add_parallelism(const SearchSpaceEntry& s, json::object& o) {
  o["tp"] = *s.tp;
  o["pp"] = s.pp;
  o["dcp-size"] = s.dcp_size;
  o["pcp-size"] = s.pcp_size;
  o["ep"] = s.ep;
  o["dp-attn"] = s.dp_attn;
}

// The timed-trace scenario's rows (our extension): the trace and how it is replayed, the
// server's parallelism, and the cap on requests in flight as `conc`.
template <typename Add>
void expand_timed_trace(const ConfigEntry& e, Add& add) {
  for (const auto& t : e.timed_trace) {
    const std::string stem = std::filesystem::path(t.trace).stem().string();
    for (const auto& s : t.search_space) {
      const bool multinode = s.prefill.has_value();
      for (int64_t conc : s.conc) {
        json::object o = identity(e);
        o["trace"] = t.trace;
        o["trace-format"] = t.format;
        if (t.block_size) o["block-size"] = *t.block_size;
        if (!t.window.empty()) o["window"] = t.window;
        if (t.time_scale) o["time-scale"] = *t.time_scale;
        if (t.max_requests) o["max-requests"] = *t.max_requests;
        if (t.max_lag_ms) o["max-lag-ms"] = *t.max_lag_ms;
        o["spec-decoding"] = s.spec_decoding;
        std::string exp_name;
        if (!multinode) {
          add_parallelism(s, o);
          o["conc"] = conc;
          exp_name = fmt::format("{}_tp{}_trace-{}_conc{}", e.model_prefix, *s.tp, stem, conc);
        } else {
          o["prefill"] = worker_json(*s.prefill);
          o["decode"] = worker_json(*s.decode);
          o["conc"] = conc_list({conc});
          exp_name = fmt::format("{}_p{}_d{}_trace-{}_conc{}", e.model_prefix,
                                 worker_tag(*s.prefill), worker_tag(*s.decode), stem, conc);
        }
        o["scenario-type"] = "timed-trace";
        o["exp-name"] = exp_name;
        o["disagg"] = multinode && e.disagg;
        o["run-eval"] = false;
        append_optional(e, s, o, multinode);
        add(Scenario::kTimedTrace, multinode, std::move(o));
      }
    }
  }
}

void expand_entry(const ConfigEntry& e, const RunnersFile* runners, std::vector<RecipeRow>* rows) {
  auto add = [&](Scenario scenario, bool multinode, json::object fields) {
    RecipeRow row;
    row.config_key = e.key;
    row.scenario = scenario;
    row.multinode = multinode;
    row.fields = std::move(fields);
    rows->push_back(std::move(row));
  };
  for (const auto& seq : e.fixed_seq_len) {
    std::string exp_name = fmt::format("{}_{}", e.model_prefix, seq_len_name(seq.isl, seq.osl));
    for (const auto& s : seq.search_space) {
      if (!e.multinode) {
        for (int64_t conc : s.conc) {
          json::object o = identity(e);
          o["isl"] = seq.isl;
          o["osl"] = seq.osl;
          o["tp"] = *s.tp;
          o["pp"] = s.pp;
          o["dcp-size"] = s.dcp_size;
          o["pcp-size"] = s.pcp_size;
          o["conc"] = conc;
          o["max-model-len"] = seq.isl + seq.osl + 256;
          o["ep"] = s.ep;
          o["dp-attn"] = s.dp_attn;
          o["spec-decoding"] = s.spec_decoding;
          o["exp-name"] = exp_name;
          o["disagg"] = false;
          o["run-eval"] = false;
          append_optional(e, s, o, false);
          add(Scenario::kFixedSeqLen, false, std::move(o));
        }
      } else {
        json::object o = identity(e);
        o["isl"] = seq.isl;
        o["osl"] = seq.osl;
        o["spec-decoding"] = s.spec_decoding;
        o["prefill"] = worker_json(*s.prefill);
        o["decode"] = worker_json(*s.decode);
        o["conc"] = conc_list(s.conc);
        o["max-model-len"] = seq.isl + seq.osl + 256;
        o["exp-name"] = exp_name;
        o["disagg"] = e.disagg;
        o["run-eval"] = false;
        append_optional(e, s, o, true);
        add(Scenario::kFixedSeqLen, true, std::move(o));
      }
    }
  }
  expand_timed_trace(e, add);
  for (const auto& a : e.agentic_coding) {
    for (const auto& s : a.search_space) {
      bool multinode = s.prefill.has_value();
      for (int64_t conc : s.conc) {
        json::object o = identity(e);
        std::string exp_name;
        if (!multinode) {
          add_parallelism(s, o);
          o["spec-decoding"] = s.spec_decoding;
          o["conc"] = conc;
          append_offload(s, o);
          o["total-cpu-dram-gb"] = dram_gb(e, a, runners, *s.tp * s.pp * s.pcp_size, nullptr);
          exp_name = fmt::format("{}_tp{}_conc{}_{}", e.model_prefix, *s.tp, conc, offload_tag(s));
          if (s.spec_decoding != "none") exp_name += "_spec-" + s.spec_decoding;
        } else {
          // One concurrency per allocation (MAX_MULTINODE_AGENTIC_CONCURRENCIES_PER_ALLOCATION=1).
          o["spec-decoding"] = s.spec_decoding;
          o["prefill"] = worker_json(*s.prefill);
          o["decode"] = worker_json(*s.decode);
          o["conc"] = conc_list({conc});
          append_offload(s, o);
          o["total-cpu-dram-gb"] = dram_gb(e, a, runners, 0, &*s.prefill);
          exp_name = fmt::format("{}_p{}_d{}_conc{}", e.model_prefix, worker_tag(*s.prefill),
                                 worker_tag(*s.decode), conc);
          if (s.kv_offloading != "none") exp_name += "_" + offload_tag(s);
        }
        o["duration"] = 3600;
        o["scenario-type"] = "agentic-coding";
        o["exp-name"] = exp_name;
        o["disagg"] = multinode && e.disagg;
        o["run-eval"] = false;
        append_optional(e, s, o, multinode);
        add(Scenario::kAgenticCoding, multinode, std::move(o));
      }
    }
  }
}

constexpr int64_t kMinEvalConc = 16;

bool is_eval_seq(const json::object& f) {
  return f.contains("isl") && f.at("isl").as_int64() == 8192 && f.at("osl").as_int64() == 1024;
}

}  // namespace

void mark_eval_rows(std::vector<RecipeRow>* rows) {
  // Single-node: group by (model, runner, framework, precision, isl, osl, spec-decoding, dp-attn);
  // mark rows at the max and the median (sorted_unique[len/2]) of the group's concs >= 16.
  std::map<std::string, std::vector<size_t>> single;
  // Multi-node: group rows identical except the conc and eval fields and exp-name; mark the row
  // holding the highest eligible conc, with eval-conc set to it.
  std::map<std::string, std::vector<size_t>> multi;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& row = (*rows)[i];
    if (row.scenario != Scenario::kFixedSeqLen || !is_eval_seq(row.fields)) continue;
    const auto& f = row.fields;
    if (!row.multinode) {
      if (f.at("conc").as_int64() < kMinEvalConc) continue;
      json::array key = {f.at("model"), f.at("runner"), f.at("framework"),     f.at("precision"),
                         f.at("isl"),   f.at("osl"),    f.at("spec-decoding"), f.at("dp-attn")};
      single[canonical_json(key)].push_back(i);
    } else {
      json::object key = f;
      for (const char* k :
           {"conc", "run-eval", "eval-only", "eval-conc", "eval-all-concs", "exp-name"})
        key.erase(k);
      multi[canonical_json(key)].push_back(i);
    }
  }
  for (const auto& [key, members] : single) {
    std::set<int64_t> concs;
    for (size_t i : members) concs.insert((*rows)[i].fields.at("conc").as_int64());
    std::vector<int64_t> sorted(concs.begin(), concs.end());
    int64_t max = sorted.back();
    int64_t median = sorted[sorted.size() / 2];
    for (size_t i : members) {
      int64_t c = (*rows)[i].fields.at("conc").as_int64();
      if (c == max || c == median) (*rows)[i].fields["run-eval"] = true;
    }
  }
  for (const auto& [key, members] : multi) {
    int64_t best_conc = 0;
    size_t best = 0;
    for (size_t i : members) {
      for (const auto& c : (*rows)[i].fields.at("conc").as_array()) {
        if (c.as_int64() >= kMinEvalConc && c.as_int64() > best_conc) {
          best_conc = c.as_int64();
          best = i;
        }
      }
    }
    if (best_conc == 0) continue;
    (*rows)[best].fields["run-eval"] = true;
    (*rows)[best].fields["eval-conc"] = best_conc;
  }
}

std::vector<RecipeRow> expand(const std::vector<ConfigEntry>& entries, const RunnersFile* runners) {
  std::vector<RecipeRow> rows;
  for (const auto& e : entries) expand_entry(e, runners, &rows);
  mark_eval_rows(&rows);
  for (auto& row : rows) row.fingerprint = recipe_fingerprint(row.fields);
  return rows;
}

}  // namespace ib::recipe
