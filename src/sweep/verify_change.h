// `inferbench verify`: start the base and head servers of every changed config key just long
// enough to capture their effective configuration and environment reads, and judge each change
// (verify/verdict.h). Also the same judgement from two stored runs.
#pragma once

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/expected.h"
#include "govern/changed.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"
#include "store/store.h"
#include "verify/verdict.h"

namespace ib::sweep {

struct VerifyOptions {
  std::filesystem::path work_dir;  // server logs and traces go here
  std::filesystem::path inferbench_exe;
  std::vector<std::string> extra_server_args;
  std::chrono::seconds startup_timeout{600};
  bool env_trace = true;
  std::set<std::string> ignore_settings;
  bool show_progress = false;
};

struct VerifyReport {
  std::string base;  // what was compared, for the title
  std::string head;
  std::vector<verify::KeyVerdict> keys;
  bool all_no_op() const;
  boost::json::object to_json() const;
  std::string markdown() const;
};

/// Starts one row's server with the local launcher (a launch::ServerSession, as the sweep does),
/// waits until healthy, captures the effective configuration (with the recipe's own probes from
/// `entry`'s expect block) and which of `watch` its processes read, and stops it.
verify::ServerObservation observe_server(const recipe::RecipeRow& row,
                                         const std::vector<std::string>& watch,
                                         const std::filesystem::path& dir,
                                         const VerifyOptions& options,
                                         const recipe::ConfigEntry* entry = nullptr);

/// Judges every key of `changed` from base and head entries (servers started as needed).
Expected<VerifyReport> verify_changes(const std::vector<recipe::ConfigEntry>& base,
                                      const std::vector<recipe::ConfigEntry>& head,
                                      const govern::ChangedReport& changed,
                                      const VerifyOptions& options);

/// One stored server configuration of run `a` against one of run `b`: their recipe rows diffed,
/// each changed field judged on what the servers showed, identity differences as confounders.
verify::KeyVerdict judge_stored(const store::ServerConfigRecord& x, const store::RunRecord& a,
                                const store::ServerConfigRecord& y, const store::RunRecord& b,
                                const std::set<std::string>& ignore_settings);

/// The same judgement from two stored runs: server configurations are paired by config key (or,
/// when each run has exactly one, with each other), the recipe rows diffed, and identity
/// differences besides the change listed as confounders.
Expected<VerifyReport> verify_runs(store::Store& db, const store::RunRecord& a,
                                   const store::RunRecord& b,
                                   const std::set<std::string>& ignore_settings);

}  // namespace ib::sweep
