#include "telemetry/slice_rows.h"

#include <gtest/gtest.h>

#include <limits>

namespace ib::telemetry {
namespace {

TEST(TimesliceRows, ServerThenClientWithTheirColumnsAndTheWholeSliceAsData) {
  ServerSlice s;
  s.index = 2;
  s.start_s = 1.0;
  s.end_s = 1.5;
  s.running = 7;
  s.waiting = 3;
  s.kv_usage = 0.25;
  s.prefix_hit_rate = 0.5;
  s.preemptions = 1;
  s.prompt_tokens_per_s = 1000;
  s.generation_tokens_per_s = 250;
  s.spec_acceptance_length = 2.5;
  ClientSlice c;
  c.index = 0;
  c.start_s = 0;
  c.end_s = 0.5;
  c.started = 4;
  c.finished = 2;
  c.output_tokens = 64;
  c.mean_ttft_ms = 12.5;
  c.mean_inverse_tpot = 40;

  const auto rows = timeslice_rows({s}, {c});
  ASSERT_EQ(rows.size(), 2u);
  const metrics::TimesliceRow& r = rows[0];
  EXPECT_EQ(r.source, "server");
  EXPECT_EQ(r.slice, 2);
  EXPECT_DOUBLE_EQ(r.start_s, 1.0);
  EXPECT_DOUBLE_EQ(r.end_s, 1.5);
  EXPECT_EQ(r.running, 7);
  EXPECT_EQ(r.waiting, 3);
  EXPECT_EQ(r.kv_usage, 0.25);
  EXPECT_EQ(r.prefix_hit_rate, 0.5);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.prompt_tps, 1000);
  EXPECT_EQ(r.generation_tps, 250);
  EXPECT_EQ(r.spec_acceptance, 2.5);
  EXPECT_FALSE(r.started.has_value());
  EXPECT_EQ(r.data.at("running").as_double(), 7);
  EXPECT_EQ(r.data.at("index").as_int64(), 2);

  const metrics::TimesliceRow& k = rows[1];
  EXPECT_EQ(k.source, "client");
  EXPECT_EQ(k.started, 4);
  EXPECT_EQ(k.finished, 2);
  EXPECT_EQ(k.output_tokens, 64);
  EXPECT_EQ(k.mean_ttft_ms, 12.5);
  EXPECT_EQ(k.mean_intvty, 40);
  EXPECT_FALSE(k.running.has_value());
  EXPECT_EQ(k.data.at("output_tokens").as_int64(), 64);
}

TEST(TimesliceRows, AValueThatIsNotFiniteIsStoredAsNullAsItsJsonIs) {
  ServerSlice s;
  s.running = std::numeric_limits<double>::quiet_NaN();
  s.prompt_tokens_per_s = std::numeric_limits<double>::infinity();
  ClientSlice c;
  c.mean_ttft_ms = std::numeric_limits<double>::quiet_NaN();
  const auto rows = timeslice_rows({s}, {c});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].running.has_value());
  EXPECT_FALSE(rows[0].prompt_tps.has_value());
  EXPECT_TRUE(rows[0].data.at("running").is_null());
  EXPECT_FALSE(rows[1].mean_ttft_ms.has_value());
  EXPECT_TRUE(timeslice_rows({}, {}).empty());
}

}  // namespace
}  // namespace ib::telemetry
