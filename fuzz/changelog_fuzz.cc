// The perf-changelog checker (`inferbench changelog check`): the input is a base and a head
// revision of perf-changelog.yaml, split at the first "\n---8<---\n" (no separator: the file is
// new), checked as on a pull request and as on main; plus the head parsed alone. Changelogs come
// from pull requests: no input may crash the checker or make it use unbounded time or memory.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "govern/changelog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSep = "\n---8<---\n";
  std::optional<std::string> base;
  std::string head(all);
  if (const size_t at = all.find(kSep); at != std::string_view::npos) {
    base = std::string(all.substr(0, at + 1));
    head = std::string(all.substr(at + kSep.size()));
  }
  (void)ib::govern::parse_changelog(head, "perf-changelog.yaml");
  ib::govern::ChangelogContext pr;
  pr.config_keys = std::vector<std::string>{"dsr1-fp8-mi355x-sglang", "gptoss-fp4-b200-vllm"};
  pr.affected_keys = std::vector<std::string>{"dsr1-fp8-mi355x-sglang"};
  pr.agentic_keys = std::set<std::string>{"gptoss-fp4-b200-vllm"};
  pr.labels = {"sweep-enabled"};
  (void)ib::govern::check_changelog(base, head, pr).to_json();
  ib::govern::ChangelogContext main;
  main.main = true;
  (void)ib::govern::check_changelog(base, head, main).to_json();
  (void)ib::govern::changelog_key_matches(head.substr(0, 64), "dsr1-fp8-mi355x-sglang");
  return 0;
}
