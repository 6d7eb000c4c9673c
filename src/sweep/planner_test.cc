// The sweep's planner, pure: rows → server configurations → points, with workloads and the
// reasons a row cannot run, before anything starts.
#include "sweep/planner.h"

#include <gtest/gtest.h>

#include "core/temp_dir.h"
#include "sweep/server_spec.h"
#include "tokenizer/testing.h"
#include "workload/fixed_seq_len.h"
#include "workload/gsm8k.h"

namespace ib::sweep {
namespace {

const char* kRecipe =
    "a:\n"
    "  image: i\n"
    "  model: m\n"
    "  model-prefix: p\n"
    "  precision: bf16\n"
    "  framework: serve-sim\n"
    "  runner: local\n"
    "  multinode: false\n"
    "  serve: { command: [inferbench, serve-sim, --port, \"{port}\"] }\n"
    "  workload: { prompts-per-conc: 3, warmups-per-conc: 0 }\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - isl: 1024\n"
    "      osl: 1024\n"
    "      search-space:\n"
    "      - { tp: 1, conc-list: [8, 1] }\n"
    "      - { tp: 1, conc-list: [4, 8] }\n"
    "      - { tp: 2, conc-list: [1] }\n"
    "    - { isl: 8192, osl: 1024, search-space: [{ tp: 1, conc-list: [2] }] }\n"
    "ag:\n"
    "  image: i\n"
    "  model: m\n"
    "  model-prefix: p\n"
    "  precision: fp8\n"
    "  framework: sglang\n"
    "  runner: cluster:h200-dgxc\n"
    "  multinode: false\n"
    "  scenarios:\n"
    "    agentic-coding:\n"
    "    - dram-utilization: 0.8\n"
    "      search-space:\n"
    "      - { tp: 8, kv-offloading: none, conc-list: [1] }\n";

struct Loaded {
  std::vector<recipe::ConfigEntry> entries;
  std::vector<recipe::RecipeRow> rows;
  std::map<std::string, const recipe::ConfigEntry*> by_key;
};

Loaded load(const std::string& text = kRecipe) {
  Loaded l;
  auto e = recipe::load_master_texts({{"r.yaml", text}});
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
  if (!e.ok()) return l;
  l.entries = std::move(*e);
  l.rows = recipe::expand(l.entries, nullptr);
  for (const auto& x : l.entries) l.by_key[x.key] = &x;
  return l;
}

TEST(Planner, RowsEqualButForConcurrencyShareOneServer) {
  Loaded l = load();
  std::vector<recipe::RecipeRow> rows;
  for (const auto& r : l.rows) {
    if (r.config_key == "a") rows.push_back(r);
  }
  auto configs = group_configs(rows, l.by_key, PlanOptions{});
  ASSERT_TRUE(configs.ok()) << configs.error().message;
  // tp 1 at 1k1k (concurrencies merged, sorted, unique), tp 2 at 1k1k, tp 1 at 8k1k.
  ASSERT_EQ(configs->size(), 3u);
  EXPECT_EQ((*configs)[0].concs, (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ((*configs)[1].concs, (std::vector<int64_t>{1}));
  EXPECT_EQ((*configs)[2].concs, (std::vector<int64_t>{2}));
  EXPECT_NE((*configs)[0].fingerprint, (*configs)[1].fingerprint);
  EXPECT_NE((*configs)[0].fingerprint, (*configs)[2].fingerprint);
  EXPECT_EQ((*configs)[0].launcher, "local");
  EXPECT_EQ((*configs)[1].gpus, 2);
  ASSERT_TRUE((*configs)[2].workload);
  EXPECT_EQ((*configs)[2].workload->label(), "isl 8192 / osl 1024");
  // --concurrency replaces every row's list; --server-arg changes the fingerprint.
  PlanOptions o;
  o.concurrencies = {16, 2, 16};
  o.extra_server_args = {"--x"};
  auto forced = group_configs(rows, l.by_key, o);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ((*forced)[0].concs, (std::vector<int64_t>{2, 16}));
  EXPECT_NE((*forced)[0].fingerprint, (*configs)[0].fingerprint);
}

TEST(Planner, WorkloadTakesDefaultsThenTheRecipeThenTheCommandLine) {
  Loaded l = load();
  const recipe::RecipeRow& row = l.rows.front();
  // No entry: InferenceX's defaults.
  auto w = sweep::workload_for_row(row, nullptr, {});
  ASSERT_TRUE(w.ok());
  const auto* fixed = dynamic_cast<const workload::FixedSeqLenWorkload*>(w->get());
  ASSERT_NE(fixed, nullptr);
  EXPECT_EQ(fixed->prompts_at(4), 40);
  EXPECT_EQ(fixed->warmups_at(4), 8);
  // The recipe's workload block.
  w = sweep::workload_for_row(row, l.by_key.at("a"), {});
  fixed = dynamic_cast<const workload::FixedSeqLenWorkload*>(w->get());
  EXPECT_EQ(fixed->prompts_at(4), 12);
  EXPECT_EQ(fixed->warmups_at(4), 0);
  EXPECT_EQ(fixed->params().range_ratio, 0.8);
  // The command line over both.
  WorkloadOverrides ov;
  ov.prompts_per_conc = 5;
  ov.seed = 7;
  ov.api = "chat";
  w = workload_for_row(row, l.by_key.at("a"), ov);
  fixed = dynamic_cast<const workload::FixedSeqLenWorkload*>(w->get());
  EXPECT_EQ(fixed->prompts_at(4), 20);
  EXPECT_EQ(fixed->params().seed, 7u);
  EXPECT_TRUE(fixed->params().as_text);
  EXPECT_NE(w->get()->key(4).find("\"api\":\"chat\""), std::string::npos);
}

TEST(Planner, WhatCannotRunIsKnownBeforeAnythingStarts) {
  Loaded l = load();
  std::vector<recipe::RecipeRow> agentic;
  for (const auto& r : l.rows) {
    if (r.config_key == "ag") agentic.push_back(r);
  }
  ASSERT_FALSE(agentic.empty());
  auto configs = group_configs(agentic, l.by_key, PlanOptions{});
  ASSERT_TRUE(configs.ok());
  ASSERT_EQ(configs->size(), 1u);
  // Agentic rows without traces to replay (neither --traces nor workload.traces).
  EXPECT_NE((*configs)[0].unsupported.find("agentic-coding rows need traces to replay"),
            std::string::npos);
  EXPECT_FALSE((*configs)[0].workload);
}

TEST(Planner, TheCanaryPointIsMeasuredOnce) {
  Loaded l = load();
  govern::Labels labels;
  labels.primary = "full-sweep-enabled";
  std::vector<recipe::RecipeRow> rows;
  for (const auto& r : l.rows) {
    if (r.config_key == "a") rows.push_back(r);
  }
  auto planned = plan_sweep(govern::make_sweep_plan(rows, labels), l.by_key, PlanOptions{});
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  ASSERT_FALSE(planned->groups.empty());
  const GroupPlan& canary = planned->groups.front();
  ASSERT_EQ(canary.name, "canary");
  ASSERT_EQ(canary.configs.size(), 1u);
  ASSERT_EQ(canary.configs[0].concs.size(), 1u);
  const int64_t conc = canary.configs[0].concs[0];
  // Every point once across the plan: 1, 4, 8 (tp 1), 1 (tp 2), 2 (8k1k).
  size_t total = 0;
  for (const auto& g : planned->groups) {
    for (const auto& c : g.configs) {
      total += c.concs.size();
      if (&g != &canary && c.fingerprint == canary.configs[0].fingerprint) {
        EXPECT_EQ(std::count(c.concs.begin(), c.concs.end(), conc), 0);
      }
    }
  }
  EXPECT_EQ(total, 5u);
  EXPECT_EQ(planned->points(), 5u);
  // A concurrency below 1 is refused.
  PlanOptions bad;
  bad.concurrencies = {0};
  auto refused = plan_sweep(govern::make_sweep_plan(rows, labels), l.by_key, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "--concurrency values must be at least 1 (got 0)");
}

const char* kEvalRecipe =
    "e:\n"
    "  image: i\n"
    "  model: m\n"
    "  model-prefix: p\n"
    "  precision: bf16\n"
    "  framework: serve-sim\n"
    "  runner: local\n"
    "  multinode: false\n"
    "  serve: { command: [inferbench, serve-sim, --port, \"{port}\"] }\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - { isl: 8192, osl: 1024, search-space: [{ tp: 1, conc-list: [16, 32, 64] }] }\n";

TEST(Planner, EvalRowsJoinTheirThroughputServerOrRunAlone) {
  Loaded l = load(kEvalRecipe);
  // InferenceX marks the 8k1k row at the highest (64) and median (32) concurrency >= 16.
  govern::Labels labels;
  labels.primary = "non-canary-full-sweep-enabled";
  WorkloadOverrides ov;
  ov.eval_limit = 10;
  PlanOptions o;
  o.workload = ov;
  auto planned = plan_sweep(govern::make_sweep_plan(l.rows, labels), l.by_key, o);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  ASSERT_EQ(planned->groups.size(), 1u);  // no separate eval group: one server for both
  const ConfigPlan& c = planned->groups[0].configs.at(0);
  EXPECT_EQ(c.concs, (std::vector<int64_t>{16, 32, 64}));
  EXPECT_EQ(c.eval_concs, (std::vector<int64_t>{32, 64}));
  ASSERT_TRUE(c.eval);
  const auto* eval = dynamic_cast<const workload::gsm8k::Gsm8kWorkload*>(c.eval.get());
  ASSERT_NE(eval, nullptr);
  EXPECT_EQ(eval->params().max_tokens, 5376);  // max-model-len 9472 - 4096
  EXPECT_EQ(eval->params().limit, 10u);
  EXPECT_EQ(eval->label(), "gsm8k 5-shot chat");
  EXPECT_EQ(planned->points(), 5u);
  const auto points = c.points();
  ASSERT_EQ(points.size(), 5u);
  EXPECT_FALSE(points[2].eval);
  EXPECT_TRUE(points[3].eval);
  EXPECT_EQ(points[3].conc, 32);
  // The eval's key differs from the throughput point's at the same concurrency.
  EXPECT_NE(c.eval->key(32), c.workload->key(32));
  EXPECT_EQ(c.eval->key(32).rfind("gsm8k:", 0), 0u);

  // evals-only: the evals alone on a server of their own.
  labels.evals_only = true;
  planned = plan_sweep(govern::make_sweep_plan(l.rows, labels), l.by_key, o);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  ASSERT_EQ(planned->groups.size(), 1u);
  EXPECT_EQ(planned->groups[0].name, "evals");
  const ConfigPlan& only = planned->groups[0].configs.at(0);
  EXPECT_TRUE(only.concs.empty());
  EXPECT_EQ(only.eval_concs, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(planned->points(), 2u);
}

TEST(Planner, BadWorkloadBlockNamesFileLineAndField) {
  std::string text = kRecipe;
  text.replace(text.find("prompts-per-conc: 3"), 19, "prompts-per-conc: 0");
  auto e = recipe::load_master_texts({{"r.yaml", text}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("r.yaml:10"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("a.workload.prompts-per-conc"), std::string::npos)
      << e.error().message;
  text = kRecipe;
  text.replace(text.find("warmups-per-conc: 0"), 19, "warmup-per-conc: 0");
  e = recipe::load_master_texts({{"r.yaml", text}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("a.workload.warmup-per-conc: unknown field"), std::string::npos)
      << e.error().message;
}

TEST(Planner, TheTokenizerComesFromTheRecipeOrTheCommandLine) {
  TempDir dir("ib-planner");
  const std::string model = (dir.path() / "model").string();
  ASSERT_TRUE(tokenizer::write_test_tokenizer(model).ok());
  // Relative to the recipe file's folder.
  std::string text = kRecipe;
  text.replace(text.find("warmups-per-conc: 0 }"), 21,
               "warmups-per-conc: 0, tokenizer: model }");
  const std::string file = (dir.path() / "r.yaml").string();
  auto e = recipe::load_master_texts({{file, text}});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ((*e)[0].workload->tokenizer, model);
  std::map<std::string, const recipe::ConfigEntry*> by_key;
  for (const auto& x : *e) by_key[x.key] = &x;
  const auto rows = recipe::expand(*e, nullptr);
  auto w = workload_for_row(rows.front(), by_key.at("a"), {});
  ASSERT_TRUE(w.ok()) << w.error().message;
  const auto* fixed = dynamic_cast<const workload::FixedSeqLenWorkload*>(w->get());
  ASSERT_NE(fixed, nullptr);
  ASSERT_TRUE(fixed->params().tokenizer);
  // The tokenizer's identity is in the key: resume and reuse never mix tokenizers.
  EXPECT_NE(w->get()->key(4).find(fixed->params().tokenizer->identity()), std::string::npos);
  // A path that does not exist: the recipe's file, line and field.
  text.replace(text.find("tokenizer: model"), 16, "tokenizer: nope");
  e = recipe::load_master_texts({{file, text}});
  ASSERT_TRUE(e.ok());
  by_key.clear();
  for (const auto& x : *e) by_key[x.key] = &x;
  w = workload_for_row(recipe::expand(*e, nullptr).front(), by_key.at("a"), {});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find(file + ":10: a.workload.tokenizer"), std::string::npos)
      << w.error().message;
  // --tokenizer replaces it; --chat-template alone is an error.
  WorkloadOverrides ov;
  ov.tokenizer = model;
  w = workload_for_row(recipe::expand(*e, nullptr).front(), by_key.at("a"), ov);
  EXPECT_TRUE(w.ok());
  ov = {};
  ov.chat_template = "x.jinja";
  w = workload_for_row(rows.front(), nullptr, ov);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("without a tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace ib::sweep

namespace ib::sweep {
namespace {

TEST(ServerSpec, APlaceholderTheRowHasNoValueForIsAnError) {
  recipe::RecipeRow row;
  row.config_key = "k";
  row.scenario = recipe::Scenario::kAgenticCoding;
  row.fields = boost::json::parse(
                   R"({"model":"m","tp":2,"kv-offloading":"dram","total-cpu-dram-gb":512,)"
                   R"("serve":{"command":["srv","--ctx","{max-model-len}","--port","{port}",)"
                   R"("--offload","{kv-offloading}","--dram","{total-cpu-dram-gb}"]}})")
                   .as_object();
  auto spec = server_spec_for_row(row, {}, "/usr/bin/inferbench");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().message.find("{max-model-len}, which agentic-coding rows do not have"),
            std::string::npos)
      << spec.error().message;
  row.fields["serve"].as_object()["command"].as_array()[2] = "{tp}";
  spec = server_spec_for_row(row, {}, "/usr/bin/inferbench");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"srv", "--ctx", "2", "--port", "{port}",
                                                  "--offload", "dram", "--dram", "512"}));
}

}  // namespace
}  // namespace ib::sweep
