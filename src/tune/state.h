// The saved state of `inferbench tune` (docs/tune.md): the tuning's folder holds tune.json, with
// the options that define the tuning (in the command line's units), its id, the recipe's sha256,
// the server build it measured and its status (running, done, interrupted, failed). `--resume DIR`
// reads it back and refuses a folder that holds no tuning, an edited state file and a recipe that
// changed since the tuning started.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "tune/tune.h"

namespace ib::tune {

/// The options that define a tuning, as the command line gives them (percentages in percent);
/// tune.json keeps them, so a resumed tuning runs with the same ones.
struct TuneSettings {
  std::string recipe, key, objective, stop_after;
  std::vector<std::string> knobs, slos, guards, server_args, ignore;
  int64_t conc = 0, isl = 0, osl = 0, tp = 0;
  bool minimize = false, no_guards = false, eval = false, no_env_trace = false, pairs = false;
  int max_pairs = 6;
  int64_t search_min = 1, search_max = 1024;
  double search_tolerance = 10;
  int keep = 2, eta = 2, passes = 3, repeats = 5, max_candidates = 64;
  double min_effect = 2, confidence = 95, guard_tolerance = 5, accuracy_tolerance = 0.01;
  int64_t seed = 0;
  int resamples = 2000;
  int screen_prompts_per_conc = 2, screen_min_prompts = 16, screen_warmups_per_conc = 1;
  int prompts_per_conc = 0, min_prompts = 0, warmups_per_conc = -1;  // 0, -1: the recipe's
  int64_t eval_limit = 0;
  double startup_timeout_s = 600, point_timeout_s = 1800;
  std::string runs_dir = "runs", db;

  /// tune.json's "options".
  boost::json::object to_json() const;
  /// Reads back what to_json wrote; nullopt when a field is missing or of another type.
  static std::optional<TuneSettings> from_json(const boost::json::object& json);
};

/// The TuneOptions of `settings` (percentages as fractions, the workloads' overrides, the sweep's
/// settings). The caller adds the folder, the id, resume, the build and how progress is shown.
TuneOptions tune_options(const TuneSettings& settings);

/// One tuning: its folder and what tune.json says of it.
struct TuneState {
  std::filesystem::path dir;  // the tuning's folder (tune.json is in it)
  std::string id;             // the tag of its runs in the database
  std::string recipe_sha256;
  std::string server_build_sha256;  // empty until the tuning's server build is known
  TuneSettings settings;
  bool resumed = false;  // read back by read_state (not saved)
};

/// A new tuning of `settings`: its folder (`work_dir`, default RUNS_DIR/tune-<time>) and the
/// recipe, runs folder and database made absolute, so that --resume works from any folder; and a
/// new id, unique even when folders share a name.
TuneState new_tuning(TuneSettings settings, const std::string& work_dir);

/// --resume DIR: the tuning tune.json holds. Errors name DIR: no tuning there (tune.json cannot
/// be read), not a tuning's state file (not JSON, a key twice in one object, options missing or
/// of another type, no id or recipe_sha256), options edited since the tuning started.
Expected<TuneState> read_state(const std::filesystem::path& dir);

/// Hashes the recipe into state.recipe_sha256. Errors: the recipe cannot be read; a resumed
/// tuning's recipe changed since it started (its measurements are of the old recipe).
Status hash_recipe(TuneState& state);

/// The sha256 of `settings` as tune.json records them (redacted): tune.json's "options_sha256",
/// which --resume checks, so that a state file edited by hand is refused.
std::string options_digest(const TuneSettings& settings);

/// Writes DIR/tune.json with `status` (running | done | interrupted | failed), secrets redacted;
/// the error names the file.
Status write_state(const TuneState& state, std::string_view status);

}  // namespace ib::tune
