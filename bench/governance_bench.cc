// Figures for recipes, governance and the results store: loading and expanding the real
// InferenceX configs, diffing them (what `changed` does per revision pair), checking the real
// 772-entry perf changelog, and storing points (one SQLite transaction each).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/files.h"
#include "govern/changed.h"
#include "govern/changelog.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "store/store.h"

namespace {

const std::string kData = INFERBENCH_TEST_DATA "/inferencex";

void BM_LoadAndExpandRealConfigs(benchmark::State& state) {
  size_t rows = 0;
  for (auto _ : state) {
    auto entries = ib::recipe::load_master_configs(
        {kData + "/amd-master.yaml", kData + "/nvidia-master.yaml"});
    if (!entries) state.SkipWithError(entries.error().message.c_str());
    rows = ib::recipe::expand(*entries, nullptr).size();
  }
  state.counters["rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_LoadAndExpandRealConfigs)->Unit(benchmark::kMillisecond);

void BM_DiffRealConfigs(benchmark::State& state) {
  auto base =
      ib::recipe::load_master_configs({kData + "/amd-master.yaml", kData + "/nvidia-master.yaml"});
  auto head = *base;
  head[10].raw.as_object()["image"] = "changed:1";  // one key changed
  size_t keys = 0;
  for (auto _ : state) keys = ib::govern::diff_entries(*base, head).keys.size();
  state.counters["affected"] = static_cast<double>(keys);
}
BENCHMARK(BM_DiffRealConfigs)->Unit(benchmark::kMillisecond);

void BM_CheckRealChangelog(benchmark::State& state) {
  auto text = ib::read_file(kData + "/perf-changelog.yaml");
  std::string head = *text;
  // The base is the history without its last entry, as a pull request adding it would see.
  std::string base = head.substr(0, head.rfind("\n- config-keys:") + 1);
  ib::govern::ChangelogContext ctx;
  for (auto _ : state) {
    auto report = ib::govern::check_changelog(base, head, ctx);
    benchmark::DoNotOptimize(report);
  }
  state.counters["entries"] = 772;
}
BENCHMARK(BM_CheckRealChangelog)->Unit(benchmark::kMillisecond);

void BM_StorePoint(benchmark::State& state) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("ib-store-bench-" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(file);
  auto store = ib::store::Store::open(file);
  ib::store::RunRecord run;
  run.name = "bench";
  run.tool_version = "bench";
  int64_t run_id = *store->begin_run(run);
  ib::store::PointRecord p;
  p.run_id = run_id;
  p.fingerprint = std::string(64, 'a');
  p.workload_key = "random:isl=1024,osl=1024";
  // A result JSON the size of a real one (~3 KB of metrics).
  for (int i = 0; i < 120; ++i) p.result["metric_" + std::to_string(i)] = 1234.5678 * i;
  ib::store::set_headline_from_result(p);
  int64_t conc = 0;
  for (auto _ : state) {
    p.concurrency = ++conc;
    if (!store->add_point(p)) state.SkipWithError("add_point failed");
  }
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove(file);
  std::filesystem::remove(file.string() + "-wal");
  std::filesystem::remove(file.string() + "-shm");
}
BENCHMARK(BM_StorePoint)->Unit(benchmark::kMicrosecond);

}  // namespace
