#include "sim/env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace ib::sim {
namespace {

TEST(SimGetenv, ReadsThroughGetenvAndRecordsTheName) {
  clear_env_reads();
  ::setenv("SIM_TEST_VARIABLE", "42", 1);
  EXPECT_EQ(sim_getenv("SIM_TEST_VARIABLE"), "42");
  ::unsetenv("SIM_TEST_VARIABLE");
  EXPECT_FALSE(sim_getenv("SIM_TEST_VARIABLE").has_value());
  EXPECT_FALSE(sim_getenv("SIM_TEST_OTHER").has_value());
  EXPECT_EQ(env_reads(), (std::vector<std::string>{"SIM_TEST_VARIABLE", "SIM_TEST_OTHER"}));
  EXPECT_TRUE(env_was_read("SIM_TEST_OTHER"));
  EXPECT_FALSE(env_was_read("SIM_NEVER"));
  clear_env_reads();
  EXPECT_TRUE(env_reads().empty());
}

}  // namespace
}  // namespace ib::sim
