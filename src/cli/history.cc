// `inferbench history [KEY...]`: every config key's numbers over the stored runs, with change
// points found and attributed to the change that made them (docs/history.md); `--new-since REV
// --exit-code` is the regressions gate for CI after a merge.
#include "history/history.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "govern/git.h"

namespace ib::cli {

namespace {

struct HistoryCliOptions {
  std::vector<std::string> keys;
  std::vector<std::string> metrics;
  std::string since;
  std::string db = store::default_database();
  std::string repo = ".";
  std::vector<std::string> recipes;
  std::string runners;
  std::string changelog = "perf-changelog.yaml";
  double max_pvalue = 0.001;
  double min_effect = 1.0;
  int64_t min_segment = 3;
  std::string new_since;
  bool exit_code = false;
  bool json = false;
  bool all = false;
};

int run_history(const HistoryCliOptions& o) {
  if (o.exit_code && o.new_since.empty()) {
    return fail("history", usage_error("--exit-code needs --new-since REV (the range to gate)"));
  }
  auto db = store::Store::open_read_only(o.db);
  if (!db) return fail("history", usage_error("--db: " + db.error().message));
  history::HistoryOptions ho;
  ho.keys = o.keys;
  ho.metrics = o.metrics;
  ho.since = o.since;
  ho.detector.max_pvalue = o.max_pvalue;
  ho.detector.min_magnitude_pct = o.min_effect;
  ho.detector.min_segment = static_cast<size_t>(o.min_segment);
  history::use_repository(ho, o.repo, o.recipes, o.runners, o.changelog);
  if (!o.new_since.empty() && !ho.repo) {
    return fail("history",
                usage_error(fmt::format("--new-since: {} is not a git repository (-C)", o.repo)));
  }
  auto h = history::build_history(*db, ho);
  if (!h) return fail("history", h.error());
  std::vector<std::pair<const history::Series*, size_t>> fresh;
  if (!o.new_since.empty()) {
    auto since = history::change_points_since(*h, *ho.repo, o.new_since);
    if (!since) return fail("history", since.error());
    fresh = std::move(*since);
  }
  size_t regressions = 0;
  std::string gate;
  for (const auto& [s, i] : fresh) {
    if (!s->regression(i)) continue;
    ++regressions;
    gate += fmt::format("  {} {} conc {} {}: {:+.2f}% at {}\n", s->key.config_key,
                        s->key.workload_label, s->key.concurrency, s->key.metric,
                        s->change_points[i].step_pct,
                        s->positions.at(s->change_points[i].index).revision.substr(0, 12));
  }
  if (o.json) {
    auto j = h->to_json();
    if (!o.new_since.empty()) {
      j["new_since"] = o.new_since;
      j["new_regressions"] = regressions;
    }
    std::string text = json_text(j) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string text = history::history_text(*h, o.all);
    if (!o.new_since.empty()) {
      text += fmt::format("\nsince {}: {} new change point{}, {} regression{}\n{}", o.new_since,
                          fresh.size(), fresh.size() == 1 ? "" : "s", regressions,
                          regressions == 1 ? "" : "s", gate);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return o.exit_code && regressions > 0 ? kExitFailure : kExitOk;
}

}  // namespace

RunFn register_history(CLI::App& root) {
  auto o = std::make_shared<HistoryCliOptions>();
  CLI::App* app = root.add_subcommand(
      "history",
      "Every config key's numbers over the stored runs, with change points found (E-Divisive "
      "means, a t-test) and attributed to the changelog entries, recipe changes and identity "
      "differences between the runs on either side (docs/history.md)");
  app->add_option("keys", o->keys, "Config keys (fnmatch globs; default: all)");
  app->add_option("--metric", o->metrics,
                  "Headline metrics to follow, comma-separated or repeated (default: "
                  "median_tpot_ms, median_ttft_ms, output_throughput, request_throughput, "
                  "median_intvty, tput_per_gpu)")
      ->delimiter(',')
      ->allow_extra_args(false);  // one value each, so `--metric M KEY` works
  app->add_option("--since", o->since, "Only runs at or after this revision or date (YYYY-MM-DD)");
  app->add_option("--db", o->db, "Results database (a file, or a postgresql:// URL)")
      ->check(database_file())
      ->default_str(store::database_name(o->db));
  app->add_option("-C,--repo", o->repo,
                  "The recipes' git repository: git order and attribution (default: the current "
                  "folder; not a repository: time order, no attribution)")
      ->capture_default_str();
  app->add_option("--recipes", o->recipes,
                  "Recipe files or directories in the repository (default: recipes/ and "
                  "examples/recipes/)");
  app->add_option("--runners", o->runners, "The runners file in the repository");
  app->add_option("--changelog", o->changelog, "The changelog in the repository")
      ->capture_default_str();
  app->add_option("--max-pvalue", o->max_pvalue,
                  "Significance of a change point (two-sided t-test between the segments)")
      ->check(real_in(0, 1, true))
      ->capture_default_str();
  app->add_option("--min-effect", o->min_effect,
                  "Smallest step reported, in percent of the mean before it")
      ->check(real_in(0, 1000))
      ->capture_default_str();
  add_integer(app, "--min-segment", o->min_segment,
              "Positions (revisions) on each side of a change point, at least", 1, 1'000'000)
      ->capture_default_str();
  app->add_option("--new-since", o->new_since,
                  "Report the change points that appeared after this revision (the regressions "
                  "gate)");
  app->add_flag("--exit-code", o->exit_code,
                "With --new-since: exit 1 when a new change point regresses a metric");
  app->add_flag("--all", o->all, "Show every series, also those without a change point");
  app->add_flag("--json", o->json, "Print the history as JSON");
  return [o]() { return run_history(*o); };
}

}  // namespace ib::cli
