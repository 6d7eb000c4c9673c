#include "tune/state.h"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>

#include "core/clock.h"
#include "core/files.h"
#include "core/json_strict.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/sha256.h"
#include "store/pg.h"

namespace ib::tune {

namespace json = boost::json;

namespace {

json::array string_array(const std::vector<std::string>& v) {
  return json::array(v.begin(), v.end());
}

// Reads the fields of tune.json's "options" into their members; throws (boost::json's
// exceptions) when one is missing or of another type.
struct SettingsReader {
  const json::object& j;
  void str(const char* k, std::string& v) const { v = std::string(j.at(k).as_string()); }
  void strs(const char* k, std::vector<std::string>& v) const {
    v.clear();
    for (const auto& x : j.at(k).as_array()) v.emplace_back(x.as_string());
  }
  void i64(const char* k, int64_t& v) const { v = j.at(k).as_int64(); }
  void i32(const char* k, int& v) const { v = static_cast<int>(j.at(k).as_int64()); }
  void dbl(const char* k, double& v) const { v = j.at(k).to_number<double>(); }
  void bol(const char* k, bool& v) const { v = j.at(k).as_bool(); }
};

// A string field of tune.json, read without throwing ("" when missing or not a string): an edited
// state file is refused with a message, not a crash.
std::string state_text(const json::object& state, const char* k) {
  const auto* f = state.if_contains(k);
  return f && f->is_string() ? std::string(f->as_string()) : std::string();
}

}  // namespace

json::object TuneSettings::to_json() const {
  return json::object{{"recipe", recipe},
                      {"key", key},
                      {"objective", objective},
                      {"stop_after", stop_after},
                      {"knobs", string_array(knobs)},
                      {"slos", string_array(slos)},
                      {"guards", string_array(guards)},
                      {"server_args", string_array(server_args)},
                      {"ignore", string_array(ignore)},
                      {"conc", conc},
                      {"isl", isl},
                      {"osl", osl},
                      {"tp", tp},
                      {"minimize", minimize},
                      {"no_guards", no_guards},
                      {"eval", eval},
                      {"no_env_trace", no_env_trace},
                      {"search_min", search_min},
                      {"search_max", search_max},
                      {"search_tolerance", search_tolerance},
                      {"keep", keep},
                      {"eta", eta},
                      {"passes", passes},
                      {"repeats", repeats},
                      {"max_candidates", max_candidates},
                      {"min_effect", min_effect},
                      {"confidence", confidence},
                      {"guard_tolerance", guard_tolerance},
                      {"accuracy_tolerance", accuracy_tolerance},
                      {"seed", seed},
                      {"resamples", resamples},
                      {"screen_prompts_per_conc", screen_prompts_per_conc},
                      {"screen_min_prompts", screen_min_prompts},
                      {"screen_warmups_per_conc", screen_warmups_per_conc},
                      {"prompts_per_conc", prompts_per_conc},
                      {"min_prompts", min_prompts},
                      {"warmups_per_conc", warmups_per_conc},
                      {"eval_limit", eval_limit},
                      {"startup_timeout_s", startup_timeout_s},
                      {"point_timeout_s", point_timeout_s},
                      {"runs_dir", runs_dir},
                      {"db", db},
                      {"pairs", pairs},
                      {"max_pairs", max_pairs}};
}

std::optional<TuneSettings> TuneSettings::from_json(const json::object& j) {
  TuneSettings s;
  try {
    const SettingsReader r{j};
    r.str("recipe", s.recipe), r.str("key", s.key), r.str("objective", s.objective);
    r.str("stop_after", s.stop_after), r.str("runs_dir", s.runs_dir), r.str("db", s.db);
    r.strs("knobs", s.knobs), r.strs("slos", s.slos), r.strs("guards", s.guards);
    r.strs("server_args", s.server_args), r.strs("ignore", s.ignore);
    r.i64("conc", s.conc), r.i64("isl", s.isl), r.i64("osl", s.osl), r.i64("tp", s.tp);
    r.bol("minimize", s.minimize), r.bol("no_guards", s.no_guards), r.bol("eval", s.eval);
    r.bol("no_env_trace", s.no_env_trace), r.bol("pairs", s.pairs);
    r.i32("max_pairs", s.max_pairs);
    r.i64("search_min", s.search_min), r.i64("search_max", s.search_max);
    r.dbl("search_tolerance", s.search_tolerance);
    r.i32("keep", s.keep), r.i32("eta", s.eta), r.i32("passes", s.passes);
    r.i32("repeats", s.repeats), r.i32("max_candidates", s.max_candidates);
    r.i32("resamples", s.resamples);
    r.dbl("min_effect", s.min_effect), r.dbl("confidence", s.confidence);
    r.dbl("guard_tolerance", s.guard_tolerance);
    r.dbl("accuracy_tolerance", s.accuracy_tolerance);
    r.i64("seed", s.seed);
    r.i32("screen_prompts_per_conc", s.screen_prompts_per_conc);
    r.i32("screen_min_prompts", s.screen_min_prompts);
    r.i32("screen_warmups_per_conc", s.screen_warmups_per_conc);
    r.i32("prompts_per_conc", s.prompts_per_conc), r.i32("min_prompts", s.min_prompts);
    r.i32("warmups_per_conc", s.warmups_per_conc), r.i64("eval_limit", s.eval_limit);
    r.dbl("startup_timeout_s", s.startup_timeout_s);
    r.dbl("point_timeout_s", s.point_timeout_s);
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

TuneOptions tune_options(const TuneSettings& s) {
  TuneOptions t;
  t.recipe = s.recipe;
  t.key = s.key;
  t.knobs = s.knobs;
  t.objective = s.objective;
  t.slos = s.slos;
  t.conc = s.conc;
  t.minimize = s.minimize;
  t.row = {s.isl, s.osl, s.tp};
  t.search_min = s.search_min;
  t.search_max = s.search_max;
  t.search_tolerance = s.search_tolerance / 100;
  t.keep = s.keep;
  t.eta = s.eta;
  t.passes = s.passes;
  t.screen_workload.prompts_per_conc = s.screen_prompts_per_conc;
  t.screen_workload.min_prompts = s.screen_min_prompts;
  t.screen_workload.warmups_per_conc = s.screen_warmups_per_conc;
  if (s.prompts_per_conc > 0) t.confirm_workload.prompts_per_conc = s.prompts_per_conc;
  if (s.min_prompts > 0) t.confirm_workload.min_prompts = s.min_prompts;
  if (s.warmups_per_conc >= 0) t.confirm_workload.warmups_per_conc = s.warmups_per_conc;
  t.confirm_workload.eval_limit = static_cast<size_t>(s.eval_limit);
  t.repeats = s.repeats;
  t.guards = s.guards;
  t.no_guards = s.no_guards;
  t.guard_tolerance = s.guard_tolerance;
  t.accuracy_tolerance = s.accuracy_tolerance;
  t.eval = s.eval;
  t.confidence = s.confidence / 100;
  t.min_effect = s.min_effect;
  t.seed = static_cast<uint64_t>(s.seed);
  t.resamples = s.resamples;
  t.max_candidates = s.max_candidates;
  t.pairs = s.pairs;
  t.max_pairs = s.max_pairs;
  t.stop_after = s.stop_after;
  t.ignore_settings = s.ignore;
  t.sweep.recipes = {s.recipe};
  t.sweep.runs_dir = s.runs_dir;
  t.sweep.db = s.db;
  t.sweep.extra_server_args = s.server_args;
  t.sweep.startup_timeout_s = s.startup_timeout_s;
  t.sweep.point_timeout_s = s.point_timeout_s;
  t.sweep.env_trace = !s.no_env_trace;
  return t;
}

TuneState new_tuning(TuneSettings settings, const std::string& work_dir) {
  TuneState state;
  state.settings = std::move(settings);
  TuneSettings& s = state.settings;
  const std::string started = utc_time_text("%Y%m%d-%H%M%S");
  state.dir = work_dir.empty() ? std::filesystem::path(s.runs_dir) / ("tune-" + started)
                               : std::filesystem::path(work_dir);
  // Paths are kept absolute, so --resume works from any folder.
  std::error_code aec;
  state.dir = std::filesystem::absolute(state.dir, aec);
  s.recipe = std::filesystem::absolute(s.recipe, aec).string();
  s.runs_dir = std::filesystem::absolute(s.runs_dir, aec).string();
  if (!s.db.empty() && !store::is_postgres_url(s.db)) {
    s.db = std::filesystem::absolute(s.db, aec).string();
  }
  // The tag of this tuning's runs in the database: unique even when folders share a name.
  state.id = fmt::format(
      "tune-{}-{}", started,
      sha256_hex(fmt::format("{} {} {}", state.dir.string(), getpid(),
                             std::chrono::steady_clock::now().time_since_epoch().count()))
          .substr(0, 6));
  return state;
}

Expected<TuneState> read_state(const std::filesystem::path& dir) {
  auto text = read_file(dir / "tune.json");
  if (!text) {
    return usage_error(
        fmt::format("--resume {}: no tuning there ({})", dir.string(), text.error().message));
  }
  json::error_code ec;
  const json::value v = json::parse(*text, ec);
  if (!ec && find_duplicate_key(*text)) {
    return usage_error(parse_json_strict(*text, (dir / "tune.json").string()).error().message);
  }
  std::optional<TuneSettings> settings;
  if (!ec && v.is_object() && v.as_object().contains("options") && v.at("options").is_object()) {
    settings = TuneSettings::from_json(v.at("options").as_object());
  }
  if (!settings) {
    return usage_error(fmt::format("{}/tune.json: not a tuning's state file", dir.string()));
  }
  // The options define what was measured: a file edited since (another concurrency, another
  // knob) would resume into results of the old options reported as the new ones.
  const std::string stored = state_text(v.as_object(), "options_sha256");
  if (!stored.empty() && stored != options_digest(*settings)) {
    return usage_error(fmt::format(
        "{}/tune.json: its options were edited since the tuning started (their sha256 is no "
        "longer the one recorded in options_sha256); what was measured is of the old options: "
        "put them back, or start a new tune with the new ones",
        dir.string()));
  }
  TuneState state;
  state.dir = dir;
  state.settings = std::move(*settings);
  state.id = state_text(v.as_object(), "id");
  state.server_build_sha256 = state_text(v.as_object(), "server_build_sha256");
  state.recipe_sha256 = state_text(v.as_object(), "recipe_sha256");
  state.resumed = true;
  if (state.id.empty() || state.recipe_sha256.empty()) {
    return usage_error(fmt::format(
        "{}/tune.json: not a tuning's state file (no id or recipe_sha256)", dir.string()));
  }
  return state;
}

Status hash_recipe(TuneState& state) {
  auto recipe_text = read_file(state.settings.recipe);
  if (!recipe_text) {
    return usage_error(fmt::format(
        "{}{}", state.resumed ? fmt::format("--resume {}: the recipe: ", state.dir.string()) : "",
        recipe_text.error().message));
  }
  const std::string recipe_sha = sha256_hex(*recipe_text);
  if (state.resumed && recipe_sha != state.recipe_sha256) {
    return usage_error(fmt::format(
        "--resume {}: {} changed since the tuning started (sha256 {} → {}); its measurements are "
        "of the old recipe: start a new tune",
        state.dir.string(), state.settings.recipe, state.recipe_sha256.substr(0, 12),
        recipe_sha.substr(0, 12)));
  }
  state.recipe_sha256 = recipe_sha;
  return Status::Ok();
}

std::string options_digest(const TuneSettings& settings) {
  return sha256_hex(json_text(redacted(settings.to_json())));
}

Status write_state(const TuneState& state, std::string_view status) {
  json::object s{{"version", 1},
                 {"id", state.id},
                 {"dir", state.dir.string()},
                 {"recipe_sha256", state.recipe_sha256},
                 {"server_build_sha256", state.server_build_sha256},
                 {"status", status},
                 {"updated", utc_time_text("%Y-%m-%dT%H:%M:%SZ")},
                 {"options", state.settings.to_json()},
                 {"options_sha256", options_digest(state.settings)}};
  return write_file_atomic(state.dir / "tune.json", json_text(redacted(s)) + "\n");
}

}  // namespace ib::tune
