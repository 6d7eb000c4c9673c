// Accuracy thresholds for eval gates, in InferenceX's utils/evals/thresholds.yaml shape
// (docs/evals.md "Thresholds"):
//
//   default:            # per task
//     gsm8k: 0.90
//   models:             # per model prefix, then per task
//     dsr1:
//       gsm8k: 0.91
//
// Resolution: models.<prefix>.<task>, then default.<task>, then the caller's fallback (InferenceX's
// --min-score, 0.85).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/expected.h"

namespace ib::recipe {

struct EvalThresholds {
  std::map<std::string, double> defaults;                          // task -> minimum score
  std::map<std::string, std::map<std::string, double>> by_model;  // prefix -> task -> minimum
  std::string file;                                                // where they came from

  /// The threshold of `task` for model prefix `prefix` (may be empty), and where it came from
  /// ("models.dsr1.gsm8k in FILE", "default.gsm8k in FILE", "--min-score").
  struct Resolved {
    double value = 0;
    std::string source;
  };
  Resolved resolve(const std::string& prefix, const std::string& task, double fallback) const;
};

/// Parses a thresholds document; errors name file:line:column and the field.
Expected<EvalThresholds> parse_eval_thresholds(const std::string& text, const std::string& file);
Expected<EvalThresholds> load_eval_thresholds(const std::filesystem::path& path);

/// InferenceX's fallback when no file gives a task's threshold (validate_scores.py --min-score).
inline constexpr double kDefaultMinScore = 0.85;

}  // namespace ib::recipe
