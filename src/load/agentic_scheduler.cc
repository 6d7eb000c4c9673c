#include "load/agentic_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/sha256.h"

namespace ib::load::agentic {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

std::string_view to_string(ReplayPhase phase) {
  switch (phase) {
    case ReplayPhase::kPrimer:
      return "primer";
    case ReplayPhase::kPressure:
      return "pressure";
    case ReplayPhase::kProfiling:
      return "profiling";
  }
  return "?";
}

double ReplayScheduler::sample_t_star(const ReplayTree& tree, uint64_t seed, int lane,
                                      double min_ratio, double max_ratio) {
  const std::string hex = sha256_hex(fmt::format("{}:{}:{}", seed, tree.trace_id, lane));
  const uint64_t x = std::stoull(hex.substr(0, 16), nullptr, 16);
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
  const double r = min_ratio + u * (max_ratio - min_ratio);
  return tree.start_t + r * (tree.end_t - tree.start_t);
}

ReplayScheduler::ReplayScheduler(std::vector<const ReplayTree*> pool, ReplayOptions options)
    : pool_(std::move(pool)),
      options_(options),
      passes_(pool_.size(), 0),
      lanes_(static_cast<size_t>(std::max(1, options.concurrency))) {
  assert(!pool_.empty());
  if (!(options_.time_scale > 0)) options_.time_scale = 1;
}

const TreeInstance& ReplayScheduler::instance(int64_t id) const {
  return instances_[static_cast<size_t>(id)];
}

const ReplayTree& ReplayScheduler::tree_of(int64_t instance) const {
  return *trees_[static_cast<size_t>(instance)].tree;
}

ReplayScheduler::Tree& ReplayScheduler::mint(int lane, double now, bool at_t_star) {
  const size_t n = pool_.size();
  for (size_t attempt = 0; attempt <= n; ++attempt) {
    const bool try_t_star = at_t_star && attempt < n;
    const auto idx = static_cast<size_t>(next_root_) % n;
    ++next_root_;
    Tree t;
    t.id = static_cast<int64_t>(trees_.size());
    t.lane = lane;
    t.tree = pool_[idx];
    t.streams.resize(t.tree->streams.size());
    t.branch_live.assign(t.tree->branches.size(), -1);
    t.idle_since = now;
    TreeInstance inst;
    inst.id = t.id;
    inst.tree = static_cast<int>(idx);
    inst.lane = lane;
    if (try_t_star) {
      const double ts =
          sample_t_star(*t.tree, options_.seed, lane, options_.t_star_min, options_.t_star_max);
      if (!snapshot(t, ts, now)) {
        notes_.push_back(fmt::format(
            "lane {}: trace {} has nothing to send after t* = {:.1f} s; the next trace was drawn",
            lane, t.tree->trace_id, ts));
        continue;
      }
      inst.from_t_star = true;
      inst.t_star = ts;
    } else {
      start_turn0(t, 0, now);
    }
    inst.recycle_pass = passes_[idx]++;
    trees_.push_back(std::move(t));
    instances_.push_back(inst);
    lanes_[static_cast<size_t>(lane)].tree = trees_.back().id;
    Tree& minted = trees_.back();
    if (minted.streams[0].done) check_tree_done(minted, now);
    return minted;
  }
  // Unreachable: the last attempt starts at turn 0, which always succeeds.
  assert(false);
  return trees_.back();
}

void ReplayScheduler::start_turn0(Tree& tree, int stream, double at) {
  StreamState& st = tree.streams[static_cast<size_t>(stream)];
  st.spawned = true;
  st.next = 0;
  if (tree.tree->streams[static_cast<size_t>(stream)].turns.empty()) {
    st.done = true;
    return;
  }
  st.has_timer = true;
  st.ready_at = at;
}

bool ReplayScheduler::snapshot(Tree& tree, double t_star, double /*now*/) {
  const ReplayTree& rt = *tree.tree;
  auto first_at_or_after = [&](int s) {
    const auto& turns = rt.streams[static_cast<size_t>(s)].turns;
    int k = 0;
    while (k < static_cast<int>(turns.size()) && turns[static_cast<size_t>(k)].t < t_star) ++k;
    return k;
  };
  auto seed_stream = [&](int s) {
    StreamState& st = tree.streams[static_cast<size_t>(s)];
    st.spawned = true;
    st.next = first_at_or_after(s);
    const auto& turns = rt.streams[static_cast<size_t>(s)].turns;
    if (st.next >= static_cast<int>(turns.size())) {
      st.done = true;
      return;
    }
    st.has_timer = true;
    st.from_snapshot = true;
    st.ready_at = kInf;  // held until the phase that sends it starts
    st.snapshot_offset = scaled(std::max(0.0, turns[static_cast<size_t>(st.next)].t - t_star));
  };
  seed_stream(0);
  // Branches nested in subagents depend on their parent stream: repeat until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < rt.branches.size(); ++b) {
      if (tree.branch_live[b] != -1) continue;
      const auto& br = rt.branches[b];
      const StreamState& parent = tree.streams[static_cast<size_t>(br.spawn.stream)];
      if (!parent.spawned) continue;
      // Included when its spawning turn lies before t* (the spawning turn, when it runs later,
      // starts the branch itself).
      if (br.spawn.turn >= parent.next) continue;
      tree.branch_live[b] = 0;
      for (int s : br.streams) {
        seed_stream(s);
        if (!tree.streams[static_cast<size_t>(s)].done) ++tree.branch_live[b];
      }
      changed = true;
    }
  }
  for (const auto& st : tree.streams) {
    if (st.spawned && !st.done) return true;
  }
  return false;
}

void ReplayScheduler::start(double now) {
  last_now_ = now;
  stage_ = Stage::kPrimers;
  warmup_deadline_ = options_.warmup_grace_s > 0 ? now + scaled(options_.warmup_grace_s) : kInf;
  hard_stop_ = warmup_deadline_;
  struct Primer {
    int64_t tree;
    int stream, turn;
    double lead;
  };
  std::vector<Primer> primers;
  double max_lead = 0;
  for (size_t l = 0; l < lanes_.size(); ++l) {
    Tree& t = mint(static_cast<int>(l), now, true);
    const double t_star = instances_[static_cast<size_t>(t.id)].t_star;
    for (size_t s = 0; s < t.streams.size(); ++s) {
      const StreamState& st = t.streams[s];
      if (!st.spawned || st.done || st.next < 1) continue;
      const auto& turn = t.tree->streams[s].turns[static_cast<size_t>(st.next - 1)];
      double lead = std::max(0.0, t_star - turn.t);
      if (options_.trace_idle_cap_s > 0) lead = std::min(lead, options_.trace_idle_cap_s);
      max_lead = std::max(max_lead, lead);
      primers.push_back({t.id, static_cast<int>(s), st.next - 1, lead});
    }
  }
  for (const auto& p : primers) {
    Dispatch d;
    d.phase = ReplayPhase::kPrimer;
    d.lane = trees_[static_cast<size_t>(p.tree)].lane;
    d.instance = p.tree;
    d.stream = p.stream;
    d.turn = p.turn;
    d.max_tokens = 1;
    d.at = options_.burst_phase_starts ? now : now + scaled(max_lead - p.lead);
    primers_.push_back(d);
  }
  std::stable_sort(primers_.begin(), primers_.end(),
                   [](const Dispatch& a, const Dispatch& b) { return a.at < b.at; });
  advance(now);
}

Dispatch ReplayScheduler::make_dispatch(Tree& tree, int stream, int turn, ReplayPhase phase,
                                        double now) {
  Dispatch d;
  d.id = next_id_++;
  d.phase = phase;
  d.lane = tree.lane;
  d.instance = tree.id;
  d.stream = stream;
  d.turn = turn;
  const auto& rec =
      tree.tree->streams[static_cast<size_t>(stream)].turns[static_cast<size_t>(turn)];
  d.max_tokens = phase == ReplayPhase::kProfiling ? std::max<int64_t>(1, rec.out) : 1;
  d.at = now;
  InFlight f;
  f.tree = tree.id;
  f.stream = stream;
  f.turn = turn;
  f.phase = phase;
  f.open = true;
  in_flight_.push_back(f);
  ++in_flight_count_;
  ++tree.in_flight;
  if (phase != ReplayPhase::kPrimer) tree.streams[static_cast<size_t>(stream)].in_flight = true;
  if (phase == ReplayPhase::kProfiling) {
    ++dispatched_;
  } else {
    ++warmup_dispatched_;
  }
  return d;
}

bool ReplayScheduler::turn_done(const Tree& tree, int stream, int turn) const {
  const StreamState& st = tree.streams[static_cast<size_t>(stream)];
  return st.done || st.next > turn;
}

bool ReplayScheduler::runnable(const Tree& tree, int stream, double now, bool ignore_timer) const {
  const StreamState& st = tree.streams[static_cast<size_t>(stream)];
  if (!st.spawned || st.done || st.in_flight || !st.has_timer) return false;
  if (!ignore_timer && st.ready_at > now) return false;
  const auto& turn =
      tree.tree->streams[static_cast<size_t>(stream)].turns[static_cast<size_t>(st.next)];
  for (int b : turn.joins) {
    if (tree.branch_live[static_cast<size_t>(b)] > 0) return false;
  }
  if (!tree.ignore_barriers) {
    for (const auto& ref : turn.after) {
      if (!turn_done(tree, ref.stream, ref.turn)) return false;
    }
  }
  return true;
}

std::vector<Dispatch> ReplayScheduler::poll(double now) {
  std::vector<Dispatch> out;
  advance(now);
  if (stage_ == Stage::kPrimers) {
    size_t sent = 0;
    while (sent < primers_.size() && primers_[sent].at <= now) {
      Dispatch p = primers_[sent++];
      Tree& t = trees_[static_cast<size_t>(p.instance)];
      Dispatch d = make_dispatch(t, p.stream, p.turn, ReplayPhase::kPrimer, now);
      d.at = p.at;
      out.push_back(d);
    }
    primers_.erase(primers_.begin(), primers_.begin() + static_cast<std::ptrdiff_t>(sent));
  } else if (stage_ == Stage::kPressure || stage_ == Stage::kProfiling) {
    const bool pressure = stage_ == Stage::kPressure;
    for (auto& lane : lanes_) {
      if (lane.tree < 0) continue;
      Tree& t = trees_[static_cast<size_t>(lane.tree)];
      for (size_t s = 0; s < t.streams.size(); ++s) {
        if (pressure && lane.pressure_issued >= options_.warmup_requests_per_lane) break;
        if (!runnable(t, static_cast<int>(s), now, pressure)) continue;
        const int turn = t.streams[s].next;
        out.push_back(make_dispatch(t, static_cast<int>(s), turn,
                                    pressure ? ReplayPhase::kPressure : ReplayPhase::kProfiling,
                                    now));
        if (pressure) ++lane.pressure_issued;
      }
    }
    if (pressure) advance(now);  // every lane may have issued its share
  }
  return out;
}

void ReplayScheduler::spawn_branches(Tree& tree, int stream, int turn, double now) {
  const auto& rec =
      tree.tree->streams[static_cast<size_t>(stream)].turns[static_cast<size_t>(turn)];
  for (int b : rec.spawns) {
    auto& live = tree.branch_live[static_cast<size_t>(b)];
    if (live != -1) continue;  // already running (seeded at t*)
    live = 0;
    for (int s : tree.tree->branches[static_cast<size_t>(b)].streams) {
      const auto& child = tree.tree->streams[static_cast<size_t>(s)];
      start_turn0(tree, s, now + scaled(child.start_offset));
      if (tree.streams[static_cast<size_t>(s)].done) {
        if (stage_ == Stage::kProfiling) ++sessions_done_;
      } else {
        ++live;
      }
    }
  }
}

void ReplayScheduler::end_stream(Tree& tree, int stream, double /*now*/) {
  StreamState& st = tree.streams[static_cast<size_t>(stream)];
  if (st.done) return;
  st.done = true;
  st.has_timer = false;
  const int b = tree.tree->streams[static_cast<size_t>(stream)].branch;
  if (b >= 0 && tree.branch_live[static_cast<size_t>(b)] > 0)
    --tree.branch_live[static_cast<size_t>(b)];
  if (stage_ == Stage::kProfiling || stage_ == Stage::kDraining) ++sessions_done_;
}

void ReplayScheduler::complete(int64_t id, double now, Outcome outcome) {
  if (id < 0 || id >= static_cast<int64_t>(in_flight_.size())) return;
  InFlight& f = in_flight_[static_cast<size_t>(id)];
  if (!f.open) return;
  f.open = false;
  --in_flight_count_;
  Tree& tree = trees_[static_cast<size_t>(f.tree)];
  --tree.in_flight;
  if (tree.in_flight == 0) tree.idle_since = now;
  if (f.phase == ReplayPhase::kPrimer) {
    if (outcome != Outcome::kOk && f.stream == 0 && abort_reason_.empty()) {
      root_primer_failed_ = true;
      abort_reason_ = fmt::format("the warmup primer of trace {} (lane {}) failed",
                                  tree.tree->trace_id, tree.lane);
    }
  } else {
    if (f.phase == ReplayPhase::kProfiling) ++completed_;
    StreamState& st = tree.streams[static_cast<size_t>(f.stream)];
    st.in_flight = false;
    st.last_return = now;
    const auto& turns = tree.tree->streams[static_cast<size_t>(f.stream)].turns;
    const bool last = f.turn + 1 >= static_cast<int>(turns.size());
    if (outcome == Outcome::kContextOverflow && !last) {
      st.next = f.turn + 1;
      end_stream(tree, f.stream, now);
    } else {
      st.next = f.turn + 1;
      if (outcome != Outcome::kCancelled) spawn_branches(tree, f.stream, f.turn, now);
      if (last) {
        end_stream(tree, f.stream, now);
      } else {
        const auto& next = turns[static_cast<size_t>(st.next)];
        st.has_timer = true;
        st.from_snapshot = false;
        st.ready_at = now + scaled(options_.use_think_time_only ? next.think_time : next.delay_s);
      }
    }
    check_tree_done(tree, now);
  }
  advance(now);
}

void ReplayScheduler::check_tree_done(Tree& tree, double now) {
  if (tree.done || tree.in_flight > 0) return;
  for (const auto& st : tree.streams) {
    if (st.spawned && !st.done) return;
  }
  tree.done = true;
  ++trees_done_;
  Lane& lane = lanes_[static_cast<size_t>(tree.lane)];
  if (lane.tree != tree.id) return;
  lane.tree = -1;
  if (stage_ == Stage::kPressure || stage_ == Stage::kProfiling) {
    mint(tree.lane, now, false);  // recycle: the next trace, from turn 0
  }
}

void ReplayScheduler::enter_profiling(double now) {
  stage_ = Stage::kProfiling;
  profile_start_ = now;
  profile_end_ = now + scaled(options_.duration_s);
  hard_stop_ = profile_end_ + scaled(options_.grace_s);
  const double cap = options_.trace_idle_cap_s > 0 ? scaled(options_.trace_idle_cap_s) : kInf;
  for (auto& lane : lanes_) {
    if (lane.tree < 0) continue;
    Tree& t = trees_[static_cast<size_t>(lane.tree)];
    for (auto& st : t.streams) {
      if (!st.spawned || st.done || st.in_flight || !st.has_timer) continue;
      if (st.from_snapshot) {
        st.ready_at = now + st.snapshot_offset;
        st.from_snapshot = false;
      } else {
        st.ready_at = now + std::min(std::max(0.0, st.ready_at - now), cap);
      }
    }
    t.idle_since = now;
  }
}

void ReplayScheduler::apply_tree_idle_cap(Tree& tree, double now) {
  if (options_.trace_idle_cap_s <= 0 || tree.in_flight > 0 || tree.done) return;
  double earliest = kInf;
  for (const auto& st : tree.streams) {
    if (st.spawned && !st.done && !st.in_flight && st.has_timer && st.ready_at > now) {
      earliest = std::min(earliest, st.ready_at);
    }
  }
  if (!std::isfinite(earliest)) return;
  const double fire =
      std::max(now, std::max(tree.idle_since, profile_start_) + scaled(options_.trace_idle_cap_s));
  if (earliest <= fire) return;
  const double shift = earliest - fire;
  for (auto& st : tree.streams) {
    if (st.spawned && !st.done && !st.in_flight && st.has_timer && st.ready_at > now) {
      st.ready_at -= shift;
    }
  }
}

void ReplayScheduler::apply_system_idle_cap(double now) {
  if (in_flight_count_ > 0) return;
  double earliest = kInf;
  for (const auto& lane : lanes_) {
    if (lane.tree < 0) continue;
    const Tree& t = trees_[static_cast<size_t>(lane.tree)];
    for (size_t s = 0; s < t.streams.size(); ++s) {
      if (runnable(t, static_cast<int>(s), now, false)) return;
      const auto& st = t.streams[s];
      if (st.spawned && !st.done && !st.in_flight && st.has_timer && st.ready_at > now) {
        earliest = std::min(earliest, st.ready_at);
      }
    }
  }
  const double cap = scaled(options_.system_idle_cap_s);
  if (!std::isfinite(earliest) || earliest - now <= cap) return;
  const double shift = earliest - now - cap;
  for (const auto& lane : lanes_) {
    if (lane.tree < 0) continue;
    Tree& t = trees_[static_cast<size_t>(lane.tree)];
    for (auto& st : t.streams) {
      if (st.spawned && !st.done && !st.in_flight && st.has_timer && st.ready_at > now) {
        st.ready_at -= shift;
      }
    }
  }
}

// A tree with nothing in flight, nothing runnable and no timer pending can only be waiting on a
// barrier that will never clear (a predecessor in a stream that cannot start). Release its
// barriers; if that is not enough, end it.
void ReplayScheduler::unstick(Tree& tree, double now) {
  if (tree.done || tree.in_flight > 0) return;
  const bool pressure = stage_ == Stage::kPressure;
  auto stuck = [&] {
    for (size_t s = 0; s < tree.streams.size(); ++s) {
      const auto& st = tree.streams[s];
      if (!st.spawned || st.done) continue;
      if (runnable(tree, static_cast<int>(s), now, pressure)) return false;
      if (!pressure && st.has_timer && st.ready_at > now) return false;
    }
    return true;
  };
  if (!stuck()) return;
  if (!tree.ignore_barriers) {
    tree.ignore_barriers = true;
    notes_.push_back(
        fmt::format("trace {} (lane {}): interval barriers released (nothing could run)",
                    tree.tree->trace_id, tree.lane));
    if (!stuck()) return;
  }
  notes_.push_back(
      fmt::format("trace {} (lane {}): ended with sessions left (joins never released)",
                  tree.tree->trace_id, tree.lane));
  for (size_t s = 0; s < tree.streams.size(); ++s) {
    if (tree.streams[s].spawned) end_stream(tree, static_cast<int>(s), now);
  }
  check_tree_done(tree, now);
}

void ReplayScheduler::advance(double now) {
  last_now_ = std::max(last_now_, now);
  for (bool again = true; again;) {
    again = false;
    switch (stage_) {
      case Stage::kIdle:
      case Stage::kDone:
        return;
      case Stage::kPrimers:
        if (now >= warmup_deadline_) {
          abort_reason_ = fmt::format("warmup did not end within {} s", options_.warmup_grace_s);
          stage_ = Stage::kDone;
          return;
        }
        if (primers_.empty() && in_flight_count_ == 0) {
          if (root_primer_failed_) {
            stage_ = Stage::kDone;
            return;
          }
          if (options_.warmup_requests_per_lane > 0) {
            stage_ = Stage::kPressure;
          } else {
            enter_profiling(now);
          }
          again = true;
        }
        break;
      case Stage::kPressure: {
        if (now >= warmup_deadline_) {
          abort_reason_ = fmt::format("warmup did not end within {} s", options_.warmup_grace_s);
          stage_ = Stage::kDone;
          return;
        }
        for (auto& lane : lanes_) {
          if (lane.tree >= 0) unstick(trees_[static_cast<size_t>(lane.tree)], now);
        }
        bool issuing = false;
        for (const auto& lane : lanes_) {
          if (lane.pressure_issued >= options_.warmup_requests_per_lane || lane.tree < 0) continue;
          const Tree& t = trees_[static_cast<size_t>(lane.tree)];
          if (t.in_flight > 0) {
            issuing = true;
            break;
          }
          for (size_t s = 0; s < t.streams.size() && !issuing; ++s) {
            issuing = runnable(t, static_cast<int>(s), now, true);
          }
        }
        if (!issuing) {
          stage_ = Stage::kDrainPressure;
          again = true;
        }
        break;
      }
      case Stage::kDrainPressure:
        if (in_flight_count_ == 0) {
          enter_profiling(now);
          again = true;
        }
        break;
      case Stage::kProfiling:
        if (now >= profile_end_) {
          stage_ = Stage::kDraining;
          again = true;
          break;
        }
        for (auto& lane : lanes_) {
          if (lane.tree < 0) continue;
          Tree& t = trees_[static_cast<size_t>(lane.tree)];
          unstick(t, now);
          if (lane.tree >= 0) apply_tree_idle_cap(trees_[static_cast<size_t>(lane.tree)], now);
        }
        apply_system_idle_cap(now);
        break;
      case Stage::kDraining:
        if (in_flight_count_ == 0 || now >= hard_stop_) stage_ = Stage::kDone;
        return;
    }
  }
}

double ReplayScheduler::next_wake() const {
  switch (stage_) {
    case Stage::kPrimers: {
      double w = warmup_deadline_;
      if (!primers_.empty()) w = std::min(w, primers_.front().at);
      return w;
    }
    case Stage::kPressure:
    case Stage::kDrainPressure:
      return warmup_deadline_;
    case Stage::kProfiling: {
      double w = profile_end_;
      for (const auto& lane : lanes_) {
        if (lane.tree < 0) continue;
        const Tree& t = trees_[static_cast<size_t>(lane.tree)];
        for (const auto& st : t.streams) {
          if (st.spawned && !st.done && !st.in_flight && st.has_timer && st.ready_at > last_now_) {
            w = std::min(w, st.ready_at);
          }
        }
      }
      return w;
    }
    case Stage::kDraining:
      return hard_stop_;
    case Stage::kIdle:
    case Stage::kDone:
      return kInf;
  }
  return kInf;
}

bool ReplayScheduler::finished() const {
  return stage_ == Stage::kDone;
}

ReplayProgress ReplayScheduler::progress(double now) const {
  ReplayProgress p;
  p.warmup = stage_ == Stage::kPrimers || stage_ == Stage::kPressure ||
             stage_ == Stage::kDrainPressure || stage_ == Stage::kIdle;
  for (const auto& lane : lanes_) {
    if (lane.tree >= 0 && trees_[static_cast<size_t>(lane.tree)].in_flight > 0) ++p.lanes_busy;
  }
  p.in_flight = in_flight_count_;
  p.dispatched = dispatched_;
  p.completed = completed_;
  p.warmup_dispatched = warmup_dispatched_;
  p.sessions_done = sessions_done_;
  p.trees_done = trees_done_;
  p.duration_s = scaled(options_.duration_s);
  if (std::isfinite(profile_start_)) p.elapsed_s = std::max(0.0, now - profile_start_);
  return p;
}

}  // namespace ib::load::agentic
