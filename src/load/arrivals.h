// Open-loop arrival schedules: when each request should be sent, as offsets from the run start.
// The schedule is absolute (offsets, not sleeps), so timer jitter never accumulates into drift.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace ib::load {

enum class ArrivalProcess {
  kConstant,  // evenly spaced at 1/rate
  kPoisson,   // exponential gaps with mean 1/rate
  kGamma,     // gamma gaps, shape = burstiness, mean 1/rate (vLLM's --burstiness)
};

std::optional<ArrivalProcess> parse_arrival(std::string_view name);
std::string_view arrival_name(ArrivalProcess a);

struct ArrivalSpec {
  double rate = 0;  // requests per second; > 0
  ArrivalProcess process = ArrivalProcess::kPoisson;
  double burstiness = 1.0;  // gamma shape: < 1 burstier than Poisson, > 1 more regular
  uint64_t seed = 0;
};

/// Error names the offending option (--request-rate, --burstiness).
Status validate(const ArrivalSpec& spec);

/// Send offsets in nanoseconds for `n` requests; the first is at 0 (a request at the start, as
/// vLLM does), each next one a sampled gap later. Deterministic for a given spec on every
/// machine (own samplers, not the implementation-defined std distributions).
std::vector<int64_t> arrival_offsets_ns(const ArrivalSpec& spec, size_t n);

}  // namespace ib::load
