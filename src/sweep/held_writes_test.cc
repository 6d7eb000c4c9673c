#include "sweep/held_writes.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/json_text.h"

namespace ib::sweep {
namespace {

HeldWrites sample() {
  HeldWrites h;
  h.database = "postgresql://team@db:5432/results";
  h.run_id = 7;
  h.run_name = "20261206-150000";
  HeldWrite c;
  c.kind = HeldWrite::Kind::kConfig;
  c.config.id = -3;
  c.config.run_id = 7;
  c.config.config_key = "k";
  c.config.fingerprint = "abc";
  c.config.launcher = "local";
  c.config.row = {{"tp", 8}};
  c.config.status = store::ConfigStatus::kOk;
  h.writes.push_back(c);
  HeldWrite u = c;
  u.kind = HeldWrite::Kind::kConfigUpdate;
  u.config.error = "server exited";
  h.writes.push_back(u);
  HeldWrite p;
  p.kind = HeldWrite::Kind::kPoint;
  p.point.run_id = 7;
  p.point.server_config_id = -3;
  p.point.fingerprint = "abc";
  p.point.workload_key = "w";
  p.point.concurrency = 4;
  p.point.status = metrics::PointStatus::kInvalid;
  p.point.headline = metrics::Headline::from_json({{"median_tpot_ms", 8.25}, {"completed", 40}});
  p.point.result = {{"median_tpot_ms", 8.25}};
  p.point.artifacts_dir = "runs/x/01-k-abc";
  p.point.created_at = 1765000000;
  store::TimesliceRecord s;
  s.source = "server";
  s.slice = 2;
  s.start_s = 1.5;
  s.end_s = 2.5;
  s.running = 3;
  s.output_tokens = 17;
  s.data = {{"running", 3}};
  p.timeslices.push_back(s);
  store::FailureRecord f;
  f.run_id = 7;
  f.server_config_id = -3;
  f.kind = "assertion";
  f.message = "too few requests";
  f.at = 1765000001;
  p.failure = f;
  p.check_stored = true;
  h.writes.push_back(p);
  HeldWrite g;
  g.kind = HeldWrite::Kind::kFailure;
  g.failure = f;
  g.failure->kind = "server-exit";
  h.writes.push_back(g);
  return h;
}

TEST(HeldWrites, RoundTripKeepsEveryRecordAndItsProvisionalIds) {
  const HeldWrites h = sample();
  auto back = held_writes_from_json(json_text(to_json(h)), "unstored.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->database, h.database);
  EXPECT_EQ(back->run_id, 7);
  EXPECT_EQ(back->run_name, h.run_name);
  ASSERT_EQ(back->writes.size(), 4u);
  EXPECT_EQ(back->writes[0].kind, HeldWrite::Kind::kConfig);
  EXPECT_EQ(back->writes[0].config.id, -3);
  EXPECT_EQ(back->writes[0].config.row.at("tp").as_int64(), 8);
  EXPECT_EQ(back->writes[1].kind, HeldWrite::Kind::kConfigUpdate);
  EXPECT_EQ(back->writes[1].config.error, "server exited");
  const HeldWrite& p = back->writes[2];
  EXPECT_EQ(p.kind, HeldWrite::Kind::kPoint);
  EXPECT_EQ(p.point.server_config_id, -3);
  EXPECT_EQ(p.point.concurrency, 4);
  EXPECT_EQ(p.point.status, metrics::PointStatus::kInvalid);
  EXPECT_DOUBLE_EQ(p.point.headline.get("median_tpot_ms"), 8.25);
  EXPECT_DOUBLE_EQ(p.point.headline.get("completed"), 40);
  EXPECT_TRUE(std::isnan(p.point.headline.get("median_ttft_ms")));
  EXPECT_EQ(p.point.created_at, 1765000000);
  ASSERT_EQ(p.timeslices.size(), 1u);
  EXPECT_EQ(p.timeslices[0].slice, 2);
  EXPECT_EQ(p.timeslices[0].running, 3.0);
  EXPECT_EQ(p.timeslices[0].output_tokens, 17);
  EXPECT_FALSE(p.timeslices[0].waiting.has_value());
  ASSERT_TRUE(p.failure.has_value());
  EXPECT_EQ(p.failure->server_config_id, -3);
  EXPECT_EQ(p.failure->message, "too few requests");
  EXPECT_TRUE(p.check_stored);
  EXPECT_EQ(back->writes[3].failure->kind, "server-exit");
  EXPECT_EQ(held_points(back->writes), 1u);
}

TEST(HeldWrites, MalformedFilesAreRefusedNamingTheWriteAndField) {
  auto text = [](boost::json::object o) { return json_text(o); };
  boost::json::object good = to_json(sample());
  struct Case {
    std::function<void(boost::json::object&)> edit;
    std::string error;
  };
  const std::vector<Case> cases = {
      {[](auto& o) { o["inferbench_unstored"] = 2; },
       "unstored.json: inferbench_unstored: version 2"},
      {[](auto& o) { o.erase("run_id"); }, "unstored.json: run_id: missing"},
      {[](auto& o) { o["writes"] = 3; }, "unstored.json: writes: not an array"},
      {[](auto& o) {
         o["writes"].as_array()[2].as_object()["point"].as_object()["concurrency"] = "4";
       },
       "unstored.json: writes[2].point.concurrency: not an integer"},
      {[](auto& o) { o["writes"].as_array()[0].as_object()["provisional_id"] = 3; },
       "unstored.json: writes[0].provisional_id: not negative"},
      {[](auto& o) { o["writes"].as_array()[1].as_object()["write"] = "drop"; },
       "unstored.json: writes[1].write: 'drop' is not config|config_update|point|failure"},
      {[](auto& o) {
         o["writes"].as_array()[2].as_object()["timeslices"].as_array()[0].as_object()["source"] =
             "gpu";
       },
       "unstored.json: writes[2].timeslices[0].source: not server|client"},
      {[](auto& o) { o["writes"].as_array()[3].as_object()["failure"].as_object()["kind"] = ""; },
       "unstored.json: writes[3].failure.kind: empty"},
  };
  for (const auto& c : cases) {
    boost::json::object o = good;
    c.edit(o);
    auto r = held_writes_from_json(text(o), "unstored.json");
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_EQ(r.error().kind, ErrorKind::kInput);
    EXPECT_EQ(r.error().message.rfind(c.error, 0), 0u) << r.error().message;
  }
  auto bad = held_writes_from_json("{\"writes\": [", "f.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("f.json"), std::string::npos);
}

}  // namespace
}  // namespace ib::sweep
