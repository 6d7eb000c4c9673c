// Objectives and SLOs (tune/objective.h): which kind a text makes, values from points, errors.
#include "tune/objective.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ib::tune {
namespace {

metrics::PointResult point(double tput, double tpot) {
  metrics::PointResult p;
  p.headline.set("tput_per_gpu", tput);
  p.headline.set("median_tpot_ms", tpot);
  p.headline.set("median_ttft_ms", 50);
  p.result["p90_e2e_norm_intvty"] = 42.5;
  return p;
}

std::string objective_error(const std::string& text, std::vector<std::string> slos = {},
                     bool minimize = false) {
  auto o = make_objective(text, slos, 8, minimize);
  EXPECT_FALSE(o.ok()) << text;
  return o.ok() ? "" : o.error().message;
}

TEST(Objective, Kinds) {
  auto m = make_objective("", {}, 8, false);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kind, Objective::Kind::kMetric);
  EXPECT_EQ(m->metric, "tput_per_gpu");
  EXPECT_EQ(m->value(point(120, 10)), 120);
  EXPECT_EQ(m->describe(), "tput_per_gpu at concurrency 8 (higher is better)");

  auto e = make_objective("e2e-intvty", {}, 8, false);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Objective::Kind::kE2eIntvty);
  EXPECT_EQ(e->value(point(1, 1)), 42.5);
  auto e50 = make_objective("e2e-intvty:p50", {}, 8, false);
  ASSERT_TRUE(e50.ok());
  EXPECT_EQ(e50->metric, "median_e2e_norm_intvty");
  EXPECT_TRUE(std::isnan(e50->value(point(1, 1))));  // absent: no value, never 0

  auto f = make_objective("tput_per_gpu / median_ttft_ms", {}, 8, false);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, Objective::Kind::kFormula);
  EXPECT_DOUBLE_EQ(f->value(point(100, 10)), 2);
  auto fm = make_objective("median_ttft_ms + median_tpot_ms", {}, 8, true);
  ASSERT_TRUE(fm.ok());
  EXPECT_FALSE(fm->higher_is_better);

  auto s = make_objective("", {"median_tpot_ms<=11.1"}, 8, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, Objective::Kind::kTputAtSlo);
  EXPECT_TRUE(s->meets(point(100, 11.1)));
  EXPECT_FALSE(s->meets(point(100, 11.2)));
  EXPECT_EQ(s->describe(),
            "tput_per_gpu at the highest concurrency meeting median_tpot_ms <= 11.1 (higher is "
            "better)");
  // A failed point neither has a value nor meets.
  auto failed = point(100, 1);
  failed.status = metrics::PointStatus::kFailed;
  EXPECT_TRUE(std::isnan(m->value(failed)));
  EXPECT_FALSE(s->meets(failed));
}

TEST(Objective, Errors) {
  EXPECT_NE(objective_error("speed").find("unknown metric 'speed'"), std::string::npos);
  EXPECT_NE(objective_error("tput_per_gpu", {"median_tpot_ms<=1"})
                .find("--slo goes with --objective "
                      "tput-at-slo"),
            std::string::npos);
  EXPECT_NE(objective_error("tput-at-slo").find("needs at least one --slo"), std::string::npos);
  EXPECT_NE(objective_error("e2e-intvty:p42").find("p50, p90, p99, p99.9"), std::string::npos);
  EXPECT_NE(objective_error("tput_per_gpu", {}, true).find("--minimize"), std::string::npos);
  EXPECT_NE(objective_error("", {"median_tpot_ms<1"}).find("expected METRIC<=VALUE"), std::string::npos);
  EXPECT_NE(objective_error("", {"tpot<=1"}).find("'tpot' is not a headline metric"), std::string::npos);
  EXPECT_NE(objective_error("", {"median_tpot_ms<=fast"}).find("'fast' is not a number"),
            std::string::npos);
  // Accepted but meaningless before (issue 30): a formula of no metric, SLOs nothing can meet.
  EXPECT_NE(objective_error("1/0").find("reads no metric"), std::string::npos)
      << objective_error("1/0");
  EXPECT_NE(objective_error("42").find("reads no metric"), std::string::npos);
  EXPECT_NE(objective_error("", {"median_tpot_ms<=-1"}).find("no point can meet it"),
            std::string::npos);
  EXPECT_NE(objective_error("", {"median_tpot_ms<=10", "median_tpot_ms>=20"})
                .find("contradict each other"),
            std::string::npos);
  EXPECT_NE(
      objective_error("", {"median_tpot_ms<=10", "median_tpot_ms<=20"}).find("two upper bounds"),
      std::string::npos);
  EXPECT_TRUE(make_objective("", {"median_tpot_ms<=20", "median_tpot_ms>=10"}, 8, false).ok());
}

}  // namespace
}  // namespace ib::tune
