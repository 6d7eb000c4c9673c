// InferenceX's per-point aggregate (`agg_conc_N.json`): identity fields under InferenceX's names,
// per-GPU throughput, every `*_ms` key also in seconds without the suffix, and every TPOT key also
// as interactivity (1 / TPOT), so its dashboards and scripts read our points unchanged.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>

namespace ib::metrics {

/// `row` is the recipe row's fields (runner, image, model, tp, ep, isl, osl, ...), `result` the
/// point's result JSON; `gpus` the GPUs the server uses.
boost::json::object inferencex_aggregate(const boost::json::object& row,
                                         const std::string& recipe_fingerprint, bool multinode,
                                         int64_t concurrency, const boost::json::object& result,
                                         int gpus);

}  // namespace ib::metrics
