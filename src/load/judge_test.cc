#include "load/judge.h"

#include <gtest/gtest.h>

namespace ib::load {
namespace {

using metrics::InvalidKind;
using metrics::PointStatus;

// A point whose 10 requests all completed, at concurrency 4, with nothing else to say.
BenchReport clean_report() {
  BenchReport r;
  r.concurrency = 4;
  r.metrics.num_requests = 10;
  r.metrics.completed = 10;
  r.run.health.threads = 1;
  r.run.health.cpu_utilization = 0.2;
  return r;
}

TEST(Judge, ACleanPointIsOk) {
  const PointVerdict v = judge(clean_report(), {});
  EXPECT_EQ(v.status, PointStatus::kOk);
  EXPECT_TRUE(v.validity.valid());
  EXPECT_TRUE(v.error.empty());
}

TEST(Judge, MoreThanFivePercentFailedFailsThePointButFiveDoNot) {
  BenchReport r = clean_report();
  r.metrics.num_requests = 100;
  r.metrics.completed = 95;
  r.metrics.failed = 5;
  EXPECT_EQ(judge(r, {}).status, PointStatus::kOk) << "5% is within vLLM's limit";
  r.metrics.completed = 94;
  r.metrics.failed = 6;
  r.metrics.failures_by_cause["http_status"] = 6;
  const PointVerdict v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kFailed);
  ASSERT_TRUE(v.validity.has(InvalidKind::kFailureRate));
  EXPECT_NE(v.error.find("6 of 100 requests failed"), std::string::npos) << v.error;
}

TEST(Judge, NothingCompletedOrNothingSentFails) {
  BenchReport r = clean_report();
  r.metrics.completed = 0;
  r.metrics.failed = 10;
  EXPECT_EQ(judge(r, {}).status, PointStatus::kFailed);
  BenchReport none = clean_report();
  none.metrics.num_requests = 0;
  none.metrics.completed = 0;
  EXPECT_EQ(judge(none, {}).status, PointStatus::kFailed);
}

TEST(Judge, TimeoutAndInterruptFailWithTheirReasons) {
  BenchReport r = clean_report();
  r.timed_out = true;
  r.partial = true;
  JudgeRules rules;
  rules.point_timeout_s = 30;
  PointVerdict v = judge(r, rules);
  EXPECT_EQ(v.status, PointStatus::kFailed);
  EXPECT_TRUE(v.validity.has(InvalidKind::kTimedOut));
  EXPECT_FALSE(v.validity.has(InvalidKind::kInterrupted)) << "a timeout is not an interrupt";
  EXPECT_NE(v.error.find("point timeout after 30 s"), std::string::npos) << v.error;
  r.timed_out = false;
  v = judge(r, rules);
  EXPECT_TRUE(v.validity.has(InvalidKind::kInterrupted));
  EXPECT_EQ(v.status, PointStatus::kFailed);
}

TEST(Judge, ASaturatedClientMakesThePointInvalidNotFailed) {
  BenchReport r = clean_report();
  r.run.health.cpu_utilization = 0.99;
  const PointVerdict v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kInvalid);
  ASSERT_TRUE(v.validity.has(InvalidKind::kClientHealth));
  EXPECT_FALSE(v.validity.only_chosen());
  EXPECT_TRUE(v.error.empty()) << "invalid points are measured: no failure message";
}

TEST(Judge, AnOpenFileLimitBelowTheConnectionsIsAClientProblem) {
  BenchReport r = clean_report();
  r.concurrency = 1000;
  r.run.health.open_file_limit = 1024;
  EXPECT_EQ(judge(r, {}).status, PointStatus::kInvalid);
  r.concurrency = 10;
  EXPECT_EQ(judge(r, {}).status, PointStatus::kOk);
}

TEST(Judge, RequiredPowerMissingFailsThePointNamingWhy) {
  BenchReport r = clean_report();
  r.power_missing = true;
  r.json["energy"] = boost::json::object{{"power_valid", false}, {"note", "no nvidia-smi"}};
  const PointVerdict v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kFailed);
  EXPECT_NE(v.error.find("no GPU power measurement: no nvidia-smi"), std::string::npos) << v.error;
}

TEST(Judge, ReasonsFromTheServerObservationComeFirstAndInvalidate) {
  JudgeRules rules;
  rules.before.add(InvalidKind::kExpectUnobservable, "expect unverified (endpoint launcher)");
  const PointVerdict v = judge(clean_report(), rules);
  EXPECT_EQ(v.status, PointStatus::kInvalid);
  ASSERT_FALSE(v.validity.reasons.empty());
  EXPECT_EQ(v.validity.reasons.front().kind, InvalidKind::kExpectUnobservable);
}

TEST(Judge, ExpectedServerMetricsMissingFromTheScrapesInvalidate) {
  BenchReport r = clean_report();
  r.window_start_unix = 100;
  r.window_end_unix = 110;
  RawScrape scrape;
  scrape.t_unix = 105;
  scrape.status = 200;
  scrape.body = "vllm:num_requests_running 3\n";
  r.scrapes.push_back(scrape);
  JudgeRules rules;
  rules.server_metrics = {"vllm:"};
  EXPECT_EQ(judge(r, rules).status, PointStatus::kOk);
  rules.server_metrics = {"vllm:", "sglang:"};
  const PointVerdict v = judge(r, rules);
  EXPECT_EQ(v.status, PointStatus::kInvalid);
  ASSERT_TRUE(v.validity.has(InvalidKind::kExpectFailed));
  EXPECT_NE(v.validity.text().find("\"sglang:\""), std::string::npos) << v.validity.text();
}

// The golden acceptance length against the realised one: 1.8 against 2.5 is invalid naming both,
// 2.45 is within the default tolerance, and no figure at all is invalid too.
TEST(Judge, ARealisedAcceptanceLengthFarFromTheGoldenOneInvalidates) {
  BenchReport r = clean_report();
  JudgeRules rules;
  rules.spec_acceptance = SpecAcceptanceTarget{2.5, 0.1, "g.yaml: m thinking_off, 3 draft tokens"};
  PointVerdict none = judge(r, rules);
  EXPECT_EQ(none.status, PointStatus::kInvalid);
  EXPECT_NE(none.validity.text().find("gave no acceptance length"), std::string::npos);
  EXPECT_TRUE(spec_acceptance_json(r, *rules.spec_acceptance).at("realised").is_null());

  r.server_summary.spec_acceptance_from = "1 + accepted / drafts";
  r.server_summary.spec_acceptance_length = 1.8;
  PointVerdict low = judge(r, rules);
  EXPECT_EQ(low.status, PointStatus::kInvalid);
  ASSERT_TRUE(low.validity.has(InvalidKind::kExpectFailed));
  const std::string why = low.validity.text();
  EXPECT_NE(why.find("realised acceptance length 1.800"), std::string::npos) << why;
  EXPECT_NE(why.find("golden 2.50 ± 0.1 (g.yaml: m thinking_off, 3 draft tokens)"),
            std::string::npos)
      << why;
  EXPECT_FALSE(spec_acceptance_json(r, *rules.spec_acceptance).at("passed").as_bool());

  r.server_summary.spec_acceptance_length = 2.45;
  EXPECT_EQ(judge(r, rules).status, PointStatus::kOk);
  const auto j = spec_acceptance_json(r, *rules.spec_acceptance);
  EXPECT_TRUE(j.at("passed").as_bool());
  EXPECT_DOUBLE_EQ(j.at("realised").as_double(), 2.45);
  // The boundary: a golden value of two decimals and a tolerance of 0.1 take 2.4 and 2.6.
  r.server_summary.spec_acceptance_length = 2.4;
  EXPECT_EQ(judge(r, rules).status, PointStatus::kOk);
  r.server_summary.spec_acceptance_length = 2.6000001;
  EXPECT_EQ(judge(r, rules).status, PointStatus::kInvalid);
}

TEST(Judge, AgentxRulesKeepTheirKinds) {
  BenchReport r = clean_report();
  r.agentic = true;
  // AgentX's own error rule replaces vLLM's 5% for replay: 8% failed is no failure rate here.
  r.metrics.num_requests = 100;
  r.metrics.completed = 92;
  r.metrics.failed = 8;
  r.agentic_invalid = {{"time_scaled", "the replay ran 100x faster than recorded"}};
  PointVerdict v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kInvalid);
  EXPECT_TRUE(v.validity.only_chosen()) << v.validity.text();
  EXPECT_EQ(v.validity.reasons.front().message.rfind("time_scaled: ", 0), 0u);
  EXPECT_EQ(v.validity.reasons.front().rule, "time_scaled");
  // The rule survives the stored form (a sweep's summary names it after a --resume too).
  const auto back = metrics::Validity::from_json(v.validity.to_json());
  ASSERT_EQ(back.reasons.size(), 1u);
  EXPECT_EQ(back.reasons.front().rule, "time_scaled");
  EXPECT_TRUE(back.only_chosen());
  r.agentic_invalid.push_back({"error_rate_exceeded", "11 of 100 failed"});
  v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kFailed);
  EXPECT_TRUE(v.validity.has(InvalidKind::kFailureRate));
  r.agentic_invalid = {{"insufficient_profile_metric_coverage", "TTFT for 90 of 100"}};
  v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kInvalid);
  EXPECT_FALSE(v.validity.only_chosen());
}

TEST(Judge, AnAbortedReplayFailsWithItsReason) {
  BenchReport r = clean_report();
  r.agentic = true;
  r.aborted = true;
  r.abort_reason = "a root warmup primer failed: HTTP 500";
  r.agentic_invalid = {{"warmup_aborted", r.abort_reason}, {"run_cancelled", "cancelled"}};
  const PointVerdict v = judge(r, {});
  EXPECT_EQ(v.status, PointStatus::kFailed);
  EXPECT_EQ(v.error, r.abort_reason);
  EXPECT_EQ(v.validity.reasons.size(), 1u) << "warmup_aborted and run_cancelled are said once";
}

EvalReport answered_eval(int64_t n, int64_t correct) {
  EvalReport e;
  e.problems = static_cast<size_t>(n);
  e.strict.n = n;
  e.strict.correct = correct;
  e.flexible.n = n;
  e.flexible.correct = correct;
  return e;
}

TEST(Judge, AnEvalBelowItsGateIsInvalidAndAnUnansweredOneFailed) {
  const EvalReport good = answered_eval(10, 9);
  EXPECT_EQ(judge(good, gate_eval(good, 0.8, "test"), {}).status, PointStatus::kOk);
  const EvalReport poor = answered_eval(10, 5);
  PointVerdict v = judge(poor, gate_eval(poor, 0.8, "test"), {});
  EXPECT_EQ(v.status, PointStatus::kInvalid);
  EXPECT_TRUE(v.validity.has(InvalidKind::kEvalGate));
  EvalReport none = answered_eval(0, 0);
  none.problems = 4;
  EvalRecord rec;
  rec.attempts = 1;
  rec.error = "connection refused";
  none.records.push_back(rec);
  v = judge(none, gate_eval(none, 0.8, "test"), {});
  EXPECT_EQ(v.status, PointStatus::kFailed);
  EXPECT_NE(v.error.find("none of the 4 eval problems was answered: connection refused"),
            std::string::npos)
      << v.error;
}

TEST(Judge, StatusFollowsTheKindsOfTheReasons) {
  metrics::Validity v;
  EXPECT_EQ(status_of(v), PointStatus::kOk);
  v.add(InvalidKind::kNotSubmission, "time_scaled: 10x");
  EXPECT_EQ(status_of(v), PointStatus::kInvalid);
  EXPECT_TRUE(v.only_chosen());
  v.add(InvalidKind::kServerExited, "server exited (signal 9)");
  std::string error;
  EXPECT_EQ(status_of(v, &error), PointStatus::kFailed);
  EXPECT_EQ(error, "server exited (signal 9)");
  EXPECT_FALSE(v.only_chosen());
}

TEST(Judge, APointFailsItsRunUnlessOnlyTheUsersChoiceMadeItInvalid) {
  metrics::PointResult p;
  p.status = PointStatus::kInvalid;
  p.validity.add(InvalidKind::kNotSubmission, "time_scaled: 100x");
  EXPECT_FALSE(p.fails_run());
  p.validity.add(InvalidKind::kExpectFailed, "settings.tp == 4");
  EXPECT_TRUE(p.fails_run());
  p = {};
  p.status = PointStatus::kReused;
  EXPECT_FALSE(p.fails_run());
  p.status = PointStatus::kSkipped;
  EXPECT_TRUE(p.fails_run());
}

}  // namespace
}  // namespace ib::load
