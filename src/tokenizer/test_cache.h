// For tests only (includes GoogleTest): the fetched tokenizer files (scripts/fetch-tokenizers.sh,
// tokenizer/cache.h). Tests that need them skip without them, unless IB_REQUIRE_TOKENIZERS=1
// (CI), where they fail.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/cache.h"

namespace ib::tokenizer::testing {

inline bool require_files() {
  const char* v = std::getenv("IB_REQUIRE_TOKENIZERS");
  return v != nullptr && std::string_view(v) == "1";
}

/// Empty when every file (relative to the cache folder) exists; else what is missing.
inline std::string missing_files(const std::vector<std::filesystem::path>& files) {
  const std::filesystem::path dir = tokenizer_cache_dir();
  if (dir.empty()) return "no tokenizer cache folder (HOME and INFERBENCH_TOKENIZERS unset)";
  for (const auto& f : files) {
    if (!std::filesystem::exists(dir / f)) return (dir / f).string() + " is missing";
  }
  return {};
}

}  // namespace ib::tokenizer::testing

// Skips the test (or fails it under IB_REQUIRE_TOKENIZERS=1) when `missing` is non-empty.
#define IB_SKIP_IF_MISSING(missing)                                                              \
  do {                                                                                           \
    if (const std::string why = (missing); !why.empty()) {                                       \
      if (::ib::tokenizer::testing::require_files()) {                                           \
        FAIL() << "IB_REQUIRE_TOKENIZERS=1 but " << why << " (run scripts/fetch-tokenizers.sh)"; \
      }                                                                                          \
      GTEST_SKIP() << why << "; run scripts/fetch-tokenizers.sh to fetch the tokenizer files";   \
    }                                                                                            \
  } while (0)
