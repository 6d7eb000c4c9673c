#include "sweep/gate_runs.h"

#include <gtest/gtest.h>

#include "core/temp_dir.h"

namespace ib::sweep {
namespace {

namespace json = boost::json;
using govern::GateVerdict;

constexpr const char* kBaseRev = "1111111111111111111111111111111111111111";
constexpr const char* kHeadRev = "2222222222222222222222222222222222222222";

recipe::RecipeRow gate_row(const std::string& fingerprint, int64_t conc,
                           const std::string& spec = "none",
                           recipe::Scenario scenario = recipe::Scenario::kFixedSeqLen) {
  recipe::RecipeRow r;
  r.config_key = "k";
  r.scenario = scenario;
  r.fingerprint = fingerprint;
  r.fields = {{"exp-name", "m_1k1k"}, {"tp", 8}, {"conc", conc}, {"spec-decoding", spec}};
  return r;
}

// A store with runs, and a gate context whose one key `k` changed from fingerprint "fb" (base)
// to "fh" (head) at concurrency 4.
class GateRunsTest : public ::testing::Test {
 protected:
  TempDir dir{"ib-gate-runs"};
  store::Store db = std::move(*store::Store::open(dir.path() / "r.db"));
  govern::ChangedReport changed;
  govern::GateContext ctx;
  govern::GateReport report;

  void SetUp() override {
    changed.keys.push_back({"k", "modified", "recipes/k.yaml", {}});
    ctx.changed = &changed;
    ctx.range = {kHeadRev};
    ctx.base_rows = {gate_row("fb", 4)};
    ctx.head_rows = {gate_row("fh", 4)};
    for (int n = 1; n <= 10; ++n) {
      govern::GateCheck c;
      c.number = n;
      c.verdict = n == 8 ? GateVerdict::kCannotDecide : GateVerdict::kPass;
      c.summary = "text";
      report.checks.push_back(c);
    }
  }

  int64_t run(const std::string& rev, std::vector<std::string> labels = {}) {
    store::RunRecord r;
    r.name = "run-" + std::to_string(++runs_);
    r.git_revision = rev;
    r.labels = std::move(labels);
    return *db.begin_run(r);
  }
  int64_t config(int64_t run_id, const std::string& fingerprint, json::object settings = {},
                 json::object env_reads = {}) {
    store::ServerConfigRecord c;
    c.run_id = run_id;
    c.config_key = "k";
    c.fingerprint = fingerprint;
    c.row = {{"image", "img:1"}, {"fp", fingerprint}};
    if (!settings.empty()) c.effective_config = {{"settings", std::move(settings)}};
    c.env_reads = std::move(env_reads);
    return *db.add_server_config(c);
  }
  int64_t point(int64_t run_id, int64_t config_id, const std::string& api = "completions",
                json::object result = {}) {
    store::PointRecord p;
    p.run_id = run_id;
    p.server_config_id = config_id;
    p.concurrency = 4;
    p.workload_key = "fixed-seq-len:{\"api\":\"" + api + "\",\"isl\":1024}";
    p.result = std::move(result);
    return *db.add_point(p);
  }
  const govern::GateCheck& decide(int n, const GateRunOptions& o = {}) {
    EXPECT_TRUE(decide_gate_runs(ctx, db, o, report).ok());
    return govern::check_of(report, n);
  }

 private:
  int runs_ = 0;
};

TEST_F(GateRunsTest, CheckOneNeedsAValidPointOfTheHeadsConfigurationAtACommitInTheRange) {
  EXPECT_EQ(decide(1).verdict, GateVerdict::kFail);  // no run at all
  EXPECT_NE(report.checks[0].evidence.at(0).what.find("no run of this configuration"),
            std::string::npos);
  // The head's configuration, but measured outside the range; then another configuration in it.
  const int64_t old = run(kBaseRev);
  point(old, config(old, "fh"));
  const int64_t other = run(kHeadRev);
  point(other, config(other, "fx"));
  EXPECT_EQ(decide(1).verdict, GateVerdict::kFail);
  EXPECT_NE(report.checks[0].evidence.at(0).what.find("fingerprint fx"), std::string::npos)
      << report.checks[0].evidence.at(0).what;
  const int64_t good = run(kHeadRev);
  point(good, config(good, "fh"));
  EXPECT_EQ(decide(1).verdict, GateVerdict::kPass) << report.checks[0].summary;
}

TEST_F(GateRunsTest, SpeculatingRowsMustGoThroughChatCompletions) {
  EXPECT_EQ(decide(6).verdict, GateVerdict::kNotApplicable);
  ctx.head_rows = {gate_row("fh", 4, "mtp")};
  EXPECT_EQ(decide(6).verdict, GateVerdict::kCannotDecide);  // no point stored
  const int64_t r = run(kHeadRev);
  const int64_t c = config(r, "fh");
  point(r, c, "completions");
  const auto& six = decide(6);
  EXPECT_EQ(six.verdict, GateVerdict::kFail);
  ASSERT_EQ(six.evidence.size(), 1u);
  EXPECT_NE(six.evidence[0].what.find("sent as completions"), std::string::npos);
  const int64_t r2 = run(kHeadRev);
  point(r2, config(r2, "fh"), "chat");
  EXPECT_EQ(decide(6).verdict, GateVerdict::kFail);  // the completions point still counts
  // Runs outside the range are not read: nothing to decide from.
  ctx.range = {kBaseRev};
  EXPECT_EQ(decide(6).verdict, GateVerdict::kCannotDecide);
}

TEST_F(GateRunsTest, ReuseOnlyOfARunInTheRangeAndNeverUnderEvalsOnly) {
  EXPECT_EQ(decide(3).verdict, GateVerdict::kNotApplicable);
  const int64_t head = run(kHeadRev, {"evals-only"});
  point(head, config(head, "fh"));
  GateRunOptions o;
  o.reuse = std::to_string(head);
  const auto& three = decide(3, o);
  EXPECT_EQ(three.verdict, GateVerdict::kFail);
  EXPECT_NE(three.evidence.at(0).what.find("evals-only is applied"), std::string::npos);
  const int64_t ok = run(kHeadRev);
  point(ok, config(ok, "fh"));
  o.reuse = std::to_string(ok);
  EXPECT_EQ(decide(3, o).verdict, GateVerdict::kPass) << report.checks[2].summary;
  o.reuse = "no-such-run";
  EXPECT_EQ(decide(3, o).verdict, GateVerdict::kFail);
}

TEST_F(GateRunsTest, TheEffectIsJudgedFromStoredBaseAndHeadServersAndNeverPassesUnobserved) {
  EXPECT_EQ(decide(10).verdict, GateVerdict::kCannotDecide);  // nothing stored
  const int64_t b = run(kBaseRev);
  const int64_t h = run(kHeadRev);
  point(h, config(h, "fh", {{"max_num_seqs", 8}}));
  config(b, "fb");  // the base server stored no effective configuration: not observed
  EXPECT_EQ(decide(10).verdict, GateVerdict::kCannotDecide) << report.checks[9].summary;
  const int64_t b2 = run(kBaseRev);
  config(b2, "fb", {{"max_num_seqs", 256}});
  EXPECT_EQ(decide(10).verdict, GateVerdict::kPass) << report.checks[9].summary;
}

TEST_F(GateRunsTest, ServedArchitectureEngineWritesAndRealisedAcceptanceFromTheRuns) {
  const int64_t b = run(kBaseRev);
  config(b, "fb", {{"num_hidden_layers", 62}});
  const int64_t h = run(kHeadRev);
  json::object writes{
      {"variables", json::object()},
      {"engine_writes", json::array{json::object{{"path", "/venv/site-packages/vllm/attn.py"},
                                                 {"exe", "/usr/bin/sed"}}}}};
  const int64_t hc = config(h, "fh", {{"num_hidden_layers", 40}}, writes);
  point(
      h, hc, "chat",
      {{"spec_acceptance",
        json::object{{"passed", false}, {"realised", 1.9}, {"golden", 2.6}, {"tolerance", 0.1}}}});
  ctx.head_rows = {gate_row("fh", 4, "mtp", recipe::Scenario::kAgenticCoding)};
  EXPECT_TRUE(decide_gate_runs(ctx, db, {}, report).ok());
  const auto& five = govern::check_of(report, 5);
  EXPECT_EQ(five.verdict, GateVerdict::kFail);
  ASSERT_EQ(five.evidence.size(), 1u);
  EXPECT_NE(five.evidence[0].what.find("62 at base, 40 at head"), std::string::npos);
  const auto& seven = govern::check_of(report, 7);
  EXPECT_EQ(seven.verdict, GateVerdict::kFail);
  EXPECT_EQ(seven.evidence.at(0).text, "/venv/site-packages/vllm/attn.py");
  const auto& eight = govern::check_of(report, 8);
  EXPECT_EQ(eight.verdict, GateVerdict::kFail);
  EXPECT_NE(eight.evidence.at(0).what.find("realised acceptance length 1.9"), std::string::npos);
  // A waiver naming the file: the write is waived, the check passes on it.
  ctx.waivers = {"We patch attn.py until vllm#1 lands."};
  govern::check_of(report, 7).verdict = GateVerdict::kPass;
  EXPECT_EQ(decide(7).verdict, GateVerdict::kPass) << report.checks[6].summary;
}

}  // namespace
}  // namespace ib::sweep
