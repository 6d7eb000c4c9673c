#include "tune/search_run.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "core/interrupt.h"
#include "tune/search.h"

namespace ib::tune {

std::map<std::string, int64_t> SearchStage::operating_conc() const {
  std::map<std::string, int64_t> out;
  for (const auto& s : sides) {
    if (s.lo > 0) out[s.config_key] = s.lo;
  }
  return out;
}

namespace {

// Which SLO a point missed, for the report.
std::string missed(const Objective& objective, const metrics::PointResult& p) {
  if (!usable(p)) return p.status_text();
  std::vector<std::string> out;
  for (const auto& s : objective.slos) {
    const double v = point_metric(p, s.metric);
    if (!s.meets(v)) {
      out.push_back(fmt::format("{} {:.4g} {} {}", s.metric, v, s.upper ? ">" : "<", s.bound));
    }
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

Expected<SearchStage> search_operating_points(
    const recipe::ConfigEntry& base, const std::vector<const Candidate*>& candidates,
    const Objective& objective, const SearchOptions& o, BlockRunner& runner,
    const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchStage stage;
  std::vector<const recipe::ConfigEntry*> entries{&base};
  for (const Candidate* c : candidates) entries.push_back(&c->entry);
  const int64_t start = std::clamp(o.start, o.min, o.max);
  std::vector<SloSearch> searches;
  for (const auto* e : entries) {
    searches.emplace_back(start, o.min, o.max, o.tolerance);
    SideSearch s;
    s.config_key = e->key;
    stage.sides.push_back(std::move(s));
  }
  sweep::SweepOptions so = runner.sweep();
  so.workload = o.workload;
  for (int step = 0;; ++step) {
    if (interrupt_requested()) {
      stage.interrupted = true;
      break;
    }
    std::vector<sweep::ConfigPlan> configs;
    std::vector<size_t> sides;
    std::vector<int64_t> concs;
    for (size_t i = 0; i < searches.size(); ++i) {
      auto next = searches[i].next();
      if (!next) continue;
      auto cfg = side_config(*entries[i], o.row, {*next}, so, false, 0);
      if (!cfg) return cfg.error();
      configs.push_back(std::move(*cfg));
      sides.push_back(i);
      concs.push_back(*next);
    }
    if (configs.empty()) break;
    if (progress) {
      progress(fmt::format("stage 2/3 search: step {}: baseline{} at concurrency {}", step + 1,
                           sides.front() == 0 ? "" : " (done)", fmt::join(concs, ", ")));
    }
    auto block = runner.run("search", fmt::format("search-{}", step), configs);
    if (!block) return block.error();
    stage.runs.push_back(block->run);
    stage.points += static_cast<int>(block->points.size());
    stage.requests += block->requests;
    for (size_t k = 0; k < sides.size(); ++k) {
      const size_t i = sides[k];
      SideSearch::Probe probe;
      probe.conc = concs[k];
      probe.value = std::numeric_limits<double>::quiet_NaN();
      bool found = false;
      for (const auto& p : block->points) {
        if (p.id.config_key != entries[i]->key || p.id.concurrency != concs[k]) continue;
        found = true;
        probe.meets = objective.meets(p);
        probe.value = objective.value(p);
        if (!probe.meets) probe.why = missed(objective, p);
      }
      if (!found) probe.why = "not measured";
      if (block->interrupted && !found) continue;
      searches[i].record(probe.conc, probe.meets);
      stage.sides[i].probed.push_back(std::move(probe));
    }
    if (block->interrupted) {
      stage.interrupted = true;
      break;
    }
  }
  for (size_t i = 0; i < searches.size(); ++i) {
    stage.sides[i].lo = searches[i].lo();
    stage.sides[i].hi = searches[i].hi();
    stage.sides[i].probes = searches[i].probes();
    stage.sides[i].text = searches[i].describe();
  }
  stage.wall_s = seconds_since(t0);
  return stage;
}

}  // namespace ib::tune
