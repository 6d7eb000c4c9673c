// From a recipe row to what a launcher starts: the serve command with its placeholders
// substituted (docs/recipes.md), the environment, the health path and the GPU count.
#pragma once

#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/expected.h"
#include "launch/launcher.h"
#include "recipe/matrix.h"

namespace ib::sweep {

/// Every placeholder of a row except {host} and {port} (the launcher's): name -> text.
std::map<std::string, std::string> row_placeholders(const boost::json::object& fields);

/// Replaces {name} for every name in `values`; other text is kept as it is.
std::string substitute(const std::string& text, const std::map<std::string, std::string>& values);

/// The row's GPU count: tp·pp·pcp for a single-node row, the sum over prefill and decode
/// workers (num-worker·tp·pp) for a multi-node one.
int row_gpus(const boost::json::object& fields);

/// The server of a row: serve.command + serve.extra-args + `extra_args`, substituted; an
/// argv[0] of "inferbench" is this very binary (`self`). Env values are strings as written.
/// GPUs: the row's, except for the simulator (framework serve-sim), which needs none.
/// Error when the row has no serve block.
Expected<launch::ServerSpec> server_spec_for_row(const recipe::RecipeRow& row,
                                                 const std::vector<std::string>& extra_args,
                                                 const std::filesystem::path& self);

/// `--stand-in serve-sim` (docs/sweep.md): every row without a serve block (InferenceX's master
/// configs have none) is served by serve-sim standing in for its engine: one server, or a
/// disaggregated row's prefill and decode workers and router, each its own serve-sim role, with
/// the row's parallelism, speculative decoding and additional-settings. Its framework becomes
/// serve-sim (`stand-in-for` keeps the engine it stands for), so its fingerprint and identity are
/// the simulator's, never the engine's. Returns how many rows it changed.
size_t stand_in_serve_sim(std::vector<recipe::RecipeRow>& rows);

/// Where a disaggregated deployment's roles would run on Slurm (launch::plan_topology), as
/// `inferbench plan --launcher slurm` prints it: the job and each step's node and srun line.
std::string slurm_placement_text(const launch::ServerSpec& spec, int gpus_per_node,
                                 const std::string& gpu_power = "auto");

/// The identity of a server configuration: the row's fingerprint, or, when the command line adds
/// server arguments, a sha256 over both (so that results measured with different arguments are
/// never resumed or reused for each other).
std::string config_fingerprint(const recipe::RecipeRow& row,
                               const std::vector<std::string>& extra_args);

}  // namespace ib::sweep
