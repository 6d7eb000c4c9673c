#include "load/trace_fidelity.h"

#include <gtest/gtest.h>

namespace ib::load {
namespace {

metrics::RequestRecord record(int64_t index, int64_t lag_us, int in, int server_in, int out,
                              int server_out) {
  metrics::RequestRecord r;
  r.index = index;
  r.sched_ns = 1'000'000'000 + index * 1'000'000;
  r.send_ns = r.sched_ns + lag_us * 1000;
  r.input_len = in;
  r.output_len = out;
  r.prompt_tokens = server_in;
  r.completion_tokens = server_out;
  return r;
}

workload::TracePlanInfo plan() {
  workload::TracePlanInfo p;
  p.block_size = 16;
  p.time_scale = 0.5;
  p.theoretical_hit_tokens = {0, 32, 16};
  p.span_s = 2;
  return p;
}

TEST(TraceFidelity, AFaithfulReplayIsValidAndSaysWhatItMeasured) {
  const std::vector<metrics::RequestRecord> records = {
      record(0, 100, 64, 64, 8, 8), record(1, 300, 64, 64, 8, 8), record(2, 200, 32, 32, 4, 4)};
  const auto p = plan();
  FidelityInput in{&records, &p, 3, 0, 2, 0.25};
  const Fidelity f = trace_fidelity(in);
  EXPECT_TRUE(f.invalid.empty());
  EXPECT_TRUE(f.json.at("valid").as_bool());
  const auto& a = f.json.at("arrivals").as_object();
  EXPECT_NEAR(a.at("lag_p50_ms").as_double(), 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(a.at("rate_factor").as_double(), 2.0);
  EXPECT_DOUBLE_EQ(a.at("target_rate").as_double(), 2.0);  // 2 gaps over 2 s × 0.5
  EXPECT_EQ(f.json.at("input_tokens").at("exact").as_int64(), 3);
  // 48 of 160 input tokens were hits in theory; the server said 25 %.
  const auto& c = f.json.at("prefix_cache").as_object();
  EXPECT_DOUBLE_EQ(c.at("theoretical_hit_pct").as_double(), 30.0);
  EXPECT_DOUBLE_EQ(c.at("difference_points").as_double(), -5.0);
}

TEST(TraceFidelity, LagDriftAndShortOutputsAreReasons) {
  const std::vector<metrics::RequestRecord> records = {record(0, 100, 64, 70, 8, 8),
                                                       record(1, 50'000, 64, 64, 8, 3),
                                                       record(2, 40'000, 32, 32, 4, 4)};
  const auto p = plan();
  FidelityInput in{&records, &p, 4, 0, 2, std::nullopt};
  const Fidelity f = trace_fidelity(in);
  std::vector<std::string> reasons;
  for (const auto& r : f.invalid) reasons.push_back(r.reason);
  EXPECT_EQ(reasons, (std::vector<std::string>{"trace_arrival_lag", "trace_input_drift",
                                               "trace_output_short"}));
  EXPECT_NE(f.invalid[1].message.find("1 of 3 requests"), std::string::npos)
      << f.invalid[1].message;
  EXPECT_NE(f.invalid[2].message.find("max 5 short"), std::string::npos) << f.invalid[2].message;
  EXPECT_EQ(f.json.at("arrivals").at("not_sent").as_int64(), 1);
  EXPECT_TRUE(f.json.at("prefix_cache").at("server_hit_pct").is_null());
  // A cap that held requests explains their lag: not a reason then.
  FidelityInput capped{&records, &p, 3, 2, 2, std::nullopt};
  for (const auto& r : trace_fidelity(capped).invalid) EXPECT_NE(r.reason, "trace_arrival_lag");
  // Words (chat without a tokenizer) are approximate by construction: no drift reason.
  auto words = p;
  words.prompt_mode = workload::TracePromptMode::kWords;
  FidelityInput w{&records, &words, 3, 0, 2, std::nullopt};
  for (const auto& r : trace_fidelity(w).invalid) EXPECT_NE(r.reason, "trace_input_drift");
}

}  // namespace
}  // namespace ib::load
