#include "load/power_sampler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <set>
#include <thread>

#include "core/files.h"
#include "core/strings.h"

namespace ib::load {

namespace fs = std::filesystem;

namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (const auto& dir : split(path, ':')) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool is_local_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// This host's offset from UTC: nvidia-smi prints local wall-clock time without a zone.
double local_utc_offset_s() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  return static_cast<double>(local.tm_gmtoff);
}

// What a sampler printed, parsed as its tool's CSV.
Expected<telemetry::PowerLog> parse_tool_output(PowerMode mode, std::string_view text,
                                                double utc_offset_s) {
  return mode == PowerMode::kNvidiaSmi ? telemetry::parse_nvidia_smi_csv(text, {utc_offset_s, {}})
                                       : telemetry::parse_amd_smi_csv(text, utc_offset_s);
}

}  // namespace

std::optional<PowerMode> parse_power_mode(std::string_view text) {
  if (text == "auto") return PowerMode::kAuto;
  if (text == "off") return PowerMode::kOff;
  if (text == "nvidia-smi") return PowerMode::kNvidiaSmi;
  if (text == "amd-smi") return PowerMode::kAmdSmi;
  if (text == "dcgm") return PowerMode::kDcgm;
  return std::nullopt;
}

std::optional<PowerMode> resolve_power_mode(PowerMode mode, const std::string& host,
                                            std::string* why) {
  switch (mode) {
    case PowerMode::kOff:
      *why = "GPU power sampling is off (--gpu-power off)";
      return std::nullopt;
    case PowerMode::kNvidiaSmi:
    case PowerMode::kAmdSmi:
      return mode;
    case PowerMode::kDcgm:
      *why = "no DCGM_FI_DEV_POWER_USAGE series in the server metrics (--gpu-power dcgm reads "
             "dcgm-exporter's; add its URL with --server-metrics-url)";
      return std::nullopt;
    case PowerMode::kAuto:
      if (!is_local_host(host)) {
        *why = fmt::format(
            "the server ({}) is not on this host: GPU power is sampled where it runs (local or "
            "Slurm launcher), or with --gpu-power on this host",
            host);
        return std::nullopt;
      }
      if (on_path("nvidia-smi")) return PowerMode::kNvidiaSmi;
      if (on_path("amd-smi")) return PowerMode::kAmdSmi;
      *why = "no nvidia-smi or amd-smi on this host";
      return std::nullopt;
  }
  return std::nullopt;
}

Status write_utc_offset(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const double off = local_utc_offset_s();
  const long minutes = std::lround(std::abs(off) / 60);
  return write_file_atomic(
      dir / telemetry::kPowerFileUtcOffset,
      fmt::format("{}{:02}{:02}\n", off < 0 ? '-' : '+', minutes / 60, minutes % 60));
}

Expected<std::unique_ptr<PowerSampler>> PowerSampler::start(PowerMode mode, double interval_s,
                                                            const std::optional<fs::path>& dir) {
  std::unique_ptr<PowerSampler> s(new PowerSampler());
  s->mode_ = mode;
  if (dir) {
    if (auto st = write_utc_offset(*dir); !st) return st.error();
    s->keep_ = true;
    s->dir_ = *dir;
    s->file_ = *dir / (mode == PowerMode::kNvidiaSmi ? telemetry::kPowerFileNvidiaSmi
                                                     : telemetry::kPowerFileAmdSmi);
  } else {
    char tmpl[] = "/tmp/inferbench-power-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return Error{"--gpu-power: cannot create a temporary folder"};
    s->dir_ = tmpl;
    s->file_ = s->dir_ / "samples.csv";
  }
  s->utc_offset_s_ = local_utc_offset_s();
  SpawnOptions so;
  const int ms = std::max(100, static_cast<int>(std::lround(interval_s * 1000)));
  if (mode == PowerMode::kNvidiaSmi) {
    s->tool_ = "nvidia-smi";
    so.argv = {"nvidia-smi", fmt::format("--query-gpu={}", telemetry::kNvidiaSmiQuery),
               "--format=csv,nounits", fmt::format("--loop-ms={}", ms)};
  } else {
    s->tool_ = "amd-smi";
    so.argv = {"amd-smi",
               "metric",
               "-p",
               "-u",
               "-E",
               "-w",
               fmt::format("{}", std::max(1, static_cast<int>(std::lround(interval_s)))),
               "--csv"};
  }
  so.log_path = s->file_;
  auto child = ChildProcess::spawn(so);
  if (!child) return Error{fmt::format("--gpu-power: {}", child.error().message)};
  s->child_.emplace(std::move(*child));
  s->interval_s_ = interval_s;
  // The integration needs a sample before the window starts: wait for the first ones (the
  // header and a line per GPU), at most a few seconds (a tool that prints nothing is reported
  // after the point, from its output).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    auto text = read_file(s->file_);
    if (text && std::count(text->begin(), text->end(), '\n') >= 2) break;
    if (s->child_->poll()) break;  // exited: its output says why
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return s;
}

PowerSampler::~PowerSampler() {
  if (child_) child_->stop(std::chrono::milliseconds(1000));
  std::error_code ec;
  if (!dir_.empty() && !keep_) fs::remove_all(dir_, ec);
}

Expected<telemetry::PowerLog> PowerSampler::stop() {
  if (child_) {
    // And one after it ends: let the tool print one more interval.
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_s_ * 1.5));
    child_->stop(std::chrono::milliseconds(2000));
    child_.reset();
  }
  auto text = read_file(file_);
  if (!text) return Error{fmt::format("{}: no output: {}", tool_, text.error().message)};
  auto log = parse_tool_output(mode_, *text, utc_offset_s_);
  if (!log) return Error{fmt::format("{} output: {}", tool_, log.error().message)};
  return log;
}

Expected<RemotePower> read_remote_power(const fs::path& dir) {
  const fs::path tz = dir / telemetry::kPowerFileUtcOffset;
  auto tz_text = read_file(tz);
  if (!tz_text) {
    return Error{fmt::format("no GPU power sampler output beside the server ({} is missing)",
                             tz.string())};
  }
  auto offset = telemetry::parse_utc_offset(trim(*tz_text));
  if (!offset) return Error{fmt::format("{}: {}", tz.string(), offset.error().message)};
  // The job script starts one of the two (nvidia-smi first).
  const struct {
    std::string_view file;
    PowerMode mode;
    const char* tool;
  } kOutputs[] = {{telemetry::kPowerFileNvidiaSmi, PowerMode::kNvidiaSmi, "nvidia-smi (Slurm job)"},
                  {telemetry::kPowerFileAmdSmi, PowerMode::kAmdSmi, "amd-smi (Slurm job)"}};
  for (const auto& o : kOutputs) {
    const fs::path path = dir / o.file;
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    auto text = read_file(path);
    if (!text) return text.error();
    auto log = parse_tool_output(o.mode, *text, *offset);
    if (!log) return Error{fmt::format("{}: {}", path.string(), log.error().message)};
    return RemotePower{o.tool, std::move(*log)};
  }
  return Error{"the Slurm job started no GPU power sampler: the node has neither nvidia-smi nor "
               "amd-smi on its PATH"};
}

std::string role_of_step(const std::string& label) {
  std::string base = label.substr(0, label.find('.'));
  const size_t dash = base.rfind('-');
  if (dash != std::string::npos && dash + 1 < base.size() &&
      base.find_first_not_of("0123456789", dash + 1) == std::string::npos) {
    base.resize(dash);
  }
  return base;
}

namespace {

void append_step(telemetry::PowerLog& into, const telemetry::PowerLog& from, int place) {
  for (telemetry::PowerSample s : from.samples) {
    s.gpu += 100 * place;
    into.samples.push_back(s);
  }
  if (into.power_column.empty()) into.power_column = from.power_column;
  if (into.energy_column.empty()) into.energy_column = from.energy_column;
}

}  // namespace

std::optional<Expected<StepPower>> read_step_power(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / telemetry::kPowerFileUtcOffset, ec)) return std::nullopt;
  std::vector<std::string> labels;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) labels.push_back(it->path().filename().string());
  }
  if (labels.empty()) return std::nullopt;
  std::sort(labels.begin(), labels.end());
  StepPower out;
  std::set<std::string> tools;
  for (size_t i = 0; i < labels.size(); ++i) {
    auto step = read_remote_power(dir / labels[i]);
    if (!step) {
      out.missing.push_back(fmt::format("{}: {}", labels[i], step.error().message));
      continue;
    }
    tools.insert(step->tool.substr(0, step->tool.find(' ')));
    append_step(out.log, step->log, static_cast<int>(i));
    append_step(out.by_role[role_of_step(labels[i])], step->log, static_cast<int>(i));
  }
  if (tools.empty()) {
    return Expected<StepPower>(
        Error{fmt::format("no job step sampled GPU power: {}", fmt::join(out.missing, "; "))});
  }
  out.tool = fmt::format("{} (Slurm job, each step's GPUs)", fmt::join(tools, "+"));
  return Expected<StepPower>(std::move(out));
}

}  // namespace ib::load
