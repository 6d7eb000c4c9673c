#include "recipe/matrix.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "recipe/fingerprint.h"

namespace ib::recipe {
namespace {

namespace json = boost::json;

const std::string kData = INFERBENCH_TEST_DATA "/inferencex";

std::vector<RecipeRow> rows_of(const std::vector<std::string>& files) {
  auto runners = load_runners(kData + "/runners.yaml");
  EXPECT_TRUE(runners.ok());
  std::vector<std::filesystem::path> paths;
  for (const auto& f : files) paths.emplace_back(kData + "/" + f);
  auto entries = load_master_configs(paths);
  EXPECT_TRUE(entries.ok()) << entries.error().message;
  return expand(*entries, &*runners);
}

std::vector<RecipeRow> rows_of_text(const std::string& yaml) {
  std::vector<ConfigEntry> entries;
  std::vector<Diagnostic> d;
  parse_master_config(yaml, "t.yaml", &entries, &d);
  EXPECT_TRUE(d.empty()) << join_diagnostics(d);
  return expand(entries, nullptr);
}

const RecipeRow& find_row(const std::vector<RecipeRow>& rows, const std::string& key,
                          size_t nth = 0) {
  for (const auto& r : rows) {
    if (r.config_key == key && nth-- == 0) return r;
  }
  static RecipeRow none;
  ADD_FAILURE() << "no row for " << key;
  return none;
}

// Row counts pinned per file and kind; cross-checked against an independent Python expansion of
// the same YAML (conc doubling / conc-list; one row per conc single-node and agentic, one row per
// search-space entry for multi-node fixed-seq-len).
TEST(Matrix, RealConfigRowCounts) {
  struct Case {
    std::string file;
    size_t single_fixed, multi_fixed, single_agentic, multi_agentic, evals;
  };
  const std::vector<Case> cases = {
      {"amd-master.yaml", 270, 36, 147, 12, 105},
      {"nvidia-master.yaml", 420, 348, 335, 252, 414},
  };
  for (const auto& c : cases) {
    std::map<std::pair<std::string, bool>, size_t> counts;
    size_t evals = 0;
    auto rows = rows_of({c.file});
    for (const auto& r : rows) {
      ++counts[std::make_pair(std::string(scenario_name(r.scenario)), r.multinode)];
      evals += r.fields.at("run-eval").as_bool();
    }
    EXPECT_EQ(counts[std::make_pair(std::string("fixed-seq-len"), false)], c.single_fixed)
        << c.file;
    EXPECT_EQ(counts[std::make_pair(std::string("fixed-seq-len"), true)], c.multi_fixed) << c.file;
    EXPECT_EQ(counts[std::make_pair(std::string("agentic-coding"), false)], c.single_agentic)
        << c.file;
    EXPECT_EQ(counts[std::make_pair(std::string("agentic-coding"), true)], c.multi_agentic)
        << c.file;
    EXPECT_EQ(rows.size(), c.single_fixed + c.multi_fixed + c.single_agentic + c.multi_agentic)
        << c.file;
    EXPECT_EQ(evals, c.evals) << c.file;
  }
  EXPECT_EQ(rows_of({"amd-master.yaml", "nvidia-master.yaml"}).size(), 1820u);
}

TEST(Matrix, SingleNodeFixedSeqRow) {
  auto rows = rows_of({"amd-master.yaml"});
  // dsr1-fp4-mi355x-sglang: 8192/1024, { tp: 4, conc-start: 4, conc-end: 64 } then tp 8.
  const RecipeRow& r = find_row(rows, "dsr1-fp4-mi355x-sglang");
  EXPECT_EQ(r.scenario, Scenario::kFixedSeqLen);
  EXPECT_FALSE(r.multinode);
  EXPECT_EQ(
      canonical_json(r.fields),
      R"({"conc":4,"dcp-size":1,"disagg":false,"dp-attn":false,"ep":1,"exp-name":"dsr1_8k1k",)"
      R"("framework":"sglang","image":"lmsysorg/sglang:v0.5.12-rocm700-mi35x","isl":8192,)"
      R"("max-model-len":9472,"model":"amd/DeepSeek-R1-0528-MXFP4-Preview","model-prefix":"dsr1",)"
      R"("osl":1024,"pcp-size":1,"pp":1,"precision":"fp4","run-eval":false,"runner":"mi355x",)"
      R"("spec-decoding":"none","tp":4})");
  std::vector<int64_t> concs;
  std::vector<bool> evals;
  for (size_t i = 0; i < 10; ++i) {
    const auto& row = find_row(rows, "dsr1-fp4-mi355x-sglang", i);
    concs.push_back(row.fields.at("conc").as_int64());
    evals.push_back(row.fields.at("run-eval").as_bool());
  }
  EXPECT_EQ(concs, (std::vector<int64_t>{4, 8, 16, 32, 64, 4, 8, 16, 32, 64}));
  // Eval group (model, runner, framework, precision, isl, osl, spec, dp-attn) has concs {16,32,64}
  // from both TPs: max 64 and median 32 are marked, in both TPs.
  EXPECT_EQ(evals,
            (std::vector<bool>{false, false, false, true, true, false, false, false, true, true}));
}

TEST(Matrix, MultiNodeFixedSeqRow) {
  auto rows = rows_of({"amd-master.yaml"});
  const RecipeRow& r = find_row(rows, "qwen3.5-fp8-mi355x-sglang-disagg");
  EXPECT_TRUE(r.multinode);
  const auto& f = r.fields;
  EXPECT_EQ(canonical_json(f.at("conc")), "[8,16,32,64,128]");
  EXPECT_EQ(f.at("max-model-len").as_int64(), 9472);
  EXPECT_EQ(f.at("exp-name").as_string(), "qwen3.5_8k1k");
  EXPECT_TRUE(f.at("disagg").as_bool());
  EXPECT_EQ(f.at("kv-p2p-transfer").as_string(), "mori");
  EXPECT_EQ(canonical_json(f.at("router")), R"({"name":"sglang-router","version":"0.3.2"})");
  EXPECT_EQ(canonical_json(f.at("prefill")),
            R"({"additional-settings":["PREFILL_NODES=1"],"dcp-size":1,"dp-attn":false,"ep":1,)"
            R"("num-worker":1,"pcp-size":1,"pp":1,"tp":4})");
  EXPECT_EQ(canonical_json(f.at("decode").at("additional-settings")),
            R"(["DECODE_NODES=1","DECODE_MTP_SIZE=0"])");
  // Only multi-node 8k1k entry of its group: marked with its highest conc.
  EXPECT_TRUE(f.at("run-eval").as_bool());
  EXPECT_EQ(f.at("eval-conc").as_int64(), 128);
}

TEST(Matrix, AgenticRows) {
  auto amd = rows_of({"amd-master.yaml"});
  const RecipeRow& s = find_row(amd, "qwen3.5-fp8-mi325x-sglang-agentic-mtp");
  EXPECT_EQ(s.scenario, Scenario::kAgenticCoding);
  EXPECT_EQ(s.fields.at("exp-name").as_string(), "qwen3.5_tp2_conc1_kvnone_spec-mtp");
  EXPECT_EQ(s.fields.at("duration").as_int64(), 3600);
  EXPECT_EQ(s.fields.at("scenario-type").as_string(), "agentic-coding");
  EXPECT_FALSE(s.fields.contains("isl"));
  EXPECT_FALSE(s.fields.contains("max-model-len"));
  EXPECT_FALSE(s.fields.at("run-eval").as_bool());

  auto nv = rows_of({"nvidia-master.yaml"});
  // kimik3-fp4-h200-vllm-agentic: prefill 2x16 ep32 dp-attn, decode 0x16; conc-list of 10 values,
  // one row per conc; DRAM: 1_471_356 MiB * 0.8 over a whole 8-GPU node = 1234 GB.
  const RecipeRow& m = find_row(nv, "kimik3-fp4-h200-vllm-agentic");
  EXPECT_TRUE(m.multinode);
  EXPECT_EQ(m.fields.at("exp-name").as_string(), "kimik3_p2x16ep32dpa_d0x16ep32dpa_conc1");
  EXPECT_EQ(canonical_json(m.fields.at("conc")), "[1]");
  EXPECT_EQ(m.fields.at("total-cpu-dram-gb").as_int64(), 1234);
  EXPECT_EQ(find_row(nv, "kimik3-fp4-h200-vllm-agentic", 9).fields.at("exp-name").as_string(),
            "kimik3_p2x16ep32dpa_d0x16ep32dpa_conc12");
  // Every point of the curve shares the fingerprint.
  EXPECT_EQ(find_row(nv, "kimik3-fp4-h200-vllm-agentic", 9).fingerprint, m.fingerprint);
}

TEST(Matrix, ExpNames) {
  EXPECT_EQ(seq_len_name(1024, 1024), "1k1k");
  EXPECT_EQ(seq_len_name(8192, 1024), "8k1k");
  EXPECT_EQ(seq_len_name(1024, 8192), "1024_8192");
  EXPECT_EQ(seq_len_name(2048, 128), "2048_128");

  auto rows = rows_of_text(
      "a:\n  image: i\n  model: m\n  model-prefix: glm5\n  precision: fp8\n  framework: vllm\n"
      "  runner: cluster:x\n  multinode: false\n  scenarios:\n"
      "    fixed-seq-len:\n    - { isl: 2048, osl: 128, search-space: [ { tp: 2, conc-list: [3] } "
      "] }\n"
      "    agentic-coding:\n    - dram-utilization: 0.5\n      search-space:\n"
      "      - { tp: 4, kv-offloading: dram, kv-offload-backend: { name: lmcache }, conc-list: [7] "
      "}\n"
      "      - { tp: 8, kv-offloading: none, spec-decoding: draft_model, conc-list: [2] }\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].fields.at("exp-name").as_string(), "glm5_2048_128");
  EXPECT_EQ(rows[0].fields.at("max-model-len").as_int64(), 2048 + 128 + 256);
  EXPECT_EQ(rows[1].fields.at("exp-name").as_string(), "glm5_tp4_conc7_kvdram-lmcache");
  EXPECT_EQ(rows[1].fields.at("total-cpu-dram-gb").as_int64(), 0);  // no runners file
  EXPECT_EQ(rows[2].fields.at("exp-name").as_string(), "glm5_tp8_conc2_kvnone_spec-draft_model");
}

TEST(Matrix, TotalCpuDram) {
  RunnerHardware hw{2'063'837, 8, "slurm"};
  EXPECT_EQ(total_cpu_dram_gb(hw, 0.8, 8), 1731);  // 2063837 MiB * 0.8
  EXPECT_EQ(total_cpu_dram_gb(hw, 0.8, 2), 432);
  RunnerHardware big{5'000'000, 8, "slurm"};
  EXPECT_EQ(total_cpu_dram_gb(big, 1.0, 8), 2999);  // capped at 2_861_022 MiB (3 TB decimal)
}

const char* kFingerprintBase =
    "a:\n  image: i\n  model: m\n  model-prefix: p\n  precision: fp8\n  framework: vllm\n"
    "  runner: h200\n  multinode: false\n  scenarios:\n"
    "    fixed-seq-len:\n    - { isl: 1024, osl: 1024, search-space: [ { tp: 2, ep: 2, conc-list: "
    "[4, 8] } ] }\n";

TEST(Fingerprint, StableAcrossConcAndKeyOrder) {
  auto rows = rows_of_text(kFingerprintBase);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fingerprint.size(), 64u);
  EXPECT_EQ(rows[0].fingerprint, rows[1].fingerprint);                            // conc differs
  EXPECT_EQ(rows_of_text(kFingerprintBase)[0].fingerprint, rows[0].fingerprint);  // deterministic

  std::string reordered =
      "a:\n  multinode: false\n  runner: h200\n  framework: vllm\n  precision: fp8\n  "
      "model-prefix: p\n"
      "  model: m\n  image: i\n  scenarios:\n"
      "    fixed-seq-len:\n    - { search-space: [ { conc-list: [8], ep: 2, tp: 2 } ], osl: 1024, "
      "isl: 1024 }\n";
  EXPECT_EQ(rows_of_text(reordered)[0].fingerprint, rows[0].fingerprint);

  std::string tp4 = kFingerprintBase;
  tp4.replace(tp4.find("tp: 2"), 5, "tp: 4");
  EXPECT_NE(rows_of_text(tp4)[0].fingerprint, rows[0].fingerprint);
  std::string image = kFingerprintBase;
  image.replace(image.find("image: i"), 8, "image: j");
  EXPECT_NE(rows_of_text(image)[0].fingerprint, rows[0].fingerprint);

  // Pinned: sha256 of the canonical JSON, as Python's json.dumps(sort_keys, separators, ascii)
  // gives it (checked with Python for all 1820 real rows).
  EXPECT_EQ(recipe_fingerprint(rows[0].fields),
            "147ec3bf03bf9de935832ca731d73f14e1c4a3a59164ff65d1c61f067fdc0003");
}

TEST(Fingerprint, EvalMarkersDoNotChangeIt) {
  auto rows = rows_of({"amd-master.yaml"});
  const auto& plain = find_row(rows, "dsr1-fp4-mi355x-sglang", 0);
  const auto& eval = find_row(rows, "dsr1-fp4-mi355x-sglang", 4);
  ASSERT_TRUE(eval.fields.at("run-eval").as_bool());
  EXPECT_EQ(plain.fingerprint, eval.fingerprint);
  EXPECT_NE(plain.fingerprint, find_row(rows, "dsr1-fp4-mi355x-sglang", 5).fingerprint);  // tp 8
}

TEST(CanonicalJson, MatchesPythonJsonDumps) {
  struct Case {
    json::value v;
    std::string want;
  };
  const std::vector<Case> cases = {
      {json::parse(R"({"b":1,"a":[true,null,"x"]})"), R"({"a":[true,null,"x"],"b":1})"},
      {json::parse(R"({"k":"q\"b\\n\n\t"})"), R"({"k":"q\"b\\n\n\t"})"},
      {json::value("\x01"), R"("\u0001")"},
      {json::value("caf\xc3\xa9"), R"("caf\u00e9")"},
      {json::value("\xf0\x9f\x98\x80"), R"("\ud83d\ude00")"},
      {json::value(0.8), "0.8"},
      {json::value(1.0), "1.0"},
      {json::value(-3), "-3"},
      {json::parse(R"({"Z":1,"a":2,"_":3})"), R"({"Z":1,"_":3,"a":2})"},
  };
  for (const auto& c : cases) EXPECT_EQ(canonical_json(c.v), c.want) << c.want;
}

}  // namespace
}  // namespace ib::recipe
