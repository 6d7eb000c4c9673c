#include "metrics/steady.h"

#include <gtest/gtest.h>

#include "metrics/result.h"

namespace ib::metrics {
namespace {

constexpr int64_t kSteadyMs = 1'000'000;

// A request sent at `send` ms and done at `done` ms, with one content event per ms from
// send + 1 (ten output tokens at most), each counted by the server's usage.
RequestRecord steady_request(int64_t send, int64_t done) {
  RequestRecord r;
  r.input_len = 100;
  r.send_ns = send * kSteadyMs;
  r.sched_ns = r.send_ns;
  r.done_ns = done * kSteadyMs;
  for (int64_t t = send + 1; t <= done; ++t) r.content_ns.push_back(t * kSteadyMs);
  r.completion_tokens = static_cast<int64_t>(r.content_ns.size());
  r.prompt_tokens = 100;
  return r;
}

// A closed loop of 4 lanes that ramps up (lanes start at 10, 20, 30, 40 ms), runs, and drains
// (lanes stop at 110, 120, 130, 140 ms): 4 in flight from 40 ms to 110 ms.
std::vector<RequestRecord> steady_ramp() {
  std::vector<RequestRecord> out;
  for (int lane = 0; lane < 4; ++lane) {
    for (int64_t t = 10 + lane * 10; t < 110 + lane * 10; t += 10) {
      out.push_back(steady_request(t, t + 10));
    }
  }
  return out;
}

TEST(Steady, TheWindowIsWhereTheTargetConcurrencyWasInFlight) {
  const auto records = steady_ramp();
  auto w = find_steady_window(records, 4);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->threshold, 4);  // ⌈0.95 · 4⌉
  EXPECT_EQ(w->start_ns, 40 * kSteadyMs);
  EXPECT_EQ(w->end_ns, 110 * kSteadyMs);
  // Requests that end as the next one starts leave no moment below the target.
  EXPECT_TRUE(inside(steady_request(50, 60), *w));
  EXPECT_FALSE(inside(steady_request(35, 45), *w));
  // Six of steady_request(35, 45)'s ten events (40..45 ms) are in the window.
  EXPECT_DOUBLE_EQ(tokens_in_window(steady_request(35, 45), *w), 6);

  // No target (an open loop without a cap), a target never reached: no window.
  EXPECT_FALSE(find_steady_window(records, 0));
  EXPECT_FALSE(find_steady_window(records, 5));
  EXPECT_FALSE(find_steady_window({}, 4));
}

TEST(Steady, ThroughputIsTheWindowsAndLatencyTheRequestsInsideIt) {
  const auto records = steady_ramp();
  const auto w = find_steady_window(records, 4);
  ASSERT_TRUE(w);
  MetricsOptions o;
  const auto j = steady_json(records, *w, o, 0);
  // Four lanes each emit one token a ms: 4000 tok/s, while the whole run (10..140 ms) averages
  // 4 · 100 tokens over 130 ms.
  EXPECT_NEAR(j.at("output_throughput").as_double(), 4000, 4000 * 0.02);
  const auto whole = metrics_to_json(compute_metrics(records, o), o);
  EXPECT_NEAR(whole.at("output_throughput").as_double(), 400.0 / 0.13, 1);
  EXPECT_DOUBLE_EQ(j.at("window_start_s").as_double(), 0.040);
  EXPECT_DOUBLE_EQ(j.at("duration_s").as_double(), 0.070);
  EXPECT_NEAR(j.at("share_of_run").as_double(), 70.0 / 130, 1e-9);
  // Sent at 40 ms or later and done by 110 ms: those sent at 40..100 ms, 7 in each lane.
  EXPECT_EQ(j.at("requests_inside").as_int64(), 4 * 7);
  EXPECT_DOUBLE_EQ(j.at("median_ttft_ms").as_double(), 1);
  EXPECT_DOUBLE_EQ(j.at("median_tpot_ms").as_double(), 1);
  EXPECT_EQ(j.at("completed").as_int64(), j.at("requests_inside").as_int64());
}

}  // namespace
}  // namespace ib::metrics
