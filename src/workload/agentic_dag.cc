#include "workload/agentic_dag.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace ib::workload::agentic {

namespace {

// AgentX's join epsilon: a turn at t joins what has ended by t + 1e-6 (spec §7).
constexpr double kEpsilon = 1e-6;
// A leading request with at most this many output tokens may be a title-generation preamble.
constexpr int64_t kPreambleMaxOut = 64;

double end_of(const TraceRequest& r) {
  return r.t + std::max(r.api_time, 0.0);
}

size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

int64_t ceil_blocks(int64_t tokens, int64_t block_size) {
  return tokens <= 0 ? 0 : (tokens + block_size - 1) / block_size;
}

/// A request of the list that detection runs on, with its index in that list (the top-level
/// list, or a subagent's inner list).
struct Indexed {
  int idx = 0;
  const TraceRequest* req = nullptr;
};

bool by_time(const Indexed& a, const Indexed& b) {
  return std::tie(a.req->t, a.idx) < std::tie(b.req->t, b.idx);
}
bool by_index(const Indexed& a, const Indexed& b) {
  return a.idx < b.idx;
}

// --- Flattened-agent detection (spec §2.2) ---------------------------------------------------

struct Fork {
  int parent = -1;   // chain forked from; -1: no shared prefix
  int at = -1;       // list index of the tail request it forked from
  size_t depth = 0;  // blocks shared with that tail
  double time = 0;   // t of the chain's first request
};

struct Chain {
  std::vector<Indexed> reqs;
  std::optional<Fork> fork;  // none only for the first chain
  int spliced_into = -1;     // set by phase 2 when this chain was a seam continuation
  // Phase-1 tail: the last hash-bearing request.
  const TraceRequest* tail = nullptr;
  int tail_idx = -1;
};

struct Detection {
  std::vector<Chain> chains;
  int main = 0;
  std::vector<int> workers;                     // live non-main chains by first (t, idx)
  std::map<int, std::pair<int, int>> group_of;  // worker chain -> (group, member)
};

int last_hashed_idx(const Chain& c) {
  for (auto it = c.reqs.rbegin(); it != c.reqs.rend(); ++it) {
    if (!it->req->hash_ids.empty()) return it->idx;
  }
  return -1;
}

/// Phase 1: greedy extension (the deepest same-model tail that is a complete prefix and has ended)
/// or fork (from the tail with the deepest common prefix).
void phase1(Detection& d, const std::vector<Indexed>& ordered, std::map<int, int>& chain_of,
            std::map<int, std::vector<int>>& forks_by_tail) {
  auto& chains = d.chains;
  auto append = [&](int c, const Indexed& r) {
    chains[c].reqs.push_back(r);
    chain_of[r.idx] = c;
    if (!r.req->hash_ids.empty()) {
      chains[c].tail = r.req;
      chains[c].tail_idx = r.idx;
    }
  };
  for (const Indexed& r : ordered) {
    const auto& h = r.req->hash_ids;
    if (chains.empty()) chains.emplace_back();
    if (h.empty() || (chains.size() == 1 && !chains[0].tail)) {
      // No hash evidence: rides the main chain, invisible to tails. The first hash-bearing
      // request joins the main chain too, so that leading empty rows stay with the main agent.
      append(0, r);
      continue;
    }
    int target = -1;
    size_t target_len = 0;
    for (size_t c = 0; c < chains.size(); ++c) {
      const TraceRequest* tail = chains[c].tail;
      if (!tail) continue;
      const size_t tl = tail->hash_ids.size();
      if (tl > h.size() || (target >= 0 && tl <= target_len)) continue;
      if (tail->model != r.req->model || end_of(*tail) > r.req->t + kEpsilon) continue;
      if (tail->hash_ids.back() != h[tl - 1]) continue;  // cheap rejection first
      if (!std::equal(tail->hash_ids.begin(), tail->hash_ids.end(), h.begin())) continue;
      target = static_cast<int>(c);
      target_len = tl;
    }
    if (target >= 0) {
      append(target, r);
      continue;
    }
    int parent = -1;
    std::pair<size_t, size_t> best{0, 0};  // (common prefix, tail length)
    for (size_t c = 0; c < chains.size(); ++c) {
      const TraceRequest* tail = chains[c].tail;
      if (!tail) continue;
      const size_t depth = common_prefix(tail->hash_ids, h);
      if (depth == 0) continue;
      const std::pair<size_t, size_t> key{depth, tail->hash_ids.size()};
      if (key > best) {
        parent = static_cast<int>(c);
        best = key;
      }
    }
    Fork f{parent, parent >= 0 ? chains[parent].tail_idx : -1, best.first, r.req->t};
    chains.emplace_back();
    chains.back().fork = f;
    const int c = static_cast<int>(chains.size()) - 1;
    append(c, r);
    if (f.parent >= 0) forks_by_tail[f.at].push_back(c);
  }
}

/// Phase 2: at each fork point still its chain's last hash-bearing request, the deepest eligible
/// fork (depth > 0, starts after the tail ended, same model, not a long-gap low-overlap resume)
/// is the same agent after a context edit (a compaction) and is spliced on; the other forks of
/// that point are re-keyed to the merged chain's new tail.
void phase2(Detection& d, std::map<int, int>& chain_of,
            std::map<int, std::vector<int>>& forks_by_tail,
            const std::map<int, const TraceRequest*>& req_at, const DagOptions& o) {
  auto& chains = d.chains;
  auto resolve = [&](int c) {
    while (chains[c].spliced_into >= 0) c = chains[c].spliced_into;
    return c;
  };
  std::priority_queue<int, std::vector<int>, std::greater<int>> keys;
  for (const auto& [at, forks] : forks_by_tail) keys.push(at);
  std::set<int> processed;
  while (!keys.empty()) {
    const int at = keys.top();
    keys.pop();
    if (!processed.insert(at).second) continue;
    const int owner = resolve(chain_of.at(at));
    if (last_hashed_idx(chains[owner]) != at) continue;  // the longer state went on: all spawns
    std::vector<int> registered;
    for (int c : forks_by_tail[at]) {
      if (chains[c].spliced_into < 0) registered.push_back(c);
    }
    const TraceRequest& tail = *req_at.at(at);
    const double tail_end = end_of(tail);
    const auto tail_blocks = static_cast<double>(tail.hash_ids.size());
    int elected = -1;
    for (int c : registered) {
      const Chain& ch = chains[c];
      if (!ch.fork || ch.fork->depth == 0) continue;
      const TraceRequest& first = *ch.reqs.front().req;
      if (tail_end > first.t + kEpsilon || first.model != tail.model) continue;
      if (tail_blocks > 0 && first.t - tail_end > o.seam_max_gap_s &&
          static_cast<double>(ch.fork->depth) / tail_blocks < o.seam_min_overlap) {
        continue;  // a distinct session reusing the base prefix hours later, not a compaction
      }
      if (elected < 0) {
        elected = c;
        continue;
      }
      const Fork& a = *ch.fork;
      const Fork& b = *chains[elected].fork;
      if (a.depth > b.depth || (a.depth == b.depth && a.time < b.time)) elected = c;
    }
    if (elected < 0) continue;
    Chain& target = chains[elected];
    for (const Indexed& r : target.reqs) chain_of[r.idx] = owner;
    chains[owner].reqs.insert(chains[owner].reqs.end(), target.reqs.begin(), target.reqs.end());
    target.spliced_into = owner;
    const int new_tail = last_hashed_idx(chains[owner]);
    if (new_tail < 0) continue;
    bool rekeyed = false;
    for (int c : registered) {
      Chain& ch = chains[c];
      if (c == elected || ch.spliced_into >= 0 || !ch.fork) continue;
      const size_t depth =
          common_prefix(req_at.at(new_tail)->hash_ids, ch.reqs.front().req->hash_ids);
      if (depth == 0) continue;
      ch.fork->at = new_tail;
      ch.fork->depth = depth;
      ch.fork->parent = owner;
      forks_by_tail[new_tail].push_back(c);
      rekeyed = true;
    }
    if (rekeyed) {
      processed.erase(new_tail);
      keys.push(new_tail);
    }
  }
  for (Chain& c : chains) {
    if (c.spliced_into < 0 && c.fork && c.fork->parent >= 0)
      c.fork->parent = resolve(c.fork->parent);
  }
}

/// Worker groups: workers forked from one point (parent chain, fork request) whose [t0, t1)
/// intervals overlap, at least `group_min` of them; numbered by earliest start, members by
/// (t0, idx).
void assign_worker_groups(Detection& d, int group_min) {
  if (group_min <= 0) return;
  struct Candidate {
    double t0, t1;
    int idx, chain;
  };
  std::map<std::pair<int, int>, std::vector<Candidate>> buckets;
  for (int c : d.workers) {
    const Chain& ch = d.chains[c];
    if (!ch.fork || ch.fork->depth == 0 || ch.fork->parent < 0 || ch.fork->at < 0) continue;
    double t1 = 0;
    for (const Indexed& r : ch.reqs) t1 = std::max(t1, end_of(*r.req));
    buckets[{ch.fork->parent, ch.fork->at}].push_back(
        {ch.reqs.front().req->t, t1, ch.reqs.front().idx, c});
  }
  std::vector<std::vector<Candidate>> groups;
  for (auto& [key, cands] : buckets) {
    std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.t0, a.idx) < std::tie(b.t0, b.idx);
    });
    // Sweeping by start, an interval overlaps the component so far iff one of it still runs
    // (touching intervals do not overlap).
    std::vector<Candidate> comp;
    double running_until = 0;
    for (const Candidate& c : cands) {
      if (!comp.empty() && running_until <= c.t0) {
        if (static_cast<int>(comp.size()) >= group_min) groups.push_back(comp);
        comp.clear();
      }
      running_until = comp.empty() ? c.t1 : std::max(running_until, c.t1);
      comp.push_back(c);
    }
    if (static_cast<int>(comp.size()) >= group_min) groups.push_back(comp);
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return std::tie(a.front().t0, a.front().idx) < std::tie(b.front().t0, b.front().idx);
  });
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t m = 0; m < groups[g].size(); ++m) {
      d.group_of[groups[g][m].chain] = {static_cast<int>(g), static_cast<int>(m)};
    }
  }
}

Detection detect_chains(std::vector<Indexed> reqs, const DagOptions& o) {
  Detection d;
  std::sort(reqs.begin(), reqs.end(), by_time);
  std::map<int, int> chain_of;
  std::map<int, std::vector<int>> forks_by_tail;
  std::map<int, const TraceRequest*> req_at;
  for (const Indexed& r : reqs) req_at[r.idx] = r.req;
  phase1(d, reqs, chain_of, forks_by_tail);
  phase2(d, chain_of, forks_by_tail, req_at, o);
  for (Chain& c : d.chains) std::sort(c.reqs.begin(), c.reqs.end(), by_time);
  int main = chain_of.at(reqs.front().idx);
  while (d.chains[main].spliced_into >= 0) main = d.chains[main].spliced_into;
  d.main = main;
  for (size_t c = 0; c < d.chains.size(); ++c) {
    if (d.chains[c].spliced_into < 0 && static_cast<int>(c) != main) {
      d.workers.push_back(static_cast<int>(c));
    }
  }
  std::sort(d.workers.begin(), d.workers.end(), [&](int a, int b) {
    return by_time(d.chains[a].reqs.front(), d.chains[b].reqs.front());
  });
  assign_worker_groups(d, o.worker_group_min);
  return d;
}

/// The earliest request is set aside (and re-attached to the main chain) when it shares no
/// prefix with any other request and is either small (a title-generation call) or uses blocks
/// found nowhere else: left in, it would found the main chain and demote the real agent.
std::optional<Indexed> peel_preamble(std::vector<Indexed>& reqs) {
  if (reqs.size() < 2) return std::nullopt;
  auto first_it = std::min_element(reqs.begin(), reqs.end(), by_time);
  const Indexed first = *first_it;
  const auto& h = first.req->hash_ids;
  if (h.empty()) return std::nullopt;
  for (const Indexed& r : reqs) {
    if (r.idx != first.idx && common_prefix(h, r.req->hash_ids) > 0) return std::nullopt;
  }
  if (first.req->out > kPreambleMaxOut) {
    const std::unordered_set<int64_t> mine(h.begin(), h.end());
    for (const Indexed& r : reqs) {
      if (r.idx == first.idx) continue;
      for (int64_t id : r.req->hash_ids) {
        if (mine.count(id)) return std::nullopt;
      }
    }
  }
  reqs.erase(first_it);
  return first;
}

/// One stream to emit from a list of requests: the main chain or a derived one.
struct ChainPlan {
  std::vector<Indexed> reqs;
  StreamKind kind = StreamKind::kFlat;
  std::string suffix;  // "fa:000", "aux:001", "aux:red:002", "wg:000_001"; empty for the main
  int64_t tool_tokens = 0, system_tokens = 0;
  int worker = -1;  // position among the workers
};

struct Split {
  std::vector<ChainPlan> chains;  // [0] is the main chain
  int groups = 0;
};

/// Splits one list (the top-level requests, or a subagent's) into its main chain and derived
/// chains (§2.2, §2.3). The main chain keeps list order at the top level (the root's turns are
/// the retained requests in list order) and time order inside subagents.
Split split_chains(std::vector<Indexed> reqs, bool top_level, int64_t tool, int64_t system,
                   int64_t block_size, const DagOptions& o) {
  Split out;
  ChainPlan main;
  main.kind = top_level ? StreamKind::kRoot : StreamKind::kSubagent;
  main.tool_tokens = tool;
  main.system_tokens = system;
  auto whole = [&]() {
    main.reqs = reqs;
    std::sort(main.reqs.begin(), main.reqs.end(), top_level ? by_index : by_time);
    out.chains.push_back(std::move(main));
    return std::move(out);
  };
  if (!o.split_flattened_agents || reqs.empty() || (top_level && reqs.size() < 2)) return whole();
  std::vector<Indexed> rest = reqs;
  const std::optional<Indexed> preamble = peel_preamble(rest);
  Detection d = detect_chains(rest, o);
  if (d.workers.empty()) return whole();

  const Chain& detected = d.chains[d.main];  // the yardstick, without the preamble
  const std::string& main_model = detected.reqs.front().req->model;
  int64_t main_peak_in = 0;
  for (const Indexed& r : detected.reqs) main_peak_in = std::max(main_peak_in, r.req->in);
  static const std::vector<int64_t> kNone;
  auto first_hashed = [](const std::vector<Indexed>& rs) -> const std::vector<int64_t>& {
    for (const Indexed& r : rs) {
      if (!r.req->hash_ids.empty()) return r.req->hash_ids;
    }
    return kNone;
  };
  const std::vector<int64_t>& main_first = first_hashed(detected.reqs);
  const auto declared = static_cast<size_t>(ceil_blocks(tool + system, block_size));

  main.reqs = detected.reqs;
  if (preamble) main.reqs.push_back(*preamble);
  std::sort(main.reqs.begin(), main.reqs.end(), top_level ? by_index : by_time);
  out.chains.push_back(std::move(main));
  std::set<int> groups;  // of the chains that stay worker-group members
  for (size_t n = 0; n < d.workers.size(); ++n) {
    const int c = d.workers[n];
    ChainPlan p;
    p.reqs = d.chains[c].reqs;
    p.worker = static_cast<int>(n);
    // The declared prefix is the chain's only when it provably starts with the same blocks;
    // a system role is never made up for a thread that did not record it.
    const std::vector<int64_t>& first = first_hashed(p.reqs);
    if (declared > 0 && first.size() >= declared && main_first.size() >= declared &&
        std::equal(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(declared),
                   main_first.begin())) {
      p.tool_tokens = tool;
      p.system_tokens = system;
    }
    const TraceRequest& r0 = *p.reqs.front().req;
    const auto size = static_cast<int64_t>(p.reqs.size());
    const int64_t small_in = std::max(
        o.aux_isl_floor, static_cast<int64_t>(o.aux_isl_ratio * static_cast<double>(main_peak_in)));
    const bool aux = size <= o.aux_max_requests &&
                     ((o.aux_cross_model && r0.model != main_model) || r0.in < small_in);
    const bool reduction =
        !aux && o.reduction_osl_max > 0 && size == 1 && r0.out > 0 &&
        r0.out < o.reduction_osl_max && r0.in >= o.aux_isl_floor &&
        static_cast<double>(r0.in) > o.reduction_ratio * static_cast<double>(r0.out);
    const auto group = d.group_of.find(c);
    if (aux) {
      p.kind = StreamKind::kAux;
      p.suffix = fmt::format("aux:{:03d}", n);
    } else if (reduction) {
      p.kind = StreamKind::kAuxReduction;
      p.suffix = fmt::format("aux:red:{:03d}", n);
    } else if (group != d.group_of.end()) {
      p.kind = StreamKind::kWorkerGroup;
      groups.insert(group->second.first);
      p.suffix = fmt::format("wg:{:03d}_{:03d}", group->second.first, group->second.second);
    } else {
      p.kind = StreamKind::kFlat;
      p.suffix = fmt::format("fa:{:03d}", n);
    }
    out.chains.push_back(std::move(p));
  }
  out.groups = static_cast<int>(groups.size());
  return out;
}

// --- The tree ---------------------------------------------------------------------------------

class Builder {
 public:
  Builder(const WekaTrace& trace, const DagOptions& o) : trace_(trace), o_(o) {}

  Expected<ReplayTree> build() {
    tree_.trace_id = trace_.id;
    tree_.block_size = trace_.block_size;
    tree_.global_scope = trace_.hash_id_scope == "global";
    collect_models();
    if (tree_.models.empty()) {
      return Error{fmt::format("{}: trace {} has no request", trace_.source, trace_.id)};
    }

    std::vector<Indexed> normals;
    std::vector<std::pair<int, const TraceSubagent*>> subagents;
    for (size_t i = 0; i < trace_.entries.size(); ++i) {
      const TraceEntry& e = trace_.entries[i];
      if (e.request) normals.push_back({static_cast<int>(i), &*e.request});
      if (e.subagent) subagents.emplace_back(static_cast<int>(i), e.subagent.get());
    }
    Split split = split_chains(normals, true, trace_.tool_tokens, trace_.system_tokens,
                               trace_.block_size, o_);
    tree_.summary.worker_groups += split.groups;
    const int root = add_stream(trace_.id, split.chains[0], -1, -1, 0);
    add_subagents(root, subagents, -1, "requests");
    add_flat_chains(root, split);

    for (Stream& s : tree_.streams) {
      if (s.branch >= 0 && !s.turns.empty()) {
        s.start_offset = std::max(0.0, s.turns.front().t - tree_.branches[s.branch].start);
      }
    }
    if (tree_.requests() == 0) {
      return Error{fmt::format(
          "{}: trace {} has no request to replay (every subagent comes before any parent turn)",
          trace_.source, trace_.id)};
    }
    if (auto st = check_prefixes(); !st.ok()) return st.error();
    add_barriers();
    add_theoretical_hits();
    summarize();
    return std::move(tree_);
  }

 private:
  /// Recorded models in first appearance (file order, depth first), the main model first.
  void collect_models() {
    std::optional<std::string> main;
    for (const TraceEntry& e : trace_.entries) {
      if (e.request) {
        main = e.request->model;
        break;
      }
    }
    for (const TraceEntry& e : trace_.entries) {
      if (main) break;
      if (!e.subagent) continue;
      for (const TraceEntry& inner : e.subagent->entries) {
        if (inner.request) {
          main = inner.request->model;
          break;
        }
      }
    }
    std::vector<std::string> seen;
    std::function<void(const std::vector<TraceEntry>&)> walk = [&](const auto& list) {
      for (const TraceEntry& e : list) {
        if (e.request && std::find(seen.begin(), seen.end(), e.request->model) == seen.end()) {
          seen.push_back(e.request->model);
        }
        if (e.subagent) walk(e.subagent->entries);
      }
    };
    walk(trace_.entries);
    if (seen.empty()) return;
    if (!main) main = seen.front();  // only nested subagents hold requests
    tree_.models.push_back(*main);
    for (const std::string& m : seen) {
      if (m != *main) tree_.models.push_back(m);
    }
    for (size_t i = 0; i < tree_.models.size(); ++i) {
      model_index_[tree_.models[i]] = static_cast<int>(i);
    }
  }

  /// Appends a stream; `outer` is the top-level index of the subagent entry holding the requests
  /// (-1: top-level requests, whose own index is the outer one).
  int add_stream(std::string id, const ChainPlan& plan, int branch, int outer, int scope) {
    Stream s;
    s.session_id = std::move(id);
    s.kind = plan.kind;
    s.branch = branch;
    s.tool_tokens = plan.tool_tokens;
    s.system_tokens = plan.system_tokens;
    for (const Indexed& r : plan.reqs) {
      Turn t;
      t.t = r.req->t;
      t.api_time = r.req->api_time;
      if (!s.turns.empty()) {
        const Turn& prev = s.turns.back();
        t.delay_s = std::max(0.0, t.t - (prev.t + prev.api_time));
      }
      t.think_time = r.req->think_time;
      t.in = r.req->in;
      t.out = r.req->out;
      t.hash_ids = r.req->hash_ids;
      t.model = model_index_.at(r.req->model);
      t.outer_idx = outer < 0 ? r.idx : outer;
      t.inner_idx = outer < 0 ? -1 : r.idx;
      s.turns.push_back(std::move(t));
    }
    tree_.streams.push_back(std::move(s));
    scope_.push_back(scope);
    return static_cast<int>(tree_.streams.size()) - 1;
  }

  /// SPAWN/JOIN branches of the subagent entries of one list (the top level, or a subagent's
  /// inner list) against the turns of `parent` (the root, or that subagent's main stream).
  /// `outer` as in add_stream; `path` names the list in notes ("requests[3].requests").
  void add_subagents(int parent, const std::vector<std::pair<int, const TraceSubagent*>>& entries,
                     int outer, const std::string& path) {
    // The parent's turns by their index in the list, for the anchor and join scans.
    struct At {
      int idx, turn;
      double t;
    };
    std::vector<At> at;
    for (size_t k = 0; k < tree_.streams[parent].turns.size(); ++k) {
      const Turn& t = tree_.streams[parent].turns[k];
      at.push_back({outer < 0 ? t.outer_idx : t.inner_idx, static_cast<int>(k), t.t});
    }
    std::sort(at.begin(), at.end(), [](const At& a, const At& b) { return a.idx < b.idx; });
    struct Group {
      int spawn;
      std::optional<int> join;
      std::vector<std::pair<int, const TraceSubagent*>> members;
    };
    std::vector<Group> groups;
    for (const auto& [idx, sa] : entries) {
      int spawn = -1;
      for (const At& a : at) {
        if (a.idx < idx) spawn = std::max(spawn, a.turn);
      }
      if (spawn < 0) {
        ++tree_.summary.dropped_subagents;
        tree_.notes.push_back(fmt::format("subagent {} ({}[{}]) dropped: no turn of {} before it",
                                          sa->agent_id, path, idx,
                                          tree_.streams[parent].session_id));
        continue;
      }
      const double end = sa->end();
      std::optional<int> join;
      for (const At& a : at) {
        if (a.idx > idx && a.t + kEpsilon >= end) {
          join = a.turn;
          break;
        }
      }
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& other) {
        return other.spawn == spawn && other.join == join;
      });
      if (g == groups.end()) g = groups.insert(groups.end(), Group{spawn, join, {}});
      g->members.emplace_back(idx, sa);
    }
    for (const Group& g : groups) {
      Branch b;
      b.id = fmt::format("{}:spawn:{}", trace_.id, g.members.front().second->agent_id);
      b.spawn = {parent, g.spawn};
      if (g.join) b.join = TurnRef{parent, *g.join};
      b.start = g.members.front().second->t;
      for (const auto& m : g.members) b.start = std::min(b.start, m.second->t);
      const int bi = add_branch(std::move(b));
      for (const auto& [idx, sa] : g.members) {
        add_subagent(bi, *sa, outer < 0 ? idx : outer, fmt::format("{}[{}]", path, idx));
      }
    }
  }

  int add_branch(Branch b) {
    const int bi = static_cast<int>(tree_.branches.size());
    tree_.streams[b.spawn.stream].turns[b.spawn.turn].spawns.push_back(bi);
    if (b.join) tree_.streams[b.join->stream].turns[b.join->turn].joins.push_back(bi);
    tree_.branches.push_back(std::move(b));
    return bi;
  }

  /// The streams of one subagent (its main chain and the chains found in it), all started by
  /// branch `bi`, and then its own subagents against its main stream.
  void add_subagent(int bi, const TraceSubagent& sa, int outer, const std::string& path) {
    std::vector<Indexed> inner;
    std::vector<std::pair<int, const TraceSubagent*>> nested;
    for (size_t i = 0; i < sa.entries.size(); ++i) {
      const TraceEntry& e = sa.entries[i];
      if (e.request) inner.push_back({static_cast<int>(i), &*e.request});
      if (e.subagent) nested.emplace_back(static_cast<int>(i), e.subagent.get());
    }
    Split split =
        split_chains(inner, false, sa.tool_tokens, sa.system_tokens, trace_.block_size, o_);
    tree_.summary.worker_groups += split.groups;
    const int scope = next_scope_++;
    const std::string base = fmt::format("{}::sa:{}", trace_.id, sa.agent_id);
    int main = -1;
    for (const ChainPlan& p : split.chains) {
      const int s = add_stream(p.suffix.empty() ? base : fmt::format("{}:{}", base, p.suffix), p,
                               bi, outer, scope);
      if (main < 0) main = s;
      tree_.branches[bi].streams.push_back(s);
    }
    add_subagents(main, nested, outer, path + ".requests");
  }

  /// Flattened agents of the top level: SPAWN from the last root turn before the chain's first
  /// request (else turn 0), JOIN on the first later root turn at or after the chain's end.
  void add_flat_chains(int root, const Split& split) {
    struct Group {
      int spawn;
      std::optional<int> join;
      std::vector<int> streams;
      int first_worker;
      double start;
    };
    std::vector<Group> groups;
    const std::vector<Turn>& turns = tree_.streams[root].turns;  // in list order
    for (size_t c = 1; c < split.chains.size(); ++c) {
      const ChainPlan& p = split.chains[c];
      const int first_idx = p.reqs.front().idx;
      int spawn = 0;
      for (size_t k = 0; k < turns.size(); ++k) {
        if (turns[k].outer_idx < first_idx) spawn = static_cast<int>(k);
      }
      double end = 0;
      for (const Indexed& r : p.reqs) end = std::max(end, end_of(*r.req));
      std::optional<int> join;
      for (size_t k = 0; k < turns.size(); ++k) {
        if (turns[k].outer_idx > first_idx && turns[k].t + kEpsilon >= end) {
          join = static_cast<int>(k);
          break;
        }
      }
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& other) {
        return other.spawn == spawn && other.join == join;
      });
      if (g == groups.end()) {
        g = groups.insert(groups.end(), Group{spawn, join, {}, p.worker, p.reqs.front().req->t});
      }
      g->start = std::min(g->start, p.reqs.front().req->t);
      g->streams.push_back(static_cast<int>(c));
    }
    std::vector<int> stream_of(split.chains.size(), -1);
    for (size_t c = 1; c < split.chains.size(); ++c) {
      const ChainPlan& p = split.chains[c];
      stream_of[c] = add_stream(fmt::format("{}::{}", trace_.id, p.suffix), p, -1, -1, 0);
    }
    for (const Group& g : groups) {
      Branch b;
      b.id = fmt::format("{}:flatspawn:{}", trace_.id, g.first_worker);
      b.flat = true;
      b.spawn = {root, g.spawn};
      if (g.join) b.join = TurnRef{root, *g.join};
      b.start = g.start;
      for (int c : g.streams) b.streams.push_back(stream_of[c]);
      const int bi = add_branch(std::move(b));
      for (int c : g.streams) tree_.streams[stream_of[c]].branch = bi;
    }
  }

  /// Turn 0 carries the declared prefix as ceil((tool + system) / block) blocks of its own hash
  /// ids, so it must have that many.
  Status check_prefixes() const {
    for (const Stream& s : tree_.streams) {
      if (s.turns.empty()) continue;
      const int64_t blocks = ceil_blocks(s.tool_tokens + s.system_tokens, tree_.block_size);
      const auto have = static_cast<int64_t>(s.turns.front().hash_ids.size());
      if (blocks > have) {
        return Error{fmt::format(
            "{}: session {}: the declared prefix (tool {} + system {} tokens) is {} blocks, but "
            "turn 0 has {} hash ids",
            trace_.source, s.session_id, s.tool_tokens, s.system_tokens, blocks, have)};
      }
    }
    return {};
  }

  /// Interval barriers (§2.1), per scope (the root and its flat chains; each subagent and its
  /// chains): a turn waits for the latest turn of each other stream that started before it and
  /// ended by its start. A wait is left out when it is implied: a stream's turns run one after
  /// the other, so "turn q' >= q of that stream has ended" implies q has, and a turn is only
  /// dispatched after its own waits, so what the previous turn of its stream (started no later)
  /// or another predecessor (started later) waited for has ended too.
  void add_barriers() {
    // Above this many streams in a scope (a trace split into one chain per request) only the
    // previous turn's waits are used to reduce: the cross-stream check is quadratic in streams.
    constexpr size_t kFullReductionMaxStreams = 256;
    std::map<int, std::vector<int>> scopes;
    for (size_t s = 0; s < tree_.streams.size(); ++s) {
      scopes[scope_[s]].push_back(static_cast<int>(s));
    }
    auto end = [](const Turn& t) { return t.t + std::max(t.api_time, 0.0); };
    for (const auto& scope_members : scopes) {
      // Not a structured binding: a lambda below uses it, which clang before 16 cannot capture.
      const auto& members = scope_members.second;
      const size_t m = members.size();
      if (m < 2) continue;
      // frontier[i][k][j]: the latest turn of members[j] ended by the start of turn k of
      // members[i] (by end, then start), or -1.
      std::vector<std::vector<std::vector<int>>> frontier(m);
      for (size_t i = 0; i < m; ++i) {
        const auto& turns = tree_.streams[members[i]].turns;
        frontier[i].assign(turns.size(), std::vector<int>(m, -1));
        for (size_t k = 0; k < turns.size(); ++k) {
          const double start = turns[k].t;
          for (size_t j = 0; j < m; ++j) {
            if (j == i) continue;
            const auto& other = tree_.streams[members[j]].turns;
            int best = -1;
            for (size_t q = 0; q < other.size(); ++q) {
              if (!(other[q].t < start && end(other[q]) <= start)) continue;
              if (best < 0 || std::make_pair(end(other[q]), other[q].t) >=
                                  std::make_pair(end(other[best]), other[best].t)) {
                best = static_cast<int>(q);
              }
            }
            frontier[i][k][j] = best;
          }
        }
      }
      for (size_t i = 0; i < m; ++i) {
        auto& turns = tree_.streams[members[i]].turns;
        for (size_t k = 0; k < turns.size(); ++k) {
          // Candidates latest start first; `known[j]`: a turn of members[j] known to have ended.
          std::vector<size_t> cands;
          for (size_t j = 0; j < m; ++j) {
            if (frontier[i][k][j] >= 0) cands.push_back(j);
          }
          auto start_of = [&](size_t j) {
            return tree_.streams[members[j]].turns[frontier[i][k][j]].t;
          };
          std::stable_sort(cands.begin(), cands.end(),
                           [&](size_t a, size_t b) { return start_of(a) > start_of(b); });
          std::vector<int> known(m, -1);
          if (k > 0 && turns[k - 1].t <= turns[k].t) known = frontier[i][k - 1];
          for (size_t c = 0; c < cands.size();) {
            size_t e = c;  // [c, e): candidates with the same start (not ordered among them)
            while (e < cands.size() && start_of(cands[e]) == start_of(cands[c])) ++e;
            for (size_t x = c; x < e; ++x) {
              const size_t j = cands[x];
              if (known[j] < frontier[i][k][j])
                turns[k].after.push_back({members[j], frontier[i][k][j]});
            }
            if (m <= kFullReductionMaxStreams) {
              for (size_t x = c; x < e; ++x) {
                const auto& theirs = frontier[cands[x]][frontier[i][k][cands[x]]];
                for (size_t j = 0; j < m; ++j) known[j] = std::max(known[j], theirs[j]);
              }
            }
            c = e;
          }
          std::sort(turns[k].after.begin(), turns[k].after.end(),
                    [](const TurnRef& a, const TurnRef& b) {
                      return std::tie(a.stream, a.turn) < std::tie(b.stream, b.turn);
                    });
        }
      }
    }
  }

  /// The theoretical prefix-cache hit (§5): every turn in (t, outer, stream, k) order against one
  /// seen-set of hash ids.
  void add_theoretical_hits() {
    std::vector<TurnRef> order;
    for (size_t s = 0; s < tree_.streams.size(); ++s) {
      for (size_t k = 0; k < tree_.streams[s].turns.size(); ++k) {
        order.push_back({static_cast<int>(s), static_cast<int>(k)});
      }
    }
    auto turn = [&](const TurnRef& r) -> Turn& { return tree_.streams[r.stream].turns[r.turn]; };
    std::sort(order.begin(), order.end(), [&](const TurnRef& a, const TurnRef& b) {
      return std::tie(turn(a).t, turn(a).outer_idx, a.stream, a.turn) <
             std::tie(turn(b).t, turn(b).outer_idx, b.stream, b.turn);
    });
    std::unordered_set<int64_t> seen;
    for (const TurnRef& r : order) {
      Turn& t = turn(r);
      int64_t hit = 0;
      while (hit < static_cast<int64_t>(t.hash_ids.size()) && seen.count(t.hash_ids[hit])) ++hit;
      t.theoretical_hit_blocks = hit;
      seen.insert(t.hash_ids.begin(), t.hash_ids.end());
    }
  }

  void summarize() {
    DagSummary& s = tree_.summary;
    bool any = false;
    for (const Stream& st : tree_.streams) {
      switch (st.kind) {
        case StreamKind::kRoot:
          ++s.root;
          break;
        case StreamKind::kSubagent:
          ++s.subagent;
          break;
        case StreamKind::kFlat:
          ++s.flat;
          break;
        case StreamKind::kAux:
          ++s.aux;
          break;
        case StreamKind::kAuxReduction:
          ++s.aux_reduction;
          break;
        case StreamKind::kWorkerGroup:
          ++s.worker_group;
          break;
      }
      for (const Turn& t : st.turns) {
        s.barriers += static_cast<int64_t>(t.after.size());
        tree_.start_t = any ? std::min(tree_.start_t, t.t) : t.t;
        tree_.end_t = any ? std::max(tree_.end_t, t.t) : t.t;
        any = true;
      }
    }
    for (const Branch& b : tree_.branches) {
      ++s.branches;
      s.background_branches += b.background();
      s.flat_branches += b.flat;
    }
  }

  const WekaTrace& trace_;
  const DagOptions& o_;
  ReplayTree tree_;
  std::unordered_map<std::string, int> model_index_;
  std::vector<int> scope_;  // per stream: 0 for the root and its flat chains, else a subagent's
  int next_scope_ = 1;
};

}  // namespace

std::string_view to_string(StreamKind kind) {
  switch (kind) {
    case StreamKind::kRoot:
      return "root";
    case StreamKind::kSubagent:
      return "subagent";
    case StreamKind::kFlat:
      return "flat";
    case StreamKind::kAux:
      return "aux";
    case StreamKind::kAuxReduction:
      return "aux_reduction";
    case StreamKind::kWorkerGroup:
      return "worker_group";
  }
  return "?";
}

int64_t ReplayTree::requests() const {
  int64_t n = 0;
  for (const Stream& s : streams) n += static_cast<int64_t>(s.turns.size());
  return n;
}

Expected<ReplayTree> build_replay_tree(const WekaTrace& trace, const DagOptions& options) {
  return Builder(trace, options).build();
}

std::vector<std::string> rewrite_models(const ReplayTree& tree,
                                        const std::vector<std::string>& served) {
  std::vector<std::string> out;
  out.reserve(tree.models.size());
  for (size_t i = 0; i < tree.models.size(); ++i) out.push_back(served[i % served.size()]);
  return out;
}

}  // namespace ib::workload::agentic
