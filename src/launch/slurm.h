// The `slurm` launcher: one sbatch job per server configuration. The job
// runs a generated batch script whose every argument and environment value is quoted, so recipe
// strings never reach a shell as code. See docs/slurm.md.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "core/strings.h"
#include "launch/launcher.h"

namespace ib::launch {

struct SlurmOptions {
  std::string partition;                         // empty: the cluster's default partition
  std::string account;                           // empty: the user's default account
  std::vector<std::string> extra_sbatch_args;    // one sbatch argument each, e.g. "--qos=high"
  std::chrono::seconds allocation_timeout{600};  // submit → RUNNING; then spec.startup_timeout
  std::filesystem::path work_dir;                // where batch scripts go; empty: beside the log
  std::string time_limit = "02:00:00";           // sbatch --time
  /// GPU power beside the server (docs/telemetry.md): "auto" starts nvidia-smi, else amd-smi,
  /// when the node has one; "nvidia-smi" / "amd-smi" only that tool; "off" none. The samples go
  /// into the log's folder (telemetry::kPowerFile*), read by the client after each point.
  std::string gpu_power = "auto";
  double power_interval_s = 0.5;
  /// A disaggregated deployment: the GPUs of one node, for how many nodes a worker spans
  /// (ceil(its GPUs / this)).
  int gpus_per_node = 8;
};

/// One job step of a disaggregated deployment on Slurm: a worker on one of its nodes, or the
/// router (docs/slurm.md, "Disaggregated deployments").
struct StepPlan {
  std::string label;  // "prefill-0"; a worker's rank r > 0 on its r-th node: "prefill-0.r1"
  std::string role;   // prefill | decode | router
  size_t spec = 0;    // its RoleSpec (index into ServerSpec::roles)
  int node = 0;       // index into the job's nodes
  int rank = 0;       // the node's rank within its worker ({node-rank})
  int ranks = 1;      // the worker's nodes ({nnodes})
  int leader = 0;     // the node of the worker's rank 0 ({leader-host})
  int gpus = 0;       // GPUs of this step on its node
};

/// Where each role runs: every worker on nodes of its own (ceil(GPUs / gpus_per_node), at least
/// one), prefill workers first, then decode workers; the router on the node its RoleSpec::node
/// names (the first decode worker's by default) or on one more. Steps in start order: the
/// workers (a worker over several nodes: its other ranks, then its rank 0, which answers health
/// only once every rank has joined), then the router. Errors: no router, no worker, an unknown
/// router node.
struct TopologyPlan {
  int nodes = 0;          // nodes the job asks for
  int gpus_per_node = 0;  // GPUs it asks of each node (the most any step takes; 0: none)
  std::vector<StepPlan> steps;
};
Expected<TopologyPlan> plan_topology(const std::vector<RoleSpec>& roles, int gpus_per_node);

/// salloc's argv for the job that holds the deployment's nodes (no shell: its steps are srun'd
/// from here): --no-shell, the job name, --nodes, --exclusive, --gpus-per-node, then the time
/// limit, partition, account and extra sbatch arguments of `o`.
std::vector<std::string> salloc_argv(const TopologyPlan& plan, const SlurmOptions& o,
                                     const std::string& job_name);

/// srun's argv for one step: --jobid, one task on its node (--nodelist), --overlap (the router
/// and the samplers share the workers' nodes), --kill-on-bad-exit, --gpus when it has any, then
/// `env NAME=VALUE... ` for `env_args` (what the step's processes must see but srun itself must
/// not: the environment tracer) and the command; `sampler` (step_sampler_argv) goes before the
/// env(1) words, so that it runs untraced.
std::vector<std::string> srun_step_argv(const StepPlan& step, const std::string& job_id,
                                        const std::string& node,
                                        const std::map<std::string, std::string>& env_args,
                                        const std::vector<std::string>& argv,
                                        const std::vector<std::string>& sampler = {});

/// What a worker's step runs its command under when GPU power is sampled (o.gpu_power not
/// "off"): `exe sample-power --gpu-power TOOL --power-interval S --output-dir DIR/LABEL --`,
/// which samples the GPUs the step sees on its node and ends with the command. Empty for the
/// router (it holds no GPU) and when sampling is off.
std::vector<std::string> step_sampler_argv(const StepPlan& step, const SlurmOptions& o,
                                           const std::filesystem::path& exe,
                                           const std::filesystem::path& power_dir);

/// The plan as `inferbench plan` shows it: one line per step with its node and srun command
/// (the job id and node names as placeholders: $JOB, node<N>).
std::string topology_plan_text(const TopologyPlan& plan, const std::vector<RoleSpec>& roles,
                               const SlurmOptions& o = {});

/// One /bin/sh word (core/strings.h).
using ::ib::shell_quote;

/// The batch script for a server (pure): #SBATCH lines (job name, --output=spec.log_path,
/// nodes=1, ntasks=1, --gpus when spec.gpus > 0, --time, partition, account, extra arguments),
/// `export` of spec.env, the GPU power sampler in the background (o.gpu_power; its output and the
/// node's `date +%z` beside the log), then `exec srun ... -- argv` with {host} replaced by 0.0.0.0 (listen on
/// every interface: the server is reached from the submitting host) and {port} by `port`.
/// Error when a value cannot be written safely: a NUL byte in argv or env, an env name that is
/// not a shell identifier, a control character in an #SBATCH value, a backslash in the log path
/// (Slurm reads it as "no filename patterns"), an empty argv.
/// Secrets (core/redact.h: a secret-named or secret-valued variable, an argument that holds a
/// credential) are never written into the script, which lies on a shared filesystem: they go
/// into `secret_env` instead (the variable itself, or IB_SECRET_ARG_<i> for argument i, which
/// the script expands in double quotes), for sbatch's own environment, which it passes on to the
/// job (sbatch's default --export=ALL); nullptr: only the script is wanted.
Expected<std::string> slurm_batch_script(const ServerSpec& spec, const SlurmOptions& o, int port,
                                         std::map<std::string, std::string>* secret_env = nullptr);

/// A launcher that submits with `sbatch --parsable`, polls `scontrol show job` until the job runs,
/// reaches the server at its batch host's address and stops it with scancel. The log path and
/// work_dir must be on a filesystem the compute nodes share.
std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions o);

}  // namespace ib::launch
