// A point's typed timeslices as the rows the store keeps (metrics::TimesliceRow): made once from
// the slices themselves, so no stored column is read back from JSON.
#pragma once

#include <vector>

#include "metrics/point.h"
#include "telemetry/timeslices.h"

namespace ib::telemetry {

/// The server slices, then the client slices, one row each. A value that is not finite is
/// stored as NULL, as slices_to_json writes it as null; `data` is the slice's slices_to_json row.
std::vector<metrics::TimesliceRow> timeslice_rows(const std::vector<ServerSlice>& server,
                                                  const std::vector<ClientSlice>& client);

}  // namespace ib::telemetry
