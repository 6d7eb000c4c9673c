// A disaggregated deployment on Slurm (docs/slurm.md, "Disaggregated deployments"): one job holds
// the nodes (salloc --no-shell), each worker and the router is a job step started from here with
// srun on its node (fork/exec, never a shell), the addresses come from the job's node list, and
// stopping ends the steps, then cancels the job.
#include "launch/slurm_topology.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <regex>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/redact.h"
#include "launch/slurm.h"
#include "launch/slurm_jobs.h"
#include "launch/topology.h"

namespace ib::launch {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

Expected<TopologyPlan> plan_topology(const std::vector<RoleSpec>& roles, int gpus_per_node) {
  if (gpus_per_node < 1) return Error{"slurm: GPUs per node must be at least 1"};
  TopologyPlan plan;
  const RoleSpec* router = nullptr;
  size_t router_index = 0;
  int first_prefill = -1, first_decode = -1;
  for (const char* role : {"prefill", "decode"}) {
    for (size_t i = 0; i < roles.size(); ++i) {
      const RoleSpec& r = roles[i];
      if (r.role != role) continue;
      const int ranks = std::max(1, (r.gpus + gpus_per_node - 1) / gpus_per_node);
      const int leader = plan.nodes;
      if (r.role == "prefill" && first_prefill < 0) first_prefill = leader;
      if (r.role == "decode" && first_decode < 0) first_decode = leader;
      // Its other ranks first: a multi-node engine's rank 0 answers its health path only once
      // every rank has joined.
      for (int step = 0; step < ranks; ++step) {
        const int k = (step + 1) % ranks;
        StepPlan s;
        s.label = k == 0 ? r.label() : fmt::format("{}.r{}", r.label(), k);
        s.role = r.role;
        s.spec = i;
        s.node = leader + k;
        s.rank = k;
        s.ranks = ranks;
        s.leader = leader;
        s.gpus = std::min(gpus_per_node, r.gpus - k * gpus_per_node);
        if (s.gpus < 0) s.gpus = 0;
        plan.gpus_per_node = std::max(plan.gpus_per_node, s.gpus);
        plan.steps.push_back(std::move(s));
      }
      plan.nodes += ranks;
    }
  }
  for (size_t i = 0; i < roles.size(); ++i) {
    if (roles[i].role == "router") router = &roles[i], router_index = i;
  }
  if (first_prefill < 0 || first_decode < 0) {
    return Error{"slurm: a disaggregated deployment needs a prefill and a decode worker"};
  }
  if (router == nullptr) return Error{"slurm: a disaggregated deployment needs a router"};
  StepPlan s;
  s.label = router->label();
  s.role = "router";
  s.spec = router_index;
  if (router->node == "first-decode" || router->node.empty()) {
    s.node = first_decode;
  } else if (router->node == "first-prefill") {
    s.node = first_prefill;
  } else if (router->node == "own") {
    s.node = plan.nodes++;
  } else {
    return Error{
        fmt::format("slurm: the router's node is first-decode, first-prefill or own, not "
                    "'{}'",
                    router->node)};
  }
  s.leader = s.node;
  plan.steps.push_back(std::move(s));
  return plan;
}

std::vector<std::string> salloc_argv(const TopologyPlan& plan, const SlurmOptions& o,
                                     const std::string& job_name) {
  std::vector<std::string> argv = {"salloc", "--no-shell", "--job-name=" + job_name,
                                   fmt::format("--nodes={}", plan.nodes), "--exclusive"};
  if (plan.gpus_per_node > 0) argv.push_back(fmt::format("--gpus-per-node={}", plan.gpus_per_node));
  if (!o.time_limit.empty()) argv.push_back("--time=" + o.time_limit);
  if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
  if (!o.account.empty()) argv.push_back("--account=" + o.account);
  for (const auto& a : o.extra_sbatch_args) argv.push_back(a);
  return argv;
}

std::vector<std::string> step_sampler_argv(const StepPlan& step, const SlurmOptions& o,
                                           const fs::path& exe, const fs::path& power_dir) {
  if (o.gpu_power == "off" || step.role == "router") return {};
  return {exe.string(),
          "sample-power",
          "--gpu-power",
          o.gpu_power,
          "--power-interval",
          fmt::format("{}", o.power_interval_s),
          "--output-dir",
          (power_dir / step.label).string(),
          "--"};
}

std::vector<std::string> srun_step_argv(const StepPlan& step, const std::string& job_id,
                                        const std::string& node,
                                        const std::map<std::string, std::string>& env_args,
                                        const std::vector<std::string>& argv,
                                        const std::vector<std::string>& sampler) {
  std::vector<std::string> out = {"srun",
                                  "--jobid=" + job_id,
                                  "--nodes=1",
                                  "--ntasks=1",
                                  "--nodelist=" + node,
                                  "--overlap",
                                  "--kill-on-bad-exit=1",
                                  "--job-name=" + step.label};
  if (step.gpus > 0) out.push_back(fmt::format("--gpus={}", step.gpus));
  out.push_back("--");
  out.insert(out.end(), sampler.begin(), sampler.end());
  if (!env_args.empty()) {
    out.push_back("env");
    for (const auto& [k, v] : env_args) out.push_back(k + "=" + v);
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string topology_plan_text(const TopologyPlan& plan, const std::vector<RoleSpec>& roles,
                               const SlurmOptions& o) {
  std::string out = fmt::format(
      "  slurm: one job of {} node{} (salloc --no-shell --nodes={} --exclusive{}), each role a "
      "step:\n",
      plan.nodes, plan.nodes == 1 ? "" : "s", plan.nodes,
      plan.gpus_per_node > 0 ? fmt::format(" --gpus-per-node={}", plan.gpus_per_node) : "");
  for (const StepPlan& s : plan.steps) {
    const RoleSpec& r = roles.at(s.spec);
    std::vector<std::string> shown = redact_argv(r.argv);
    const auto argv = srun_step_argv(s, "$JOB", fmt::format("node<{}>", s.node + 1), {}, shown,
                                     step_sampler_argv(s, o, "inferbench", "$RUN/gpu_power"));
    out += fmt::format("    {:<14}node<{}>  {}\n", s.label, s.node + 1, fmt::join(argv, " "));
  }
  return out;
}

namespace {

constexpr milliseconds kStepPoll{200};

// Where the workers' samplers write, a folder per step (load::read_step_power reads it).
fs::path power_dir(const ServerSpec& spec) {
  return spec.log_path.parent_path() / "gpu_power";
}
constexpr milliseconds kStepAliveInterval{1'000};

// The variables the environment tracer adds (verify::add_env_trace): given to the step's
// processes through env(1), never to srun itself (it would trace srun, on this machine).
bool is_tracer_variable(const std::string& name) {
  return name == "LD_PRELOAD" || name == "PYTHONPATH" || name.starts_with("IB_ENVTRACE_");
}

// The job that holds the nodes, by the unique name salloc gave it.
Expected<std::string> job_id_of(const fs::path& salloc_log, const std::string& name) {
  if (auto text = read_file(salloc_log)) {
    static const std::regex kGranted("Granted job allocation ([0-9]+)");
    std::smatch m;
    if (std::regex_search(*text, m, kGranted)) return m[1].str();
  }
  CommandOptions co;
  co.timeout = milliseconds(30'000);
  auto r = run_command({"squeue", "-h", "--name=" + name, "-o", "%i"}, co);
  if (r && r->ok()) {
    const std::string id = r->out.substr(0, r->out.find_first_of(" \n"));
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) return id;
  }
  return Error{fmt::format("slurm: no job named {} after salloc", name)};
}

// Cancels the job and waits until it has left the queue; says how it ended.
std::string cancel_job(const std::string& id) {
  (void)jobs::scancel(id, {});
  const int64_t until = mono_ns() + std::chrono::nanoseconds(seconds(30)).count();
  while (true) {
    auto info = jobs::query_job(id);
    if (info && !info->active()) return info->describe(id);
    if (mono_ns() >= until) break;
    std::this_thread::sleep_for(kStepPoll);
  }
  (void)jobs::scancel(id, {"--signal=KILL", "--full"});
  auto info = jobs::query_job(id);
  return info ? info->describe(id) : info.error().message;
}

// Holds the job's nodes: salloc --no-shell as a child (interruptible while pending), then the
// job's id, its nodes and their addresses.
struct Allocation {
  std::string id;
  std::vector<std::string> nodes, addresses;
};

Expected<Allocation> allocate(const TopologyPlan& plan, const SlurmOptions& o,
                              const std::string& name, const fs::path& log) {
  SpawnOptions so;
  so.argv = salloc_argv(plan, o, name);
  so.log_path = log;
  auto child = ChildProcess::spawn(so);
  if (!child) return Error{fmt::format("slurm: cannot run salloc: {}", child.error().message)};
  const int64_t deadline = mono_ns() + std::chrono::nanoseconds(o.allocation_timeout).count();
  std::optional<ExitInfo> exit;
  while (!(exit = child->poll())) {
    if (interrupt_requested() || mono_ns() >= deadline) {
      child->stop(milliseconds(5000));  // a pending request is withdrawn
      CommandOptions co;
      co.timeout = milliseconds(30'000);
      (void)run_command({"scancel", "--name=" + name}, co);
      if (interrupt_requested()) return Error{"interrupted while waiting for the slurm allocation"};
      return Error{with_log_tail(fmt::format("slurm: no allocation of {} nodes after {} s",
                                             plan.nodes, o.allocation_timeout.count()),
                                 log)};
    }
    std::this_thread::sleep_for(kStepPoll);
  }
  if (exit->signaled || exit->code != 0) {
    return Error{with_log_tail(fmt::format("slurm: salloc failed ({})", exit->describe()), log)};
  }
  auto id = job_id_of(log, name);
  if (!id) return id.error();
  Allocation a;
  a.id = *id;
  auto info = jobs::query_job(a.id);
  if (!info || info->node_list.empty()) {
    (void)cancel_job(a.id);
    return Error{fmt::format("slurm: job {} has no node list ({})", a.id,
                             info ? info->describe(a.id) : info.error().message)};
  }
  auto nodes = jobs::expand_hostlist(info->node_list);
  if (!nodes || static_cast<int>(nodes->size()) < plan.nodes) {
    (void)cancel_job(a.id);
    return Error{
        fmt::format("slurm: job {} got nodes {}, {} needed", a.id, info->node_list, plan.nodes)};
  }
  a.nodes = std::move(*nodes);
  for (const auto& n : a.nodes) {
    auto addr = jobs::node_address(n);
    if (!addr) {
      (void)cancel_job(a.id);
      return addr.error();
    }
    a.addresses.push_back(*addr);
  }
  return a;
}

// The command of one step: {host} listens everywhere on its node, {port}, a worker's node rank,
// node count and leader address, the router's worker URLs.
std::vector<std::string> step_command(const RoleSpec& r, const StepPlan& s, int port,
                                      const Allocation& a, const TopologyServer& started) {
  std::vector<std::string> argv = substitute_address(r.argv, "0.0.0.0", port);
  const auto roles = started.roles();
  for (std::string& arg : argv) {
    arg = replaced(arg, "{node-rank}", std::to_string(s.rank));
    arg = replaced(arg, "{nnodes}", std::to_string(s.ranks));
    arg = replaced(arg, "{leader-host}", a.addresses.at(s.leader));
    if (r.role == "router") {
      arg = replaced(replaced(arg, "{prefill-urls}", joined_urls(roles, "prefill")),
                     "{decode-urls}", joined_urls(roles, "decode"));
    }
  }
  return argv;
}

// A running step: its srun child, healthy (rank 0) or only started (a worker's other ranks).
Expected<std::unique_ptr<ChildServer>> start_step(const ServerSpec& spec, const SlurmOptions& o,
                                                  const StepPlan& s, const Allocation& a,
                                                  const TopologyServer& started) {
  const RoleSpec& r = spec.roles.at(s.spec);
  auto port = pick_free_port();
  if (!port) return port.error();
  std::map<std::string, std::string> env, env_args;
  for (const auto& [k, v] : r.env) (is_tracer_variable(k) ? env_args : env)[k] = v;
  const auto argv = step_command(r, s, *port, a, started);
  if (redact_argv(argv) != argv) {
    return Error{
        fmt::format("{}: a credential in its command line cannot reach an srun step "
                    "without a shell; give it through the environment",
                    s.label)};
  }
  SpawnOptions so;
  so.argv = srun_step_argv(s, a.id, a.nodes.at(s.node), env_args, argv,
                           step_sampler_argv(s, o, self_executable(), power_dir(spec)));
  so.env_set = std::move(env);
  so.log_path = role_log(spec.log_path, s.label);
  auto child = ChildProcess::spawn(so);
  if (!child) return Error{fmt::format("{}: cannot run srun: {}", s.label, child.error().message)};
  const std::string url =
      s.rank == 0 ? fmt::format("http://{}:{}", a.addresses.at(s.node), *port) : std::string();
  auto server = std::make_unique<ChildServer>(std::move(*child), url, so.log_path);
  if (s.rank != 0) return server;
  int64_t last_check = 0;
  ChildServer* raw = server.get();
  const std::string id = a.id;
  Status healthy =
      wait_healthy(url, r.health_path, spec.startup_timeout, [&]() -> std::optional<std::string> {
        if (auto gone = raw->check_alive()) return gone;
        if (mono_ns() - last_check < std::chrono::nanoseconds(kStepAliveInterval).count()) {
          return std::nullopt;
        }
        last_check = mono_ns();
        auto info = jobs::query_job(id);
        if (info && !info->active()) return fmt::format("server exited ({})", info->describe(id));
        return std::nullopt;
      });
  if (!healthy.ok()) {
    server->stop(milliseconds(3000));
    return Error{with_log_tail(healthy.error().message, so.log_path)};
  }
  return server;
}

// Every process on `node`, listed there by a step of the job ("pid ppid command line");
// nullopt when the listing failed.
std::optional<std::vector<std::string>> node_processes(const std::string& job,
                                                       const std::string& node) {
  CommandOptions co;
  co.timeout = milliseconds(30'000);
  auto r = run_command({"srun", "--jobid=" + job, "--nodes=1", "--ntasks=1", "--nodelist=" + node,
                        "--overlap", "--", "ps", "-eo", "pid=,ppid=,args="},
                       co);
  if (!r || !r->ok()) return std::nullopt;
  std::vector<std::string> out;
  size_t start = 0;
  while (start < r->out.size()) {
    size_t end = r->out.find('\n', start);
    if (end == std::string::npos) end = r->out.size();
    if (end > start) out.push_back(r->out.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

class SlurmTopology final : public TopologyServer {
 public:
  SlurmTopology(Allocation a, std::optional<fs::path> power) : a_(std::move(a)), power_(power) {
    set_after_stop([this] { return cancel_job(a_.id); });
  }
  ~SlurmTopology() override { stop(milliseconds(10000)); }

  // Every step's processes get SIGTERM on their node first (a server's clean shutdown; srun
  // itself, signalled, would kill its task), then whatever is left is stopped and the job
  // cancelled.
  std::string stop(milliseconds grace) override {
    if (!signalled_) {
      signalled_ = true;
      (void)jobs::scancel(a_.id, {"--signal=TERM"});
      const int64_t until = mono_ns() + std::chrono::nanoseconds(grace).count();
      while (any_alive() && mono_ns() < until) std::this_thread::sleep_for(kStepPoll);
    }
    return TopologyServer::stop(grace);
  }

  std::optional<fs::path> power_dir() const override { return power_; }

  std::optional<std::map<std::string, std::vector<std::string>>> role_node_processes() override {
    // A role whose node could not be listed is left out: its untraced processes are unknown.
    std::map<std::string, std::optional<std::vector<std::string>>> by_node;
    std::map<std::string, std::vector<std::string>> out;
    for (const RoleProcess& r : roles()) {
      if (!by_node.count(r.node)) by_node[r.node] = node_processes(a_.id, r.node);
      if (by_node[r.node] && !by_node[r.node]->empty()) out[r.label] = *by_node[r.node];
    }
    return out;
  }

 private:
  Allocation a_;
  std::optional<fs::path> power_;
  bool signalled_ = false;
};

}  // namespace

Expected<std::unique_ptr<Server>> start_slurm_topology(const ServerSpec& spec,
                                                       const SlurmOptions& o,
                                                       const fs::path& work_dir) {
  auto plan = plan_topology(spec.roles, o.gpus_per_node);
  if (!plan) return plan.error();
  static std::atomic<int> counter{0};
  const std::string name =
      fmt::format("{}-{}-{}", jobs::job_name(spec.name), ::getpid(), counter++);
  auto a = allocate(*plan, o, name, work_dir / (name + ".salloc.log"));
  if (!a) return a.error();
  std::optional<fs::path> power;
  if (o.gpu_power != "off") {
    power = power_dir(spec);
    std::error_code ec;
    fs::remove_all(*power, ec);  // a previous start's samples are not this one's
  }
  auto topology = std::make_unique<SlurmTopology>(*a, power);
  topology->set_where([](const RoleProcess& r) { return " on " + r.node; });
  for (const StepPlan& s : plan->steps) {
    auto server = start_step(spec, o, s, *a, *topology);
    if (!server) {
      const std::string why = server.error().message;
      topology->stop(milliseconds(3000));
      return Error{fmt::format("{} did not start (slurm job {}, {}): {}", s.label, a->id,
                               a->nodes.at(s.node), why)};
    }
    const RoleSpec& r = spec.roles.at(s.spec);
    RoleProcess info;
    info.label = s.label;
    info.role = r.role;
    info.url = (*server)->url();
    info.log = (*server)->log_path();
    info.gpus = s.gpus;
    info.node = a->nodes.at(s.node);
    topology->add(std::move(info), std::move(*server));
  }
  return std::unique_ptr<Server>(std::move(topology));
}

}  // namespace ib::launch
