// Agentic prompt synthesis (workload/agentic_prompts.h) on the recorded trace_0014: the request
// bodies (message arrays) of its 121 top-level turns, up to 157,760 tokens each, built as a
// replay builds them (turn after turn, each extending the last) and as a warmup primer does (one
// jump, here to the largest turn), on the root conversation the DAG builder makes. Figures per pass: turns, body bytes built, and the peak RSS of the
// process; bytes_per_second is the build rate. These print numbers; they never pass or fail.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "workload/agentic_dag.h"
#include "workload/agentic_prompts.h"
#include "workload/weka_trace.h"

namespace {

using namespace ib::workload;
using namespace ib::workload::agentic;

// trace_0014 as the replay sees it: its conversations from the DAG builder (stream 0 is the root).
ReplayTree trace_0014() {
  auto traces = load_weka_traces({INFERBENCH_TEST_DATA "/agentx-traces/trace_0014.json"});
  if (!traces) return {};
  auto tree = build_replay_tree(traces->front());
  return tree ? std::move(*tree) : ReplayTree{};
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

void BM_Trace0014EveryTurn(benchmark::State& state) {
  const ReplayTree tree = trace_0014();
  if (tree.streams.empty()) {
    state.SkipWithError("cannot load trace_0014");
    return;
  }
  const int turns = static_cast<int>(tree.streams[0].turns.size());
  const std::string marker = cache_bust_marker("bench", 0, 0, tree.trace_id);
  int64_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    StreamPrompts sp(tree, 0, 42, marker);
    for (int k = 0; k < turns; ++k) {
      sp.advance_to(k);
      bytes += static_cast<int64_t>(sp.messages_json().size());
    }
    benchmark::DoNotOptimize(sp.messages_json().data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["turns"] = turns;
  state.counters["body_bytes"] = static_cast<double>(bytes);
  state.counters["peak_rss_mib"] = peak_rss_mib();
}
BENCHMARK(BM_Trace0014EveryTurn)->Unit(benchmark::kMillisecond);

void BM_Trace0014JumpToLargestTurn(benchmark::State& state) {
  const ReplayTree tree = trace_0014();
  if (tree.streams.empty()) {
    state.SkipWithError("cannot load trace_0014");
    return;
  }
  const auto& turns = tree.streams[0].turns;
  int largest = 0;
  for (int k = 0; k < static_cast<int>(turns.size()); ++k) {
    if (turns[static_cast<size_t>(k)].in > turns[static_cast<size_t>(largest)].in) largest = k;
  }
  const std::string marker = cache_bust_marker("bench", 0, 0, tree.trace_id);
  int64_t bytes = 0;
  for (auto _ : state) {
    StreamPrompts sp(tree, 0, 42, marker);
    sp.advance_to(largest);
    bytes = static_cast<int64_t>(sp.messages_json().size());
    benchmark::DoNotOptimize(sp.messages_json().data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["turn"] = largest;
  state.counters["tokens"] = static_cast<double>(turns[static_cast<size_t>(largest)].in);
  state.counters["body_bytes"] = static_cast<double>(bytes);
  state.counters["peak_rss_mib"] = peak_rss_mib();
}
BENCHMARK(BM_Trace0014JumpToLargestTurn)->Unit(benchmark::kMillisecond);

}  // namespace
