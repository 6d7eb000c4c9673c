// Point writes per second into the results store (docs/store.md): an SQLite file and, when the
// test server runs (scripts/pg-up.sh), PostgreSQL. Each write is one transaction, as a sweep makes
// it (a point with its full result JSON). Figures, never a pass or fail.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
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

void write_points(benchmark::State& state, store::Store& st) {
  store::RunRecord r;
  r.name = fmt::format("bench-{}-{}", ::getpid(), state.range(0));
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
  for (auto _ : state) {
    auto p = st.add_point(bench_point(*run, *cid, ++conc));
    if (!p) {
      state.SkipWithError(p.error().message.c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PointWrites_Sqlite(benchmark::State& state) {
  TempDir dir("ib-store-bench");
  auto st = store::Store::open(dir.path() / "bench.db");
  if (!st) {
    state.SkipWithError(st.error().message.c_str());
    return;
  }
  write_points(state, *st);
}
BENCHMARK(BM_PointWrites_Sqlite)->Arg(1)->Unit(benchmark::kMicrosecond);

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
  const std::string schema = fmt::format("bench_{}", ::getpid());
  auto admin = store::PgConnection::connect(url);
  if (!admin ||
      !admin->exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " + schema)) {
    state.SkipWithError("cannot make a schema on the server");
    return;
  }
  {
    auto st = store::Store::open(url + "?options=-csearch_path%3D" + schema);
    if (!st) {
      state.SkipWithError(st.error().message.c_str());
      return;
    }
    write_points(state, *st);
  }
  (void)admin->exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
}
BENCHMARK(BM_PointWrites_Postgres)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
