#include "sim/spec_decode.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ib::sim {
namespace {

TEST(SpecDecode, AcceptanceAndLengthAreInverse) {
  EXPECT_DOUBLE_EQ(acceptance_length(0, 3), 1);
  EXPECT_DOUBLE_EQ(acceptance_length(1, 3), 4);
  EXPECT_DOUBLE_EQ(acceptance_length(0.5, 3), 1.875);
  for (double al : {1.0, 1.3, 2.5, 3.2, 4.0}) {
    const double p = acceptance_for_length(al, 3);
    EXPECT_NEAR(acceptance_length(p, 3), al, 1e-9) << al;
  }
  EXPECT_NEAR(acceptance_length(acceptance_for_length(2.5, 1), 1), 2.0, 1e-9);  // capped at K+1
}

// The drawn steps realise the acceptance length: a fixed seed, so the figure is exact run to run.
TEST(SpecDecode, DrawsRealiseTheAcceptanceLength) {
  SpecDecodeConfig c;
  c.num_speculative_tokens = 3;
  c.acceptance = acceptance_for_length(2.5, 3);
  std::mt19937_64 rng(42);
  SpecDecodeCounters n;
  for (int i = 0; i < 200000; ++i) n.count(draw_accepted(rng, c), 3);
  EXPECT_EQ(n.drafts, 200000);
  EXPECT_EQ(n.draft_tokens, 600000);
  const double al = 1.0 + static_cast<double>(n.accepted) / static_cast<double>(n.drafts);
  EXPECT_NEAR(al, 2.5, 0.01);
  // Position j is accepted only after j-1: per-position counts fall, and sum to the accepted.
  ASSERT_EQ(n.accepted_per_pos.size(), 3u);
  EXPECT_GT(n.accepted_per_pos[0], n.accepted_per_pos[1]);
  EXPECT_GT(n.accepted_per_pos[1], n.accepted_per_pos[2]);
  EXPECT_EQ(n.accepted_per_pos[0] + n.accepted_per_pos[1] + n.accepted_per_pos[2], n.accepted);
  c.acceptance = 0;
  EXPECT_EQ(draw_accepted(rng, c), 0);
  c.acceptance = 1;
  EXPECT_EQ(draw_accepted(rng, c), 3);
}

TEST(SpecDecode, ValidateNamesTheSetting) {
  EXPECT_TRUE(validate(SpecDecodeConfig{}).ok());
  SpecDecodeConfig c;
  c.num_speculative_tokens = kMaxSpeculativeTokens + 1;
  EXPECT_NE(validate(c).error().message.find("num_speculative_tokens"), std::string::npos);
  c.num_speculative_tokens = 3;
  c.acceptance = 1.5;
  EXPECT_NE(validate(c).error().message.find("acceptance"), std::string::npos);
  c.acceptance = 0.5;
  c.draft_ms = std::nan("");
  EXPECT_NE(validate(c).error().message.find("draft_ms"), std::string::npos);
}

}  // namespace
}  // namespace ib::sim
