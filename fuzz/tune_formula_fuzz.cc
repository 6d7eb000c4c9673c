// `inferbench tune --objective EXPR`: a user's formula over metric names (tune/formula.h). Any text
// either parses or is refused with a message naming it; a parsed formula evaluates without
// throwing, to the same value every time, reads only metrics the predicate accepted, and keeps its
// text. The metric names here stand in for the headline keys (the predicate is the caller's).
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "tune/formula.h"

namespace {

bool known(std::string_view name) {
  for (const char* k : {"a", "b", "tput_per_gpu", "median_ttft_ms", "p99.9_x"}) {
    if (name == k) return true;
  }
  return false;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ib::fuzz::Input in(data, size);
  // The first byte picks the metrics' values: zeros, NaNs and huge numbers included.
  const uint8_t values = in.byte();
  const std::string text(in.rest());
  auto parsed = ib::tune::Formula::parse(text, known);
  if (!parsed) {
    check(!parsed.error().message.empty());
    return 0;
  }
  check(parsed->text() == text);
  for (const auto& m : parsed->metrics()) check(known(m));
  auto value = [&](std::string_view name) {
    const double table[] = {0.0, 1.0, -2.5, 1e308, std::nan(""), 3.0, 1e-308, 7.0};
    return table[(values + name.size()) % 8];
  };
  const double v1 = parsed->eval(value);
  const double v2 = parsed->eval(value);
  check(std::isnan(v1) ? std::isnan(v2) : v1 == v2);
  check(std::isnan(v1) || std::isfinite(v1));
  return 0;
}
