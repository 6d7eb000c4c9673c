// Where a disaggregated deployment's roles run on Slurm, and the srun and salloc lines that put
// them there (slurm_topology.cc): pure, no cluster needed.
#include <gtest/gtest.h>

#include "launch/slurm.h"

namespace ib::launch {
namespace {

RoleSpec role(const char* name, int index, int gpus, std::vector<std::string> argv = {"srv"}) {
  RoleSpec r;
  r.role = name;
  r.index = index;
  r.gpus = gpus;
  r.argv = std::move(argv);
  return r;
}

TEST(SlurmTopologyPlan, EachWorkerOnItsOwnNodesAndTheRouterOnTheFirstDecodeNode) {
  // 2P1D: prefill TP8 on one 8-GPU node each, decode TP16 over two nodes (ranks 0 and 1).
  const std::vector<RoleSpec> roles = {role("prefill", 0, 8), role("prefill", 1, 8),
                                       role("decode", 0, 16), role("router", 0, 0)};
  auto plan = plan_topology(roles, 8);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->nodes, 4);
  EXPECT_EQ(plan->gpus_per_node, 8);
  ASSERT_EQ(plan->steps.size(), 5u);
  EXPECT_EQ(plan->steps[0].label, "prefill-0");
  EXPECT_EQ(plan->steps[1].node, 1);
  // decode-0's rank 1 starts before its rank 0 (which is healthy only once rank 1 has joined).
  EXPECT_EQ(plan->steps[2].label, "decode-0.r1");
  EXPECT_EQ(plan->steps[2].node, 3);
  EXPECT_EQ(plan->steps[2].rank, 1);
  EXPECT_EQ(plan->steps[2].ranks, 2);
  EXPECT_EQ(plan->steps[2].leader, 2);
  EXPECT_EQ(plan->steps[3].label, "decode-0");
  EXPECT_EQ(plan->steps[3].node, 2);
  EXPECT_EQ(plan->steps[4].label, "router");
  EXPECT_EQ(plan->steps[4].node, 2);  // decode rank 0's node (AMD's convention)
  EXPECT_EQ(plan->steps[4].gpus, 0);
}

TEST(SlurmTopologyPlan, TheRouterWhereTheRecipeSays) {
  std::vector<RoleSpec> roles = {role("prefill", 0, 1), role("decode", 0, 1), role("router", 0, 0)};
  roles[2].node = "own";
  auto own = plan_topology(roles, 8);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->nodes, 3);
  EXPECT_EQ(own->steps.back().node, 2);
  roles[2].node = "first-prefill";
  EXPECT_EQ(plan_topology(roles, 8)->steps.back().node, 0);
  roles[2].node = "head";
  auto bad = plan_topology(roles, 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not 'head'"), std::string::npos);
  EXPECT_FALSE(plan_topology({role("prefill", 0, 1), role("router", 0, 0)}, 8).ok());
  EXPECT_FALSE(plan_topology({role("prefill", 0, 1), role("decode", 0, 1)}, 8).ok());
  EXPECT_FALSE(plan_topology(roles, 0).ok());
}

TEST(SlurmTopologyPlan, StepsAreArgvsWithTheTracerThroughEnvNeverAShell) {
  const std::vector<RoleSpec> roles = {role("prefill", 0, 4), role("decode", 0, 4),
                                       role("router", 0, 0)};
  auto plan = plan_topology(roles, 8);
  ASSERT_TRUE(plan.ok());
  const auto argv = srun_step_argv(plan->steps[1], "42", "node2",
                                   {{"LD_PRELOAD", "/x/libtrace.so"}, {"IB_ENVTRACE_WATCH", "A,B"}},
                                   {"vllm", "serve", "it's; $(x)"});
  const std::vector<std::string> want = {"srun",
                                         "--jobid=42",
                                         "--nodes=1",
                                         "--ntasks=1",
                                         "--nodelist=node2",
                                         "--overlap",
                                         "--kill-on-bad-exit=1",
                                         "--job-name=decode-0",
                                         "--gpus=4",
                                         "--",
                                         "env",
                                         "IB_ENVTRACE_WATCH=A,B",
                                         "LD_PRELOAD=/x/libtrace.so",
                                         "vllm",
                                         "serve",
                                         "it's; $(x)"};
  EXPECT_EQ(argv, want);
  // The router asks for no GPU and no env(1) without tracer variables.
  const auto router = srun_step_argv(plan->steps[2], "42", "node2", {}, {"router"});
  EXPECT_EQ(std::count(router.begin(), router.end(), "env"), 0);
  EXPECT_EQ(std::find(router.begin(), router.end(), "--gpus=0"), router.end());

  SlurmOptions o;
  o.partition = "gpu";
  o.extra_sbatch_args = {"--qos=high"};
  const auto salloc = salloc_argv(*plan, o, "ib-x-1-0");
  EXPECT_EQ(salloc[0], "salloc");
  EXPECT_NE(std::find(salloc.begin(), salloc.end(), "--no-shell"), salloc.end());
  EXPECT_NE(std::find(salloc.begin(), salloc.end(), "--nodes=2"), salloc.end());
  EXPECT_NE(std::find(salloc.begin(), salloc.end(), "--gpus-per-node=4"), salloc.end());
  EXPECT_NE(std::find(salloc.begin(), salloc.end(), "--partition=gpu"), salloc.end());
  EXPECT_EQ(salloc.back(), "--qos=high");
  const std::string text = topology_plan_text(*plan, roles);
  EXPECT_NE(text.find("one job of 2 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("router        node<2>"), std::string::npos) << text;
}

// Each worker's step samples its own GPUs on its node: the sampler wraps the command, before the
// tracer's env(1), so it is not traced and ends with the step; the router holds no GPU.
TEST(SlurmTopologyPlan, WorkerStepsRunUnderThePowerSampler) {
  const std::vector<RoleSpec> roles = {role("prefill", 0, 4), role("decode", 0, 4),
                                       role("router", 0, 0)};
  auto plan = plan_topology(roles, 8);
  ASSERT_TRUE(plan.ok());
  SlurmOptions o;
  o.gpu_power = "nvidia-smi";
  o.power_interval_s = 0.25;
  const auto sampler = step_sampler_argv(plan->steps[0], o, "/opt/ib/inferbench", "/runs/p");
  const std::vector<std::string> want = {"/opt/ib/inferbench", "sample-power",      "--gpu-power",
                                         "nvidia-smi",         "--power-interval",  "0.25",
                                         "--output-dir",       "/runs/p/prefill-0", "--"};
  EXPECT_EQ(sampler, want);
  const auto argv =
      srun_step_argv(plan->steps[0], "42", "node1", {{"LD_PRELOAD", "/x/t.so"}}, {"vllm"}, sampler);
  const auto dashes = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dashes, argv.end());
  EXPECT_EQ(*(dashes + 1), "/opt/ib/inferbench");
  const auto env = std::find(argv.begin(), argv.end(), "env");
  ASSERT_NE(env, argv.end());
  EXPECT_LT(std::find(argv.begin(), argv.end(), "sample-power"), env);
  EXPECT_EQ(argv.back(), "vllm");
  EXPECT_TRUE(step_sampler_argv(plan->steps[2], o, "ib", "/p").empty());  // the router
  o.gpu_power = "off";
  EXPECT_TRUE(step_sampler_argv(plan->steps[0], o, "ib", "/p").empty());
  o.gpu_power = "auto";
  EXPECT_NE(topology_plan_text(*plan, roles, o).find("inferbench sample-power --gpu-power auto"),
            std::string::npos);
}

}  // namespace
}  // namespace ib::launch
