// Numeric constants shared across modules.
#pragma once

#include <cstdint>
#include <limits>

namespace ib {

/// "Not measured" or "undefined" in a double field.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// SplitMix64 finalizer: a well-mixed 64-bit value from any 64-bit input.
inline constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace ib
