#include "govern/gate_policy.h"

#include <gtest/gtest.h>

namespace ib::govern {
namespace {

TEST(GatePolicy, ReadsImagesAndDeprecationsWithTheirLines) {
  const std::string text =
      "upstream-images:\n"
      "  vllm: [\"vllm/vllm-openai:v*\", \"vllm/vllm-openai-rocm:v*\"]\n"
      "  sglang: [\"lmsysorg/sglang:v*\"]\n"
      "deprecated:\n"
      "  models:\n"
      "  - { model: \"meta-llama/Llama-2-*\", from: 2026-01-31, why: superseded }\n"
      "  scenarios:\n"
      "  - { scenario: 1024/8192, from: 2026-06-01 }\n";
  auto p = parse_gate_policy(text, "gate-policy.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->upstream_images.at("vllm").size(), 2u);
  EXPECT_EQ(p->upstream_lines.at("sglang"), 3);
  ASSERT_EQ(p->models.size(), 1u);
  EXPECT_EQ(p->models[0].pattern, "meta-llama/Llama-2-*");
  EXPECT_EQ(p->models[0].from, "2026-01-31");
  EXPECT_EQ(p->models[0].why, "superseded");
  EXPECT_EQ(p->models[0].line, 6);
  ASSERT_EQ(p->scenarios.size(), 1u);
  EXPECT_EQ(p->scenarios[0].pattern, "1024/8192");
}

TEST(GatePolicy, BadFilesNameTheLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"images: {}\n", "p.yaml:1:1: images: unknown field"},
      {"upstream-images: { vllm: [] }\n", "upstream-images.vllm: expected at least one image"},
      {"upstream-images: { vllm: 3 }\n", "upstream-images.vllm"},
      {"deprecated: { models: [ { model: m } ] }\n",
       "deprecated.models[0].from: required field is missing"},
      {"deprecated: { models: [ { model: m, from: 2026-02-30 } ] }\n",
       "p.yaml:1:43: deprecated.models[0].from: expected a date YYYY-MM-DD, got \"2026-02-30\""},
      {"deprecated: { scenarios: [ { scenario: 1k8k, from: soon, when: x } ] }\n",
       "deprecated.scenarios[0].when: unknown field"},
      {"", "p.yaml: empty"},
      {"[a,\n", "p.yaml:"},
  };
  for (const auto& [text, want] : cases) {
    auto p = parse_gate_policy(text, "p.yaml");
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.error().message.find(want), std::string::npos) << p.error().message;
  }
}

TEST(GatePolicy, IsoDates) {
  EXPECT_TRUE(is_iso_date("2024-02-29"));
  EXPECT_FALSE(is_iso_date("2023-02-29"));
  EXPECT_FALSE(is_iso_date("2026-13-01"));
  EXPECT_FALSE(is_iso_date("2026-1-01"));
  EXPECT_FALSE(is_iso_date("2026-01-00"));
}

}  // namespace
}  // namespace ib::govern
