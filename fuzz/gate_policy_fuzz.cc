// The merge gate's policy file (govern/gate_policy.h): it comes with the pull request it judges,
// so no input may crash or exhaust the parser.
#include "fuzz_util.h"
#include "govern/gate_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto p = ib::govern::parse_gate_policy(text, "fuzz.yaml");
  if (p) {
    for (const auto& d : p->models) (void)ib::govern::is_iso_date(d.from);
  }
  (void)ib::govern::is_iso_date(text.substr(0, 10));
  return 0;
}
