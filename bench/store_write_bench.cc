// Point writes per second into the results store (docs/store.md): an SQLite file and, when the
// test server runs (scripts/pg-up.sh), PostgreSQL. Each write is one transaction: a point with its
// full result JSON (PointWrites), or as a sweep writes it, with its 20 telemetry timeslices
// (Store::add_point_whole: PointWhole); one writer, and 4 writers at once, each on its own
// connection (the figure is then all writers' points per second). Never a pass or fail.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>
#include <fstream>

#include "core/temp_dir.h"
#include "store/pg.h"
#include "store/store.h"

namespace {

using namespace ib;

store::PointRecord bench_point(int64_t run, int64_t config, int64_t conc) {
  store::PointRecord p;
  p.run_id = run;
  p.server_config_id = config;
  p.fingerprint = "0123456789abcdef";
  p.workload_key = "fixed-seq-len:{\"isl\":1024,\"osl\":1024}";
  p.concurrency = conc;
  boost::json::object result;
  for (int i = 0; i < 60; ++i) result[fmt::format("metric_{}", i)] = 1.5 * i;  // ~1.5 KB
  result["request_throughput"] = 12.5;
  result["median_tpot_ms"] = 8.2;
  p.result = std::move(result);
  store::set_headline_from_result(p);
  return p;
}

std::vector<store::TimesliceRecord> bench_slices() {
  std::vector<store::TimesliceRecord> out;
  for (int i = 0; i < 20; ++i) {
    store::TimesliceRecord t;
    t.source = i < 10 ? "server" : "client";
    t.slice = i % 10;
    t.start_s = i;
    t.end_s = i + 1;
    t.running = 8;
    t.kv_usage = 0.4;
    t.data = {{"running", 8}, {"kv_usage", 0.4}};
    out.push_back(std::move(t));
  }
  return out;
}

// Writes points into one run; `whole`: as the sweep does (point, timeslices, one transaction).
void write_points(benchmark::State& state, store::Store& st, bool whole = false) {
  store::RunRecord r;
  static std::atomic<int> calls{0};  // benchmark calls this several times per figure
  r.name = fmt::format("bench-{}-{}", ::getpid(), ++calls);
  auto run = st.begin_run(r);
  if (!run) {
    state.SkipWithError(run.error().message.c_str());
    return;
  }
  store::ServerConfigRecord c;
  c.run_id = *run;
  c.config_key = "k";
  c.fingerprint = "0123456789abcdef";
  auto cid = st.add_server_config(c);
  if (!cid) {
    state.SkipWithError(cid.error().message.c_str());
    return;
  }
  int64_t conc = 0;
  const auto slices = bench_slices();
  for (auto _ : state) {
    auto p = whole ? st.add_point_whole(bench_point(*run, *cid, ++conc), slices, std::nullopt)
                   : st.add_point(bench_point(*run, *cid, ++conc));
    if (!p) {
      state.SkipWithError(p.error().message.c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// One file for all threads of a benchmark (each thread its own connection to it).
std::filesystem::path sqlite_file() {
  static TempDir dir("ib-store-bench");
  return dir.path() / "bench.db";
}

void BM_PointWrites_Sqlite(benchmark::State& state) {
  auto st = store::Store::open(sqlite_file());
  if (!st) {
    state.SkipWithError(st.error().message.c_str());
    return;
  }
  write_points(state, *st, state.range(1) == 1);
}
BENCHMARK(BM_PointWrites_Sqlite)
    ->ArgsProduct({{1}, {0, 1}})
    ->ArgNames({"", "whole"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PointWrites_Sqlite)
    ->Args({4, 1})
    ->ArgNames({"", "whole"})
    ->Threads(4)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_PointWrites_Postgres(benchmark::State& state) {
  std::string url;
  if (const char* u = std::getenv("INFERBENCH_TEST_PG_URL"); u && *u) url = u;
  if (url.empty()) {
    std::ifstream in("/tmp/inferbench-pg/url");
    std::getline(in, url);
  }
  if (!store::is_postgres_url(url)) {
    state.SkipWithError("no PostgreSQL server (scripts/pg-up.sh)");
    return;
  }
  // One schema per process, made once (the threads of a benchmark share it), never dropped
  // while a thread may use it: dropped at exit.
  static const std::string schema = [&] {
    const std::string name = fmt::format("bench_{}", ::getpid());
    auto admin = store::PgConnection::connect(url);
    if (!admin ||
        !admin->exec("DROP SCHEMA IF EXISTS " + name + " CASCADE; CREATE SCHEMA " + name)) {
      return std::string();
    }
    static const std::string drop_url = url, drop_name = name;
    std::atexit([] {
      if (auto a = store::PgConnection::connect(drop_url)) {
        (void)a->exec("DROP SCHEMA IF EXISTS " + drop_name + " CASCADE");
      }
    });
    return name;
  }();
  if (schema.empty()) {
    state.SkipWithError("cannot make a schema on the server");
    return;
  }
  auto st = store::Store::open(url + "?options=-csearch_path%3D" + schema);
  if (!st) {
    state.SkipWithError(st.error().message.c_str());
    return;
  }
  write_points(state, *st, state.range(1) == 1);
}
BENCHMARK(BM_PointWrites_Postgres)
    ->ArgsProduct({{1}, {0, 1}})
    ->ArgNames({"", "whole"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PointWrites_Postgres)
    ->Args({4, 1})
    ->ArgNames({"", "whole"})
    ->Threads(4)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
