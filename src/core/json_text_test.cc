#include "core/json_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ib {
namespace {

namespace json = boost::json;

// Numbers as Python's json writes them (issue 30: "0E0" and "2E1" were Boost.JSON's).
TEST(JsonText, DoublesAreTheShortestRoundTripWithAPoint) {
  EXPECT_EQ(json_text(json::value(0.0)), "0.0");
  EXPECT_EQ(json_text(json::value(20.0)), "20.0");
  EXPECT_EQ(json_text(json::value(0.1)), "0.1");
  EXPECT_EQ(json_text(json::value(-0.0)), "-0.0");
  EXPECT_EQ(json_text(json::value(123456789.125)), "123456789.125");
  EXPECT_EQ(json_text(json::value(1.5e-7)), "1.5e-07");
  EXPECT_EQ(json_text(json::value(1e20)), "1e+20");
  for (double d : {0.1, 1.0 / 3, 2.718281828459045, 6.02214076e23, 5e-324, 1.7976931348623157e308}) {
    const json::value back = json::parse(json_text(json::value(d)));
    ASSERT_TRUE(back.is_double()) << d;
    EXPECT_EQ(back.get_double(), d);
  }
}

TEST(JsonText, NotANumberIsNullAndTheRestAsBoostWritesIt) {
  EXPECT_EQ(json_text(json::value(std::nan(""))), "null");
  EXPECT_EQ(json_text(json::value(std::numeric_limits<double>::infinity())), "null");
  const json::value v = json::parse(
      R"({"a":[1,-2,18446744073709551615,true,false,null],"s":"q\"\\\n\t\u0001é","o":{}})");
  EXPECT_EQ(json_text(v), json::serialize(v));
  EXPECT_EQ(json_text(v.as_object()), json::serialize(v));
  EXPECT_EQ(json_text(json::array{1, "x"}), "[1,\"x\"]");
}

}  // namespace
}  // namespace ib
