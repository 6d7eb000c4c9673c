// A point that fails says why, on the terminal and in `show`: the first error of each failure
// cause with its count, never a silent retry with other arguments.
#include <fstream>

#include "e2e_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

TEST(SweepFailures, TheFirstErrorOfEachCauseWithItsCount) {
  TempDir dir;
  const fs::path recipe = dir.path() / "recipe.yaml";
  // The server calls its model by another name than the recipe: every request gets a 404.
  std::ofstream(recipe)
      << sim_key_header("bad-model", "recipe-model") +
             "  serve:\n"
             "    command: [inferbench, serve-sim, --timing-model, simple, --model,\n"
             "              other-name, --host, \"{host}\", --port, \"{port}\"]\n"
             "  workload: { prompts-per-conc: 2, warmups-per-conc: 0 }\n"
             "  scenarios:\n"
             "    fixed-seq-len:\n"
             "    - { isl: 32, osl: 8, search-space: [{ tp: 1, conc-list: [2] }] }\n";
  const std::string db = (dir.path() / "runs" / "inferbench.db").string();
  auto r = run_inferbench({"sweep", recipe.string(), "--runs-dir", (dir.path() / "runs").string(),
                           "--startup-timeout", "30", "--point-timeout", "60"},
                          dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  const std::string why =
      "4 of 4 requests failed: 4 \u00d7 http_status: HTTP 404: The model `recipe-model` does not "
      "exist.";
  EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not measured:\n  bad-model isl 32 / osl 8 conc 2: failed: 4 of 4"),
            std::string::npos)
      << r.output;
  // No point succeeded: the run says it measured nothing, and why.
  EXPECT_NE(r.output.find("nothing was measured: every point failed"), std::string::npos)
      << r.output;
  store::Store st = std::move(*store::Store::open_existing(db));
  auto run = st.list_runs()->front();
  auto points = st.points(run.run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 1u);
  const auto& p = points->front();
  EXPECT_EQ(p.status, metrics::PointStatus::kFailed);
  EXPECT_TRUE(p.validity.has(metrics::InvalidKind::kFailureRate));
  // Sent once per request: the result holds exactly the 4 measured requests, all failed.
  EXPECT_EQ(p.headline.get("failed"), 4);
  EXPECT_TRUE(std::isnan(p.headline.get("median_ttft_ms")));  // nothing completed: no latency
  EXPECT_EQ(p.result.at("failures").at("http_status").as_int64(), 4);
  auto show = run_inferbench({"show", "1", "--db", db}, dir.path() / "show.log");
  EXPECT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find(
                "NOT MEASURED OR INVALID\n  bad-model isl 32 / osl 8 conc 2: failed: " + why),
            std::string::npos)
      << show.output;
}

}  // namespace
}  // namespace ib::e2e
