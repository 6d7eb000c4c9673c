// `inferbench report RUN... [-o report.html] [--baseline RUN] [--db DB]`: one self-contained,
// offline HTML report of stored runs (docs/report.md). The page is made by
// src/report/html_report.h.
#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.h"
#include "core/clock.h"
#include "core/files.h"
#include "history/history.h"
#include "report/html_report.h"
#include "store/store.h"

namespace ib::cli {

namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::vector<std::string> runs;
  std::string output = "report.html";
  std::string baseline;
  std::string db = store::default_database();
  std::string command_line;
  bool no_trends = false;
  std::string repo = ".";
};

// The Trends section: the history of every series the reported runs measured (their config key,
// workload and concurrency), over the whole database, for TPOT, TTFT and output throughput.
// Series with fewer than two positions say nothing over time and are left out.
Expected<boost::json::array> report_trends(store::Store& st, const report::ReportInput& in,
                                           const ReportOptions& o) {
  history::HistoryOptions ho;
  ho.metrics = {"median_tpot_ms", "median_ttft_ms", "output_throughput"};
  std::set<std::tuple<std::string, std::string, int64_t>> measured;
  for (const auto& r : in.runs) {
    for (const auto& p : r.points) {
      for (const auto& c : r.configs) {
        if (c.id == p.server_config_id)
          measured.emplace(c.config_key, p.workload_key, p.concurrency);
      }
    }
  }
  for (const auto& [key, w, c] : measured) {
    std::string glob;
    for (char ch : key) {
      if (ch == '*' || ch == '?' || ch == '[' || ch == '\\') glob += '\\';
      glob += ch;
    }
    if (std::find(ho.keys.begin(), ho.keys.end(), glob) == ho.keys.end()) ho.keys.push_back(glob);
  }
  history::use_repository(ho, o.repo, {}, "", "perf-changelog.yaml");
  auto h = history::build_history(st, ho);
  if (!h) return h.error();
  boost::json::array out;
  for (const auto& s : h->series) {
    if (s.positions.size() < 2 ||
        !measured.count({s.key.config_key, s.key.workload_key, s.key.concurrency})) {
      continue;
    }
    out.push_back(s.to_json());
  }
  return out;
}

// Reads one run and everything the report shows about it (Store::run_details, timeslices
// included). No such run, or a run without points, is a usage error; the store's own failures
// keep their kind.
Expected<report::ReportRun> load_run(store::Store& st, const ReportOptions& o,
                                     const std::string& which) {
  auto found = st.find_run(which);
  if (!found) return found.error();
  if (!*found) {
    return usage_error(fmt::format("no run '{}' in {} (see `inferbench runs --db {}`)", which,
                                   store::database_name(o.db), store::database_name(o.db)));
  }
  auto r = st.run_details(std::move(**found), store::WithTimeslices::kYes);
  if (!r) return r.error();
  if (r->points.empty()) {
    return usage_error(fmt::format("run '{}' ({}) has no points to report (status {})", which,
                                   r->run.name, store::status_name(r->run.status)));
  }
  return r;
}

int run_report(const ReportOptions& o) {
  auto usage = [](std::string why) { return fail("report", usage_error(std::move(why))); };
  std::error_code ec;
  if (!store::database_exists(o.db)) {
    return usage(
        fmt::format("no results database at {} (a sweep creates it; choose another with "
                    "--db)",
                    store::database_name(o.db)));
  }
  if (o.output.empty()) return usage("-o/--output: empty file name");
  if (auto same = same_output_files({{"--db", o.db}, {"-o/--output", o.output}})) {
    return usage(*same);
  }
  const fs::path out(o.output);
  if (fs::is_directory(out, ec)) {
    return usage(fmt::format("-o/--output: {} is a folder; name the HTML file to write", o.output));
  }
  auto st = store::Store::open_read_only(o.db);
  if (!st) return usage(st.error().message);

  report::ReportInput in;
  in.command_line = o.command_line;
  in.generated_at = static_cast<int64_t>(std::time(nullptr));
  for (const auto& name : o.runs) {
    if (!o.baseline.empty() && name == o.baseline) {
      return usage(fmt::format("run '{}' is both reported and the --baseline", name));
    }
    auto r = load_run(*st, o, name);
    if (!r) return fail("report", r.error());
    in.runs.push_back(std::move(*r));
  }
  if (!o.baseline.empty()) {
    auto b = load_run(*st, o, o.baseline);
    if (!b) {
      Error e = b.error();
      e.message = "--baseline: " + e.message;
      return fail("report", e);
    }
    // The same run under two names (an id and a name) is no comparison either.
    for (const auto& r : in.runs) {
      if (r.run.id == b->run.id) {
        return usage(fmt::format("run '{}' is both reported and the --baseline (run {}, {})",
                                 o.baseline, r.run.id, r.run.name));
      }
    }
    in.baseline = std::move(*b);
  }
  if (!o.no_trends) {
    auto trends = report_trends(*st, in, o);
    if (!trends) return fail("report", trends.error());
    in.trends = std::move(*trends);
  }
  const std::string html = report::render_html(in);
  if (auto w = write_file_atomic(out, html); !w) {
    return fail("report", Error{fmt::format("cannot write the report: {}", w.error().message)});
  }
  size_t points = 0;
  for (const auto& r : in.runs) points += r.points.size();
  if (in.baseline) points += in.baseline->points.size();
  fmt::print(stderr, "inferbench report: wrote {} ({} run{}{}, {} points, {} KiB)\n", o.output,
             in.runs.size(), in.runs.size() == 1 ? "" : "s", in.baseline ? " and a baseline" : "",
             points, (html.size() + 1023) / 1024);
  fmt::print("{}\n", o.output);
  return kExitOk;
}

}  // namespace

RunFn register_report(CLI::App& root) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* app = root.add_subcommand(
      "report", "Write one self-contained, offline HTML report of stored runs (docs/report.md)");
  app->add_option("run", o->runs, "Run ids or names to report on")->required();
  app->add_option("-o,--output", o->output, "HTML file to write")
      ->capture_default_str()
      ->check(output_file());
  app->add_option("--baseline", o->baseline,
                  "Compare against this run: overlaid frontiers, deltas, confounders");
  app->add_option("--db", o->db, "Results database file")
      ->check(database_file())
      ->default_str(store::database_name(o->db));
  app->add_flag("--no-trends", o->no_trends,
                "Leave out the Trends section (each reported series over every stored run, with "
                "its change points: docs/history.md)");
  app->add_option("-C,--repo", o->repo,
                  "The recipes' git repository, for the Trends section's git order and "
                  "attribution (default: the current folder)")
      ->capture_default_str();
  app->final_callback([o, app]() {
    // The report records how it was made; rebuilt from what was parsed (argv is not kept).
    std::string cl = "inferbench report";
    for (const auto& r : o->runs) cl.append(" ").append(r);
    cl.append(" -o ").append(o->output);
    if (!o->baseline.empty()) cl.append(" --baseline ").append(o->baseline);
    if (app->count("--db") > 0) cl.append(" --db ").append(store::database_name(o->db));
    o->command_line = std::move(cl);
  });
  return [o]() { return run_report(*o); };
}

}  // namespace ib::cli
