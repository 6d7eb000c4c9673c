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

// vLLM's --per-request-spec-decode-metrics summary, byte for byte in its key order: the
// histogram counts steps by exactly how many drafts they accepted (the example in vLLM's pull
// request: 43 steps, 10 accepted of 129 drafted).
TEST(SpecDecode, ARequestsCountersAsVllmReturnsThem) {
  SpecDecodeCounters c;
  for (int i = 0; i < 39; ++i) c.count(0, 3);
  c.count(1, 3);
  for (int i = 0; i < 3; ++i) c.count(3, 3);
  EXPECT_EQ(request_spec_metrics_json(c, 3),
            R"({"speculative_decoding":{"mean_acceptance_length":1.2325581395348837,)"
            R"("draft_acceptance_rate":0.07751937984496124,"acceptance_histogram":[39,1,0,3],)"
            R"("num_spec_steps":43,"num_accepted_draft_tokens":10,"num_draft_tokens":129,)"
            R"("num_spec_tokens":3}})");
  EXPECT_EQ(request_spec_metrics_json(SpecDecodeCounters{}, 3), "");  // never speculated
}

}  // namespace
}  // namespace ib::sim

namespace ib::sim {
namespace {

// A pinned AL is realised as the engines' synthetic acceptance: floor(AL - 1) drafts every step
// and one more with probability frac(AL - 1), so a step yields 2 or 3 tokens at AL 2.45 and the
// mean converges with the least variance (per position, the same AL spreads over 1..4).
TEST(SpecDecode, APinnedLengthAcceptsItsWholePartEveryStep) {
  SpecDecodeConfig c{.num_speculative_tokens = 3,
                     .acceptance = acceptance_for_length(2.45, 3),
                     .pinned_length = 2.45,
                     .draft_ms = 0};
  ASSERT_TRUE(validate(c).ok());
  std::mt19937_64 rng(7);
  SpecDecodeCounters n;
  for (int i = 0; i < 100000; ++i) {
    const int a = draw_accepted(rng, c);
    ASSERT_TRUE(a == 1 || a == 2) << a;
    n.count(a, 3);
  }
  EXPECT_NEAR(1.0 + static_cast<double>(n.accepted) / static_cast<double>(n.drafts), 2.45, 0.01);
  EXPECT_EQ(n.accepted_per_pos[0], n.drafts);
  EXPECT_EQ(n.accepted_per_pos[2], 0);
  c.pinned_length = 4;  // every draft accepted
  EXPECT_EQ(draw_accepted(rng, c), 3);
  c.pinned_length = 4.5;
  EXPECT_FALSE(validate(c).ok());
}

}  // namespace
}  // namespace ib::sim
