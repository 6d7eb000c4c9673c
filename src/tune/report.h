// What `inferbench tune` says (docs/tune.md): every candidate and what happened to it, as text or
// markdown (a pull-request description that names the measurement's identity) and JSON.
#pragma once

#include <boost/json/object.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "govern/changed.h"
#include "tune/confirm.h"
#include "tune/knob.h"
#include "tune/screen_run.h"
#include "tune/search_run.h"
#include "tune/verify_stage.h"

namespace ib::tune {

struct TuneReport {
  std::string recipe;  // the file
  std::string key;
  std::vector<Candidate> candidates;
  std::vector<std::string> notes;  // values that were not candidates, and why
  VerifyStage verify;
  /// What one sweep of a candidate's row would measure (its concurrency points) and send
  /// (measured + warmup requests, the recipe's workload): what each dropped no-op saves, at least.
  int64_t requests_per_candidate = 0;
  int points_per_candidate = 0;
  std::vector<std::string> stages_not_run;  // "screen", "confirm": said in every output
  /// Stage 2, when it ran.
  std::optional<Objective> objective;
  std::optional<ScreenStage> screen;
  double min_effect_pct = 2;
  double confidence = 0.95;
  /// The tuning's folder and id (its store runs are tagged with the id).
  std::string id, dir;
  /// tput-at-slo: each side's operating point, found by the search.
  std::optional<SearchStage> search;
  std::map<std::string, int64_t> operating_conc;
  /// Stage 3, when it ran.
  std::vector<Guard> guards;
  std::optional<ConfirmStage> confirm;
  /// The winner (confirmed, largest effect): its recipe diff, recipe file and changelog entry.
  std::optional<size_t> winner;  // index into candidates
  std::vector<govern::FieldChange> winner_diff;
  std::string winner_yaml, changelog;
  bool interrupted = false;
  std::string resume_command;
  /// The server program every block ran (tune/blocks.h); not recorded for container runtimes.
  ServerBuild server_build;  // how to continue when interrupted

  const Candidate* candidate(const std::string& cid) const;
  /// One line per candidate: what happened to it at the last stage it reached.
  std::string outcome_of(size_t candidate_index) const;

  int64_t requests_saved() const;
  std::string markdown() const;
  boost::json::object to_json() const;
};

}  // namespace ib::tune
