// Knob specs and the candidate entries they make (tune/knob.h).
#include "tune/knob.h"

#include <gtest/gtest.h>

#include "core/redact.h"
#include "govern/changed.h"
#include "recipe/matrix.h"
#include "tune/test_recipe.h"

namespace ib::tune {
namespace {

using testing::kRecipe;

recipe::ConfigEntry base() {
  auto e = recipe::load_master_texts({{"r.yaml", kRecipe}});
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
  return e.ok() ? (*e)[0] : recipe::ConfigEntry{};
}

std::string error_of(std::string_view spec) {
  auto k = parse_knob(spec);
  EXPECT_FALSE(k.ok()) << spec;
  return k.ok() ? "" : k.error().message;
}

TEST(Knob, ParsesEachKind) {
  auto env = parse_knob("env:SIM_X=1,(unset)");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->kind, KnobKind::kEnv);
  EXPECT_EQ(env->name, "SIM_X");
  ASSERT_EQ(env->values.size(), 2u);
  EXPECT_EQ(env->values[0], "1");
  EXPECT_EQ(env->values[1], std::nullopt);
  auto arg = parse_knob("arg:--max-num-seqs=16,32");
  ASSERT_TRUE(arg.ok());
  EXPECT_EQ(arg->name, "--max-num-seqs");
  EXPECT_FALSE(arg->toggle);
  EXPECT_EQ(arg->values.size(), 2u);
  auto toggle = parse_knob("arg:--no-enable-prefix-caching");
  ASSERT_TRUE(toggle.ok());
  EXPECT_TRUE(toggle->toggle);
  auto field = parse_knob("field:tp=1,4");
  ASSERT_TRUE(field.ok());
  EXPECT_EQ(field->kind, KnobKind::kField);
}

TEST(Knob, BadSpecsNameTheOptionAndWhy) {
  EXPECT_NE(error_of("foo:X=1").find("--knob 'foo:X=1': unknown kind 'foo'"), std::string::npos);
  EXPECT_NE(error_of("env:SIM_X").find("env knobs need values"), std::string::npos);
  EXPECT_NE(error_of("env:1X=a").find("'1X' is not an environment variable name"),
            std::string::npos);
  EXPECT_NE(error_of("arg:max-num-seqs=4").find("starts with '-'"), std::string::npos);
  EXPECT_NE(error_of("arg:--max-num-seqs=4,,8").find("an empty value"), std::string::npos);
  EXPECT_NE(error_of("arg:--max-num-seqs=8,8").find("value '8' is given twice"), std::string::npos);
  EXPECT_NE(error_of("field:image=x").find("image is an identity field"), std::string::npos);
  EXPECT_NE(error_of("field:tp=two").find("tp must be an integer from 1 to 4096"),
            std::string::npos);
  EXPECT_NE(error_of("field:dp-attn=yes").find("true or false"), std::string::npos);
}

TEST(Knob, ArgumentsChangeInPlaceOrAreAppended) {
  const recipe::ConfigEntry b = base();
  // "--max-num-seqs 8" in the command: the value is replaced where it is.
  auto e = apply_change(b, Change{KnobKind::kArg, "--max-num-seqs", "32", "8"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->serve->command[5], "32");
  EXPECT_EQ(e->serve->command.size(), b.serve->command.size());
  // "--block-size=16": the joined form stays joined.
  e = apply_change(b, Change{KnobKind::kArg, "--block-size", "32", "16"});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->serve->command[6], "--block-size=32");
  // Not in the command: appended to extra-args, and the raw entry shows it.
  e = apply_change(b, Change{KnobKind::kArg, "--max-num-batched-tokens", "4096", std::nullopt});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->serve->extra_args.size(), 2u);
  EXPECT_EQ(e->serve->extra_args[1], "4096");
  const auto diff = govern::diff_fields(b.raw, e->raw);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_NE(diff[0].path.find("extra-args"), std::string::npos) << diff[0].path;
  // Removed with its value.
  e = apply_change(b, Change{KnobKind::kArg, "--max-num-seqs", std::nullopt, "8"});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->serve->command.size(), b.serve->command.size() - 2);
  // A toggle adds a bare flag.
  e = apply_change(
      b, Change{KnobKind::kArg, "--no-enable-prefix-caching", "present", std::nullopt, true});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->serve->extra_args, std::vector<std::string>{"--no-enable-prefix-caching"});
}

TEST(Knob, EnvAndFieldsChangeTypedAndRawEntries) {
  const recipe::ConfigEntry b = base();
  auto e = apply_change(b, Change{KnobKind::kEnv, "SIM_DISABLE_CUSTOM_ALL_REDUCE", "0", "1"});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->serve->env.at("SIM_DISABLE_CUSTOM_ALL_REDUCE"), "0");
  auto diff = govern::diff_fields(b.raw, e->raw);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].path, "serve.env.SIM_DISABLE_CUSTOM_ALL_REDUCE");
  e = apply_change(b, Change{KnobKind::kEnv, "SIM_DISABLE_CUSTOM_ALL_REDUCE", std::nullopt, "1"});
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->serve->env.empty());
  e = apply_change(b, Change{KnobKind::kField, "tp", "4", "2"});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e->fixed_seq_len[0].search_space[0].tp, 4);
  diff = govern::diff_fields(b.raw, e->raw);
  ASSERT_FALSE(diff.empty());
}

TEST(Knob, CandidatesSkipTheBaseValueAndHaveTheirOwnKeyAndFingerprint) {
  const recipe::ConfigEntry b = base();
  std::vector<Knob> knobs;
  for (const char* s : {"env:SIM_DISABLE_CUSTOM_ALL_REDUCE=0,1", "arg:--max-num-seqs=8,32",
                        "env:SIM_MINIMAX_ALLOW_CUSTOM_AR=1", "arg:--no-enable-prefix-caching"}) {
    auto k = parse_knob(s);
    ASSERT_TRUE(k.ok()) << s;
    knobs.push_back(*k);
  }
  auto set = single_candidates(b, knobs);
  ASSERT_TRUE(set.ok()) << set.error().message;
  // SIM_DISABLE_CUSTOM_ALL_REDUCE=1 and --max-num-seqs 8 are the base's already.
  ASSERT_EQ(set->candidates.size(), 4u);
  EXPECT_EQ(set->notes.size(), 2u);
  EXPECT_EQ(set->candidates[0].describe(), "env SIM_DISABLE_CUSTOM_ALL_REDUCE=0");
  EXPECT_EQ(set->candidates[1].describe(), "arg --max-num-seqs=32");
  EXPECT_EQ(set->candidates[3].describe(), "arg --no-enable-prefix-caching added");
  const auto base_rows = recipe::expand({b}, nullptr);
  std::set<std::string> fingerprints{base_rows.at(0).fingerprint};
  for (const auto& c : set->candidates) {
    EXPECT_EQ(c.config_key, "k~" + c.id);
    EXPECT_EQ(c.id.size(), 10u);
    const auto rows = recipe::expand({c.entry}, nullptr);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].config_key, c.config_key);
    EXPECT_TRUE(fingerprints.insert(rows[0].fingerprint).second) << c.describe();
  }
  // Stable ids: the same knobs give the same candidates.
  auto again = single_candidates(b, knobs);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->candidates[2].id, set->candidates[2].id);
  // A pair carries both changes; the same knob twice is refused.
  auto pair = pair_candidate(b, set->candidates[0], set->candidates[1]);
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(pair->describe(), "env SIM_DISABLE_CUSTOM_ALL_REDUCE=0 + arg --max-num-seqs=32");
  EXPECT_EQ(pair->entry.serve->command[5], "32");
  EXPECT_EQ(pair->entry.serve->env.at("SIM_DISABLE_CUSTOM_ALL_REDUCE"), "0");
  EXPECT_FALSE(pair_candidate(b, set->candidates[0], set->candidates[0]).ok());
  // Too many.
  auto many = single_candidates(b, knobs, 2);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("--max-candidates"), std::string::npos);
}

TEST(Knob, CredentialValuesAreNeverShown) {
  // A value given on the command line for a credential-looking variable is registered as a
  // secret: every output hides it, and a bad spec's message never echoes it.
  auto k = parse_knob("env:HF_TOKEN=knob-secret-value-1");
  ASSERT_TRUE(k.ok());
  auto set = single_candidates(base(), {*k});
  ASSERT_TRUE(set.ok());
  const std::string shown = redact_text(set->candidates.at(0).describe());
  EXPECT_EQ(shown.find("knob-secret-value-1"), std::string::npos) << shown;
  const std::string e = error_of("env:HF_TOKEN=other-secret-2,other-secret-2");
  EXPECT_EQ(e.find("other-secret-2"), std::string::npos) << e;
  EXPECT_NE(e.find("a value is given twice"), std::string::npos) << e;
}

TEST(Knob, EnvAndArgKnobsNeedAServeBlock) {
  recipe::ConfigEntry b = base();
  b.serve.reset();
  auto e = apply_change(b, Change{KnobKind::kEnv, "X", "1", std::nullopt});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("no serve block"), std::string::npos);
}

// A disaggregated entry in InferenceX's shape, its serve block by role.
constexpr const char* kDisaggRecipe = R"(d:
  image: inferbench/serve-sim
  model: meta-llama/Llama-3.1-8B-Instruct
  model-prefix: llama8b
  precision: bf16
  framework: serve-sim
  runner: local
  multinode: true
  disagg: true
  kv-p2p-transfer: sim-tcp
  serve:
    prefill:
      command: [inferbench, serve-sim, --role, prefill, --port, "{port}"]
      env: { UCX_TLS: "rc" }
    decode:
      command: [inferbench, serve-sim, --role, decode, --max-num-seqs, "8", --port, "{port}"]
      env: { UCX_TLS: "rc" }
    router:
      command: [inferbench, serve-sim, --role, router, --prefill, "{prefill-urls}",
                --decode, "{decode-urls}", --port, "{port}"]
  scenarios:
    fixed-seq-len:
    - isl: 512
      osl: 64
      search-space:
      - { conc-list: [8], prefill: { num-worker: 1, tp: 1 }, decode: { num-worker: 1, tp: 2 } }
)";

recipe::ConfigEntry disagg_base() {
  auto e = recipe::load_master_texts({{"d.yaml", kDisaggRecipe}});
  EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
  return e.ok() ? (*e)[0] : recipe::ConfigEntry{};
}

TEST(Knob, PdSetsBothWorkerPoolsOfADisaggregatedEntry) {
  const recipe::ConfigEntry b = disagg_base();
  auto k = parse_knob("field:pd=1:1,2:1,1:2");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(base_value(b, *k), "1:1");
  auto set = single_candidates(b, {*k}, 10);
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_EQ(set->candidates.size(), 2u);  // 1:1 is the base
  const auto& c = set->candidates[0];
  EXPECT_EQ(c.describe(), "field pd=2:1");
  const auto& row = c.entry.fixed_seq_len[0].search_space[0];
  EXPECT_EQ(row.prefill->num_worker, 2);
  EXPECT_EQ(row.decode->num_worker, 1);
  const auto diff = govern::diff_fields(b.raw, c.entry.raw);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_NE(diff[0].path.find("prefill.num-worker"), std::string::npos) << diff[0].path;
  // A role's own parallelism.
  auto e = apply_change(b, Change{KnobKind::kField, "decode.tp", "4", "2"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->fixed_seq_len[0].search_space[0].decode->tp, 4);
  EXPECT_EQ(e->fixed_seq_len[0].search_space[0].prefill->tp, 1);
}

TEST(Knob, RoleFieldsAndSingleServerFieldsDoNotCross) {
  auto e = apply_change(disagg_base(), Change{KnobKind::kField, "tp", "4", std::nullopt});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("prefill.tp and decode.tp"), std::string::npos)
      << e.error().message;
  e = apply_change(base(), Change{KnobKind::kField, "pd", "2:1", std::nullopt});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("not disaggregated"), std::string::npos) << e.error().message;
  EXPECT_NE(error_of("field:pd=2").find("prefill:decode workers"), std::string::npos);
  EXPECT_NE(error_of("field:pd=2:0").find("decode workers must be an integer"), std::string::npos);
  EXPECT_NE(error_of("field:decode.dp-attn=yes").find("true or false"), std::string::npos);
  // pd and a pool's worker count change the same field: not a pair.
  const recipe::ConfigEntry b = disagg_base();
  auto pd = single_candidates(b, {*parse_knob("field:pd=2:1")}, 10);
  auto nw = single_candidates(b, {*parse_knob("field:decode.num-worker=2")}, 10);
  ASSERT_TRUE(pd.ok() && nw.ok());
  EXPECT_FALSE(pair_candidate(b, pd->candidates[0], nw->candidates[0]).ok());
}

TEST(Knob, EnvAndArgKnobsOnARoleOfARoleByRoleServeBlock) {
  const recipe::ConfigEntry b = disagg_base();
  auto k = parse_knob("env:decode.UCX_TLS=tcp");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(base_value(b, *k), "rc");
  auto e = apply_change(b, Change{KnobKind::kEnv, "decode.UCX_TLS", "tcp", "rc"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->serve->roles[1].second.env.at("UCX_TLS"), "tcp");
  EXPECT_EQ(e->serve->roles[0].second.env.at("UCX_TLS"), "rc");  // prefill's own is untouched
  auto diff = govern::diff_fields(b.raw, e->raw);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].path, "serve.decode.env.UCX_TLS");
  e = apply_change(b, Change{KnobKind::kArg, "decode.--max-num-seqs", "16", "8"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->serve->roles[1].second.command[5], "16");
  // Without the role, or on a server that has no roles: refused, saying what to write.
  e = apply_change(b, Change{KnobKind::kEnv, "UCX_TLS", "tcp", std::nullopt});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("name the role: prefill.UCX_TLS"), std::string::npos)
      << e.error().message;
  e = apply_change(base(), Change{KnobKind::kEnv, "decode.X", "1", std::nullopt});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("drop 'decode.'"), std::string::npos) << e.error().message;
  EXPECT_NE(error_of("env:decode.1X=a").find("'1X' is not an environment variable"),
            std::string::npos);
}

}  // namespace
}  // namespace ib::tune
