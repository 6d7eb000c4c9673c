// Eval thresholds in InferenceX's shape: parsing, errors naming file:line:column and field, and
// the resolution order models.<prefix>.<task> -> default.<task> -> --min-score.
#include "recipe/eval_thresholds.h"

#include <gtest/gtest.h>

namespace ib::recipe {
namespace {

TEST(EvalThresholds, ResolvesModelThenDefaultThenFallback) {
  auto t = parse_eval_thresholds(
      "default:\n  gsm8k: 0.90\n  gpqa_diamond_cot_n_shot: 0.30\nmodels:\n  dsr1:\n    gsm8k: "
      "0.91\n  glm5: { gsm8k: 0.94 }\n",
      "t.yaml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto r = t->resolve("dsr1", "gsm8k", 0.85);
  EXPECT_DOUBLE_EQ(r.value, 0.91);
  EXPECT_EQ(r.source, "models.dsr1.gsm8k in t.yaml");
  r = t->resolve("llama", "gsm8k", 0.85);
  EXPECT_DOUBLE_EQ(r.value, 0.90);
  EXPECT_EQ(r.source, "default.gsm8k in t.yaml");
  r = t->resolve("dsr1", "gpqa_diamond_cot_n_shot", 0.85);
  EXPECT_DOUBLE_EQ(r.value, 0.30);
  r = t->resolve("", "swebench_lite", 0.85);
  EXPECT_DOUBLE_EQ(r.value, 0.85);
  EXPECT_EQ(r.source, "--min-score");
  // No file at all: the fallback.
  EXPECT_EQ(EvalThresholds{}.resolve("dsr1", "gsm8k", 0.7).source, "--min-score");
}

TEST(EvalThresholds, BadDocumentsNameFileLineAndField) {
  auto out_of_range = parse_eval_thresholds("default:\n  gsm8k: 1.5\n", "t.yaml");
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.error().message.find("t.yaml:2:10: default.gsm8k"), std::string::npos)
      << out_of_range.error().message;
  auto unknown = parse_eval_thresholds("defaults:\n  gsm8k: 0.9\n", "t.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("t.yaml:1:1"), std::string::npos)
      << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("defaults"), std::string::npos);
  auto text = parse_eval_thresholds("models:\n  dsr1:\n    gsm8k: high\n", "t.yaml");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("t.yaml:3:12: models.dsr1.gsm8k"), std::string::npos)
      << text.error().message;
  auto empty = parse_eval_thresholds("# nothing\n", "t.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("t.yaml: empty"), std::string::npos);
  auto syntax = parse_eval_thresholds("default: [\n", "t.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.error().message.find("t.yaml:"), std::string::npos);
  auto missing = load_eval_thresholds("/nonexistent/thresholds.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/thresholds.yaml"), std::string::npos);
}

}  // namespace
}  // namespace ib::recipe
