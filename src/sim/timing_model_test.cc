#include "sim/timing_model.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace ib::sim {
namespace {

TEST(SimpleTimingModel, Formulas) {
  SimpleTimingModel m(SimpleTimingParams{});  // defaults: 20000 tok/s, 2 ms, 5 ms, 0.1 ms
  EXPECT_DOUBLE_EQ(m.prefill_seconds(1000, 1), 0.002 + 1000.0 / 20000.0);
  EXPECT_DOUBLE_EQ(m.prefill_seconds(1000, 50), m.prefill_seconds(1000, 1));
  EXPECT_DOUBLE_EQ(m.decode_step_seconds(1), 0.0051);
  EXPECT_DOUBLE_EQ(m.decode_step_seconds(100), 0.015);

  SimpleTimingModel custom(SimpleTimingParams{1000.0, 0.0, 10.0, 1.0});
  EXPECT_DOUBLE_EQ(custom.prefill_seconds(500, 3), 0.5);
  EXPECT_DOUBLE_EQ(custom.decode_step_seconds(4), 0.014);
}

TEST(SimpleTimingModel, ValidateNamesTheBadParameter) {
  EXPECT_TRUE(validate(SimpleTimingParams{}).ok());
  SimpleTimingParams zero_rate;
  zero_rate.prefill_tok_s = 0;
  ASSERT_FALSE(validate(zero_rate).ok());
  EXPECT_NE(validate(zero_rate).error().message.find("prefill_tok_s"), std::string::npos);

  SimpleTimingParams negative;
  negative.decode_per_running_ms = -1;
  ASSERT_FALSE(validate(negative).ok());
  EXPECT_NE(validate(negative).error().message.find("decode_per_running_ms"), std::string::npos);

  SimpleTimingParams nan;
  nan.decode_base_ms = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(validate(nan).ok());

  SimpleTimingParams zero_times{100.0, 0.0, 0.0, 0.0};
  EXPECT_TRUE(validate(zero_times).ok());
}

}  // namespace
}  // namespace ib::sim
