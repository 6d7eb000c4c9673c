#include "telemetry/slice_rows.h"

#include <cmath>
#include <optional>
#include <utility>

namespace ib::telemetry {

namespace {

std::optional<double> finite_or_null(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

metrics::TimesliceRow row_base(const char* source, int index, double start_s, double end_s,
                               boost::json::value&& data) {
  metrics::TimesliceRow r;
  r.source = source;
  r.slice = index;
  r.start_s = start_s;
  r.end_s = end_s;
  r.data = std::move(data.as_object());
  return r;
}

}  // namespace

std::vector<metrics::TimesliceRow> timeslice_rows(const std::vector<ServerSlice>& server,
                                                  const std::vector<ClientSlice>& client) {
  std::vector<metrics::TimesliceRow> rows;
  rows.reserve(server.size() + client.size());
  boost::json::array server_json = slices_to_json(server);
  for (size_t i = 0; i < server.size(); ++i) {
    const ServerSlice& s = server[i];
    metrics::TimesliceRow r =
        row_base("server", s.index, s.start_s, s.end_s, std::move(server_json[i]));
    r.running = finite_or_null(s.running);
    r.waiting = finite_or_null(s.waiting);
    r.kv_usage = finite_or_null(s.kv_usage);
    r.prefix_hit_rate = finite_or_null(s.prefix_hit_rate);
    r.preemptions = finite_or_null(s.preemptions);
    r.prompt_tps = finite_or_null(s.prompt_tokens_per_s);
    r.generation_tps = finite_or_null(s.generation_tokens_per_s);
    r.spec_acceptance = finite_or_null(s.spec_acceptance_length);
    rows.push_back(std::move(r));
  }
  boost::json::array client_json = slices_to_json(client);
  for (size_t i = 0; i < client.size(); ++i) {
    const ClientSlice& s = client[i];
    metrics::TimesliceRow r =
        row_base("client", s.index, s.start_s, s.end_s, std::move(client_json[i]));
    r.started = s.started;
    r.finished = s.finished;
    r.output_tokens = s.output_tokens;
    r.mean_ttft_ms = finite_or_null(s.mean_ttft_ms);
    r.mean_intvty = finite_or_null(s.mean_inverse_tpot);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace ib::telemetry
