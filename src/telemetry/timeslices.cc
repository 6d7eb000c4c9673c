#include "telemetry/timeslices.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "core/strings.h"

namespace ib::telemetry {

namespace {

using metrics::Sample;
using metrics::Scrape;

constexpr MetricKind G = MetricKind::kGauge;
constexpr MetricKind C = MetricKind::kCounter;

// Where each name comes from is in docs/telemetry.md. vLLM: v1/metrics/loggers.py and
// v1/spec_decode/metrics.py; KV offload: vLLM's OffloadingConnector metrics (flat load/store
// names, then the deprecated transfer_type-labelled ones), then the names InferenceX's plots read
// (not found in vLLM source). SGLang: python/sglang/srt/metrics/collector.py. TensorRT-LLM:
// tensorrt_llm/metrics/collector.py (the prefix trtllm_ is the collector's own).
constexpr MetricSource kSources[] = {
    {Quantity::kRunning, Engine::kVllm, G, "vllm:num_requests_running"},
    {Quantity::kWaiting, Engine::kVllm, G, "vllm:num_requests_waiting"},
    {Quantity::kKvUsage, Engine::kVllm, G, "vllm:kv_cache_usage_perc"},
    {Quantity::kKvUsage, Engine::kVllm, G, "vllm:gpu_cache_usage_perc"},
    {Quantity::kPrefixHits, Engine::kVllm, C, "vllm:prefix_cache_hits_total"},
    {Quantity::kPrefixHits, Engine::kVllm, C, "vllm:gpu_prefix_cache_hits_total"},
    {Quantity::kPrefixQueries, Engine::kVllm, C, "vllm:prefix_cache_queries_total"},
    {Quantity::kPrefixQueries, Engine::kVllm, C, "vllm:gpu_prefix_cache_queries_total"},
    {Quantity::kPreemptions, Engine::kVllm, C, "vllm:num_preemptions_total"},
    {Quantity::kPromptTokens, Engine::kVllm, C, "vllm:prompt_tokens_total"},
    {Quantity::kGenerationTokens, Engine::kVllm, C, "vllm:generation_tokens_total"},
    {Quantity::kSpecAccepted, Engine::kVllm, C, "vllm:spec_decode_num_accepted_tokens_total"},
    {Quantity::kSpecDraftTokens, Engine::kVllm, C, "vllm:spec_decode_num_draft_tokens_total"},
    {Quantity::kSpecDrafts, Engine::kVllm, C, "vllm:spec_decode_num_drafts_total"},
    {Quantity::kKvOffloadOut, Engine::kVllm, C, "vllm:kv_offload_store_bytes_total"},
    {Quantity::kKvOffloadOut, Engine::kVllm, C, "vllm:kv_offload_total_bytes_total",
     "transfer_type", "GPU_to_CPU"},
    {Quantity::kKvOffloadOut, Engine::kVllm, C, "vllm:kv_offload_bytes_gpu_to_cpu_total"},
    {Quantity::kKvOffloadIn, Engine::kVllm, C, "vllm:kv_offload_load_bytes_total"},
    {Quantity::kKvOffloadIn, Engine::kVllm, C, "vllm:kv_offload_total_bytes_total", "transfer_type",
     "CPU_to_GPU"},
    {Quantity::kKvOffloadIn, Engine::kVllm, C, "vllm:kv_offload_bytes_cpu_to_gpu_total"},

    {Quantity::kRunning, Engine::kSglang, G, "sglang:num_running_reqs"},
    {Quantity::kWaiting, Engine::kSglang, G, "sglang:num_queue_reqs"},
    {Quantity::kKvUsage, Engine::kSglang, G, "sglang:token_usage"},
    {Quantity::kPrefixHits, Engine::kSglang, C, "sglang:cached_tokens_total"},
    {Quantity::kPrefixQueries, Engine::kSglang, C, "sglang:prompt_tokens_total"},
    {Quantity::kPreemptions, Engine::kSglang, C, "sglang:num_retracted_requests_total"},
    {Quantity::kPromptTokens, Engine::kSglang, C, "sglang:prompt_tokens_total"},
    {Quantity::kGenerationTokens, Engine::kSglang, C, "sglang:generation_tokens_total"},
    {Quantity::kSpecAcceptLength, Engine::kSglang, G, "sglang:spec_accept_length"},

    {Quantity::kRunning, Engine::kTrtllm, G, "trtllm_num_requests_running"},
    {Quantity::kWaiting, Engine::kTrtllm, G, "trtllm_num_requests_waiting"},
    {Quantity::kKvUsage, Engine::kTrtllm, G, "trtllm_kv_cache_utilization"},
    {Quantity::kPrefixHits, Engine::kTrtllm, C, "trtllm_prompt_cached_tokens_total"},
    {Quantity::kPrefixQueries, Engine::kTrtllm, C, "trtllm_prompt_tokens_total"},
    {Quantity::kPromptTokens, Engine::kTrtllm, C, "trtllm_prompt_tokens_total"},
    {Quantity::kGenerationTokens, Engine::kTrtllm, C, "trtllm_generation_tokens_total"},
    {Quantity::kSpecAccepted, Engine::kTrtllm, C, "trtllm_spec_decode_num_accepted_tokens_total"},
    {Quantity::kSpecDraftTokens, Engine::kTrtllm, C, "trtllm_spec_decode_num_draft_tokens_total"},
    {Quantity::kSpecAcceptLength, Engine::kTrtllm, G, "trtllm_spec_decode_acceptance_length"},
    {Quantity::kKvOffloadOut, Engine::kTrtllm, C, "trtllm_kv_cache_offload_bytes_total"},
    {Quantity::kKvOffloadIn, Engine::kTrtllm, C, "trtllm_kv_cache_onboard_bytes_total"},

    // serve-sim's own name; its other names are vLLM's (docs/serve-sim.md "Metrics").
    {Quantity::kKvEvictedBlocks, Engine::kServeSim, C,
     "inferbench_sim:kv_cache_evicted_blocks_total"},
};

constexpr std::array kQuantities = {
    Quantity::kRunning,         Quantity::kWaiting,          Quantity::kKvUsage,
    Quantity::kPrefixHits,      Quantity::kPrefixQueries,    Quantity::kPreemptions,
    Quantity::kPromptTokens,    Quantity::kGenerationTokens, Quantity::kSpecAccepted,
    Quantity::kSpecDraftTokens, Quantity::kSpecDrafts,       Quantity::kSpecAcceptLength,
    Quantity::kKvOffloadOut,    Quantity::kKvOffloadIn,      Quantity::kKvEvictedBlocks,
};
constexpr size_t kNumQuantities = kQuantities.size();

// A guard against a slice width that is a typo (1e-9 s over an hour): no report draws that many.
constexpr double kMaxSlices = 1e7;

size_t qi(Quantity q) {
  return static_cast<size_t>(q);
}

// Fractions are averaged over label sets (two engines at 50% are a cache at 50%, not 100%).
bool is_ratio(Quantity q) {
  return q == Quantity::kKvUsage || q == Quantity::kSpecAcceptLength;
}

bool engine_uses(Engine worker, Engine row) {
  return worker == row || (worker == Engine::kServeSim && row == Engine::kVllm);
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && lower(a) == lower(b);
}

bool matches(const Sample& s, const MetricSource& src) {
  if (s.name != src.name) return false;
  if (src.label.empty()) return true;
  const std::string* v = s.label(src.label);
  return v != nullptr && equals_ignore_case(*v, src.label_value);
}

// The value of `src` in `scrape`: summed over label sets (averaged for ratios); nullopt when no
// finite sample matches.
std::optional<double> read(const Scrape& scrape, const MetricSource& src) {
  double total = 0;
  int n = 0;
  for (const Sample& s : scrape.samples) {
    if (!matches(s, src) || !std::isfinite(s.value)) continue;
    total += s.value;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return is_ratio(src.quantity) ? total / n : total;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// One worker's series of one quantity, one entry per scrape of the worker.
struct Series {
  const MetricSource* source = nullptr;  // nullptr: the worker does not export the quantity
  std::vector<std::optional<double>> value;
  std::vector<double> cumulative;  // counters: the increase since the first scrape, resets undone
};

struct Worker {
  std::vector<const TimedScrape*> scrapes;  // by time
  Engine engine = Engine::kUnknown;
  std::array<Series, kNumQuantities> series;
};

Series make_series(const std::vector<const TimedScrape*>& scrapes, Engine engine, Quantity q) {
  Series s;
  for (const MetricSource& src : kSources) {
    if (src.quantity != q || !engine_uses(engine, src.engine)) continue;
    const bool present = std::any_of(scrapes.begin(), scrapes.end(), [&](const TimedScrape* t) {
      return std::any_of(t->scrape.samples.begin(), t->scrape.samples.end(),
                         [&](const Sample& x) { return matches(x, src); });
    });
    if (present) {
      s.source = &src;
      break;
    }
  }
  if (s.source == nullptr) return s;
  s.value.reserve(scrapes.size());
  for (const TimedScrape* t : scrapes) s.value.push_back(read(t->scrape, *s.source));
  if (s.source->kind == MetricKind::kCounter) {
    s.cumulative.assign(scrapes.size(), 0.0);
    std::optional<double> last;
    double sum = 0;
    for (size_t k = 0; k < scrapes.size(); ++k) {
      const std::optional<double>& v = s.value[k];
      if (v) {
        if (last) {
          // A decrease is a restart: the counter counted up from zero again.
          sum += *v >= *last ? *v - *last : *v;
        } else if (k > 0) {
          sum += *v;  // appeared after the first scrape: started from zero
        }
        last = v;
      }
      s.cumulative[k] = sum;
    }
  }
  return s;
}

// One worker's view of one slice: its scrapes [lo, hi) in the slice and the bounding scrape
// before it.
struct Window {
  size_t lo = 0, hi = 0;
  bool empty() const { return lo == hi; }
  size_t before() const { return lo > 0 ? lo - 1 : 0; }
  size_t last() const { return hi - 1; }
};

struct GaugeStat {
  double last = 0, mean = 0, max = 0;
};

std::optional<GaugeStat> gauge_in(const Series& s, Window w) {
  if (s.source == nullptr || s.source->kind != MetricKind::kGauge) return std::nullopt;
  GaugeStat g;
  int n = 0;
  double sum = 0;
  for (size_t k = w.lo; k < w.hi; ++k) {
    if (!s.value[k]) continue;
    const double v = *s.value[k];
    g.last = v;
    g.max = n == 0 ? v : std::max(g.max, v);
    sum += v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  g.mean = sum / n;
  return g;
}

struct CounterStat {
  double delta = 0;
  double dt = 0;
};

std::optional<CounterStat> counter_in(const Series& s, Window w,
                                      const std::vector<const TimedScrape*>& scrapes) {
  if (s.source == nullptr || s.source->kind != MetricKind::kCounter) return std::nullopt;
  bool any = false;
  for (size_t k = w.lo; k < w.hi && !any; ++k) any = s.value[k].has_value();
  if (!any) return std::nullopt;
  return CounterStat{s.cumulative[w.last()] - s.cumulative[w.before()],
                     scrapes[w.last()]->t_s - scrapes[w.before()]->t_s};
}

// Sums of optional values: nullopt until something is added.
void add(std::optional<double>& to, double v) {
  to = to.value_or(0.0) + v;
}

std::string engines_word(const std::set<Engine>& engines) {
  if (engines.empty()) return std::string(to_string(Engine::kUnknown));
  if (engines.size() > 1) return "mixed";
  return std::string(to_string(*engines.begin()));
}

// The scrapes of a point grouped into workers, and the time they span.
struct Workers {
  std::vector<Worker> list;  // in order of first appearance
  double t0 = std::numeric_limits<double>::infinity();
  double t_end = -std::numeric_limits<double>::infinity();
};

// Workers in order of first appearance, each with its scrapes by time, its engine and series.
Workers workers_of(const std::vector<TimedScrape>& scrapes) {
  Workers workers;
  std::map<std::string, size_t> by_url;
  for (const TimedScrape& t : scrapes) {
    auto [it, inserted] = by_url.try_emplace(t.url, workers.list.size());
    if (inserted) workers.list.emplace_back();
    workers.list[it->second].scrapes.push_back(&t);
    workers.t0 = std::min(workers.t0, t.t_s);
    workers.t_end = std::max(workers.t_end, t.t_s);
  }
  for (Worker& w : workers.list) {
    std::stable_sort(w.scrapes.begin(), w.scrapes.end(),
                     [](const TimedScrape* a, const TimedScrape* b) { return a->t_s < b->t_s; });
    for (const TimedScrape* t : w.scrapes) {
      w.engine = detect_engine(t->scrape);
      if (w.engine != Engine::kUnknown) break;
    }
    for (Quantity q : kQuantities) w.series[qi(q)] = make_series(w.scrapes, w.engine, q);
  }
  return workers;
}

// The slices: `n` of `slice_s` seconds from `t0`.
struct SliceGrid {
  double t0 = 0;
  double slice_s = 0;
  size_t n = 0;
  size_t slice_of(double t) const {
    return std::min(static_cast<size_t>(std::floor((t - t0) / slice_s)), n - 1);
  }
};

std::vector<ServerSlice> empty_server_slices(const SliceGrid& grid) {
  std::vector<ServerSlice> out(grid.n);
  for (size_t i = 0; i < grid.n; ++i) {
    ServerSlice& s = out[i];
    s.index = static_cast<int>(i);
    s.start_s = static_cast<double>(i) * grid.slice_s;
    s.end_s = static_cast<double>(i + 1) * grid.slice_s;
  }
  return out;
}

// Per slice: the workers seen, names read, and the pieces of the worker-combined values.
struct SliceParts {
  std::set<Engine> engines;
  std::set<std::string> names;
  int kv_workers = 0, accept_workers = 0;
  double kv_sum = 0, accept_sum = 0;
  std::optional<double> accepted_with_drafts, drafts;
};

// One worker's series over one slice's window; every value read notes its metric's name.
struct WorkerInSlice {
  const Worker& w;
  Window win;
  std::set<std::string>& names;

  void note(Quantity q) const { names.insert(w.series[qi(q)].source->display()); }
  std::optional<GaugeStat> gauge(Quantity q) const {
    auto g = gauge_in(w.series[qi(q)], win);
    if (g) note(q);
    return g;
  }
  std::optional<CounterStat> counter(Quantity q) const {
    auto c = counter_in(w.series[qi(q)], win, w.scrapes);
    if (c) note(q);
    return c;
  }
  // A counter's increase and, when the worker's scrapes span time, its rate.
  std::optional<CounterStat> count(Quantity q, std::optional<double>& delta,
                                   std::optional<double>* rate) const {
    const auto c = counter(q);
    if (!c) return c;
    add(delta, c->delta);
    if (rate != nullptr && c->dt > 0) add(*rate, c->delta / c->dt);
    return c;
  }
};

// Adds a worker's gauges in the slice to it.
void add_gauges(const WorkerInSlice& ws, ServerSlice& s, SliceParts& parts) {
  if (auto g = ws.gauge(Quantity::kRunning)) {
    add(s.running, g->last);
    add(s.running_mean, g->mean);
  }
  if (auto g = ws.gauge(Quantity::kWaiting)) {
    add(s.waiting, g->last);
    add(s.waiting_mean, g->mean);
  }
  if (auto g = ws.gauge(Quantity::kKvUsage)) {
    parts.kv_sum += g->last;
    ++parts.kv_workers;
    s.kv_usage_max = std::max(s.kv_usage_max.value_or(g->max), g->max);
  }
  if (auto g = ws.gauge(Quantity::kSpecAcceptLength)) {
    parts.accept_sum += g->last;
    ++parts.accept_workers;
  }
}

// Adds a worker's counter increases (and rates) in the slice to it.
void add_counters(const WorkerInSlice& ws, ServerSlice& s, SliceParts& parts) {
  {
    // The hit rate takes only workers that export both counters.
    const auto h = ws.counter(Quantity::kPrefixHits);
    const auto q = ws.counter(Quantity::kPrefixQueries);
    if (h && q) {
      add(s.prefix_hits, h->delta);
      add(s.prefix_queries, q->delta);
    }
  }
  ws.count(Quantity::kPreemptions, s.preemptions, nullptr);
  ws.count(Quantity::kPromptTokens, s.prompt_tokens, &s.prompt_tokens_per_s);
  ws.count(Quantity::kGenerationTokens, s.generation_tokens, &s.generation_tokens_per_s);
  const auto acc = ws.count(Quantity::kSpecAccepted, s.spec_accepted_tokens, nullptr);
  ws.count(Quantity::kSpecDraftTokens, s.spec_draft_tokens, nullptr);
  const auto dr = ws.count(Quantity::kSpecDrafts, s.spec_drafts, nullptr);
  if (acc && dr) {
    add(parts.accepted_with_drafts, acc->delta);
    add(parts.drafts, dr->delta);
  }
  ws.count(Quantity::kKvOffloadOut, s.kv_offload_gpu_to_cpu_bytes,
           &s.kv_offload_gpu_to_cpu_bytes_per_s);
  ws.count(Quantity::kKvOffloadIn, s.kv_offload_cpu_to_gpu_bytes,
           &s.kv_offload_cpu_to_gpu_bytes_per_s);
  ws.count(Quantity::kKvEvictedBlocks, s.kv_evicted_blocks, nullptr);
}

// Adds one worker's scrapes to the slices they fall in.
void add_worker(const Worker& w, const SliceGrid& grid, std::vector<ServerSlice>& out,
                std::vector<SliceParts>& parts) {
  size_t k = 0;
  for (size_t i = 0; i < grid.n; ++i) {
    Window win{k, k};
    while (win.hi < w.scrapes.size() && grid.slice_of(w.scrapes[win.hi]->t_s) == i) ++win.hi;
    k = win.hi;
    if (win.empty()) continue;
    ServerSlice& s = out[i];
    s.scrapes += static_cast<int>(win.hi - win.lo);
    parts[i].engines.insert(w.engine);
    const WorkerInSlice ws{w, win, parts[i].names};
    add_gauges(ws, s, parts[i]);
    add_counters(ws, s, parts[i]);
  }
}

// The values that combine the slice's workers: engine, names, KV usage, hit rate, acceptance
// length.
void finish_slice(const SliceParts& parts, ServerSlice& s) {
  s.engine = engines_word(parts.engines);
  s.metric_names.assign(parts.names.begin(), parts.names.end());
  if (parts.kv_workers > 0) s.kv_usage = parts.kv_sum / parts.kv_workers;
  if (s.prefix_queries && *s.prefix_queries > 0) {
    s.prefix_hit_rate = *s.prefix_hits / *s.prefix_queries;
  }
  if (parts.drafts) {
    // vLLM's mean acceptance length: each draft round yields its accepted tokens plus the one
    // token the target model samples itself.
    if (*parts.drafts > 0) {
      s.spec_acceptance_length = 1.0 + *parts.accepted_with_drafts / *parts.drafts;
    }
  } else if (parts.accept_workers > 0) {
    s.spec_acceptance_length = parts.accept_sum / parts.accept_workers;
  }
}

}  // namespace

std::string_view to_string(Engine engine) {
  switch (engine) {
    case Engine::kVllm:
      return "vllm";
    case Engine::kSglang:
      return "sglang";
    case Engine::kTrtllm:
      return "trtllm";
    case Engine::kServeSim:
      return "serve-sim";
    case Engine::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view quantity_key(Quantity quantity) {
  switch (quantity) {
    case Quantity::kRunning:
      return "running";
    case Quantity::kWaiting:
      return "waiting";
    case Quantity::kKvUsage:
      return "kv_usage";
    case Quantity::kPrefixHits:
      return "prefix_hits";
    case Quantity::kPrefixQueries:
      return "prefix_queries";
    case Quantity::kPreemptions:
      return "preemptions";
    case Quantity::kPromptTokens:
      return "prompt_tokens";
    case Quantity::kGenerationTokens:
      return "generation_tokens";
    case Quantity::kSpecAccepted:
      return "spec_accepted_tokens";
    case Quantity::kSpecDraftTokens:
      return "spec_draft_tokens";
    case Quantity::kSpecDrafts:
      return "spec_drafts";
    case Quantity::kSpecAcceptLength:
      return "spec_acceptance_length";
    case Quantity::kKvOffloadOut:
      return "kv_offload_gpu_to_cpu_bytes";
    case Quantity::kKvOffloadIn:
      return "kv_offload_cpu_to_gpu_bytes";
    case Quantity::kKvEvictedBlocks:
      return "kv_evicted_blocks";
  }
  return "unknown";
}

std::string MetricSource::display() const {
  if (label.empty()) return std::string(name);
  return fmt::format("{}{{{}=\"{}\"}}", name, label, label_value);
}

std::span<const MetricSource> metric_sources() {
  return kSources;
}

Engine detect_engine(const Scrape& scrape) {
  int64_t vllm = 0, sglang = 0, trtllm = 0;
  for (const Sample& s : scrape.samples) {
    if (starts_with(s.name, "inferbench_sim:") || s.name == "vllm:iteration_total") {
      return Engine::kServeSim;
    }
    if (starts_with(s.name, "vllm:")) ++vllm;
    if (starts_with(s.name, "sglang:")) ++sglang;
    if (starts_with(s.name, "trtllm_")) ++trtllm;
  }
  if (vllm == 0 && sglang == 0 && trtllm == 0) return Engine::kUnknown;
  if (vllm >= sglang && vllm >= trtllm) return Engine::kVllm;
  return sglang >= trtllm ? Engine::kSglang : Engine::kTrtllm;
}

std::vector<ServerSlice> server_timeslices(const std::vector<TimedScrape>& scrapes,
                                           double slice_s) {
  if (scrapes.empty() || !(slice_s > 0) || !std::isfinite(slice_s)) return {};
  const Workers workers = workers_of(scrapes);
  const double span = std::floor((workers.t_end - workers.t0) / slice_s);
  if (!(span < kMaxSlices)) return {};
  const SliceGrid grid{workers.t0, slice_s, static_cast<size_t>(span) + 1};
  std::vector<ServerSlice> out = empty_server_slices(grid);
  std::vector<SliceParts> parts(grid.n);
  for (const Worker& w : workers.list) add_worker(w, grid, out, parts);
  for (size_t i = 0; i < grid.n; ++i) finish_slice(parts[i], out[i]);
  return out;
}

TelemetrySummary summarize(const std::vector<ServerSlice>& slices) {
  TelemetrySummary t;
  t.slices = static_cast<int>(slices.size());
  if (slices.empty()) {
    t.engine = std::string(to_string(Engine::kUnknown));
    return t;
  }
  t.duration_s = slices.back().end_s - slices.front().start_s;
  std::set<std::string> engine_words, names;
  double running = 0, waiting = 0, accept = 0;
  int running_n = 0, waiting_n = 0, accept_n = 0;
  std::optional<double> drafts, accepted;
  for (const ServerSlice& s : slices) {
    if (s.scrapes > 0) engine_words.insert(s.engine);
    names.insert(s.metric_names.begin(), s.metric_names.end());
    if (s.kv_usage_max) t.peak_kv_usage = std::max(t.peak_kv_usage.value_or(0.0), *s.kv_usage_max);
    if (s.running_mean) {
      running += *s.running_mean;
      ++running_n;
    }
    if (s.waiting_mean) {
      waiting += *s.waiting_mean;
      ++waiting_n;
    }
    if (s.preemptions) add(t.preemptions, *s.preemptions);
    if (s.prefix_queries) {
      add(t.prefix_hits, *s.prefix_hits);
      add(t.prefix_queries, *s.prefix_queries);
    }
    if (s.prompt_tokens) add(t.prompt_tokens, *s.prompt_tokens);
    if (s.generation_tokens) add(t.generation_tokens, *s.generation_tokens);
    if (s.spec_drafts) {
      add(drafts, *s.spec_drafts);
      add(accepted, s.spec_accepted_tokens.value_or(0.0));
    } else if (s.spec_acceptance_length) {
      accept += *s.spec_acceptance_length;
      ++accept_n;
    }
    if (s.kv_offload_gpu_to_cpu_bytes) {
      add(t.kv_offload_gpu_to_cpu_bytes, *s.kv_offload_gpu_to_cpu_bytes);
    }
    if (s.kv_offload_cpu_to_gpu_bytes) {
      add(t.kv_offload_cpu_to_gpu_bytes, *s.kv_offload_cpu_to_gpu_bytes);
    }
    if (s.kv_evicted_blocks) add(t.kv_evicted_blocks, *s.kv_evicted_blocks);
  }
  if (engine_words.empty()) {
    t.engine = std::string(to_string(Engine::kUnknown));
  } else {
    t.engine = engine_words.size() == 1 ? *engine_words.begin() : "mixed";
  }
  t.metric_names.assign(names.begin(), names.end());
  if (running_n > 0) t.mean_running = running / running_n;
  if (waiting_n > 0) t.mean_waiting = waiting / waiting_n;
  if (t.prefix_queries && *t.prefix_queries > 0) {
    t.prefix_hit_rate = *t.prefix_hits / *t.prefix_queries;
  }
  if (drafts) {
    if (*drafts > 0) {
      t.spec_acceptance_length = 1.0 + *accepted / *drafts;
      t.spec_acceptance_from = "1 + accepted / drafts, the spec-decode counters' increase";
    }
  } else if (accept_n > 0) {
    t.spec_acceptance_length = accept / accept_n;
    t.spec_acceptance_from = "the mean of the engine's acceptance-length gauge";
  }
  return t;
}

std::vector<ClientSlice> client_timeslices(std::span<const metrics::RequestRecord> records,
                                           int64_t origin_ns, double slice_s) {
  if (!(slice_s > 0) || !std::isfinite(slice_s)) return {};
  const double slice_ns = slice_s * 1e9;
  auto counted = [&](int64_t t) { return t > 0 && t >= origin_ns; };
  int64_t latest = std::numeric_limits<int64_t>::min();
  for (const metrics::RequestRecord& r : records) {
    for (int64_t t : {r.send_ns, r.done_ns}) {
      if (counted(t)) latest = std::max(latest, t);
    }
    for (int64_t t : r.content_ns) {
      if (counted(t)) latest = std::max(latest, t);
    }
  }
  if (latest == std::numeric_limits<int64_t>::min()) return {};
  auto slice_of = [&](int64_t t) {
    return static_cast<size_t>(std::floor(static_cast<double>(t - origin_ns) / slice_ns));
  };
  if (!(std::floor(static_cast<double>(latest - origin_ns) / slice_ns) < kMaxSlices)) return {};
  const size_t n = slice_of(latest) + 1;
  std::vector<ClientSlice> out(n);
  std::vector<double> ttft_sum(n, 0.0), inv_tpot_sum(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    out[i].index = static_cast<int>(i);
    out[i].start_s = static_cast<double>(i) * slice_s;
    out[i].end_s = static_cast<double>(i + 1) * slice_s;
  }
  for (const metrics::RequestRecord& r : records) {
    if (counted(r.send_ns)) ++out[slice_of(r.send_ns)].started;
    if (counted(r.done_ns)) {
      ClientSlice& s = out[slice_of(r.done_ns)];
      ++s.finished;
      if (!r.ok()) ++s.failed;
    }
    for (int64_t t : r.content_ns) {
      if (counted(t)) ++out[slice_of(t)].output_tokens;
    }
    if (!r.ok() || r.content_ns.empty()) continue;
    // TTFT and TPOT as metrics/result.cc defines them, so slice means match the point's.
    const int64_t first = r.content_ns.front();
    const int64_t last = r.content_ns.back();
    if (counted(first)) {
      const size_t i = slice_of(first);
      ttft_sum[i] += static_cast<double>(first - r.send_ns) / 1e6;
      ++out[i].ttft_requests;
    }
    const int64_t tokens = r.output_tokens();
    if (counted(r.done_ns) && tokens > 1 && last > first) {
      const size_t i = slice_of(r.done_ns);
      inv_tpot_sum[i] +=
          static_cast<double>(tokens - 1) / (static_cast<double>(last - first) / 1e9);
      ++out[i].tpot_requests;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    ClientSlice& s = out[i];
    if (s.ttft_requests > 0) s.mean_ttft_ms = ttft_sum[i] / static_cast<double>(s.ttft_requests);
    if (s.tpot_requests > 0) {
      s.mean_inverse_tpot = inv_tpot_sum[i] / static_cast<double>(s.tpot_requests);
    }
  }
  return out;
}

namespace {

// The columns of a row, in output order: one list serves JSON and CSV so they cannot drift.
struct ServerColumn {
  std::string_view key;
  std::optional<double> ServerSlice::*field;
};

constexpr ServerColumn kServerColumns[] = {
    {"running", &ServerSlice::running},
    {"running_mean", &ServerSlice::running_mean},
    {"waiting", &ServerSlice::waiting},
    {"waiting_mean", &ServerSlice::waiting_mean},
    {"kv_usage", &ServerSlice::kv_usage},
    {"kv_usage_max", &ServerSlice::kv_usage_max},
    {"prefix_hits", &ServerSlice::prefix_hits},
    {"prefix_queries", &ServerSlice::prefix_queries},
    {"prefix_hit_rate", &ServerSlice::prefix_hit_rate},
    {"preemptions", &ServerSlice::preemptions},
    {"prompt_tokens", &ServerSlice::prompt_tokens},
    {"generation_tokens", &ServerSlice::generation_tokens},
    {"prompt_tokens_per_s", &ServerSlice::prompt_tokens_per_s},
    {"generation_tokens_per_s", &ServerSlice::generation_tokens_per_s},
    {"spec_accepted_tokens", &ServerSlice::spec_accepted_tokens},
    {"spec_draft_tokens", &ServerSlice::spec_draft_tokens},
    {"spec_drafts", &ServerSlice::spec_drafts},
    {"spec_acceptance_length", &ServerSlice::spec_acceptance_length},
    {"kv_offload_gpu_to_cpu_bytes", &ServerSlice::kv_offload_gpu_to_cpu_bytes},
    {"kv_offload_cpu_to_gpu_bytes", &ServerSlice::kv_offload_cpu_to_gpu_bytes},
    {"kv_offload_gpu_to_cpu_bytes_per_s", &ServerSlice::kv_offload_gpu_to_cpu_bytes_per_s},
    {"kv_offload_cpu_to_gpu_bytes_per_s", &ServerSlice::kv_offload_cpu_to_gpu_bytes_per_s},
    {"kv_evicted_blocks", &ServerSlice::kv_evicted_blocks},
};

boost::json::value json_of(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

std::string csv_of(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return {};
  return fmt::format("{}", *v);
}

// Engine words and metric names hold no comma or quote; quote anyway if one ever does.
std::string csv_text(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

boost::json::array names_json(const std::vector<std::string>& names) {
  boost::json::array a;
  for (const std::string& n : names) a.emplace_back(n);
  return a;
}

}  // namespace

boost::json::array slices_to_json(const std::vector<ServerSlice>& slices) {
  boost::json::array rows;
  for (const ServerSlice& s : slices) {
    boost::json::object o;
    o["index"] = s.index;
    o["start_s"] = s.start_s;
    o["end_s"] = s.end_s;
    o["scrapes"] = s.scrapes;
    o["engine"] = s.engine;
    for (const ServerColumn& c : kServerColumns) o[c.key] = json_of(s.*c.field);
    o["metric_names"] = names_json(s.metric_names);
    rows.emplace_back(std::move(o));
  }
  return rows;
}

boost::json::array slices_to_json(const std::vector<ClientSlice>& slices) {
  boost::json::array rows;
  for (const ClientSlice& s : slices) {
    boost::json::object o;
    o["index"] = s.index;
    o["start_s"] = s.start_s;
    o["end_s"] = s.end_s;
    o["started"] = s.started;
    o["finished"] = s.finished;
    o["failed"] = s.failed;
    o["output_tokens"] = s.output_tokens;
    o["mean_ttft_ms"] = json_of(s.mean_ttft_ms);
    o["ttft_requests"] = s.ttft_requests;
    o["mean_inverse_tpot"] = json_of(s.mean_inverse_tpot);
    o["tpot_requests"] = s.tpot_requests;
    rows.emplace_back(std::move(o));
  }
  return rows;
}

boost::json::object summary_to_json(const TelemetrySummary& t) {
  boost::json::object o;
  o["slices"] = t.slices;
  o["duration_s"] = t.duration_s;
  o["engine"] = t.engine;
  o["peak_kv_usage"] = json_of(t.peak_kv_usage);
  o["mean_running"] = json_of(t.mean_running);
  o["mean_waiting"] = json_of(t.mean_waiting);
  o["preemptions"] = json_of(t.preemptions);
  o["prefix_hits"] = json_of(t.prefix_hits);
  o["prefix_queries"] = json_of(t.prefix_queries);
  o["prefix_hit_rate"] = json_of(t.prefix_hit_rate);
  o["prompt_tokens"] = json_of(t.prompt_tokens);
  o["generation_tokens"] = json_of(t.generation_tokens);
  o["spec_acceptance_length"] = json_of(t.spec_acceptance_length);
  o["kv_offload_gpu_to_cpu_bytes"] = json_of(t.kv_offload_gpu_to_cpu_bytes);
  o["kv_offload_cpu_to_gpu_bytes"] = json_of(t.kv_offload_cpu_to_gpu_bytes);
  o["kv_evicted_blocks"] = json_of(t.kv_evicted_blocks);
  o["metric_names"] = names_json(t.metric_names);
  return o;
}

std::string slices_to_csv(const std::vector<ServerSlice>& slices) {
  std::string out = "index,start_s,end_s,scrapes,engine";
  for (const ServerColumn& c : kServerColumns)
    fmt::format_to(std::back_inserter(out), ",{}", c.key);
  out += '\n';
  for (const ServerSlice& s : slices) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{}", s.index, s.start_s, s.end_s,
                   s.scrapes, csv_text(s.engine));
    for (const ServerColumn& c : kServerColumns) {
      fmt::format_to(std::back_inserter(out), ",{}", csv_of(s.*c.field));
    }
    out += '\n';
  }
  return out;
}

std::string slices_to_csv(const std::vector<ClientSlice>& slices) {
  std::string out =
      "index,start_s,end_s,started,finished,failed,output_tokens,mean_ttft_ms,ttft_requests,"
      "mean_inverse_tpot,tpot_requests\n";
  for (const ClientSlice& s : slices) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{},{},{}\n", s.index,
                   s.start_s, s.end_s, s.started, s.finished, s.failed, s.output_tokens,
                   csv_of(s.mean_ttft_ms), s.ttft_requests, csv_of(s.mean_inverse_tpot),
                   s.tpot_requests);
  }
  return out;
}

std::vector<std::string> missing_prefixes(const std::vector<TimedScrape>& scrapes,
                                          const std::vector<std::string>& required_prefixes) {
  std::vector<std::string> missing;
  for (const std::string& prefix : required_prefixes) {
    const bool found = std::any_of(scrapes.begin(), scrapes.end(), [&](const TimedScrape& t) {
      return std::any_of(t.scrape.samples.begin(), t.scrape.samples.end(),
                         [&](const Sample& s) { return starts_with(s.name, prefix); });
    });
    if (!found) missing.push_back(prefix);
  }
  return missing;
}

}  // namespace ib::telemetry
