#include "verdict/resample.h"

#include <gtest/gtest.h>

#include "metrics/result.h"

namespace ib::verdict {
namespace {

// Records of a closed loop: request i sent at i·7 ms, first content after 20+i ms, then `out`
// content events 5+(i%3) ms apart; every fifth request fails.
std::vector<metrics::RequestRecord> records(int n) {
  std::vector<metrics::RequestRecord> out;
  for (int i = 0; i < n; ++i) {
    metrics::RequestRecord r;
    r.index = i;
    r.input_len = 32;
    r.output_len = 8;
    r.sched_ns = r.send_ns = 1'000'000 + i * 7'000'000LL;
    int64_t t = r.send_ns + (20 + i) * 1'000'000LL;
    if (i % 5 == 4) {
      r.failure = metrics::FailureCause::kHttpStatus;
      r.done_ns = t;
      out.push_back(r);
      continue;
    }
    for (int k = 0; k < 8; ++k) {
      r.content_ns.push_back(t);
      t += (5 + i % 3) * 1'000'000LL;
    }
    r.done_ns = r.content_ns.back() + 1'000'000;
    r.prompt_tokens = 32;
    r.completion_tokens = 8;
    out.push_back(r);
  }
  return out;
}

TEST(VerdictResample, FullSampleGivesTheHeadlineOfComputeMetrics) {
  const auto rs = records(40);
  metrics::MetricsOptions mo;
  mo.num_gpus = 2;
  const metrics::Headline want =
      metrics::Headline::from_metrics(metrics::compute_metrics(rs, mo), mo);
  const PointResampler resampler(rs, 2);
  const std::vector<uint32_t> once(rs.size(), 1);
  const metrics::Headline got = resampler.headline(once);
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    EXPECT_NEAR(got.at(i), want.at(i), 1e-9 * std::max(1.0, std::fabs(want.at(i))))
        << metrics::kHeadlineMetrics[i].key;
  }
}

// A disaggregated point (prefill and decode GPUs): the full sample gives the point's own
// headline, output per GPU over the decode GPUs as InferenceX divides it.
TEST(VerdictResample, ADisaggregatedPointsOutputPerGpuIsOverItsDecodeGpus) {
  const auto rs = records(40);
  metrics::MetricsOptions mo;
  mo.num_gpus = 3;
  mo.prefill_gpus = 2;
  mo.decode_gpus = 1;
  const metrics::Headline want =
      metrics::Headline::from_metrics(metrics::compute_metrics(rs, mo), mo);
  PointResampler resampler(rs, 3);
  resampler.set_output_gpus(1);
  const metrics::Headline got = resampler.headline(std::vector<uint32_t>(rs.size(), 1));
  EXPECT_NEAR(got.get("output_tput_per_gpu"), want.get("output_tput_per_gpu"),
              1e-9 * want.get("output_tput_per_gpu"));
  EXPECT_NEAR(got.get("output_tput_per_gpu"), got.get("output_throughput"),
              1e-9 * got.get("output_throughput"));
  EXPECT_NEAR(got.get("tput_per_gpu"), got.get("total_token_throughput") / 3,
              1e-9 * got.get("tput_per_gpu"));
}

TEST(VerdictResample, CountsActAsRepeatedRequests) {
  // Drawing request i counts[i] times gives the headline of the records repeated that often.
  const auto rs = records(12);
  std::vector<uint32_t> counts = {0, 3, 1, 0, 2, 0, 1, 1, 0, 2, 1, 1};
  std::vector<metrics::RequestRecord> expanded;
  for (size_t i = 0; i < rs.size(); ++i) {
    for (uint32_t k = 0; k < counts[i]; ++k) expanded.push_back(rs[i]);
  }
  metrics::MetricsOptions mo;
  const metrics::Headline want =
      metrics::Headline::from_metrics(metrics::compute_metrics(expanded, mo), mo);
  const metrics::Headline got = PointResampler(rs, 1).headline(counts);
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    EXPECT_NEAR(got.at(i), want.at(i), 1e-9 * std::max(1.0, std::fabs(want.at(i))))
        << metrics::kHeadlineMetrics[i].key;
  }
}

// With a steady-state window, the full sample gives the point's own steady figures
// (metrics::steady_json): the bootstrap of `compare --window steady` is centred on them.
TEST(VerdictResample, AWindowedFullSampleGivesTheSteadyFigures) {
  const auto rs = records(40);
  const auto w = metrics::find_steady_window(rs, 4);
  ASSERT_TRUE(w);
  metrics::MetricsOptions mo;
  mo.num_gpus = 2;
  const metrics::Headline want = metrics::Headline::from_json(metrics::steady_json(rs, *w, mo, 0));
  const metrics::Headline got =
      PointResampler(rs, 2, w).headline(std::vector<uint32_t>(rs.size(), 1));
  for (size_t i = 0; i < metrics::kHeadlineCount; ++i) {
    EXPECT_NEAR(got.at(i), want.at(i), 1e-9 * std::max(1.0, std::fabs(want.at(i))))
        << metrics::kHeadlineMetrics[i].key;
  }
  // The window leaves the ramp out: its output rate is not the whole run's.
  EXPECT_NE(
      got.get("output_throughput"),
      PointResampler(rs, 2).headline(std::vector<uint32_t>(rs.size(), 1)).get("output_throughput"));
}

}  // namespace
}  // namespace ib::verdict
