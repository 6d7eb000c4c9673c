// A disaggregated deployment on Slurm (slurm_topology.cc), started by the Slurm launcher.
#pragma once

#include <filesystem>
#include <memory>

#include "core/expected.h"
#include "launch/launcher.h"
#include "launch/slurm.h"

namespace ib::launch {

/// One job holding the nodes of plan_topology(spec.roles) (salloc --no-shell, interruptible while
/// pending), each step srun'd from here onto its node with its role's environment (the tracer's
/// variables through env(1) on the node), each worker's rank 0 healthy before the next step, the
/// router last with the workers' URLs. A step that fails stops the others and cancels the job;
/// the error names the step and its node. The server stops the steps, router first, then
/// cancels the job. `work_dir` holds salloc's log.
Expected<std::unique_ptr<Server>> start_slurm_topology(const ServerSpec& spec,
                                                       const SlurmOptions& o,
                                                       const std::filesystem::path& work_dir);

}  // namespace ib::launch
