#include "telemetry/roles.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace ib::telemetry {
namespace {

metrics::Scrape scrape_of(const std::string& text) {
  auto r = metrics::parse_prometheus(text);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : metrics::Scrape{};
}

// A serve-sim worker's /metrics: its queue, its token counters and one GPU's power.
std::string worker_text(double waiting, double prompt, double generated, double watts, double mj) {
  return fmt::format(
      "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {}\n"
      "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total {}\n"
      "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total {}\n"
      "DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\"}} {}\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"0\"}} {}\n",
      waiting, prompt, generated, watts, mj);
}

const std::map<std::string, std::string> kLabels = {{"http://p0/metrics", "prefill-0"},
                                                    {"http://p1/metrics", "prefill-1"},
                                                    {"http://d0/metrics", "decode-0"},
                                                    {"http://r/metrics", "router"}};

// Two prefill workers at 300 W, one decode worker at 600 W, three scrapes 1 s apart; the router
// carries no power.
std::vector<TimedScrape> deployment() {
  std::vector<TimedScrape> s;
  for (int i = 0; i < 3; ++i) {
    const double t = i;
    for (const char* url : {"http://p0/metrics", "http://p1/metrics"}) {
      s.push_back({t, scrape_of(worker_text(4, 1000 * i, 0, 300, 300000 * i)), url});
    }
    s.push_back({t, scrape_of(worker_text(0, 0, 100 * i, 600, 600000 * i)), "http://d0/metrics"});
    s.push_back({t, scrape_of("router_requests_total 5\n"), "http://r/metrics"});
    s.push_back({t, scrape_of("vllm:num_requests_waiting 9\n"), "http://elsewhere/metrics"});
  }
  return s;
}

TEST(RoleTelemetry, LabelsNameTheirRole) {
  EXPECT_EQ(role_of_label("prefill-12"), "prefill");
  EXPECT_EQ(role_of_label("decode-0"), "decode");
  EXPECT_EQ(role_of_label("router"), "router");
  EXPECT_EQ(role_of_label("my-router"), "my-router");  // no number: the whole label
  EXPECT_EQ(role_of_label("x-"), "x-");
}

TEST(RoleTelemetry, GroupsWorkersByRoleInDeploymentOrder) {
  const auto roles = role_telemetry(deployment(), kLabels, {{"prefill", 2}, {"decode", 1}}, 1.0);
  ASSERT_EQ(roles.size(), 3u);  // the unlabelled URL is no role's
  EXPECT_EQ(roles[0].role, "prefill");
  EXPECT_EQ(roles[0].labels, (std::vector<std::string>{"prefill-0", "prefill-1"}));
  EXPECT_EQ(roles[0].gpus, 2);
  EXPECT_EQ(roles[1].role, "decode");
  EXPECT_EQ(roles[2].role, "router");
  EXPECT_EQ(roles[2].gpus, 0);
  // Queues and counters are summed over the role's workers.
  ASSERT_TRUE(roles[0].summary.mean_waiting.has_value());
  EXPECT_DOUBLE_EQ(*roles[0].summary.mean_waiting, 8);
  EXPECT_DOUBLE_EQ(*roles[0].summary.prompt_tokens, 4000);
  EXPECT_DOUBLE_EQ(*roles[1].summary.generation_tokens, 200);

  const auto j = roles_to_json(roles);
  EXPECT_EQ(j.at("prefill").at("workers").as_array().size(), 2u);
  EXPECT_FALSE(j.at("decode").at("slices").as_array().empty());
}

TEST(RoleTelemetry, EnergyPerRoleOverItsOwnTokens) {
  const auto roles = role_telemetry(deployment(), kLabels, {{"prefill", 2}, {"decode", 1}}, 1.0);
  const TokenCounts counts{10, 5000, 250};
  const auto e = role_energy(roles, 0, 2, counts);
  // 2 GPUs × 300 W × 2 s; 1 GPU × 600 W × 2 s.
  EXPECT_DOUBLE_EQ(e.at("prefill_gpu_energy_j").as_double(), 1200);
  EXPECT_DOUBLE_EQ(e.at("prefill_avg_power_w").as_double(), 300);
  EXPECT_DOUBLE_EQ(e.at("prefill_joules_per_input_token").as_double(), 1200.0 / 5000);
  EXPECT_DOUBLE_EQ(e.at("decode_gpu_energy_j").as_double(), 1200);
  EXPECT_DOUBLE_EQ(e.at("decode_joules_per_output_token").as_double(), 1200.0 / 250);
  EXPECT_TRUE(e.at("roles").at("prefill").at("power_valid").as_bool());
  EXPECT_FALSE(e.contains("router_gpu_energy_j"));
}

TEST(RoleTelemetry, RoleEnergyNotValidIsNoFigure) {
  // The decode role is said to have 2 GPUs; its scrapes show 1: not valid, no figure, the reason
  // kept.
  const auto roles = role_telemetry(deployment(), kLabels, {{"prefill", 2}, {"decode", 2}}, 1.0);
  const auto e = role_energy(roles, 0, 2, TokenCounts{10, 5000, 250});
  EXPECT_TRUE(e.contains("prefill_gpu_energy_j"));
  EXPECT_FALSE(e.contains("decode_gpu_energy_j"));
  EXPECT_FALSE(e.contains("decode_joules_per_output_token"));
  EXPECT_FALSE(e.at("roles").at("decode").at("power_valid").as_bool());
  EXPECT_FALSE(e.at("roles").at("decode").at("reasons").as_array().empty());
}

TEST(RateMatch, TheSideWhereRequestsQueueIsTheBound) {
  const auto roles = role_telemetry(deployment(), kLabels, {{"prefill", 2}, {"decode", 1}}, 1.0);
  RateInputs in;
  in.input_tokens_per_s = 8000;
  in.output_tokens_per_s = 400;
  in.prefill_queue_ms_p50 = 12;
  in.decode_queue_ms_p50 = 0.5;
  auto m = rate_match(roles, in);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->bound, "prefill");
  EXPECT_EQ(m->basis, "ttft attribution");
  EXPECT_NE(m->why.find("12.00 ms"), std::string::npos) << m->why;
  EXPECT_EQ(m->prefill.workers, 2);
  EXPECT_DOUBLE_EQ(*m->prefill.tokens_per_s_per_gpu, 4000);
  EXPECT_DOUBLE_EQ(*m->decode.tokens_per_s_per_gpu, 400);

  in.prefill_queue_ms_p50 = 0.5;
  in.decode_queue_ms_p50 = 9;
  EXPECT_EQ(rate_match(roles, in)->bound, "decode");
  in.decode_queue_ms_p50 = 0.9;  // twice the other, under the 1 ms floor
  EXPECT_EQ(rate_match(roles, in)->bound, "balanced");

  // No attribution: the roles' waiting queues (8 on prefill, 0 on decode).
  in.prefill_queue_ms_p50.reset();
  in.decode_queue_ms_p50.reset();
  m = rate_match(roles, in);
  EXPECT_EQ(m->bound, "prefill");
  EXPECT_EQ(m->basis, "server queues");
  EXPECT_EQ(rate_match_to_json(*m).at("prefill").at("input_tokens_per_s").as_double(), 8000);
}

TEST(RateMatch, NeedsBothSides) {
  auto roles = role_telemetry(deployment(), kLabels, {}, 1.0);
  roles.erase(roles.begin() + 1);  // no decode role
  EXPECT_FALSE(rate_match(roles, RateInputs{}).has_value());
  EXPECT_FALSE(rate_match({}, RateInputs{}).has_value());
}

}  // namespace
}  // namespace ib::telemetry
