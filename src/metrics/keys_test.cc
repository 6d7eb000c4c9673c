#include "metrics/keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "metrics/point.h"
#include "metrics/result.h"

namespace ib::metrics {
namespace {

BenchMetrics sample_metrics() {
  BenchMetrics m;
  m.num_requests = 12;
  m.completed = 10;
  m.failed = 2;
  m.request_throughput = 2.5;
  m.output_throughput = 320;
  m.total_token_throughput = 1600;
  m.ttft_ms = {10, 12, 11, 1, 5, 30, {20, 29, 29.9}};
  m.tpot_ms = {10, 4, 5, 1, 2, 9, {7, 8, 8.9}};
  m.itl_ms = {10, 4.5, 4.4, 1, 1, 20, {6, 9, 9.9}};
  m.e2el_ms = {10, 300, 290, 10, 100, 500, {400, 480, 499}};
  m.icl_ms = {9, 9, 8.8, 1, 2, 40, {12, 18, 19.9}};
  m.tokens_per_event = {20, 2.5, 2, 1, 1, 4, {4, 4, 4}};
  // metrics_to_json reads one value per asked percentile from every summary.
  for (Summary* s : {&m.sched_ttft_ms, &m.sched_e2el_ms, &m.queue_ms, &m.e2e_norm_s_per_tok}) {
    s->percentiles = {1, 2, 3};
  }
  return m;
}

TEST(MetricKeys, EveryHeadlineKeyIsInTheResultJsonWithTheSameValue) {
  const BenchMetrics m = sample_metrics();
  MetricsOptions o;
  o.num_gpus = 4;
  const auto json = metrics_to_json(m, o);
  const Headline h = Headline::from_metrics(m, o);
  for (size_t i = 0; i < kHeadlineCount; ++i) {
    const auto& k = kHeadlineMetrics[i];
    ASSERT_TRUE(json.contains(k.key)) << k.key;
    EXPECT_DOUBLE_EQ(json.at(k.key).to_number<double>(), h.at(i)) << k.key;
  }
  EXPECT_DOUBLE_EQ(h.get("tput_per_gpu"), 400);
  EXPECT_DOUBLE_EQ(h.get("median_intvty"), 1000.0 / 5);  // median TPOT 5 ms
  EXPECT_DOUBLE_EQ(h.get("p99_tpot_ms"), 8);
  EXPECT_EQ(json.at("completed").as_int64(), 10);  // counts stay integers
}

TEST(MetricKeys, KeysAreUniqueAndAPercentileNotAskedForIsUnset) {
  std::set<std::string_view> seen;
  for (const auto& k : kHeadlineMetrics) EXPECT_TRUE(seen.insert(k.key).second) << k.key;
  EXPECT_EQ(headline_index("median_ttft_ms"), std::optional<size_t>(3));
  EXPECT_FALSE(headline_index("nope"));
  MetricsOptions o;
  o.percentiles = {90};
  BenchMetrics m = sample_metrics();
  for (Summary* s : {&m.ttft_ms, &m.tpot_ms, &m.itl_ms, &m.e2el_ms, &m.sched_ttft_ms,
                     &m.sched_e2el_ms, &m.queue_ms, &m.e2e_norm_s_per_tok}) {
    s->percentiles = {20};
  }
  const Headline h = Headline::from_metrics(m, o);
  EXPECT_TRUE(std::isnan(h.get("p99_ttft_ms")));
  EXPECT_FALSE(metrics_to_json(m, o).contains("p99_ttft_ms"));
}

TEST(MetricKeys, KeysTextListsEveryKeyInOrder) {
  const std::string text = headline_keys_text();
  EXPECT_EQ(text.rfind("request_throughput, ", 0), 0u) << text;
  EXPECT_NE(text.find(", tput_per_gpu, "), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), ','), static_cast<long>(kHeadlineCount) - 1);
}

TEST(MetricKeys, HeadlineJsonAndCells) {
  Headline h;
  EXPECT_TRUE(h.empty());
  h.set("median_ttft_ms", 12.345);
  h.set("completed", 7);
  EXPECT_FALSE(h.empty());
  auto j = h.to_json();
  EXPECT_TRUE(j.at("request_throughput").is_null());
  EXPECT_EQ(j.at("completed").as_int64(), 7);
  EXPECT_EQ(h.cell(*headline_index("median_ttft_ms")), "12.35");
  EXPECT_EQ(h.cell(*headline_index("request_throughput")), "-");
  const Headline back = Headline::from_json(j);
  EXPECT_DOUBLE_EQ(back.get("median_ttft_ms"), 12.345);
  EXPECT_TRUE(std::isnan(back.get("request_throughput")));
  EXPECT_THROW(h.get("nope"), std::out_of_range);
}

TEST(PointStatusNames, RoundTripAndSuccess) {
  for (PointStatus s : {PointStatus::kOk, PointStatus::kInvalid, PointStatus::kFailed,
                        PointStatus::kSkipped, PointStatus::kReused, PointStatus::kResumed}) {
    EXPECT_EQ(parse_status(status_name(s)), std::optional<PointStatus>(s));
  }
  EXPECT_FALSE(parse_status("great"));
  EXPECT_TRUE(is_success(PointStatus::kReused));
  EXPECT_FALSE(is_success(PointStatus::kInvalid));
}

TEST(ValidityTest, ReasonsRoundTripThroughJsonAndReadAsText) {
  Validity v;
  EXPECT_TRUE(v.valid());
  v.add(InvalidKind::kExpectFailed, "expect failed: settings.tp == 4 (2)");
  v.add(InvalidKind::kExpectUnobservable, "expect unverified", "--no-expect");
  EXPECT_FALSE(v.valid());
  EXPECT_TRUE(v.has(InvalidKind::kExpectUnobservable));
  EXPECT_FALSE(v.has(InvalidKind::kTimedOut));
  EXPECT_EQ(v.text(), "expect failed: settings.tp == 4 (2); expect unverified");
  boost::json::array j = v.to_json();
  j.push_back(boost::json::object{{"kind", "from-the-future"}, {"message", "x"}});
  const Validity back = Validity::from_json(j);
  ASSERT_EQ(back.reasons.size(), 2u);  // the unknown kind is dropped
  EXPECT_EQ(back.reasons[1].kind, InvalidKind::kExpectUnobservable);
  EXPECT_EQ(back.reasons[1].advice, "--no-expect");
}

TEST(PointResultText, StatusWithItsReason) {
  PointResult p;
  EXPECT_EQ(p.status_text(), "ok");
  p.status = PointStatus::kReused;
  p.reused_from_run = 3;
  EXPECT_EQ(p.status_text(), "reused (run 3)");
  p.status = PointStatus::kFailed;
  p.error = "4 \u00d7 http_status: HTTP 404\nmore";
  EXPECT_EQ(p.status_text(), "failed: 4 \u00d7 http_status: HTTP 404");
  p.status = PointStatus::kInvalid;
  p.error.clear();
  p.validity.add(InvalidKind::kClientHealth, "client CPU at 99%");
  EXPECT_EQ(p.status_text(), "invalid: client CPU at 99%");
}

TEST(FailureSummary, FirstErrorOfEachCauseWithItsCountMostFrequentFirst) {
  BenchMetrics m;
  EXPECT_EQ(failure_summary(m), "");
  m.failures_by_cause = {{"http_status", 4}, {"idle_timeout", 1}};
  m.first_error_by_cause = {{"http_status", "HTTP 404: The model 'sim' does not exist"},
                            {"idle_timeout", "no data for 30 s"}};
  EXPECT_EQ(failure_summary(m),
            "4 \u00d7 http_status: HTTP 404: The model 'sim' does not exist; "
            "1 \u00d7 idle_timeout: no data for 30 s");
}

}  // namespace
}  // namespace ib::metrics
