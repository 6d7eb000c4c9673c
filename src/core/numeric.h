// Numeric constants shared across modules.
#pragma once

#include <limits>

namespace ib {

/// "Not measured" or "undefined" in a double field.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace ib
