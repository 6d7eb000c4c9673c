#include "telemetry/dcgm.h"

#include <map>
#include <set>
#include <string>
#include <tuple>

namespace ib::telemetry {

namespace {

using GpuKey = std::tuple<std::string, std::string, std::string>;  // url, host, gpu

GpuKey key_of(const TimedScrape& s, const metrics::Sample& sample) {
  const std::string* gpu = sample.label("gpu");
  if (gpu == nullptr) gpu = sample.label("UUID");
  const std::string* host = sample.label("Hostname");
  return {s.url, host != nullptr ? *host : std::string(), gpu != nullptr ? *gpu : std::string()};
}

bool is_index(const std::string& s) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<PowerLog> dcgm_power_log(const std::vector<TimedScrape>& scrapes,
                                       double start_unix) {
  // The GPUs first, so their numbers do not depend on which scrape saw them first.
  std::set<GpuKey> keys;
  for (const TimedScrape& s : scrapes) {
    for (const metrics::Sample& sample : s.scrape.samples) {
      if (sample.name == kDcgmPower) keys.insert(key_of(s, sample));
    }
  }
  if (keys.empty()) return std::nullopt;
  std::set<std::pair<std::string, std::string>> sources;
  bool all_indices = true;
  for (const auto& [url, host, gpu] : keys) {
    sources.insert({url, host});
    all_indices = all_indices && is_index(gpu);
  }
  std::map<GpuKey, int> number;
  int next = 0;
  for (const GpuKey& k : keys) {
    number[k] = sources.size() == 1 && all_indices ? std::stoi(std::get<2>(k)) : next;
    ++next;
  }

  PowerLog log;
  log.power_column = std::string(kDcgmPower);
  std::map<int, double> last_energy;
  for (const TimedScrape& s : scrapes) {
    std::map<int, PowerSample> at;  // this scrape's reading of each GPU
    for (const metrics::Sample& sample : s.scrape.samples) {
      const bool power = sample.name == kDcgmPower, energy = sample.name == kDcgmEnergy,
                 util = sample.name == kDcgmUtil, fb = sample.name == kDcgmFbUsed,
                 clock = sample.name == kDcgmSmClock;
      if (!power && !energy && !util && !fb && !clock) continue;
      auto it = number.find(key_of(s, sample));
      if (it == number.end()) continue;  // a GPU without power readings
      PowerSample& p = at[it->second];
      p.gpu = it->second;
      p.t_s = start_unix + s.t_s;
      if (power) p.power_w = sample.value;
      if (energy) p.energy_j = sample.value / 1000.0;
      if (util) p.util_pct = sample.value;
      if (fb) p.mem_used_mib = sample.value;
      if (clock) p.sm_clock_mhz = sample.value;
    }
    for (auto& [gpu, p] : at) {
      if (!p.power_w) continue;
      if (p.energy_j) {
        log.energy_column = std::string(kDcgmEnergy);
        auto last = last_energy.find(gpu);
        if (last != last_energy.end() && last->second == *p.energy_j) continue;  // a repeat
        last_energy[gpu] = *p.energy_j;
      }
      log.samples.push_back(p);
    }
  }
  return log;
}

}  // namespace ib::telemetry
