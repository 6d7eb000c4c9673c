#include "tokenizer/cache.h"

#include <cstdlib>

namespace ib::tokenizer {

std::filesystem::path tokenizer_cache_dir() {
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* dir = env("INFERBENCH_TOKENIZERS")) return dir;
  if (const char* xdg = env("XDG_CACHE_HOME")) {
    return std::filesystem::path(xdg) / "inferbench" / "tokenizers";
  }
  if (const char* home = env("HOME")) {
    return std::filesystem::path(home) / ".cache" / "inferbench" / "tokenizers";
  }
  return {};
}

}  // namespace ib::tokenizer
