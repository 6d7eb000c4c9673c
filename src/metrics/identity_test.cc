#include "metrics/identity.h"

#include <gtest/gtest.h>

namespace ib::metrics {
namespace {

namespace json = boost::json;
using F = IdentityField;

TEST(IdentityFields, OneListInEnumOrderWithKeysTitlesAndEveryOldSpelling) {
  for (size_t i = 0; i < kIdentityFields.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(kIdentityFields[i].field), i);
    EXPECT_EQ(identity_field(kIdentityFields[i].key), kIdentityFields[i].field);
    EXPECT_EQ(identity_field(kIdentityFields[i].title), kIdentityFields[i].field);
  }
  EXPECT_EQ(identity_field("engine-version"), F::kEngineVersion);  // verify's and recipes' spelling
  EXPECT_EQ(identity_field("framework"), F::kEngine);
  EXPECT_EQ(identity_field("tool-version"), F::kToolVersion);
  EXPECT_EQ(identity_field("colour"), std::nullopt);
  EXPECT_EQ(identity_field(""), std::nullopt);
  EXPECT_TRUE(field_info(F::kModel).confounding);
  EXPECT_FALSE(field_info(F::kHost).confounding);
  EXPECT_FALSE(field_info(F::kParallelism).compared);
}

TEST(Identity, JsonRoundTripAndOlderKebabKeys) {
  Identity id;
  id.set(F::kModel, "m");
  id.set(F::kEngineVersion, "0.11.0");
  EXPECT_EQ(id.to_json(), (json::object{{"model", "m"}, {"engine_version", "0.11.0"}}));
  EXPECT_EQ(Identity::from_json(id.to_json()), id);
  EXPECT_EQ(id.to_json(true).size(), kIdentityFields.size());
  const Identity old = Identity::from_json(
      {{"engine-version", "0.11.0"}, {"model", "m"}, {"unrelated", "x"}, {"runner", 3}});
  EXPECT_EQ(old, id);
}

TEST(Identity, FromARecipeRowAndTheServersSettings) {
  const json::object row{{"model", "m"},       {"image", "img:1"}, {"framework", "sglang"},
                         {"precision", "fp8"}, {"runner", "b200"}, {"tp", 4},
                         {"ep", 4},            {"dp-attn", true}};
  Identity id = config_identity(row, {{"engine-version", "0.5.1"}});
  EXPECT_EQ(id.get(F::kEngine), "sglang");
  EXPECT_EQ(id.get(F::kEngineVersion), "0.5.1");
  EXPECT_EQ(id.get(F::kHardware), "b200");  // no hardware named: the runner label
  EXPECT_EQ(id.get(F::kSpecDecoding), "none");
  EXPECT_EQ(id.get(F::kParallelism), "TP4 EP4 DPA");
  // The server's own hardware setting beats the runner label; the row's beats both.
  EXPECT_EQ(config_identity(row, {{"hardware", "B200"}}).get(F::kHardware), "B200");
  json::object disagg = row;
  disagg["hardware"] = "GB200";
  disagg["prefill"] = json::object{{"num-worker", 2}, {"tp", 4}};
  disagg["decode"] = json::object{{"tp", 8}};
  id = config_identity(disagg, {{"hardware", "B200"}});
  EXPECT_EQ(id.get(F::kHardware), "GB200");
  EXPECT_EQ(id.get(F::kParallelism), "P2xTP4 D1xTP8");
}

TEST(Confounders, KnownValuesThatDifferInListOrder) {
  Identity a, b;
  a.set(F::kImage, "img:1");
  b.set(F::kImage, "img:2");
  a.set(F::kModel, "m");
  b.set(F::kModel, "m");
  a.set(F::kHost, "h1");  // unknown on the head: cannot be shown to be the same
  a.set(F::kParallelism, "TP1");
  b.set(F::kParallelism, "TP8");  // the change under test, not beside it
  const auto c = confounders({a}, {b});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].field, F::kImage);
  EXPECT_TRUE(c[0].confounding);
  EXPECT_EQ(c[0].text(), "image: img:1 vs img:2");
  EXPECT_EQ(c[1].text(), "host: h1 vs unknown");
  EXPECT_FALSE(c[1].confounding);
  EXPECT_TRUE(confounders({a}, {a}).empty());
  EXPECT_TRUE(confounders({}, {}).empty());
  EXPECT_EQ(confounders({a}, {b}, {F::kImage, F::kHost}).size(), 0u);
  // A side's values are a set over its measurements.
  Identity a2 = a;
  a2.set(F::kImage, "img:2");
  const auto two = confounders({a, a2}, {b});
  ASSERT_FALSE(two.empty());
  EXPECT_EQ(two[0].text(), "image: img:1, img:2 vs img:2");
}

TEST(Confounders, JsonRoundTripAndTheOldText) {
  Confounder c{F::kEngineVersion, {"0.5.12"}, {"0.5.22"}, false, true};
  const json::object j = c.to_json();
  EXPECT_EQ(j.at("field").as_string(), "engine_version");
  EXPECT_EQ(j.at("title").as_string(), "engine version");
  const auto back = Confounder::from_json(j);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->text(), "engine version: 0.5.12 vs 0.5.22");
  EXPECT_TRUE(back->accepted);
  const auto old = Confounder::from_json(json::value("engine-version: 0.5.12 vs 0.5.22"));
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->field, F::kEngineVersion);
  EXPECT_EQ(old->head, std::set<std::string>{"0.5.22"});
  EXPECT_FALSE(Confounder::from_json(json::value("colour: a vs b")).has_value());
  EXPECT_FALSE(Confounder::from_json(json::value(3)).has_value());
  EXPECT_FALSE(Confounder::from_json(json::object{{"field", "colour"}}).has_value());
}

}  // namespace
}  // namespace ib::metrics
