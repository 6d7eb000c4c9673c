// Golden acceptance-length files (`expect: spec-acceptance`'s golden:, InferenceX's
// golden_al_distribution shape) and the speculative-decoding knobs read from a recipe's serve
// command and environment. Both come from pull requests. The input is parsed as a golden file and
// a value picked from it; then each of its lines is an argument, and each NAME=VALUE line also an
// environment variable, for the knob reader.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_util.h"
#include "recipe/golden_al.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto golden = ib::recipe::parse_golden_al(text, "golden.yaml")) {
    for (int k : {1, 3, 7}) {
      (void)ib::recipe::pick_golden(*golden, "", "", k);
      (void)ib::recipe::pick_golden(*golden, "m", "on", k);
    }
  }
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  size_t from = 0;
  while (from <= text.size() && argv.size() < 64) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(from, end - from);
    if (const size_t eq = line.find('='); eq != std::string::npos) {
      env.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
    argv.push_back(std::move(line));
    from = end + 1;
  }
  for (const auto& pin : ib::recipe::find_spec_knobs(argv, env).pins) {
    if (!std::isfinite(pin.al)) __builtin_trap();
  }
  return 0;
}
