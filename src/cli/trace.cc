// `inferbench trace stats PATH...`: what recorded agentic traces hold (requests, subagents,
// tokens, theoretical prefix-cache hit), as a table or JSON.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "report/table.h"
#include "workload/weka_trace.h"

namespace ib::cli {

namespace {

struct TraceStatsOptions {
  std::vector<std::string> paths;
  bool json = false;
};

boost::json::object stats_json(const workload::TraceStats& s) {
  return {{"id", s.id},
          {"requests", s.requests},
          {"normal", s.normal},
          {"streaming", s.streaming},
          {"top_level_requests", s.top_level_requests},
          {"subagent_requests", s.subagent_requests},
          {"subagents", s.subagents},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens},
          {"theoretical_prefix_hit_pct", s.theoretical_prefix_hit_pct}};
}

int run_stats(const TraceStatsOptions& o) {
  std::vector<std::filesystem::path> paths(o.paths.begin(), o.paths.end());
  auto traces = workload::load_weka_traces(paths);
  if (!traces) {
    fmt::print(stderr, "inferbench trace stats: {}\n", traces.error().message);
    return kExitUsage;
  }
  workload::TraceStats total;
  total.id = fmt::format("total ({} traces)", traces->size());
  std::vector<workload::TraceStats> rows;
  for (const auto& t : *traces) {
    auto s = workload::trace_stats(t);
    total.requests += s.requests;
    total.normal += s.normal;
    total.streaming += s.streaming;
    total.top_level_requests += s.top_level_requests;
    total.subagent_requests += s.subagent_requests;
    total.subagents += s.subagents;
    total.input_tokens += s.input_tokens;
    total.output_tokens += s.output_tokens;
    total.hit_blocks += s.hit_blocks;
    total.total_blocks += s.total_blocks;
    rows.push_back(std::move(s));
  }
  if (total.total_blocks > 0) {
    total.theoretical_prefix_hit_pct =
        100.0 * static_cast<double>(total.hit_blocks) / static_cast<double>(total.total_blocks);
  }
  std::string text;
  if (o.json) {
    boost::json::array a;
    for (const auto& s : rows) a.push_back(stats_json(s));
    boost::json::object out{{"traces", std::move(a)}, {"total", stats_json(total)}};
    text = boost::json::serialize(out) + "\n";
  } else {
    using report::Align;
    report::Table t({{"trace", Align::kLeft},
                     {"requests"},
                     {"streaming"},
                     {"in subagents"},
                     {"subagents"},
                     {"input tokens"},
                     {"output tokens"},
                     {"prefix hit % (theoretical)"}});
    rows.push_back(total);
    for (const auto& s : rows) {
      t.add_row({s.id, std::to_string(s.requests), std::to_string(s.streaming),
                 std::to_string(s.subagent_requests), std::to_string(s.subagents),
                 std::to_string(s.input_tokens), std::to_string(s.output_tokens),
                 report::fixed(s.theoretical_prefix_hit_pct, 1)});
    }
    text = t.render();
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

RunFn register_trace(CLI::App& root) {
  auto o = std::make_shared<TraceStatsOptions>();
  CLI::App* app = root.add_subcommand("trace", "Recorded agentic traces (Weka format)");
  app->require_subcommand(1);
  CLI::App* stats = app->add_subcommand(
      "stats", "Requests, subagents, tokens and theoretical prefix-cache hit of each trace");
  stats->add_option("paths", o->paths, "Trace files (.json), JSONL corpora or folders")->required();
  stats->add_flag("--json", o->json, "Print the statistics as JSON");
  return [o]() { return run_stats(*o); };
}

}  // namespace ib::cli
