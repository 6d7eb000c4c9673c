#include "verify/expect.h"

#include <gtest/gtest.h>

#include <string>

#include "core/files.h"

namespace ib::verify {
namespace {

namespace json = boost::json;

std::string expect_fixture(const std::string& name) {
  auto text = read_file(INFERBENCH_SOURCE_DIR "/tests/fixtures/logs/" + name);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : std::string();
}

TEST(ParseExpect, FullSpec) {
  auto spec = parse_expect(json::parse(R"j({
    "log-contains": ["AiterCustomAllreduce", "quick all-reduce INT4"],
    "log-absent": "RCCL ring for every size",
    "settings": {"tensor_parallel_size": 4, "disable_custom_all_reduce": false,
                 "truth_log": null, "hardware": "MI355X", "gpu_memory_utilization": 0.9},
    "probes": [{"key": "ar_impl", "regex": "else (\\w+Allreduce)"}]
  })j"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->log_contains.size(), 2u);
  ASSERT_EQ(spec->log_absent.size(), 1u);
  EXPECT_EQ(spec->log_absent[0], "RCCL ring for every size");
  ASSERT_EQ(spec->settings.size(), 5u);
  EXPECT_EQ(spec->settings[0].first, "tensor_parallel_size");  // order as written
  EXPECT_EQ(spec->settings[2].second, nullptr);
  ASSERT_EQ(spec->probes.size(), 1u);
  EXPECT_EQ(spec->probes[0].key, "ar_impl");
  EXPECT_FALSE(spec->empty());
  auto empty = parse_expect(json::parse("{}"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

struct BadExpect {
  std::string json;
  std::string error;  // a line of the error message
};

class ParseExpectErrors : public testing::TestWithParam<BadExpect> {};

TEST_P(ParseExpectErrors, NameTheFieldPath) {
  const BadExpect& c = GetParam();
  auto spec = parse_expect(json::parse(c.json), "k1.expect");
  ASSERT_FALSE(spec.ok()) << c.json;
  EXPECT_NE(spec.error().message.find(c.error), std::string::npos) << spec.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseExpectErrors,
    testing::Values(
        BadExpect{"[1]", "k1.expect: expected a mapping, got a list"},
        BadExpect{R"j({"log-contain": ["x"]})j",
                  "k1.expect.log-contain: unknown field (expected log-contains, log-absent, "
                  "settings, probes, env-read, env-not-read, server-metrics, spec-acceptance, or "
                  "a role: prefill, decode, router)"},
        BadExpect{R"j({"prefill": {"server-metrics": ["vllm:"]}})j",
                  "k1.expect.prefill: server-metrics and spec-acceptance are about the "
                  "deployment's points"},
        BadExpect{R"j({"decode": {"router": {}}})j",
                  "k1.expect.decode.router: unknown field in a role's expect"},
        BadExpect{R"j({"env-read": ["OK_NAME", "not a name"]})j",
                  "k1.expect.env-read[1]: 'not a name' is not a variable name"},
        BadExpect{R"j({"log-contains": 3})j",
                  "k1.expect.log-contains: expected a regex or a list of regexes, got 3"},
        BadExpect{R"j({"log-contains": ["ok", {"a": 1}]})j",
                  "k1.expect.log-contains[1]: expected a regex string, got a mapping"},
        BadExpect{R"j({"log-absent": ["(unclosed"]})j",
                  "k1.expect.log-absent[0]: invalid regex \"(unclosed\""},
        BadExpect{R"j({"log-absent": [""]})j", "k1.expect.log-absent[0]: empty regex"},
        BadExpect{R"j({"settings": {"tp_size": {"a": 1}}})j",
                  "k1.expect.settings.tp_size: expected a scalar, got a mapping"},
        BadExpect{R"j({"settings": {"tp_size": [8]}})j",
                  "k1.expect.settings.tp_size: expected a scalar, got a list"},
        BadExpect{R"j({"settings": ["tp_size"]})j",
                  "k1.expect.settings: expected a mapping of setting: value, got a list"},
        BadExpect{R"j({"probes": {"key": "a"}})j",
                  "k1.expect.probes: expected a list of {key, regex}, got a mapping"},
        BadExpect{R"j({"probes": ["x"]})j",
                  "k1.expect.probes[0]: expected a mapping {key, regex}, got \"x\""},
        BadExpect{R"j({"probes": [{"key": "a", "regex": "no group"}]})j",
                  "k1.expect.probes[0].regex: regex \"no group\" needs a capture group"},
        BadExpect{R"j({"probes": [{"key": "a", "regex": "(x"}]})j",
                  "k1.expect.probes[0].regex: invalid regex"},
        BadExpect{R"j({"probes": [{"regex": "(x)"}]})j", "k1.expect.probes[0].key: missing"},
        BadExpect{R"j({"probes": [{"key": "a", "regex": "(x)", "flags": "i"}]})j",
                  "k1.expect.probes[0].flags: unknown field (expected key and regex)"},
        BadExpect{R"j({"probes": [{"key": "", "regex": "(x)"}]})j",
                  "k1.expect.probes[0].key: expected a non-empty string, got \"\""},
        BadExpect{R"j({"probes": [{"key": "a", "regex": "(x)"}, {"key": "a", "regex": "(y)"}]})j",
                  "k1.expect.probes[1].key: duplicate probe key \"a\""}));

TEST(ParseExpect, ReportsEveryErrorAtOnce) {
  auto spec = parse_expect(json::parse(R"j({"x": 1, "settings": {"a": [1]}, "log-absent": "("})j"));
  ASSERT_FALSE(spec.ok());
  const std::string& m = spec.error().message;
  EXPECT_NE(m.find("expect.x: unknown field"), std::string::npos) << m;
  EXPECT_NE(m.find("expect.settings.a: expected a scalar"), std::string::npos) << m;
  EXPECT_NE(m.find("expect.log-absent: invalid regex"), std::string::npos) << m;
}

ExpectSpec spec_of(const std::string& text) {
  auto spec = parse_expect(json::parse(text));
  EXPECT_TRUE(spec.ok()) << spec.error().message;
  return spec.ok() ? *spec : ExpectSpec{};
}

// The PR thread's question: did SIM_MINIMAX_ALLOW_CUSTOM_AR (the sim's stand-in for
// SGLANG_M3_ALLOW_CUSTOM_AR) change anything? The same expect block fails on the base log and
// passes on the head log, and says why.
const char* kCustomArExpect = R"j({
  "log-contains": ["\\[AR\\] tp_rank=0: .*AiterCustomAllreduce"],
  "log-absent": ["RCCL ring for every size"],
  "settings": {"disable_custom_all_reduce": false, "tensor_parallel_size": 4,
               "ar_impl": "AiterCustomAllreduce", "truth_log": null},
  "probes": [{"key": "ar_impl", "regex": "\\[AR\\] tp_rank=\\d+: using .*?else (\\w+)"}]
})j";

TEST(CheckExpect, FailsOnTheBaseLogWithEvidence) {
  const ExpectSpec spec = spec_of(kCustomArExpect);
  const auto results = check_expect(spec, expect_fixture("servesim-minimax-mi355x-tp4.log"));
  ASSERT_EQ(results.size(), 6u);
  EXPECT_FALSE(all_passed(results));

  EXPECT_EQ(results[0].assertion, "log-contains /\\[AR\\] tp_rank=0: .*AiterCustomAllreduce/");
  EXPECT_FALSE(results[0].passed);
  EXPECT_EQ(results[0].evidence, "no line matches");
  EXPECT_EQ(results[0].line, 0);

  EXPECT_EQ(results[1].assertion, "log-absent /RCCL ring for every size/");
  EXPECT_FALSE(results[1].passed);
  EXPECT_EQ(results[1].line, 11);
  EXPECT_EQ(results[1].evidence.rfind("line 11: [", 0), 0u) << results[1].evidence;

  EXPECT_EQ(results[2].assertion, "settings.disable_custom_all_reduce == false");
  EXPECT_FALSE(results[2].passed);
  EXPECT_EQ(results[2].evidence, "true (servesim-args, line 1)");
  EXPECT_EQ(results[2].line, 1);

  EXPECT_TRUE(results[3].passed) << results[3].evidence;  // tensor_parallel_size == 4

  EXPECT_EQ(results[4].assertion, "settings.ar_impl == AiterCustomAllreduce");
  EXPECT_FALSE(results[4].passed);
  EXPECT_EQ(results[4].evidence, "RCCL (recipe, line 14)");

  EXPECT_EQ(results[5].assertion, "settings.truth_log is unset or none");
  EXPECT_TRUE(results[5].passed) << results[5].evidence;
}

TEST(CheckExpect, PassesOnTheHeadLog) {
  const ExpectSpec spec = spec_of(kCustomArExpect);
  const auto results = check_expect(spec, expect_fixture("servesim-minimax-mi355x-tp4-custom-ar.log"));
  ASSERT_EQ(results.size(), 6u);
  for (const AssertionResult& r : results) {
    EXPECT_TRUE(r.passed) << r.assertion << ": " << r.evidence;
  }
  EXPECT_TRUE(all_passed(results));
  EXPECT_EQ(results[0].line, 11);
  EXPECT_EQ(results[1].evidence, "no line matches");
  EXPECT_EQ(results[2].evidence, "false (servesim-args, line 1)");
}

struct SettingCase {
  std::string expect;  // the settings mapping, JSON
  bool passed;
  std::string evidence;
};

class CheckSettings : public testing::TestWithParam<SettingCase> {};

TEST_P(CheckSettings, CompareAfterNormalising) {
  const SettingCase& c = GetParam();
  const ExpectSpec spec = spec_of(R"j({"settings": )j" + c.expect + "}");
  const std::string log =
      "[2026-11-30 10:00:00] server_args=ServerArgs(tp_size=8, mem_fraction_static=0.85, "
      "enable_dp_attention=False, kv_cache_dtype='fp8_e4m3', speculative_algorithm=None)\n";
  const auto results = check_expect(spec, log);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].passed, c.passed) << results[0].assertion << ": " << results[0].evidence;
  EXPECT_EQ(results[0].evidence, c.evidence);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckSettings,
    testing::Values(SettingCase{R"j({"tp_size": 8})j", true, "8 (sglang-server-args, line 1)"},
                    SettingCase{R"j({"tp_size": "8"})j", true, "8 (sglang-server-args, line 1)"},
                    SettingCase{R"j({"tp_size": 8.0})j", true, "8 (sglang-server-args, line 1)"},
                    SettingCase{R"j({"tp_size": 4})j", false, "8 (sglang-server-args, line 1)"},
                    SettingCase{R"j({"mem_fraction_static": 0.85})j", true,
                                "0.85 (sglang-server-args, line 1)"},
                    SettingCase{R"j({"enable_dp_attention": "False"})j", true,
                                "false (sglang-server-args, line 1)"},
                    SettingCase{R"j({"kv_cache_dtype": "fp8_e4m3"})j", true,
                                "fp8_e4m3 (sglang-server-args, line 1)"},
                    SettingCase{R"j({"speculative_algorithm": null})j", true,
                                "none (sglang-server-args, line 1)"},
                    SettingCase{R"j({"speculative_algorithm": "EAGLE"})j", false,
                                "none (sglang-server-args, line 1)"},
                    SettingCase{R"j({"never_printed": null})j", true, "not set"},
                    SettingCase{R"j({"never_printed": 1})j", false, "not set"}));

TEST(CheckExpect, LongLinesAreExcerptedAroundTheMatch) {
  const std::string line = std::string(2000, 'a') + " needle " + std::string(2000, 'b');
  const auto results = check_expect(spec_of(R"j({"log-contains": ["needle"]})j"), "x\n" + line);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].passed);
  EXPECT_EQ(results[0].line, 2);
  EXPECT_NE(results[0].evidence.find("needle"), std::string::npos);
  EXPECT_LT(results[0].evidence.size(), 400u);
}

TEST(CheckExpect, ResultsHaveAJsonForm) {
  const auto results = check_expect(spec_of(R"j({"log-contains": ["b"]})j"), "a\nb\n");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].to_json(), json::parse(R"j({"assertion": "log-contains /b/",
      "passed": true, "evidence": "line 2: b", "line": 2})j"));
  EXPECT_TRUE(all_passed({}));
}

TEST(Expect, ServerMetricsPrefixes) {
  auto spec = parse_expect(json::parse(R"j({"server-metrics": ["vllm:", "sglang:"]})j"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->server_metrics, (std::vector<std::string>{"vllm:", "sglang:"}));
  EXPECT_FALSE(spec->empty());
  auto one = parse_expect(json::parse(R"j({"server-metrics": "vllm:"})j"));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->server_metrics.size(), 1u);
  auto bad = parse_expect(json::parse(R"j({"server-metrics": ["", 3]})j"), "k.expect");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("k.expect.server-metrics[0]: expected a metric-name prefix"),
            std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("k.expect.server-metrics[1]"), std::string::npos);
}

}  // namespace
}  // namespace ib::verify

namespace ib::verify {
namespace {

TEST(ExpectSpecAcceptance, ParsesEitherAValueOrAGoldenFileAndRejectsTheRest) {
  auto parse = [](const char* text) { return parse_expect(boost::json::parse(text), "k.expect"); };
  auto golden = parse(R"({"spec-acceptance": {"golden": "g.yaml", "model": "m",
                          "thinking": false, "draft-tokens": 3, "tolerance": 0.05}})");
  ASSERT_TRUE(golden) << golden.error().message;
  ASSERT_TRUE(golden->spec_acceptance);
  EXPECT_EQ(golden->spec_acceptance->golden, "g.yaml");
  EXPECT_EQ(golden->spec_acceptance->thinking, "off");  // YAML 1.1's bare `off`
  EXPECT_EQ(golden->spec_acceptance->draft_tokens, 3);
  EXPECT_DOUBLE_EQ(golden->spec_acceptance->tolerance, 0.05);
  EXPECT_FALSE(golden->empty());
  auto value = parse(R"({"spec-acceptance": {"al": 2.5}})");
  ASSERT_TRUE(value) << value.error().message;
  EXPECT_DOUBLE_EQ(*value->spec_acceptance->al, 2.5);
  EXPECT_DOUBLE_EQ(value->spec_acceptance->tolerance, 0.1);

  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"spec-acceptance": 2.5})", "k.expect.spec-acceptance: expected a mapping"},
           Case{R"({"spec-acceptance": {}})",
                "missing: al (the golden acceptance length) or golden"},
           Case{R"({"spec-acceptance": {"al": 2.5, "golden": "g"}})",
                "give al or golden, not both"},
           Case{R"({"spec-acceptance": {"al": 0.5}})",
                "spec-acceptance.al: expected a number in [1, 65]"},
           Case{R"({"spec-acceptance": {"al": 2, "model": "m"}})", "with al they mean nothing"},
           Case{R"({"spec-acceptance": {"golden": "g", "thinking": "maybe"}})",
                "thinking: expected on or off"},
           Case{R"({"spec-acceptance": {"golden": "g", "draft-tokens": 0}})",
                "draft-tokens: expected a draft length"},
           Case{R"({"spec-acceptance": {"golden": "g", "tolerance": -1}})",
                "tolerance: expected a number in [0, 64]"},
           Case{R"({"spec-acceptance": {"golden": "g", "k": 3}})",
                "spec-acceptance.k: unknown field"},
       }) {
    auto r = parse(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << c.text << "\n"
                                                                    << r.error().message;
  }
}

}  // namespace
}  // namespace ib::verify
