// `inferbench trace stats PATH...`: what recorded agentic traces hold (requests, subagents,
// tokens, theoretical prefix-cache hit) and the conversations the replay makes of them (sessions
// by kind, branches, barriers), as a table or JSON.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "report/table.h"
#include "workload/agentic_dag.h"
#include "workload/timed_trace.h"
#include "workload/weka_trace.h"

namespace ib::cli {

namespace {

struct TraceStatsOptions {
  std::vector<std::string> paths;
  bool json = false;
  std::string format = "weka";  // weka | mooncake | bailian | burstgpt | azure
  int64_t block_size = 0;
  double bucket_s = 0;
};

boost::json::object timed_stats_json(const workload::TimedTrace& t,
                                     const workload::TimedTraceStats& s) {
  auto lengths = [](const workload::TimedTraceStats::Lengths& l) {
    return boost::json::object{{"min", l.min}, {"p50", l.p50}, {"p90", l.p90},
                               {"p99", l.p99}, {"max", l.max}, {"mean", l.mean}};
  };
  boost::json::array buckets;
  for (int64_t n : s.arrivals_per_bucket) buckets.emplace_back(n);
  boost::json::array notes;
  for (const auto& n : t.notes) notes.emplace_back(n);
  boost::json::object o{{"file", t.source},
                        {"format", std::string(workload::trace_format_name(t.format))},
                        {"sha256", t.digest},
                        {"requests", s.requests},
                        {"span_s", s.span_s},
                        {"mean_rate", s.mean_rate},
                        {"peak_rate_1s", s.peak_rate_1s},
                        {"input_tokens", s.input_tokens},
                        {"output_tokens", s.output_tokens},
                        {"input_length", lengths(s.input)},
                        {"output_length", lengths(s.output)},
                        {"bucket_s", s.bucket_s},
                        {"arrivals_per_bucket", std::move(buckets)},
                        {"notes", std::move(notes)}};
  if (t.has_prefix()) {
    o["block_size"] = t.block_size;
    o["distinct_blocks"] = s.distinct_blocks;
    o["reused_blocks"] = s.reused_blocks;
    o["total_blocks"] = s.total_blocks;
    o["theoretical_hit_tokens"] = s.hit_tokens;
    o["theoretical_prefix_hit_pct"] = s.theoretical_hit_pct;
  }
  return o;
}

// `trace stats --format mooncake|bailian|burstgpt|azure FILE...`: timed request traces.
int run_timed_stats(const TraceStatsOptions& o, workload::TraceFormat format) {
  boost::json::array all;
  report::Table table({{"trace", report::Align::kLeft},
                       {"requests"},
                       {"span s"},
                       {"req/s"},
                       {"peak/s"},
                       {"input p50/p99/max"},
                       {"output p50/p99/max"},
                       {"block"},
                       {"reused blocks"},
                       {"prefix hit % (theoretical)"}});
  std::string notes;
  for (const auto& path : o.paths) {
    auto t = workload::load_timed_trace(path, format, o.block_size);
    if (!t) return fail("trace stats", with_kind(t.error(), ErrorKind::kUsage));
    const auto s = workload::timed_trace_stats(*t, o.bucket_s);
    all.push_back(timed_stats_json(*t, s));
    const bool prefix = t->has_prefix();
    table.add_row({path, std::to_string(s.requests), report::fixed(s.span_s, 1),
                   report::fixed(s.mean_rate, 2), report::fixed(s.peak_rate_1s, 0),
                   fmt::format("{}/{}/{}", s.input.p50, s.input.p99, s.input.max),
                   fmt::format("{}/{}/{}", s.output.p50, s.output.p99, s.output.max),
                   prefix ? std::to_string(t->block_size) : "-",
                   prefix ? fmt::format("{} of {}", s.reused_blocks, s.distinct_blocks) : "-",
                   prefix ? report::fixed(s.theoretical_hit_pct, 1) : "- (no hash ids)"});
    for (const auto& n : t->notes) notes += fmt::format("note: {}: {}\n", path, n);
  }
  const std::string text = o.json
                               ? json_text(boost::json::object{{"traces", std::move(all)}}) + "\n"
                               : table.render() + notes;
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

boost::json::object dag_json(const workload::agentic::DagSummary& d) {
  return {{"sessions", d.sessions()},
          {"root", d.root},
          {"subagent", d.subagent},
          {"flat", d.flat},
          {"aux", d.aux},
          {"aux_reduction", d.aux_reduction},
          {"worker_group", d.worker_group},
          {"worker_groups", d.worker_groups},
          {"branches", d.branches},
          {"background_branches", d.background_branches},
          {"flat_branches", d.flat_branches},
          {"barriers", d.barriers},
          {"dropped_subagents", d.dropped_subagents}};
}

void add(workload::agentic::DagSummary& total, const workload::agentic::DagSummary& d) {
  total.root += d.root;
  total.subagent += d.subagent;
  total.flat += d.flat;
  total.aux += d.aux;
  total.aux_reduction += d.aux_reduction;
  total.worker_group += d.worker_group;
  total.worker_groups += d.worker_groups;
  total.branches += d.branches;
  total.background_branches += d.background_branches;
  total.flat_branches += d.flat_branches;
  total.barriers += d.barriers;
  total.dropped_subagents += d.dropped_subagents;
}

/// One row: what the trace holds and what the replay makes of it.
struct TraceRow {
  workload::TraceStats stats;
  workload::agentic::DagSummary dag;
};

boost::json::object stats_json(const TraceRow& r) {
  const workload::TraceStats& s = r.stats;
  return {{"id", s.id},
          {"requests", s.requests},
          {"normal", s.normal},
          {"streaming", s.streaming},
          {"top_level_requests", s.top_level_requests},
          {"subagent_requests", s.subagent_requests},
          {"subagents", s.subagents},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens},
          {"theoretical_prefix_hit_pct", s.theoretical_prefix_hit_pct},
          {"dag", dag_json(r.dag)}};
}

int run_stats(const TraceStatsOptions& o) {
  if (o.format != "weka") {
    auto format = workload::parse_trace_format(o.format);
    if (!format) {
      return fail("trace stats",
                  usage_error(fmt::format("--format must be weka, mooncake, bailian, burstgpt or "
                                          "azure (got '{}')",
                                          printable(o.format, 40))));
    }
    return run_timed_stats(o, *format);
  }
  if (o.block_size > 0) {
    return fail("trace stats", usage_error("--block-size applies to --format mooncake or bailian"));
  }
  std::vector<std::filesystem::path> paths(o.paths.begin(), o.paths.end());
  auto traces = workload::load_weka_traces(paths);
  if (!traces) {
    return fail("trace stats", with_kind(traces.error(), ErrorKind::kUsage));
  }
  TraceRow total_row;
  workload::TraceStats& total = total_row.stats;
  total.id = fmt::format("total ({} traces)", traces->size());
  std::vector<TraceRow> rows;
  for (const auto& t : *traces) {
    auto tree = workload::agentic::build_replay_tree(t);
    if (!tree) {
      return fail("trace stats", with_kind(tree.error(), ErrorKind::kUsage));
    }
    add(total_row.dag, tree->summary);
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
    rows.push_back({std::move(s), tree->summary});
  }
  if (total.total_blocks > 0) {
    total.theoretical_prefix_hit_pct =
        100.0 * static_cast<double>(total.hit_blocks) / static_cast<double>(total.total_blocks);
  }
  std::string text;
  if (o.json) {
    boost::json::array a;
    for (const auto& s : rows) a.push_back(stats_json(s));
    boost::json::object out{{"traces", std::move(a)}, {"total", stats_json(total_row)}};
    text = json_text(out) + "\n";
  } else {
    using report::Align;
    report::Table t({{"trace", Align::kLeft},
                     {"requests"},
                     {"streaming"},
                     {"in subagents"},
                     {"subagents"},
                     {"input tokens"},
                     {"output tokens"},
                     {"prefix hit % (theoretical)"},
                     {"sessions"},
                     {"branches"},
                     {"background"}});
    rows.push_back(total_row);
    for (const auto& [s, d] : rows) {
      t.add_row({s.id, std::to_string(s.requests), std::to_string(s.streaming),
                 std::to_string(s.subagent_requests), std::to_string(s.subagents),
                 std::to_string(s.input_tokens), std::to_string(s.output_tokens),
                 report::fixed(s.theoretical_prefix_hit_pct, 1), std::to_string(d.sessions()),
                 std::to_string(d.branches), std::to_string(d.background_branches)});
    }
    text = t.render();
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

RunFn register_trace(CLI::App& root) {
  auto o = std::make_shared<TraceStatsOptions>();
  CLI::App* app = root.add_subcommand(
      "trace", "Recorded traces: agentic sessions (Weka) and timed request logs (Mooncake, ...)");
  app->require_subcommand(1);
  CLI::App* stats = app->add_subcommand("stats",
                                        "Requests, subagents, tokens, theoretical prefix-cache hit "
                                        "and replay sessions of each trace");
  stats->add_option("paths", o->paths, "Trace files (.json), JSONL corpora or folders")
      ->required()
      ->check(existing_path());
  stats->add_flag("--json", o->json, "Print the statistics as JSON");
  stats
      ->add_option("--format", o->format,
                   "weka (AgentX sessions) | mooncake | bailian | burstgpt | azure (timed "
                   "request traces: arrivals, lengths, block reuse)")
      ->capture_default_str();
  add_integer(stats, "--block-size", o->block_size,
              "Tokens per hash id (default: mooncake 512, bailian 16)", 1, 1 << 20);
  stats->add_option("--bucket", o->bucket_s, "Seconds per arrival-rate bucket (JSON)")
      ->transform(positive_real(86400));
  return [o]() { return run_stats(*o); };
}

}  // namespace ib::cli
