#include "recipe/recipe.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/temp_dir.h"

namespace ib::recipe {
namespace {

const std::string kInferenceXData = INFERBENCH_TEST_DATA "/inferencex";

std::vector<Diagnostic> parse(const std::string& text,
                              std::vector<ConfigEntry>* entries = nullptr) {
  std::vector<ConfigEntry> local;
  std::vector<Diagnostic> diagnostics;
  parse_master_config(text, "t.yaml", entries ? entries : &local, &diagnostics);
  return diagnostics;
}

// A valid single-node entry; tests splice one broken line into it.
std::string single_node(const std::string& search_space_entry, const std::string& extra_top = "") {
  return "k1:\n"
         "  image: img:1\n"
         "  model: org/m\n"
         "  model-prefix: m\n"
         "  precision: fp8\n"
         "  framework: sglang\n"
         "  runner: h200\n"
         "  multinode: false\n" +
         extra_top +
         "  scenarios:\n"
         "    fixed-seq-len:\n"
         "    - isl: 1024\n"
         "      osl: 1024\n"
         "      search-space:\n"
         "      - { tp: 8, conc-start: 4, conc-end: 64 }\n"
         "      - " +
         search_space_entry + "\n";
}

TEST(RecipeLoad, RealMasterConfigsAndRunnersLoadCleanly) {
  auto runners = load_runners(kInferenceXData + "/runners.yaml");
  ASSERT_TRUE(runners.ok()) << runners.error().message;
  EXPECT_FALSE(runners->labels.empty());
  EXPECT_EQ(runners->hardware.at("cluster:h100-dgxc").available_cpu_dram_mib,
            2063837);  // 2_063_837
  EXPECT_EQ(runners->hardware.at("cluster:h100-dgxc").gpus_per_node, 8);
  auto amd = load_master_configs({kInferenceXData + "/amd-master.yaml"});
  ASSERT_TRUE(amd.ok()) << amd.error().message;
  EXPECT_EQ(amd->size(), 56u);
  auto both = load_master_configs({kInferenceXData + "/amd-master.yaml", kInferenceXData + "/nvidia-master.yaml"});
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->size(), 208u);
  const ConfigEntry& first = both->front();
  EXPECT_EQ(first.key, "dsr1-fp4-mi355x-sglang");
  EXPECT_EQ(first.line, 1);
  EXPECT_EQ(first.image, "lmsysorg/sglang:v0.5.12-rocm700-mi35x");
  ASSERT_EQ(first.fixed_seq_len.size(), 1u);
  EXPECT_EQ(first.fixed_seq_len[0].isl, 8192);
  EXPECT_EQ(first.fixed_seq_len[0].search_space[0].conc, (std::vector<int64_t>{4, 8, 16, 32, 64}));
}

TEST(RecipeLoad, DuplicateKeysAcrossFiles) {
  auto r = load_master_configs({kInferenceXData + "/amd-master.yaml", kInferenceXData + "/amd-master.yaml"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("dsr1-fp4-mi355x-sglang: config key is already defined at"),
            std::string::npos);
}

TEST(RecipeLoad, MissingFileIsAnError) {
  auto r = load_master_configs({"/nonexistent/x.yaml"});
  ASSERT_FALSE(r.ok());
}

// A disaggregated entry's serve blocks by role: all three roles, each a serve block; on an entry
// that is not disaggregated they are refused, naming the field.
TEST(RecipeLoad, ServeBlocksByRoleAreForDisaggregatedEntries) {
  const std::string disagg =
      "k1:\n  image: img:1\n  model: org/m\n  model-prefix: m\n  precision: fp8\n"
      "  framework: sglang\n  runner: h200\n  multinode: true\n  disagg: true\n"
      "  kv-p2p-transfer: nixl\n"
      "  serve:\n"
      "    prefill: { command: [srv, --tp, '{tp}', --port, '{port}', --role, '{role}'] }\n"
      "    decode: { command: [srv, --port, '{port}'], env: { UCX_TLS: rc } }\n"
      "    router: { command: [rt, --p, '{prefill-urls}', --d, '{decode-urls}', --port, '{port}'] "
      "}\n"
      "  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n"
      "      - { conc-list: [4], prefill: { num-worker: 2, tp: 4 }, decode: { num-worker: 1, tp: 8 "
      "} }\n";
  std::vector<ConfigEntry> entries;
  auto d = parse(disagg, &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  ASSERT_TRUE(entries.at(0).serve && entries[0].serve->has_roles());
  const auto& roles = entries[0].serve->roles;
  ASSERT_EQ(roles.size(), 3u);
  EXPECT_EQ(roles[0].first, "prefill");
  EXPECT_EQ(roles[1].second.env.at("UCX_TLS"), "rc");
  EXPECT_EQ(roles[2].second.command[2], "{prefill-urls}");
  EXPECT_EQ(roles[2].second.node, "");  // the launcher's default: the first decode node

  // Where a multi-node launcher runs the router: the router's block only, one of three words.
  std::string own = disagg;
  own.replace(own.find("    router: { command:"), 22, "    router: { node: own, command:");
  entries.clear();
  d = parse(own, &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  EXPECT_EQ(entries.at(0).serve->roles[2].second.node, "own");
  std::string head = disagg;
  head.replace(head.find("    router: { command:"), 22, "    router: { node: head, command:");
  EXPECT_NE(join_diagnostics(parse(head)).find("first-decode, first-prefill or own, not 'head'"),
            std::string::npos)
      << join_diagnostics(parse(head));
  std::string on_worker = disagg;
  on_worker.replace(on_worker.find("    decode: { command:"), 22,
                    "    decode: { node: own, command:");
  EXPECT_NE(join_diagnostics(parse(on_worker)).find("k1.serve.decode.node"), std::string::npos)
      << join_diagnostics(parse(on_worker));

  std::string missing = disagg;
  missing.erase(missing.find("    router:"),
                missing.find("  scenarios:") - missing.find("    router:"));
  EXPECT_NE(join_diagnostics(parse(missing)).find("k1.serve.router: required field is missing"),
            std::string::npos)
      << join_diagnostics(parse(missing));
  const std::string single =
      single_node("{ tp: 4, conc-list: [1] }",
                  "  serve:\n    prefill: { command: [a] }\n    decode: { command: [b] }\n"
                  "    router: { command: [c] }\n");
  EXPECT_NE(join_diagnostics(parse(single)).find("are for disaggregated entries (disagg: true)"),
            std::string::npos)
      << join_diagnostics(parse(single));
}

TEST(RecipeLoad, ValidEntryWithExtensions) {
  std::vector<ConfigEntry> entries;
  auto d = parse(single_node("{ tp: 4, ep: 4, dp-attn: true, conc-list: [1, 2] }",
                             "  serve:\n"
                             "    command: [python3, -m, sglang.launch_server, --model, '{model}', "
                             "--tp, '{tp}', --port, '{port}']\n"
                             "    env: { SGLANG_USE_AITER: 1, NCCL_DEBUG: WARN }\n"
                             "    extra-args: [--mem-fraction-static, '0.8']\n"
                             "    health-path: /health_generate\n"
                             "  expect:\n"
                             "    - { env-read: SGLANG_USE_AITER }\n"),
                 &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  ASSERT_EQ(entries.size(), 1u);
  const auto& e = entries[0];
  ASSERT_TRUE(e.serve.has_value());
  EXPECT_EQ(e.serve->command.size(), 9u);
  EXPECT_EQ(e.serve->env.at("SGLANG_USE_AITER"), "1");
  EXPECT_EQ(e.serve->health_path, "/health_generate");
  ASSERT_TRUE(e.expect.has_value());
  EXPECT_TRUE(e.expect->is_array());
  const auto& s = e.fixed_seq_len[0].search_space[1];
  EXPECT_EQ(*s.tp, 4);
  EXPECT_EQ(s.ep, 4);
  EXPECT_TRUE(s.dp_attn);
  EXPECT_EQ(s.conc, (std::vector<int64_t>{1, 2}));
}

// A JSON argument (vLLM's --speculative-config, --compilation-config) is not a placeholder; a
// placeholder inside one is still substituted later, and a misspelt name is still an error.
TEST(RecipeLoad, JsonArgumentsKeepTheirBraces) {
  std::vector<ConfigEntry> entries;
  auto d = parse(single_node("{ tp: 4, conc-list: [1] }",
                             "  serve:\n"
                             "    command: [vllm, serve, '{model}', --speculative-config, "
                             "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}', "
                             "--compilation-config, '{\"a\": {\"b\": \"{tp}\"}}']\n"),
                 &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].serve->command.at(4), R"({"method": "mtp", "num_speculative_tokens": 1})");
  std::vector<ConfigEntry> bad;
  auto e = parse(
      single_node("{ tp: 4, conc-list: [1] }", "  serve: { command: [x, '{\"a\": \"{tpp}\"}'] }\n"),
      &bad);
  EXPECT_NE(join_diagnostics(e).find("unknown placeholder {tpp}"), std::string::npos)
      << join_diagnostics(e);
}

struct BadCase {
  const char* name;
  std::string yaml;
  std::string expected;  // a substring of the joined diagnostics, "file:line:col: path: message"
};

TEST(RecipeLoad, BadInputsNameFileLineColumnAndPath) {
  const std::string ss = "k1.scenarios.fixed-seq-len[0].search-space[1]";
  const std::vector<BadCase> cases = {
      {"tp not an int", single_node("{ tp: x, conc-list: [1] }"),
       "t.yaml:15:15: " + ss + ".tp: expected a positive integer, got \"x\""},
      {"tp quoted", single_node("{ tp: \"4\", conc-list: [1] }"),
       "t.yaml:15:15: " + ss + ".tp: expected a positive integer, got \"4\""},
      {"tp zero", single_node("{ tp: 0, conc-list: [1] }"),
       ss + ".tp: expected a positive integer, got 0"},
      {"unknown field", single_node("{ tp: 8, tpp: 2, conc-list: [1] }"),
       "t.yaml:15:18: " + ss + ".tpp: unknown field"},
      {"dcp does not divide tp", single_node("{ tp: 6, dcp-size: 4, conc-list: [1] }"),
       ss + ".dcp-size: tp (6) must be a multiple of dcp-size (4)"},
      {"conc-start > conc-end", single_node("{ tp: 8, conc-start: 64, conc-end: 4 }"),
       ss + ".conc-start: conc-start (64) is greater than conc-end (4)"},
      {"both conc forms", single_node("{ tp: 8, conc-start: 4, conc-end: 8, conc-list: [1] }"),
       ss + ".conc-list: give either conc-start/conc-end or conc-list, not both"},
      {"no conc form", single_node("{ tp: 8 }"),
       ss + ".conc-list: give either conc-start/conc-end or conc-list"},
      {"conc-end missing", single_node("{ tp: 8, conc-start: 4 }"),
       ss + ".conc-end: required field is missing"},
      {"conc-list zero", single_node("{ tp: 8, conc-list: [4, 0] }"),
       ss + ".conc-list[1]: expected a positive integer, got 0"},
      {"conc-list empty", single_node("{ tp: 8, conc-list: [] }"),
       ss + ".conc-list: conc-list may not be empty"},
      {"spec-decoding value", single_node("{ tp: 8, conc-list: [1], spec-decoding: eagle }"),
       ss + ".spec-decoding: expected one of mtp, draft_model, none, got \"eagle\""},
      {"dp-attn not bool", single_node("{ tp: 8, conc-list: [1], dp-attn: 1 }"),
       ss + ".dp-attn: expected true or false, got 1"},
      {"tp missing", single_node("{ ep: 8, conc-list: [1] }"),
       ss + ".tp: required field is missing"},
      {"entry not a mapping", single_node("8"), ss + ": expected a mapping, got 8"},
      {"top-level unknown", single_node("{ tp: 8, conc-list: [1] }", "  owner: me\n"),
       "t.yaml:9:3: k1.owner: unknown field"},
      {"star in key", "k*:\n  image: i\n", "t.yaml:1:1: k*: config keys may not contain '*'"},
      {"missing image", "k1:\n  model: m\n", "t.yaml:2:3: k1.image: required field is missing"},
      {"image wrong type", single_node("{ tp: 8, conc-list: [1] }", "  image: [a]\n"),
       "k1.image: duplicate field"},
      {"multinode not bool", "k1:\n  multinode: maybe\n",
       "t.yaml:2:14: k1.multinode: expected true or false, got \"maybe\""},
      {"disagg without multinode", single_node("{ tp: 8, conc-list: [1] }", "  disagg: true\n"),
       "k1.disagg: disagg: true requires multinode: true"},
      {"router version image:",
       single_node("{ tp: 8, conc-list: [1] }", "  router: { name: r, version: 'image:x' }\n"),
       "k1.router.version: router version may not start with \"image:\""},
      {"router at both levels",
       single_node("{ tp: 8, conc-list: [1], router: { name: r, version: '1' } }",
                   "  router: { name: r, version: '1' }\n"),
       ss + ".router: router is set at the top level and in the search-space entry"},
      {"kv-p2p on single node",
       single_node("{ tp: 8, conc-list: [1] }", "  kv-p2p-transfer: nixl\n"),
       "k1.kv-p2p-transfer: kv-p2p-transfer is only allowed with multinode: true"},
      {"isl not int",
       "k1:\n  scenarios:\n    fixed-seq-len:\n    - { isl: 1k, osl: 1024, search-space: [] }\n",
       "t.yaml:4:14: k1.scenarios.fixed-seq-len[0].isl: expected a positive integer, got \"1k\""},
      {"no scenario", "k1:\n  scenarios: {}\n", "k1.scenarios: at least one scenario"},
      {"unknown scenario", "k1:\n  scenarios: { random: [] }\n",
       "k1.scenarios.random: unknown field"},
      {"yaml syntax", "k1: [a,\n", "t.yaml:"},
      {"serve unknown placeholder",
       single_node("{ tp: 8, conc-list: [1] }", "  serve: { command: [run, '{gpu}'] }\n"),
       "k1.serve.command[1]: unknown placeholder {gpu}"},
      {"serve env bad name",
       single_node("{ tp: 8, conc-list: [1] }", "  serve: { command: [run], env: { 1X: a } }\n"),
       "k1.serve.env.1X: not a valid environment variable name"},
      {"serve missing command", single_node("{ tp: 8, conc-list: [1] }", "  serve: { env: {} }\n"),
       "k1.serve.command: required field is missing"},
      {"serve health path",
       single_node("{ tp: 8, conc-list: [1] }", "  serve: { command: [x], health-path: health }\n"),
       "k1.serve.health-path: must start with '/'"},
      {"duplicate field", "k1:\n  image: a\n  image: b\n", "t.yaml:3:3: k1.image: duplicate field"},
  };
  for (const auto& c : cases) {
    auto d = parse(c.yaml);
    std::string all = join_diagnostics(d);
    EXPECT_NE(all.find(c.expected), std::string::npos)
        << c.name << "\nwant: " << c.expected << "\ngot:\n"
        << all;
  }
}

TEST(RecipeLoad, AllErrorsOfAFileAreReported) {
  std::string yaml =
      single_node("{ tp: x, conc-start: 9, conc-end: 2, spec-decoding: nope, extra: 1 }");
  auto d = parse(yaml);
  ASSERT_GE(d.size(), 4u) << join_diagnostics(d);
  std::string all = join_diagnostics(d);
  for (const char* part : {".tp:", ".conc-start:", ".spec-decoding:", ".extra: unknown field"}) {
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
  }
}

const char* kMultinode =
    "mn:\n"
    "  image: i\n"
    "  model: m\n"
    "  model-prefix: p\n"
    "  precision: fp4\n"
    "  framework: dynamo-trt\n"
    "  runner: gb200\n"
    "  multinode: true\n"
    "  disagg: true\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - isl: 8192\n"
    "      osl: 1024\n"
    "      search-space:\n"
    "      - conc-list: [16, 32]\n"
    "        prefill: { num-worker: 1, tp: 4, ep: 4, dp-attn: true, hardware: gb200 }\n"
    "        decode: { num-worker: 2, tp: 8, additional-settings: [\"A=1\"] }\n";

TEST(RecipeLoad, MultinodeRules) {
  std::string all = join_diagnostics(parse(kMultinode));
  EXPECT_NE(
      all.find("search-space[0].decode.hardware: hardware must be set on both prefill and decode"),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("mn.kv-p2p-transfer: disagg: true requires kv-p2p-transfer"),
            std::string::npos)
      << all;

  std::string fixed = std::string(kMultinode);
  fixed.replace(fixed.find(", hardware: gb200"), 17, "");
  fixed.replace(fixed.find("  disagg: true\n"), 15, "  disagg: true\n  kv-p2p-transfer: nixl\n");
  std::vector<ConfigEntry> entries;
  auto d = parse(fixed, &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  const auto& s = entries[0].fixed_seq_len[0].search_space[0];
  EXPECT_EQ(s.prefill->tp, 4);
  EXPECT_EQ(s.decode->num_worker, 2);
  EXPECT_EQ(s.decode->ep, 1);  // default
  EXPECT_EQ(s.decode->additional_settings, std::vector<std::string>{"A=1"});

  std::string bad_setting = fixed;
  bad_setting.replace(bad_setting.find("\"A=1\""), 5, "\"A\"");
  all = join_diagnostics(parse(bad_setting));
  EXPECT_NE(
      all.find("search-space[0].decode.additional-settings[0]: expected KEY=VALUE, got \"A\""),
      std::string::npos)
      << all;
}

const char* kAgentic =
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
    "      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: lmcache }, conc-list: [1, "
    "4] }\n"
    "      - { tp: 4, kv-offloading: none, conc-list: [2] }\n";

TEST(RecipeLoad, AgenticRules) {
  std::vector<ConfigEntry> entries;
  auto d = parse(kAgentic, &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  EXPECT_DOUBLE_EQ(*entries[0].agentic_coding[0].dram_utilization, 0.8);

  struct Mutation {
    std::string from, to, expected;
  };
  const std::string ss = "ag.scenarios.agentic-coding[0].search-space";
  const std::vector<Mutation> mutations = {
      {"runner: cluster:h200-dgxc", "runner: h200",
       "ag.runner: agentic-coding needs a runner label starting with \"cluster:\""},
      {"kv-offloading: none, ", "", ss + "[1].kv-offloading: required field is missing"},
      {"kv-offloading: none,", "kv-offloading: none, kv-offload-backend: { name: x },",
       ss + "[1].kv-offload-backend: kv-offload-backend is only allowed when kv-offloading is not "
            "none"},
      {", kv-offload-backend: { name: lmcache }", "",
       ss + "[0].kv-offload-backend: kv-offload-backend is required"},
      {"kv-offloading: dram", "kv-offloading: disk",
       ss + "[0].kv-offloading: expected none or dram, got \"disk\""},
      {"dram-utilization: 0.8", "dram-utilization: 1.5",
       "ag.scenarios.agentic-coding[0].dram-utilization: expected a number in (0, 1], got 1.5"},
      {"    - dram-utilization: 0.8\n      search-space", "    - search-space",
       ss + "[0].kv-offloading: kv-offloading: dram requires dram-utilization"},
  };
  for (const auto& m : mutations) {
    std::string yaml = kAgentic;
    auto pos = yaml.find(m.from);
    ASSERT_NE(pos, std::string::npos) << m.from;
    yaml.replace(pos, m.from.size(), m.to);
    std::string all = join_diagnostics(parse(yaml));
    EXPECT_NE(all.find(m.expected), std::string::npos) << "want: " << m.expected << "\ngot:\n"
                                                       << all;
  }
}

TEST(RunnersLoad, BadInputs) {
  struct Case {
    std::string yaml, expected;
  };
  const std::vector<Case> cases = {
      {"labels: { h200: [] }\n", "labels.h200: a label needs at least one runner"},
      {"labels: { h200: [1] }\n", "labels.h200[0]: expected a string, got 1"},
      {"hardware: { c: { gpus-per-node: 8 } }\n",
       "hardware.c.available-cpu-dram-mib: required field is missing"},
      {"hardware: { c: { gpus-per-node: 0, available-cpu-dram-mib: 1 } }\n",
       "hardware.c.gpus-per-node: expected a positive integer, got 0"},
      {"hardware: { c: { gpus-per-node: 8, available-cpu-dram-mib: 1, launcher: k8s } }\n",
       "hardware.c.launcher: expected local, slurm or endpoint, got \"k8s\""},
      {"runners: {}\n", "t.yaml:1:1: runners: unknown field"},
  };
  for (const auto& c : cases) {
    RunnersFile out;
    std::vector<Diagnostic> d;
    parse_runners(c.yaml, "t.yaml", &out, &d);
    std::string all = join_diagnostics(d);
    EXPECT_NE(all.find(c.expected), std::string::npos) << "want: " << c.expected << "\ngot:\n"
                                                       << all;
  }
}

TEST(Concurrency, Expansion) {
  struct Case {
    int64_t start, end;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {4, 100, {4, 8, 16, 32, 64, 100}},
      {4, 64, {4, 8, 16, 32, 64}},
      {4, 4, {4}},
      {1, 3, {1, 2, 3}},
      {3, 10, {3, 6, 10}},
      {5, 6, {5, 6}},
  };
  for (const auto& c : cases)
    EXPECT_EQ(expand_concurrency(c.start, c.end), c.want) << c.start << ".." << c.end;
}

}  // namespace
}  // namespace ib::recipe

namespace ib::recipe {
namespace {

const std::string kFixtures = INFERBENCH_SOURCE_DIR "/tests/fixtures/recipes";

// Each tests/fixtures/recipes/bad/*.yaml lists the diagnostics it must produce in
// "# expect: FILE:LINE:COL: PATH: message" header lines.
TEST(RecipeFixtures, BadFilesProduceTheirExpectedDiagnostics) {
  size_t files = 0;
  for (const auto& dirent : std::filesystem::directory_iterator(kFixtures + "/bad")) {
    if (dirent.path().extension() != ".yaml") continue;
    ++files;
    std::ifstream in(dirent.path());
    std::vector<std::string> expected;
    for (std::string line; std::getline(in, line);) {
      const std::string tag = "# expect: ";
      if (line.rfind(tag, 0) == 0) expected.push_back(line.substr(tag.size()));
    }
    ASSERT_FALSE(expected.empty()) << dirent.path();
    auto r = load_master_configs({dirent.path()});
    ASSERT_FALSE(r.ok()) << dirent.path();
    for (const auto& want : expected) {
      EXPECT_NE(r.error().message.find(want), std::string::npos)
          << dirent.path().filename() << "\nwant: " << want << "\ngot:\n"
          << r.error().message;
    }
  }
  EXPECT_GE(files, 4u);
}

TEST(RecipeFixtures, GoodRecipeWithExtensions) {
  auto r = load_master_configs({kFixtures + "/good/sglang-mi355x.yaml"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const auto& e = r->front();
  EXPECT_EQ(e.serve->env.at("NCCL_MIN_NCHANNELS"), "112");
  EXPECT_EQ(e.serve->command[4], "{model}");
  EXPECT_EQ(e.expect->at("settings").at("tp_size").as_int64(), 8);
  EXPECT_EQ(e.expect->at("env-read").as_array().at(0).as_string(), "SGLANG_USE_AITER");
  EXPECT_EQ(e.fixed_seq_len[0].search_space[0].conc, (std::vector<int64_t>{4, 8, 16, 32, 64}));
}

}  // namespace
}  // namespace ib::recipe

namespace ib::recipe {
namespace {

constexpr const char* kMergeRecipe = R"(.sglang-defaults: &sg
  image: lmsysorg/sglang:v0.5.12
  model: org/m
  precision: fp8
  framework: sglang
  runner: h200
  multinode: false
  serve:
    command: [python3, -m, sglang.launch_server, --port, "{port}"]
    env: { SGLANG_A: "1" }
.scenarios: &scen
  fixed-seq-len:
  - isl: 1024
    osl: 1024
    search-space:
    - { tp: 8, conc-list: [4, 8] }
a:
  <<: *sg
  model-prefix: a
  scenarios: *scen
b:
  <<: [*sg]
  model-prefix: b
  image: lmsysorg/sglang:v0.5.13
  scenarios: *scen
)";

TEST(RecipeMergeKeys, TemplatesAreMergedAndExplicitKeysWin) {
  std::vector<ConfigEntry> entries;
  auto d = parse(kMergeRecipe, &entries);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  ASSERT_EQ(entries.size(), 2u);  // the dot-prefixed templates are not config keys
  EXPECT_EQ(entries[0].key, "a");
  EXPECT_EQ(entries[0].image, "lmsysorg/sglang:v0.5.12");
  EXPECT_EQ(entries[0].framework, "sglang");
  ASSERT_TRUE(entries[0].serve.has_value());
  EXPECT_EQ(entries[0].serve->env.at("SGLANG_A"), "1");
  EXPECT_EQ(entries[1].key, "b");
  EXPECT_EQ(entries[1].image, "lmsysorg/sglang:v0.5.13");
  EXPECT_EQ(entries[1].line, 21);
  EXPECT_EQ(entries[1].raw.at("model-prefix").as_string(), "b");
  EXPECT_EQ(entries[1].raw.at("runner").as_string(), "h200");
}

TEST(RecipeMergeKeys, MergingAScalarIsAnErrorWithItsLine) {
  std::vector<ConfigEntry> entries;
  auto d = parse("a:\n  <<: 3\n  image: x\n", &entries);
  auto it = std::find_if(d.begin(), d.end(), [](const Diagnostic& x) { return x.path == "a.<<"; });
  ASSERT_NE(it, d.end()) << join_diagnostics(d);
  EXPECT_EQ(it->line, 2);
  EXPECT_NE(it->message.find("merge key takes a mapping"), std::string::npos);
}

TEST(RecipeMergeKeys, MergedFieldsAreStillValidated) {
  std::vector<ConfigEntry> entries;
  auto d = parse(".d: &d\n  imagee: x\nk:\n  <<: *d\n", &entries);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join_diagnostics(d).find("imagee"), std::string::npos);
  EXPECT_EQ(d[0].line, 2);  // the unknown field is reported where it is written
}

}  // namespace
}  // namespace ib::recipe

namespace ib::recipe {
namespace {

TEST(RecipeLoad, AgenticWorkloadKeys) {
  std::vector<ConfigEntry> entries;
  std::vector<Diagnostic> d;
  const std::string text = single_node(
      "{ tp: 4, conc-list: [2] }",
      "  workload: { traces: [traces, /abs/corpus.jsonl], max-traces: 5, duration: 1200,\n"
      "              warmup-requests-per-lane: 1, time-scale: 50 }\n");
  parse_master_config(text, "recipes/r.yaml", &entries, &d);
  ASSERT_TRUE(d.empty()) << join_diagnostics(d);
  const WorkloadSpec& w = *entries[0].workload;
  // Relative trace paths are taken from the recipe's folder.
  EXPECT_EQ(w.traces, (std::vector<std::string>{"recipes/traces", "/abs/corpus.jsonl"}));
  EXPECT_EQ(*w.max_traces, 5);
  EXPECT_DOUBLE_EQ(*w.duration, 1200);
  EXPECT_EQ(*w.warmup_requests_per_lane, 1);
  EXPECT_DOUBLE_EQ(*w.time_scale, 50);

  const std::string bad =
      single_node("{ tp: 4, conc-list: [2] }", "  workload: { time-scale: 0 }\n");
  std::string all = join_diagnostics(parse(bad));
  EXPECT_NE(all.find("k1.workload.time-scale: expected a positive number, got 0"),
            std::string::npos)
      << all;
}

}  // namespace
}  // namespace ib::recipe

namespace ib::recipe {
namespace {

// Writes `text` to dir/name.
std::filesystem::path write(const std::filesystem::path& dir, const std::string& name,
                            const std::string& text) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

TEST(RecipeLoad, EmptyAndCommentOnlyFilesAreErrorsNamingTheFile) {
  TempDir dir;
  for (const std::string& text : {std::string(), std::string("# nothing here\n\n"),
                                  std::string(".defaults: &d { image: x }\n")}) {
    auto file = write(dir.path(), "empty.yaml", text);
    auto r = load_master_configs({file});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message.rfind("no config keys in " + file.string() + " (", 0), 0u)
        << r.error().message;
  }
  // Texts from a git tree (`changed`) may be empty: no keys, no error.
  EXPECT_TRUE(load_master_texts({{"empty.yaml", ""}}).ok());
}

TEST(RecipeLoad, ADirectoryStandsForItsYamlFilesSorted) {
  TempDir dir;
  const auto recipes = dir.path() / "recipes";
  write(recipes, "b.yml", single_node("{ tp: 1, conc-list: [1] }").replace(0, 2, "kb"));
  write(recipes, "a.yaml", single_node("{ tp: 1, conc-list: [1] }").replace(0, 2, "ka"));
  write(recipes, "notes.txt", "not a recipe\n");
  std::filesystem::create_directories(recipes / "sub.yaml");  // a directory: not read
  auto files = expand_recipe_paths({recipes});
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_EQ(*files, (std::vector<std::filesystem::path>{recipes / "a.yaml", recipes / "b.yml"}));
  EXPECT_EQ(describe_expansion({recipes}),
            std::vector<std::string>{recipes.string() +
                                     ": a directory; reading its 2 YAML files: a.yaml, b.yml"});
  EXPECT_TRUE(describe_expansion({recipes / "a.yaml"}).empty());
  auto entries = load_master_configs({recipes});
  ASSERT_TRUE(entries.ok()) << entries.error().message;
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].key, "ka");
  EXPECT_EQ((*entries)[1].key, "kb");

  const auto bare = dir.path() / "bare";
  std::filesystem::create_directories(bare);
  auto none = load_master_configs({bare});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            bare.string() + ": a directory without *.yaml or *.yml files; give recipe files, or a "
                            "directory that holds them");
  auto missing = load_master_configs({dir.path() / "missing.yaml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            (dir.path() / "missing.yaml").string() + ": no such file or directory");
  // A runners file that is a directory is an error, not an empty file.
  auto runners = load_runners(recipes);
  ASSERT_FALSE(runners.ok());
  EXPECT_NE(runners.error().message.find("is a directory"), std::string::npos);
}

TEST(RecipeLoad, OversizedFileIsRejectedBeforeItIsRead) {
  TempDir dir;
  const auto file = dir.path() / "big.yaml";
  {
    std::ofstream out(file);
    out << "k: \"";
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 17; ++i) out << chunk;
    out << "\"\n";
  }
  auto r = load_master_configs({file});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            file.string() + ": 17825798 bytes is more than the limit for a YAML document (16 MiB)");
}

TEST(RecipeLoad, AliasBombInARecipeIsALimitErrorNamingFileAndLine) {
  std::string doc = ".t0: &t0 [x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 9; ++level) {
    doc += fmt::format(".t{}: &t{} [", level, level);
    for (int i = 0; i < 9; ++i) doc += fmt::format("{}*t{}", i ? ", " : "", level - 1);
    doc += "]\n";
  }
  auto d = parse(doc);
  ASSERT_EQ(d.size(), 1u) << join_diagnostics(d);
  EXPECT_EQ(d[0].kind, "yaml-limit");
  EXPECT_EQ(d[0].line, 7);
  EXPECT_NE(d[0].str().find("too many nodes after alias expansion"), std::string::npos);
}

TEST(RecipeLoad, NumericFieldsAreRangeChecked) {
  struct Mutation {
    std::string from, to, expected;
  };
  const std::string entry = "{ tp: 2, conc-list: [1] }";
  const std::vector<Mutation> cases = {
      {"conc-list: [1]", "conc-list: [3000000000]",
       "search-space[1].conc-list[0]: expected a positive integer at most 100000, got "
       "3000000000"},
      {"conc-list: [1]", "conc-start: 1, conc-end: 1000000000000",
       "search-space[1].conc-end: expected a positive integer at most 100000, got 1000000000000"},
      {"conc-list: [1]", "conc-start: 0, conc-end: 4",
       "search-space[1].conc-start: expected a positive integer, got 0"},
      {"conc-list: [1]", "conc-list: [99999999999999999999]",
       "conc-list[0]: expected a positive integer at most 100000, got 99999999999999999999"},
      {"tp: 2", "tp: 5000", "search-space[1].tp: expected a positive integer at most 4096, got 5000"},
      {"tp: 2", "tp: 2, ep: 0", "search-space[1].ep: expected a positive integer, got 0"},
      {"tp: 2", "tp: 2, pp: 1.5", "search-space[1].pp: expected a positive integer, got 1.5"},
      {"isl: 1024", "isl: 3000000000",
       "fixed-seq-len[0].isl: expected a positive integer at most 4194304, got 3000000000"},
      {"osl: 1024", "osl: 0", "fixed-seq-len[0].osl: expected a positive integer, got 0"},
  };
  for (const auto& m : cases) {
    std::string yaml = single_node(entry);
    auto pos = yaml.find(m.from);
    ASSERT_NE(pos, std::string::npos) << m.from;
    yaml.replace(pos, m.from.size(), m.to);
    std::string all = join_diagnostics(parse(yaml));
    EXPECT_NE(all.find(m.expected), std::string::npos) << "want: " << m.expected << "\ngot:\n"
                                                       << all;
  }
  // A conc-list longer than the limit is one error, not a million rows.
  std::string list = "conc-list: [1";
  for (size_t i = 1; i <= limits::kMaxConcValues; ++i) list += ", 1";
  std::string all = join_diagnostics(parse(single_node("{ tp: 2, " + list + "] }")));
  EXPECT_NE(all.find("conc-list: a list of 1001 values; the limit is 1000"), std::string::npos)
      << all.substr(0, 500);
}

TEST(RecipeLoad, WorkloadNumbersAreRangeChecked) {
  struct Case {
    std::string workload, expected;
  };
  const std::vector<Case> cases = {
      {"prompts-per-conc: 0", "k1.workload.prompts-per-conc: expected a positive integer, got 0"},
      {"prompts-per-conc: 3000000000", "expected a positive integer at most 1000, got 3000000000"},
      {"min-prompts: 100000000", "k1.workload.min-prompts: expected a positive integer at most "
                                 "10000000, got 100000000"},
      {"warmups-per-conc: 1001", "k1.workload.warmups-per-conc: expected a non-negative integer "
                                 "at most 1000, got 1001"},
      {"seed: -1", "k1.workload.seed: expected an integer >= 0, got -1"},
      {"max-traces: 0", "k1.workload.max-traces: expected a positive integer, got 0"},
      {"max-traces: 1000001", "k1.workload.max-traces: expected a positive integer at most "
                              "1000000, got 1000001"},
      {"duration: .inf", "k1.workload.duration: expected a number, got \".inf\""},
      {"duration: .nan", "k1.workload.duration: expected a number, got \".nan\""},
      {"duration: 1.0e+400", "k1.workload.duration: expected a number, got \"1.0e+400\""},
      {"duration: 1.0e+9", "k1.workload.duration: expected a positive number at most 604800, got "},
      {"time-scale: 1.0e+6", "k1.workload.time-scale: expected a positive number at most 1000"},
      {"range-ratio: .nan", "k1.workload.range-ratio: expected a number, got \".nan\""},
  };
  for (const auto& c : cases) {
    const std::string yaml =
        single_node("{ tp: 4, conc-list: [2] }", "  workload: { " + c.workload + " }\n");
    std::string all = join_diagnostics(parse(yaml));
    EXPECT_NE(all.find(c.expected), std::string::npos) << "want: " << c.expected << "\ngot:\n"
                                                       << all;
  }
}

TEST(RunnersLoad, NumbersAreRangeChecked) {
  struct Case {
    std::string yaml, expected;
  };
  const std::vector<Case> cases = {
      {"hardware: { c: { gpus-per-node: 3000000000, available-cpu-dram-mib: 1 } }\n",
       "t.yaml:1:33: hardware.c.gpus-per-node: expected a positive integer at most 4096, got "
       "3000000000"},
      {"hardware: { c: { gpus-per-node: 8, available-cpu-dram-mib: 99999999999999999999 } }\n",
       "hardware.c.available-cpu-dram-mib: expected a positive integer at most 1073741824, got "
       "99999999999999999999"},
  };
  for (const auto& c : cases) {
    RunnersFile out;
    std::vector<Diagnostic> d;
    parse_runners(c.yaml, "t.yaml", &out, &d);
    std::string all = join_diagnostics(d);
    EXPECT_NE(all.find(c.expected), std::string::npos) << "want: " << c.expected << "\ngot:\n"
                                                       << all;
  }
}

TEST(RecipeLoad, EchoedValuesAreEscapedAndCut) {
  // A 1 MB spec-decoding value and a key with an escape sequence: the message quotes neither
  // whole nor raw.
  const std::string yaml =
      single_node("{ tp: 2, conc-list: [1], spec-decoding: \"" + std::string(1 << 20, 'm') + "\" }")
          .replace(0, 2, "\"k\\e[2J\"");
  std::string all = join_diagnostics(parse(yaml));
  EXPECT_NE(all.find("k\\x1b[2J.scenarios.fixed-seq-len[0].search-space[1].spec-decoding: "
                     "expected one of mtp, draft_model, none, got \"mmm"),
            std::string::npos)
      << all.substr(0, 500);
  EXPECT_NE(all.find("(1048576 bytes in all)"), std::string::npos);
  EXPECT_LT(all.size(), 600u);
  EXPECT_EQ(all.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace ib::recipe

namespace ib::recipe {
namespace {

std::string trace_entry(const std::string& scenario_lines) {
  return "tk:\n"
         "  image: img:1\n"
         "  model: org/m\n"
         "  model-prefix: m\n"
         "  precision: fp8\n"
         "  framework: vllm\n"
         "  runner: h200\n"
         "  multinode: false\n"
         "  scenarios:\n"
         "    timed-trace:\n" +
         scenario_lines;
}

TEST(RecipeLoad, TimedTraceScenarioRowsOnePerCap) {
  std::vector<ConfigEntry> entries;
  std::vector<Diagnostic> d;
  parse_master_config(trace_entry("    - trace: traces/m.jsonl\n"
                                  "      format: mooncake\n"
                                  "      window: '0:600'\n"
                                  "      time-scale: 0.5\n"
                                  "      search-space:\n"
                                  "      - { tp: 2, conc-list: [8, 64] }\n"),
                      "/r/recipes/t.yaml", &entries, &d);
  ASSERT_TRUE(d.empty()) << d[0].message;
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_EQ(entries[0].timed_trace.size(), 1u);
  EXPECT_EQ(entries[0].timed_trace[0].trace, "/r/recipes/traces/m.jsonl");  // recipe-relative
  const auto rows = expand(entries, nullptr);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].scenario, Scenario::kTimedTrace);
  EXPECT_EQ(rows[1].fields.at("conc").as_int64(), 64);
  EXPECT_EQ(rows[0].fields.at("trace-format").as_string(), "mooncake");
  EXPECT_EQ(rows[0].fields.at("window").as_string(), "0:600");
  EXPECT_EQ(rows[0].fields.at("exp-name").as_string(), "m_tp2_trace-m_conc8");
  EXPECT_EQ(rows[0].to_json().at("scenario-type").as_string(), "timed-trace");
}

TEST(RecipeLoad, TimedTraceScenarioErrorsNameTheField) {
  auto first = [](const std::string& text) {
    std::vector<ConfigEntry> entries;
    std::vector<Diagnostic> d;
    parse_master_config(text, "t.yaml", &entries, &d);
    return d.empty() ? Diagnostic{} : d[0];
  };
  auto d =
      first(trace_entry("    - trace: m.jsonl\n      format: sharegpt\n"
                        "      search-space: [{ tp: 1, conc-list: [1] }]\n"));
  EXPECT_EQ(d.path, "tk.scenarios.timed-trace[0].format");
  EXPECT_NE(d.message.find("mooncake, bailian, burstgpt or azure"), std::string::npos);
  d = first(
      trace_entry("    - format: mooncake\n      search-space: [{ tp: 1, conc-list: [1] }]\n"));
  EXPECT_EQ(d.path, "tk.scenarios.timed-trace[0].trace");
  EXPECT_NE(d.message.find("required field is missing"), std::string::npos) << d.message;
  d =
      first(trace_entry("    - trace: m.jsonl\n      format: azure\n      time-scale: 0\n"
                        "      search-space: [{ tp: 1, conc-list: [1] }]\n"));
  EXPECT_EQ(d.path, "tk.scenarios.timed-trace[0].time-scale");
  d =
      first(trace_entry("    - trace: m.jsonl\n      format: azure\n      isl: 5\n"
                        "      search-space: [{ tp: 1, conc-list: [1] }]\n"));
  EXPECT_EQ(d.path, "tk.scenarios.timed-trace[0].isl");
  EXPECT_NE(d.message.find("unknown field"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace ib::recipe
