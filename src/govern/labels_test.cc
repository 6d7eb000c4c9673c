#include "govern/labels.h"

#include <gtest/gtest.h>

#include "recipe/matrix.h"
#include "recipe/recipe.h"

namespace ib::govern {
namespace {

const std::string kInferenceXData = INFERBENCH_TEST_DATA "/inferencex";

std::vector<recipe::RecipeRow> real_rows() {
  auto entries =
      recipe::load_master_configs({kInferenceXData + "/amd-master.yaml", kInferenceXData + "/nvidia-master.yaml"});
  EXPECT_TRUE(entries.ok());
  auto runners = recipe::load_runners(kInferenceXData + "/runners.yaml");
  return recipe::expand(*entries, runners.ok() ? &*runners : nullptr);
}

TEST(Labels, ExactlyOnePrimaryLabel) {
  struct Case {
    std::vector<std::string> in;
    std::string error;  // substring; empty: valid
  } cases[] = {
      {{"sweep-enabled"}, ""},
      {{"full-sweep-fail-fast,all-evals"}, ""},
      {{"full-sweep-enabled", "skip_queue", "ci-patchwork"}, ""},
      {{}, "exactly one primary label is needed"},
      {{"all-evals"}, "exactly one primary label is needed"},
      {{"sweep-enabled,full-sweep-enabled"}, "exactly one primary label is allowed"},
      {{"sweep-enabld"}, "unknown label 'sweep-enabld'"},
      {{"sweep-enabled", "evals-only", "agentx-fast"}, "contradicts"},
  };
  for (const auto& c : cases) {
    auto l = parse_labels(c.in);
    if (c.error.empty()) {
      EXPECT_TRUE(l.ok()) << l.error().message;
    } else {
      ASSERT_FALSE(l.ok());
      EXPECT_NE(l.error().message.find(c.error), std::string::npos) << l.error().message;
    }
  }
}

TEST(Labels, PrimaryLabelTable) {
  struct Case {
    const char* label;
    bool trim, canary, fail_fast;
  } cases[] = {
      {"sweep-enabled", true, false, false},
      {"full-sweep-fail-fast", false, true, true},
      {"full-sweep-enabled", false, true, false},
      {"full-sweep-fail-fast-no-canary", false, false, true},
      {"non-canary-full-sweep-enabled", false, false, false},
  };
  for (const auto& c : cases) {
    auto l = parse_labels({c.label});
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->trim_conc(), c.trim) << c.label;
    EXPECT_EQ(l->canary(), c.canary) << c.label;
    EXPECT_EQ(l->fail_fast(), c.fail_fast) << c.label;
  }
}

TEST(SweepPlan, TrimKeepsTheLowestConcurrencyPerCurve) {
  auto rows = real_rows();
  auto trimmed = trim_concurrency(rows);
  std::set<std::string> fingerprints;
  for (const auto& r : rows) fingerprints.insert(r.fingerprint);
  size_t single = 0;
  for (const auto& r : trimmed) {
    if (r.multinode) {
      EXPECT_EQ(r.fields.at("conc").as_array().size(), 1u);
    } else {
      ++single;
    }
  }
  // One single-node row per curve; every curve still present.
  std::set<std::string> kept;
  for (const auto& r : trimmed) kept.insert(r.fingerprint);
  EXPECT_EQ(kept, fingerprints);
  EXPECT_LT(trimmed.size(), rows.size());
  // Spot check: the first key's first curve keeps conc-start.
  const auto& first = trimmed.front();
  EXPECT_EQ(first.config_key, "dsr1-fp4-mi355x-sglang");
  EXPECT_EQ(first.fields.at("conc").as_int64(), rows.front().fields.at("conc").as_int64());
  EXPECT_GT(single, 0u);
}

TEST(SweepPlan, CanaryIsTheLowestConcurrencySingleNodeRowAndLeavesTheRest) {
  auto rows = real_rows();
  auto plan = make_sweep_plan(rows, *parse_labels({"full-sweep-fail-fast"}));
  ASSERT_TRUE(plan.canary.has_value());
  int64_t canary_conc = plan.canary->fields.at("conc").as_int64();
  for (const auto& r : rows) {
    if (r.multinode || r.scenario != recipe::Scenario::kFixedSeqLen) continue;
    EXPECT_GE(r.fields.at("conc").as_int64(), canary_conc);
  }
  EXPECT_EQ(plan.throughput_rows(), rows.size());  // canary + the rest
  for (const auto& g : plan.groups) {
    EXPECT_TRUE(g.fail_fast) << g.name;
    for (const auto& r : g.rows) {
      if (!g.eval) {
        EXPECT_FALSE(r.fields.at("run-eval").as_bool());
      }
    }
  }
  auto no_canary = make_sweep_plan(rows, *parse_labels({"non-canary-full-sweep-enabled"}));
  EXPECT_FALSE(no_canary.canary.has_value());
  for (const auto& g : no_canary.groups) EXPECT_FALSE(g.fail_fast);
}

TEST(SweepPlan, EvalRowsFollowTheMarksAndLabels) {
  auto rows = real_rows();
  size_t marked = 0;
  for (const auto& r : rows) {
    const auto* e = r.fields.if_contains("run-eval");
    if ((e && e->as_bool()) || r.fields.contains("eval-conc")) ++marked;
  }
  ASSERT_GT(marked, 0u);
  auto plan = make_sweep_plan(rows, *parse_labels({"full-sweep-enabled"}));
  EXPECT_EQ(plan.eval_rows(), marked);
  EXPECT_EQ(plan.groups.back().name, "evals");

  auto only = make_sweep_plan(rows, *parse_labels({"full-sweep-enabled", "evals-only"}));
  EXPECT_EQ(only.throughput_rows(), 0u);
  EXPECT_FALSE(only.canary.has_value());
  EXPECT_EQ(only.eval_rows(), marked);

  auto all = make_sweep_plan(rows, *parse_labels({"full-sweep-enabled", "all-evals"}));
  EXPECT_GT(all.eval_rows(), marked);

  auto fast = make_sweep_plan(rows, *parse_labels({"sweep-enabled", "agentx-fast"}));
  EXPECT_EQ(fast.eval_rows(), 0u);
  for (const auto& g : fast.groups) {
    for (const auto& r : g.rows) EXPECT_EQ(r.scenario, recipe::Scenario::kAgenticCoding);
  }
}

TEST(SweepPlan, FamiliesSplitBySequenceAndNodeCount) {
  auto plan = make_sweep_plan(real_rows(), *parse_labels({"non-canary-full-sweep-enabled"}));
  std::set<std::string> names;
  for (const auto& g : plan.groups) names.insert(g.name);
  // The snapshot: single-node 8k1k (690 rows), agentic (482), multi-node 8k1k (383), multi-node
  // agentic (264) and one multi-node 1k1k row.
  EXPECT_EQ(names, (std::set<std::string>{"single-node-8k1k", "agentic", "multi-node-8k1k",
                                          "multi-node-agentic", "multi-node-1k1k", "evals"}));
  for (const auto& g : plan.groups) {
    if (g.name == "single-node-8k1k") {
      EXPECT_EQ(g.rows.size(), 690u);
    } else if (g.name == "multi-node-1k1k") {
      EXPECT_EQ(g.rows.size(), 1u);
    }
  }
  auto j = plan.to_json();
  EXPECT_EQ(j.at("labels").as_array().at(0).as_string(), "non-canary-full-sweep-enabled");
  EXPECT_TRUE(j.at("canary").is_null());
}

}  // namespace
}  // namespace ib::govern
