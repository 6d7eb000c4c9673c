// Slurm's job queries and commands as the Slurm launcher uses them (slurm.cc and the
// disaggregated deployments' slurm_topology.cc): every call is a fork/exec of scontrol or scancel
// with a timeout, never a shell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/command.h"
#include "core/expected.h"

namespace ib::launch::jobs {

/// "ib-" and the name with characters no tool mangles, at most 64 characters.
std::string job_name(std::string_view name);

/// "Key=value" from one line of `scontrol -o show ...` output; the value ends at a space.
std::string field(std::string_view line, std::string_view key);

/// Job states after which the job has left the queue (squeue's "job state codes").
bool is_terminal(std::string_view state);

/// What slurmctld knows of a job. `known` is false once the job was purged from its memory
/// (MinJobAge after the end): it has then certainly left the queue.
struct JobInfo {
  bool known = false;
  std::string state;       // RUNNING, PENDING, FAILED, ...
  std::string batch_host;  // node running the batch script, once running
  std::string node_list;   // NodeList, once running ("node[1-3]")
  std::string reason;
  std::string exit_code;  // "1:0" (exit code : signal)
  bool active() const { return known && !is_terminal(state); }
  std::string describe(const std::string& id) const;
};

Expected<JobInfo> query_job(const std::string& id);

/// The address of a node as Slurm reaches it (NodeAddr), resolved to a numeric address for a
/// URL (IPv6 in brackets).
Expected<std::string> node_address(const std::string& node);

/// `scancel [extra...] id`.
Expected<CommandResult> scancel(const std::string& id, std::vector<std::string> extra);

/// The node names of a Slurm host list ("node[1-3]" -> node1, node2, node3), by `scontrol show
/// hostnames`.
Expected<std::vector<std::string>> expand_hostlist(const std::string& list);

}  // namespace ib::launch::jobs
