#include "load/arrivals.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace ib::load {

std::optional<ArrivalProcess> parse_arrival(std::string_view name) {
  if (name == "constant") return ArrivalProcess::kConstant;
  if (name == "poisson") return ArrivalProcess::kPoisson;
  if (name == "gamma") return ArrivalProcess::kGamma;
  return std::nullopt;
}

std::string_view arrival_name(ArrivalProcess a) {
  switch (a) {
    case ArrivalProcess::kConstant:
      return "constant";
    case ArrivalProcess::kPoisson:
      return "poisson";
    case ArrivalProcess::kGamma:
      return "gamma";
  }
  return "unknown";
}

Status validate(const ArrivalSpec& spec) {
  if (!(spec.rate > 0) || !std::isfinite(spec.rate)) {
    return Error{fmt::format("--request-rate must be a positive number (got {})", spec.rate)};
  }
  if (!(spec.burstiness > 0) || !std::isfinite(spec.burstiness)) {
    return Error{fmt::format("--burstiness must be a positive number (got {})", spec.burstiness)};
  }
  return Status::Ok();
}

namespace {

// Uniform in (0, 1): 53 random bits, never exactly 0.
double uniform01(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double standard_normal(std::mt19937_64& rng) {
  // Box-Muller; one of the pair is enough here.
  const double u1 = uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Gamma(shape k, scale 1) by Marsaglia and Tsang (2000); for k < 1 the boost
// Gamma(k) = Gamma(k+1) · U^(1/k).
double standard_gamma(std::mt19937_64& rng, double k) {
  if (k < 1.0) return standard_gamma(rng, k + 1.0) * std::pow(uniform01(rng), 1.0 / k);
  const double d = k - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform01(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace

std::vector<int64_t> arrival_offsets_ns(const ArrivalSpec& spec, size_t n) {
  std::vector<int64_t> out(n);
  std::mt19937_64 rng(spec.seed ^ 0x5deece66dULL);
  const double mean_gap_s = 1.0 / spec.rate;
  double t = 0;  // seconds, accumulated in double: sub-ns error over millions of requests
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<int64_t>(std::llround(t * 1e9));
    double gap = mean_gap_s;
    switch (spec.process) {
      case ArrivalProcess::kConstant:
        gap = mean_gap_s;
        break;
      case ArrivalProcess::kPoisson:
        gap = -std::log(uniform01(rng)) * mean_gap_s;
        break;
      case ArrivalProcess::kGamma:
        // Mean shape·scale = 1/rate → scale = 1 / (rate · shape).
        gap = standard_gamma(rng, spec.burstiness) * mean_gap_s / spec.burstiness;
        break;
    }
    t += gap;
  }
  return out;
}

}  // namespace ib::load
