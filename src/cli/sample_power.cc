// `inferbench sample-power -- COMMAND...`: runs a command with a GPU power sampler (nvidia-smi or
// amd-smi) beside it, writing into a folder that `sweep` reads after each point; the sampler
// ends when the command does. The Slurm launcher wraps each GPU-holding step of a disaggregated
// deployment in it (docs/slurm.md): the step's own GPUs are sampled on its node, inside the job,
// and nothing outlives the step whatever the cluster's process tracking.
#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "load/power_sampler.h"

namespace ib::cli {

namespace {

struct SamplePowerOptions {
  std::string gpu_power = "auto";
  double interval_s = 0.5;
  std::string output_dir;
  std::vector<std::string> command;
};

// The sampler, or nullptr with a line on stderr: the command runs either way (no power is
// reported as missing by the reader, never as a failed server).
std::unique_ptr<load::PowerSampler> start_sampler(const SamplePowerOptions& o,
                                                  load::PowerMode mode) {
  const std::filesystem::path dir(o.output_dir);
  std::string why;
  auto tool = load::resolve_power_mode(mode, "localhost", &why);
  if (!tool) {
    if (auto st = load::write_utc_offset(dir); !st) {
      fmt::print(stderr, "inferbench sample-power: {}\n", st.error().message);
    }
    fmt::print(stderr, "inferbench sample-power: no GPU power sampled: {}\n", why);
    return nullptr;
  }
  auto sampler = load::PowerSampler::start(*tool, o.interval_s, dir);
  if (!sampler) {
    fmt::print(stderr, "inferbench sample-power: no GPU power sampled: {}\n",
               sampler.error().message);
    return nullptr;
  }
  return std::move(*sampler);
}

int run_sample_power(const SamplePowerOptions& o) {
  auto mode = load::parse_power_mode(o.gpu_power);
  if (!mode || *mode == load::PowerMode::kOff || *mode == load::PowerMode::kDcgm) {
    return fail("sample-power",
                usage_error(fmt::format(
                    "--gpu-power must be auto, nvidia-smi or amd-smi (got '{}')", o.gpu_power)));
  }
  install_interrupt_handlers();
  auto sampler = start_sampler(o, *mode);
  SpawnOptions so;
  so.argv = o.command;
  auto child = ChildProcess::spawn(so);
  if (!child) return fail("sample-power", Error{child.error().message});
  // Signals to this process (srun's, scancel's) go on to the command's process group; the
  // command's own exit decides when this one ends.
  bool forwarded = false;
  std::optional<ExitInfo> exit;
  while (!(exit = child->poll())) {
    if (interrupt_requested() && !forwarded) {
      forwarded = true;
      const int sig = interrupt_signal() != 0 ? interrupt_signal() : SIGTERM;
      ::kill(-child->pid(), sig);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (sampler) (void)sampler->stop();
  return exit->signaled ? 128 + exit->signal : exit->code;
}

}  // namespace

RunFn register_sample_power(CLI::App& root) {
  auto o = std::make_shared<SamplePowerOptions>();
  auto* app = root.add_subcommand(
      "sample-power",
      "Run a command with a GPU power sampler beside it (nvidia-smi or amd-smi, into a folder "
      "sweep reads); the sampler ends with the command");
  app->add_option("--gpu-power", o->gpu_power, "auto | nvidia-smi | amd-smi")
      ->capture_default_str();
  app->add_option("--power-interval", o->interval_s, "Seconds between samples")
      ->capture_default_str()
      ->transform(real_in(0.05, 60));
  app->add_option("--output-dir", o->output_dir,
                  "Where the samples go (gpu_power.<tool>.csv and gpu_power.utc_offset)")
      ->required()
      ->transform(folder_to_write());
  app->add_option("command", o->command, "The command, after --")->required();
  app->positionals_at_end();
  return [o] { return run_sample_power(*o); };
}

}  // namespace ib::cli
