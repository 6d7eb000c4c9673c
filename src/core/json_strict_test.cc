#include "core/json_strict.h"

#include <gtest/gtest.h>

namespace ib {
namespace {

TEST(JsonStrict, FindsTheFirstDuplicateWithItsLineAndPath) {
  const auto d = find_duplicate_key(
      "{\"trace\": {\"requests\": [\n"
      "  {\"t\": 0, \"in\": 100},\n"
      "  {\"t\": 1, \"in\": 100, \"out\": 5,\n"
      "   \"in\": 5000}]}}");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "in");
  EXPECT_EQ(d->line, 4);
  EXPECT_EQ(d->path, "trace.requests[1]");
  // Escaped spellings of one name are one name.
  const auto e = find_duplicate_key(R"({"a": 1, "\u0061": 2})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->key, "a");
  EXPECT_EQ(e->path, "");
}

TEST(JsonStrict, SameNamesInDifferentObjectsAndStringsThatLookLikeKeysAreFine) {
  for (const char* ok : {R"([{"a": 1}, {"a": 2}])", R"({"a": {"a": {"a": 1}}, "b": "a"})",
                         R"({"s": "\"a\": 1, \"a\": 2", "t": ["a", "a"]})",
                         R"({"a,b": 1, "a": [1, {"a": 2}]})", "{}", "[]", "42", R"("x")"}) {
    EXPECT_FALSE(find_duplicate_key(ok)) << ok;
    EXPECT_TRUE(parse_json_strict(ok, "x.json").ok()) << ok;
  }
}

TEST(JsonStrict, ParseNamesTheSourceLineAndKey) {
  auto v = parse_json_strict("{\"x\": 1,\n \"x\": 2}", "trace.json");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().message,
            "trace.json:2: key \"x\" appears twice in one object (JSON readers keep only one of "
            "them; remove the other)");
  auto bad = parse_json_strict("{\"x\": ", "trace.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("trace.json: not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace ib
