// Stage 1 of `inferbench tune` (docs/tune.md): every candidate's server is started just long
// enough to read its effective configuration and which environment variables it read, next to the
// base's, and judged as `inferbench verify` judges a change (verify/verdict.h). No benchmark
// request is sent. Candidates that change nothing are dropped here with the evidence; those that
// fail to start are reported.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "sweep/verify_change.h"
#include "tune/knob.h"

namespace ib::tune {

enum class VerifyOutcome {
  kSurvives,       // effective (or read, or not verifiable): measured in stage 2
  kNoOp,           // never read / no effect: dropped
  kFailedToStart,  // its server did not start or could not be read: reported, not measured
  kConfounded,     // an identity field (engine version) differs besides the change: dropped
};
std::string_view to_string(VerifyOutcome o);  // "survives" | "no-op" | "failed to start" | ...

struct VerifyItem {
  std::string candidate_id;
  VerifyOutcome outcome = VerifyOutcome::kSurvives;
  verify::KeyVerdict verdict;  // fields with their verdict and evidence
  std::string error;           // kFailedToStart: why (its first line), and the log
  std::string evidence_dir;    // the server's log, effective configuration and env reads
  double wall_s = 0;
};

struct VerifyStage {
  verify::ServerObservation base;
  std::vector<VerifyItem> items;  // parallel to the candidates
  double wall_s = 0;
  int servers_started = 0;
};

/// Observes the base (`dir`/base) and each candidate (`dir`/<id>) with `options` (its work_dir is
/// not used). Error when the base server does not start: nothing can be judged without it.
/// `progress` (may be empty) gets one line per server.
Expected<VerifyStage> verify_candidates(const recipe::ConfigEntry& base,
                                        const std::vector<Candidate>& candidates,
                                        const std::filesystem::path& dir,
                                        const sweep::VerifyOptions& options,
                                        const std::function<void(const std::string&)>& progress);

/// Stage 1 as JSON, kept in the tuning's folder so that a resumed tuning does not start every
/// server again; and back. Error when the text is not such a stage or its candidates are not
/// `candidates` (the same ids in the same order).
boost::json::object stage_to_json(const VerifyStage& stage);
Expected<VerifyStage> stage_from_json(const boost::json::value& json,
                                      const std::vector<Candidate>& candidates);

/// The fields a candidate changes, as verify judges them: govern's diff of the raw entries, with
/// search-space paths named `search-space.FIELD` (judged by the effective configuration, not as a
/// new workload).
std::vector<verify::ChangedField> changed_fields(const recipe::ConfigEntry& base,
                                                 const Candidate& candidate);

}  // namespace ib::tune
