// tune.json (tune/state.h): the tuning's settings and state are read back as written, and
// --resume refuses a folder without a tuning, an edited state file and a changed recipe.
#include "tune/state.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>

#include "core/files.h"

namespace ib::tune {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's temporary directory, removed at the end of the test.
class TuneStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           fmt::format("ib-tune-state-{}-{}", info->name(), static_cast<long>(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  boost::json::object written_state() {
    auto text = read_file(dir_ / "tune.json");
    EXPECT_TRUE(text.ok());
    return boost::json::parse(text.ok() ? *text : "{}").as_object();
  }

  fs::path dir_;
};

// Settings that differ from every default.
TuneSettings unusual_settings() {
  TuneSettings s;
  s.recipe = "/r/recipe.yaml";
  s.key = "k";
  s.objective = "tput-at-slo";
  s.stop_after = "screen";
  s.knobs = {"env:SIM_X=1,2", "arg:--flag"};
  s.slos = {"median_tpot_ms<=20"};
  s.guards = {"p99_ttft_ms:7"};
  s.server_args = {"--extra"};
  s.ignore = {"seed"};
  s.conc = 8, s.isl = 512, s.osl = 64, s.tp = 2;
  s.minimize = s.no_guards = s.eval = s.no_env_trace = s.pairs = true;
  s.max_pairs = 3;
  s.search_min = 2, s.search_max = 64;
  s.search_tolerance = 12.5;
  s.keep = 3, s.eta = 4, s.passes = 5, s.repeats = 7, s.max_candidates = 9;
  s.min_effect = 1.5, s.confidence = 90, s.guard_tolerance = 6, s.accuracy_tolerance = 0.02;
  s.seed = 42;
  s.resamples = 500;
  s.screen_prompts_per_conc = 3, s.screen_min_prompts = 20, s.screen_warmups_per_conc = 0;
  s.prompts_per_conc = 4, s.min_prompts = 32, s.warmups_per_conc = 2;
  s.eval_limit = 50;
  s.startup_timeout_s = 60, s.point_timeout_s = 120;
  s.runs_dir = "/r/runs";
  s.db = "/r/db.sqlite";
  return s;
}

TEST(TuneSettings, JsonRoundTripKeepsEveryField) {
  const TuneSettings s = unusual_settings();
  const auto back = TuneSettings::from_json(s.to_json());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->to_json(), s.to_json());
  EXPECT_EQ(back->knobs, s.knobs);
  EXPECT_EQ(back->search_tolerance, 12.5);
  EXPECT_EQ(back->warmups_per_conc, 2);
  EXPECT_TRUE(back->pairs);
  // Every member is a field: the defaults differ from these settings in each of them.
  EXPECT_EQ(TuneSettings().to_json().size(), s.to_json().size());
  for (const auto& [k, v] : TuneSettings().to_json()) EXPECT_NE(v, s.to_json().at(k)) << k;
}

TEST(TuneSettings, MissingOrMistypedFieldIsRefused) {
  auto j = unusual_settings().to_json();
  j.erase("eta");
  EXPECT_FALSE(TuneSettings::from_json(j).has_value());
  j = unusual_settings().to_json();
  j["knobs"] = "env:SIM_X=1";
  EXPECT_FALSE(TuneSettings::from_json(j).has_value());
  j = unusual_settings().to_json();
  j["minimize"] = 1;
  EXPECT_FALSE(TuneSettings::from_json(j).has_value());
}

TEST(TuneSettings, TuneOptionsTakePercentagesAsFractions) {
  const auto t = tune_options(unusual_settings());
  EXPECT_DOUBLE_EQ(t.confidence, 0.90);
  EXPECT_DOUBLE_EQ(t.search_tolerance, 0.125);
  EXPECT_EQ(t.confirm_workload.prompts_per_conc, 4);
  EXPECT_EQ(t.confirm_workload.warmups_per_conc, 2);
  EXPECT_EQ(t.screen_workload.min_prompts, 20);
  EXPECT_FALSE(t.sweep.env_trace);
  EXPECT_EQ(t.sweep.db, "/r/db.sqlite");
  // 0 and -1 leave the recipe's confirmation workload.
  const auto d = tune_options(TuneSettings());
  EXPECT_EQ(d.confirm_workload.prompts_per_conc, sweep::WorkloadOverrides().prompts_per_conc);
  EXPECT_EQ(d.confirm_workload.warmups_per_conc, sweep::WorkloadOverrides().warmups_per_conc);
}

TEST_F(TuneStateTest, WrittenStateIsReadBack) {
  TuneState s;
  s.dir = dir_;
  s.id = "tune-20250101-000000-abcdef";
  s.recipe_sha256 = std::string(64, 'a');
  s.server_build_sha256 = std::string(64, 'b');
  s.settings = unusual_settings();
  ASSERT_TRUE(write_state(s, "interrupted").ok());
  const auto j = written_state();
  EXPECT_EQ(j.at("version").as_int64(), 1);
  EXPECT_EQ(j.at("status").as_string(), "interrupted");
  EXPECT_EQ(j.at("dir").as_string(), dir_.string());
  auto back = read_state(dir_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->resumed);
  EXPECT_EQ(back->dir, dir_);
  EXPECT_EQ(back->id, s.id);
  EXPECT_EQ(back->recipe_sha256, s.recipe_sha256);
  EXPECT_EQ(back->server_build_sha256, s.server_build_sha256);
  EXPECT_EQ(back->settings.to_json(), s.settings.to_json());
}

TEST_F(TuneStateTest, SecretsAreNotWritten) {
  TuneState s;
  s.dir = dir_;
  s.id = "t";
  s.recipe_sha256 = "x";
  s.settings.server_args = {"--api-key", "sk-secret-value"};
  ASSERT_TRUE(write_state(s, "running").ok());
  EXPECT_EQ(read_file(dir_ / "tune.json")->find("sk-secret-value"), std::string::npos);
}

TEST_F(TuneStateTest, FailedWriteNamesTheFile) {
  TuneState s;
  s.dir = dir_ / "not-a-folder";
  write("not-a-folder", "a file\n");
  const auto st = write_state(s, "done");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find((s.dir / "tune.json").string()), std::string::npos)
      << st.error().message;
}

TEST_F(TuneStateTest, ResumeRefusesAFolderWithoutATuning) {
  auto r = read_state(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(
      r.error().message.rfind(fmt::format("--resume {}: no tuning there (", dir_.string()), 0), 0u)
      << r.error().message;
}

TEST_F(TuneStateTest, ResumeRefusesAnEditedStateFile) {
  const std::string not_state =
      fmt::format("{}/tune.json: not a tuning's state file", dir_.string());
  for (const char* text : {"not json", "[1]", "{\"id\": \"t\"}", "{\"options\": 1}",
                           "{\"options\": {\"key\": \"k\"}}"}) {
    write("tune.json", text);
    auto r = read_state(dir_);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message, not_state) << text;
  }
  boost::json::object no_id{{"recipe_sha256", "x"}, {"options", unusual_settings().to_json()}};
  write("tune.json", boost::json::serialize(no_id));
  auto r = read_state(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, not_state + " (no id or recipe_sha256)");
  boost::json::object no_sha{
      {"id", "t"}, {"recipe_sha256", 3}, {"options", unusual_settings().to_json()}};
  write("tune.json", boost::json::serialize(no_sha));
  r = read_state(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, not_state + " (no id or recipe_sha256)");

  // Issue 30: options edited by hand (the tuning measured conc 8; the file now says 64), and a key
  // twice in one object, are refused; the file as written is read back.
  TuneState s;
  s.dir = dir_;
  s.id = "t";
  s.recipe_sha256 = std::string(64, 'a');
  s.settings = unusual_settings();
  s.settings.conc = 8;
  ASSERT_TRUE(write_state(s, "interrupted").ok());
  ASSERT_TRUE(read_state(dir_).ok());
  std::string text = *read_file(dir_ / "tune.json");
  const size_t at = text.find("\"conc\":8");
  ASSERT_NE(at, std::string::npos) << text;
  std::string edited = text;
  edited.replace(at, 8, "\"conc\":64");
  write("tune.json", edited);
  r = read_state(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_NE(r.error().message.find("tune.json: its options were edited since the tuning started"),
            std::string::npos)
      << r.error().message;
  std::string twice = text;
  twice.replace(at, 8, "\"conc\":8,\"conc\":64");
  write("tune.json", twice);
  r = read_state(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("options: key \"conc\" appears twice"), std::string::npos)
      << r.error().message;
}

TEST_F(TuneStateTest, ResumeRefusesAChangedRecipe) {
  write("recipe.yaml", "k: 1\n");
  TuneState s;
  s.dir = dir_;
  s.id = "t";
  s.settings.recipe = (dir_ / "recipe.yaml").string();
  ASSERT_TRUE(hash_recipe(s).ok());
  EXPECT_EQ(s.recipe_sha256.size(), 64u);
  ASSERT_TRUE(write_state(s, "done").ok());
  auto resumed = read_state(dir_);
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(hash_recipe(*resumed).ok());
  write("recipe.yaml", "k: 2\n");
  const auto st = hash_recipe(*resumed);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::kUsage);
  EXPECT_NE(st.error().message.find(fmt::format("--resume {}: {} changed since the tuning started",
                                                dir_.string(), s.settings.recipe)),
            std::string::npos)
      << st.error().message;
  // A recipe that is gone is named as the tuning's recipe.
  fs::remove(dir_ / "recipe.yaml");
  const auto gone = hash_recipe(*resumed);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().message.rfind(fmt::format("--resume {}: the recipe: ", dir_.string()), 0),
            0u);
}

TEST_F(TuneStateTest, NewTuningIsAbsoluteWithAFreshId) {
  TuneSettings s;
  s.recipe = "recipe.yaml";
  s.runs_dir = "runs";
  const TuneState a = new_tuning(s, (dir_ / "work").string());
  EXPECT_EQ(a.dir, dir_ / "work");
  EXPECT_TRUE(fs::path(a.settings.recipe).is_absolute());
  EXPECT_TRUE(fs::path(a.settings.runs_dir).is_absolute());
  EXPECT_TRUE(a.settings.db.empty());
  EXPECT_FALSE(a.resumed);
  EXPECT_EQ(a.id.rfind("tune-", 0), 0u);
  const TuneState b = new_tuning(s, "");
  EXPECT_EQ(b.dir.parent_path(), fs::absolute("runs"));
  EXPECT_EQ(b.dir.filename().string().rfind("tune-", 0), 0u);
  EXPECT_NE(a.id, b.id);
}

}  // namespace
}  // namespace ib::tune
