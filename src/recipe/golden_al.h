// Golden acceptance lengths (InferenceX's golden_al_distribution files) and the server arguments
// and environment variables that pin a speculating engine's synthetic acceptance (docs/metrics.md,
// "Acceptance length"; InferenceX's sign-off check 11, done by code).
//
// A golden file maps model -> thinking_on | thinking_off -> num_speculative_tokens -> AL (a key
// starting with `_`, such as `_metadata`, is not a model):
//
//   qwen3.5-397b-a17b:
//     thinking_on:
//       3: 3.39
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/expected.h"

namespace ib::recipe {

struct GoldenAl {
  std::string file;
  /// model -> "on" | "off" -> draft length -> golden AL.
  std::map<std::string, std::map<std::string, std::map<int, double>>> curves;
};

/// Parses a golden file strictly: every model a mapping of thinking_on / thinking_off, each a
/// mapping of draft lengths (1..64) to an AL in [1, draft length + 1]. Errors name file:line:col
/// and the path (`qwen3.5.thinking_on.3: ...`), all of them at once.
Expected<GoldenAl> parse_golden_al(const std::string& text, const std::string& file);

/// The golden value for a model, mode and draft length. An empty `model` or `thinking` picks the
/// only one there is; an ambiguous or missing one is an error listing what the file has.
struct GoldenPick {
  double al = 0;
  std::string where;  // "golden/x.yaml: qwen3.5 thinking_on, 3 draft tokens"
};
Expected<GoldenPick> pick_golden(const GoldenAl& golden, const std::string& model,
                                 const std::string& thinking, int draft_tokens);

/// What a server's command line and environment say about speculative decoding.
struct SpecKnobs {
  /// The draft length (num_speculative_tokens), and the argument that gave it.
  std::optional<int> draft_tokens;
  std::string draft_tokens_from;
  /// serve-sim's `--spec-decoding none`: speculation off, whatever else is set.
  bool off = false;
  /// Each knob that pins a synthetic acceptance, with the AL it means in the engine's own
  /// definition (TensorRT-LLM's variable counts accepted drafts only: AL = value + 1).
  struct Pin {
    std::string knob;  // "SGLANG_SIMULATE_ACC_LEN=2.5", "--speculative-config synthetic_..."
    double al = 0;
    bool environment = false;  // an environment variable (checked by env-read tracing)
    std::string variable;      // its name when environment
  };
  std::vector<Pin> pins;
};

/// Reads the knobs of vLLM (--speculative-config JSON: num_speculative_tokens,
/// synthetic_acceptance_length), SGLang (--speculative-num-steps, SGLANG_SIMULATE_ACC_LEN),
/// TensorRT-LLM (TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS), ATOM (--num-speculative-tokens,
/// --spec-decode-acceptance-length, --spec-decode-acceptance-rate) and serve-sim (--spec-decode,
/// --spec-acceptance-length, --spec-acceptance, --spec-decoding). Values it cannot read as
/// numbers are left out (the engine will refuse them itself).
SpecKnobs find_spec_knobs(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace ib::recipe
