// git's unified diff, as the gate reads it (govern/git_diff.h): git prints it, but from a
// repository's files, whose names and contents are the pull request's: no input may crash the
// parser.
#include "fuzz_util.h"
#include "govern/git_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto files = ib::govern::parse_unified_diff(text);
  if (!files) return 0;
  size_t lines = 0;
  for (const auto& f : *files) lines += f.added_lines.size() + f.path.size();
  (void)lines;
  return 0;
}
