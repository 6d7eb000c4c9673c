// Recipe loading: one master-config document (YAML), validated and, when valid, expanded into its
// matrix with a fingerprint per row; the same bytes as a runners file. Recipes come from pull
// requests, so no document may crash the loader or make it use unbounded time or memory (libFuzzer's
// -rss_limit_mb and -timeout, set by scripts/fuzz.sh, turn either into a finding).
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "recipe/fingerprint.h"
#include "recipe/matrix.h"
#include "recipe/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<ib::recipe::ConfigEntry> entries;
  std::vector<ib::recipe::Diagnostic> diagnostics;
  ib::recipe::parse_master_config(text, "fuzz.yaml", &entries, &diagnostics);
  for (const auto& d : diagnostics) (void)d.str();
  if (diagnostics.empty()) {
    const auto rows = ib::recipe::expand(entries, nullptr);
    for (const auto& row : rows) (void)ib::recipe::recipe_fingerprint(row.to_json());
  }
  ib::recipe::RunnersFile runners;
  std::vector<ib::recipe::Diagnostic> runner_diagnostics;
  ib::recipe::parse_runners(text, "runners.yaml", &runners, &runner_diagnostics);
  return 0;
}
