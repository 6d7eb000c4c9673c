// `inferbench sweep --endpoint URL`: a server someone else started. What cannot be observed there
// (its log, its environment reads) is said once, and the points say they are unverified; a model
// the endpoint does not serve is a clear error, not a column of 404s; the table tells rows apart by
// their workload.
#include <fmt/format.h>

#include <fstream>

#include "e2e_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

std::string recipe_text(const std::string& model, const std::string& extra,
                        const std::string& seq_lens) {
  return sim_key_header("ep-key", model) + extra +
         "  scenarios:\n"
         "    fixed-seq-len:\n" +
         seq_lens;
}

const std::string kOneSeqLen =
    "    - { isl: 32, osl: 8, search-space: [{ tp: 4, conc-list: [1, 2] }] }\n";

std::vector<std::string> endpoint_sim_args(const std::string& model) {
  return {"--model",          model, "--timing-model",  "simple",
          "--decode-base-ms", "1",   "--prefill-tok-s", "10000000"};
}

fs::path write_text(const TempDir& dir, const std::string& text) {
  fs::path p = dir.path() / "recipe.yaml";
  std::ofstream(p) << text;
  return p;
}

std::vector<std::string> args(const TempDir& dir, const fs::path& recipe, const std::string& url,
                              std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "sweep", recipe.string(),   "--runs-dir", (dir.path() / "runs").string(), "--endpoint",
      url,     "--point-timeout", "60"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

size_t count_in(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SweepEndpoint, ExpectThatCannotBeObservedIsSaidOnceAndMarksPointsUnverified) {
  TempDir dir;
  SimServer sim(dir.path(), endpoint_sim_args("ep-model"));
  ASSERT_TRUE(sim.running());
  const std::string expect =
      "  expect:\n"
      "    settings: { tensor_parallel_size: 4 }\n"
      "    log-contains: ['Uvicorn running']\n";
  const fs::path recipe = write_text(dir, recipe_text("ep-model", expect, kOneSeqLen));
  auto r = run_inferbench(args(dir, recipe, sim.url()), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  // Said once, with the advice; not "(not set)" as if the server had failed it.
  EXPECT_EQ(count_in(r.output, "expect cannot be checked here"), 1u) << r.output;
  EXPECT_NE(r.output.find("--no-expect"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("(not set)"), std::string::npos) << r.output;
  store::Store db = std::move(*store::Store::open_existing(dir.path() / "runs" / "inferbench.db"));
  auto run = db.list_runs()->front();
  auto points = db.points(run.run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 2u);
  for (const auto& p : *points) {
    EXPECT_EQ(p.status, metrics::PointStatus::kInvalid);
    ASSERT_EQ(p.validity.reasons.size(), 1u);
    EXPECT_EQ(p.validity.reasons[0].kind, metrics::InvalidKind::kExpectUnobservable);
    EXPECT_FALSE(p.validity.reasons[0].advice.empty());
    // Measured all the same: the numbers are there, flagged.
    EXPECT_GT(p.headline.get("output_throughput"), 0);
  }
  // One failure row for the configuration, not one per point.
  auto failures = db.failures(run.run.id);
  ASSERT_TRUE(failures.ok());
  EXPECT_EQ(failures->size(), 1u);

  // --no-expect: measured and valid.
  TempDir dir2;
  const fs::path recipe2 = write_text(dir2, recipe_text("ep-model", expect, kOneSeqLen));
  auto ok = run_inferbench(args(dir2, recipe2, sim.url(), {"--no-expect"}), dir2.path() / "s.log");
  EXPECT_EQ(ok.exit.code, 0) << ok.output;
  EXPECT_EQ(ok.output.find("expect cannot be checked"), std::string::npos) << ok.output;
}

TEST(SweepEndpoint, AModelTheEndpointDoesNotServeIsOneClearError) {
  TempDir dir;
  SimServer sim(dir.path(), endpoint_sim_args("served-model"));
  ASSERT_TRUE(sim.running());
  const fs::path recipe = write_text(dir, recipe_text("recipe-model", "", kOneSeqLen));
  auto r = run_inferbench(args(dir, recipe, sim.url()), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 1) << r.output;
  EXPECT_NE(r.output.find("serves served-model, not the recipe's model 'recipe-model' "
                          "(ep-key.model)"),
            std::string::npos)
      << r.output;
  store::Store db = std::move(*store::Store::open_existing(dir.path() / "runs" / "inferbench.db"));
  auto run = db.list_runs()->front();
  auto points = db.points(run.run.id);
  ASSERT_TRUE(points.ok());
  ASSERT_FALSE(points->empty());
  for (const auto& p : *points) {
    EXPECT_EQ(p.status, metrics::PointStatus::kFailed);
    EXPECT_TRUE(p.result.empty());  // nothing was sent
  }
}

TEST(SweepEndpoint, RowsOfOneKeyAreToldApartByTheirWorkload) {
  TempDir dir;
  SimServer sim(dir.path(), endpoint_sim_args("ep-model"));
  ASSERT_TRUE(sim.running());
  const std::string two =
      "    - { isl: 32, osl: 8, search-space: [{ tp: 1, conc-list: [1] }] }\n"
      "    - { isl: 64, osl: 4, search-space: [{ tp: 1, conc-list: [1] }] }\n";
  const fs::path recipe = write_text(dir, recipe_text("ep-model", "", two));
  auto r = run_inferbench(args(dir, recipe, sim.url()), dir.path() / "sweep.log");
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("workload"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("isl 32 / osl 8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("isl 64 / osl 4"), std::string::npos) << r.output;
  // `show` has the same column.
  auto show =
      run_inferbench({"show", "1", "--db", (dir.path() / "runs" / "inferbench.db").string()},
                     dir.path() / "show.log");
  EXPECT_EQ(show.exit.code, 0) << show.output;
  EXPECT_NE(show.output.find("isl 64 / osl 4"), std::string::npos) << show.output;
}

}  // namespace
}  // namespace ib::e2e
