#include "telemetry/roles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "telemetry/dcgm.h"

namespace ib::telemetry {

namespace json = boost::json;

std::string role_of_label(const std::string& label) {
  const size_t dash = label.rfind('-');
  if (dash == std::string::npos || dash + 1 == label.size()) return label;
  const bool number =
      std::all_of(label.begin() + static_cast<std::ptrdiff_t>(dash) + 1, label.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  return number ? label.substr(0, dash) : label;
}

std::vector<RoleTelemetry> role_telemetry(const std::vector<TimedScrape>& scrapes,
                                          const std::map<std::string, std::string>& labels,
                                          const std::map<std::string, int>& gpus, double slice_s) {
  std::map<std::string, RoleTelemetry> by_role;
  for (const auto& s : scrapes) {
    const auto it = labels.find(s.url);
    if (it == labels.end()) continue;
    RoleTelemetry& r = by_role[role_of_label(it->second)];
    r.scrapes.push_back(s);
    if (std::find(r.labels.begin(), r.labels.end(), it->second) == r.labels.end()) {
      r.labels.push_back(it->second);
    }
  }
  std::vector<RoleTelemetry> out;
  auto take = [&](const std::string& role) {
    auto it = by_role.find(role);
    if (it == by_role.end()) return;
    RoleTelemetry r = std::move(it->second);
    by_role.erase(it);
    r.role = role;
    std::sort(r.labels.begin(), r.labels.end());
    if (auto g = gpus.find(role); g != gpus.end()) r.gpus = g->second;
    r.slices = server_timeslices(r.scrapes, slice_s);
    r.summary = summarize(r.slices);
    out.push_back(std::move(r));
  };
  for (const char* role : {"prefill", "decode", "router"}) take(role);
  while (!by_role.empty()) take(by_role.begin()->first);
  return out;
}

namespace {

RateMatch::Side side_of(const RoleTelemetry& r, std::optional<double> queue_ms,
                        std::optional<double> tokens_per_s) {
  RateMatch::Side s;
  s.workers = static_cast<int>(r.labels.size());
  s.gpus = r.gpus;
  s.tokens_per_s = tokens_per_s;
  if (s.tokens_per_s && r.gpus > 0) s.tokens_per_s_per_gpu = *s.tokens_per_s / r.gpus;
  s.mean_running = r.summary.mean_running;
  s.mean_waiting = r.summary.mean_waiting;
  s.queue_ms_p50 = queue_ms;
  return s;
}

// Which of two waits is the bottleneck: over twice the other and over the floor.
std::string judge(double prefill, double decode, double floor) {
  if (prefill > floor && prefill > 2 * decode) return "prefill";
  if (decode > floor && decode > 2 * prefill) return "decode";
  return "balanced";
}

json::value opt(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value();
}

}  // namespace

std::optional<RateMatch> rate_match(const std::vector<RoleTelemetry>& roles, const RateInputs& in) {
  const RoleTelemetry* p = nullptr;
  const RoleTelemetry* d = nullptr;
  for (const auto& r : roles) {
    if (r.role == "prefill") p = &r;
    if (r.role == "decode") d = &r;
  }
  if (p == nullptr || d == nullptr) return std::nullopt;
  RateMatch m;
  m.prefill = side_of(*p, in.prefill_queue_ms_p50, in.input_tokens_per_s);
  m.decode = side_of(*d, in.decode_queue_ms_p50, in.output_tokens_per_s);
  m.kv_transfer_ms_p50 = in.kv_transfer_ms_p50;
  if (in.prefill_queue_ms_p50 && in.decode_queue_ms_p50) {
    const double pq = *in.prefill_queue_ms_p50, dq = *in.decode_queue_ms_p50;
    m.basis = "ttft attribution";
    m.bound = judge(pq, dq, 1.0);
    m.why = fmt::format(
        "median queue time {:.2f} ms at a prefill worker vs {:.2f} ms at a decode "
        "worker",
        pq, dq);
  } else if (m.prefill.mean_waiting && m.decode.mean_waiting) {
    const double pw = *m.prefill.mean_waiting, dw = *m.decode.mean_waiting;
    m.basis = "server queues";
    m.bound = judge(pw, dw, 0.5);
    m.why = fmt::format(
        "{:.2f} requests waiting on the prefill workers vs {:.2f} on the decode "
        "workers, on average over the point",
        pw, dw);
  } else {
    m.why = "neither the TTFT attribution nor both roles' waiting queues were reported";
    return m;
  }
  if (m.bound == "prefill") {
    m.why += ": requests wait for prefill (more prefill workers, a higher P:D, would cut TTFT)";
  } else if (m.bound == "decode") {
    m.why += ": requests wait for decode (more decode workers, a lower P:D, would cut TTFT)";
  } else {
    m.why += ": neither side holds requests back";
  }
  return m;
}

json::object rate_match_to_json(const RateMatch& r) {
  auto side = [](const RateMatch::Side& s, const char* tokens) {
    json::object o{{"workers", s.workers},
                   {"gpus", s.gpus},
                   {"mean_running", opt(s.mean_running)},
                   {"mean_waiting", opt(s.mean_waiting)},
                   {"queue_ms_p50", opt(s.queue_ms_p50)}};
    o[fmt::format("{}_tokens_per_s", tokens)] = opt(s.tokens_per_s);
    o[fmt::format("{}_tokens_per_s_per_gpu", tokens)] = opt(s.tokens_per_s_per_gpu);
    return o;
  };
  return json::object{{"prefill", side(r.prefill, "input")},
                      {"decode", side(r.decode, "output")},
                      {"kv_transfer_ms_p50", opt(r.kv_transfer_ms_p50)},
                      {"bound", r.bound},
                      {"basis", r.basis},
                      {"why", r.why}};
}

json::object roles_to_json(const std::vector<RoleTelemetry>& roles) {
  json::object out;
  for (const auto& r : roles) {
    json::array labels;
    for (const auto& l : r.labels) labels.emplace_back(l);
    out[r.role] = json::object{{"workers", std::move(labels)},
                               {"gpus", r.gpus},
                               {"summary", summary_to_json(r.summary)},
                               {"slices", slices_to_json(r.slices)}};
  }
  return out;
}

json::object role_energy(const std::vector<RoleTelemetry>& roles, double window_start_unix,
                         double window_end_unix, const TokenCounts& counts) {
  std::map<std::string, PowerLog> logs;
  std::map<std::string, int> gpus;
  for (const auto& r : roles) {
    if (r.gpus <= 0 || (r.role != "prefill" && r.role != "decode")) continue;
    auto log = dcgm_power_log(r.scrapes, window_start_unix);
    if (!log) continue;
    logs[r.role] = std::move(*log);
    gpus[r.role] = r.gpus;
  }
  return role_energy(logs, gpus, window_start_unix, window_end_unix, counts);
}

json::object role_energy(const std::map<std::string, PowerLog>& logs,
                         const std::map<std::string, int>& gpus, double window_start_unix,
                         double window_end_unix, const TokenCounts& counts) {
  json::object out, blocks;
  for (const char* role : {"prefill", "decode"}) {
    const auto log = logs.find(role);
    const auto n = gpus.find(role);
    if (log == logs.end() || n == gpus.end() || n->second <= 0) continue;
    const EnergyResult e =
        integrate_power(log->second.samples, window_start_unix, window_end_unix, n->second);
    const std::string r = role;
    blocks[r] = energy_to_json(e, counts);
    if (!e.power_valid || !e.total_energy_j) continue;
    out[r + "_gpu_energy_j"] = *e.total_energy_j;
    out[r + "_avg_power_w"] = *e.avg_power_per_gpu_w;
    // Prefill computes the prompts, decode the outputs: each role's energy over its own tokens.
    const bool prefill = r == "prefill";
    const int64_t tokens = prefill ? counts.input_tokens : counts.output_tokens;
    if (tokens > 0) {
      out[prefill ? "prefill_joules_per_input_token" : "decode_joules_per_output_token"] =
          *e.total_energy_j / static_cast<double>(tokens);
    }
  }
  if (!blocks.empty()) out["roles"] = std::move(blocks);
  return out;
}

}  // namespace ib::telemetry
