// `inferbench compare BASE HEAD`: is HEAD better than BASE, by how much, and is the comparison fair
// (docs/compare.md). The statistics and rendering live in src/verdict/; this file resolves the
// sides (stored runs, git revisions, folders of result files) and the options.
#include "verdict/compare.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/files.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "govern/git.h"
#include "store/store.h"
#include "verdict/sources.h"

namespace ib::cli {

namespace {

namespace fs = std::filesystem;

struct CompareCliOptions {
  std::vector<std::string> sides;  // positional: BASE HEAD (or one, with --base-rev/--head-rev)
  std::string base_rev, head_rev;
  std::string db = store::default_database();
  std::vector<std::string> pairs;
  std::vector<std::string> accept;
  std::string confidence = "95";
  std::string min_effect = "2";
  int resamples = 2000;
  uint64_t seed = 20261201;
  bool json = false;
  std::string markdown;
  std::string window = "run";  // run | steady
  bool exit_code = false;
};

int usage(const std::string& msg) {
  return fail("compare", usage_error(std::string(msg)));
}

// "95", "95%", "0.95" -> 0.95; nullopt when not in (0, 1).
std::optional<double> parse_confidence(std::string s) {
  if (!s.empty() && s.back() == '%') s.pop_back();
  auto v = parse_real(s);  // strict: no nan, inf, hex or trailing text
  if (!v) return std::nullopt;
  if (*v >= 1) *v /= 100;
  if (*v > 0 && *v < 1) return v;
  return std::nullopt;
}

// "2", "2%" -> 2; nullopt unless in [0, 1000].
std::optional<double> parse_percent(std::string s) {
  if (!s.empty() && s.back() == '%') s.pop_back();
  auto v = parse_real(s);
  if (v && *v >= 0 && *v <= 1000) return v;
  return std::nullopt;
}

struct Resolver {
  const CompareCliOptions& o;
  std::optional<store::Store> st;

  Expected<store::Store*> store() {
    if (st) return &*st;
    if (!store::database_exists(o.db)) {
      return Error{
          fmt::format("no results database at {} (a sweep creates it; choose another "
                      "with --db, or give two folders of result files)",
                      store::database_name(o.db))};
    }
    auto s = store::Store::open_read_only(o.db);
    if (!s) return s.error();
    st.emplace(std::move(*s));
    return &*st;
  }

  // A folder of result files, or a stored run (with its repeat group).
  Expected<verdict::Side> side(const std::string& spec) {
    std::error_code ec;
    if (fs::is_directory(spec, ec)) return verdict::side_from_folder(spec);
    if (fs::exists(spec, ec)) {
      return Error{fmt::format("{}: a file; give a folder of result files or a run id or name",
                               printable(spec))};
    }
    // Run names have no slash: a path that is not there is a missing folder, not a run.
    if (spec.find('/') != std::string::npos) {
      return Error{fmt::format("{}: no such folder (give a folder of result files, or a run id "
                               "or name)",
                               printable(spec))};
    }
    auto s = store();
    if (!s) return s.error();
    auto runs = verdict::runs_of(**s, spec);
    if (!runs) return runs.error();
    std::vector<std::string> names;
    for (const auto& r : *runs) names.push_back(r.name);
    const std::string label =
        runs->size() == 1
            ? fmt::format("run {} ({})", runs->front().id, runs->front().name)
            : fmt::format("runs {} (repeat group of {})", fmt::join(names, ", "), spec);
    return verdict::side_from_runs(**s, *runs, label);
  }

  Expected<verdict::Side> revision_side(const std::string& rev, const char* option) {
    auto s = store();
    if (!s) return s.error();
    auto runs = verdict::runs_at_revision(**s, rev);
    if (!runs) return runs.error();
    std::string full = rev;
    if (runs->empty()) {
      // A name git knows (main, HEAD~1, a tag): its commit, if the working directory is a checkout.
      auto commit = govern::git(".", {"rev-parse", "--verify", "--quiet", rev + "^{commit}"});
      if (commit) {
        full = *commit;
        while (!full.empty() && (full.back() == '\n' || full.back() == '\r')) full.pop_back();
        runs = verdict::runs_at_revision(**s, full);
        if (!runs) return runs.error();
      }
    }
    if (runs->empty()) {
      return Error{
          fmt::format("{} {}: no finished run in {} recorded that git revision (the "
                      "GIT column of `inferbench runs`)",
                      option, rev, store::database_name(o.db))};
    }
    std::vector<std::string> names;
    for (const auto& r : *runs) names.push_back(r.name);
    return verdict::side_from_runs(
        **s, *runs,
        fmt::format("rev {} ({} run(s): {})", runs->front().git_revision.substr(0, 12),
                    runs->size(), fmt::join(names, ", ")));
  }
};

void write_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

int run_compare(const CompareCliOptions& o) {
  verdict::CompareOptions co;
  auto conf = parse_confidence(o.confidence);
  if (!conf) {
    return usage("--confidence: must be a level above 0 and below 100 percent (e.g. 95, 95% or "
                 "0.95), got '" + printable(o.confidence, 40) + "'");
  }
  co.confidence = *conf;
  auto me = parse_percent(o.min_effect);
  if (!me) {
    return usage("--min-effect: must be a percentage from 0 to 1000 (e.g. 2 or 2%), got '" +
                 printable(o.min_effect, 40) + "'");
  }
  co.min_effect_pct = *me;
  co.resamples = o.resamples;
  co.seed = o.seed;
  if (auto same = same_output_files({{"--db", o.db}, {"--markdown", o.markdown}})) {
    return usage(*same);
  }
  for (const auto& p : o.pairs) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) {
      return usage("--pair: BASE_KEY=HEAD_KEY, got '" + p + "'");
    }
    co.pairs[p.substr(0, eq)] = p.substr(eq + 1);
  }
  for (const auto& f : o.accept) {
    const auto field = metrics::identity_field(f);
    if (!field || !metrics::field_info(*field).compared) {
      std::vector<std::string_view> names;
      for (const auto& info : metrics::kIdentityFields) {
        if (info.compared) names.push_back(info.key);
      }
      return usage(fmt::format("--accept-confounder: unknown field '{}' (one of: {})", f,
                               fmt::join(names, ", ")));
    }
    co.accepted_confounders.insert(*field);
  }
  const size_t wanted = 2 - (o.base_rev.empty() ? 0 : 1) - (o.head_rev.empty() ? 0 : 1);
  if (o.sides.size() != wanted) {
    return usage(fmt::format(
        "expected {} (BASE and HEAD: run ids or names, or folders of result files; --base-rev "
        "REV and --head-rev REV each replace one), got {} argument(s)",
        wanted == 2 ? "BASE HEAD" : (wanted == 1 ? "one side" : "no positional argument"),
        o.sides.size()));
  }
  Resolver r{o, std::nullopt};
  size_t next = 0;
  auto base = o.base_rev.empty() ? r.side(o.sides[next++]) : r.revision_side(o.base_rev, "--base-rev");
  if (!base) return usage(base.error().message);
  auto head = o.head_rev.empty() ? r.side(o.sides[next++]) : r.revision_side(o.head_rev, "--head-rev");
  if (!head) return usage(head.error().message);

  co.window = o.window;
  if (o.window == "steady") {
    // Each side's steady state (metrics/steady.h) in place of its whole run.
    for (verdict::Side* side : {&*base, &*head}) {
      if (const size_t n = verdict::use_steady_window(*side); n > 0) {
        fmt::print(stderr,
                   "inferbench compare: {}: {} point(s) have no steady-state window (no target "
                   "concurrency, never 95% of it in flight, or no records): not measured here\n",
                   side->label, n);
      }
    }
  }
  if (base->label == head->label) {
    return usage(fmt::format("BASE and HEAD are the same ({}): compare two different runs, "
                             "revisions or folders",
                             base->label));
  }
  // A --pair that names a key neither side has pairs nothing: said, not ignored (issue 30).
  auto keys_of = [](const verdict::Side& side) {
    std::set<std::string> keys;
    for (const auto& p : side.points) keys.insert(p.config_key);
    return keys;
  };
  const auto base_keys = keys_of(*base), head_keys = keys_of(*head);
  for (const auto& [b, h] : co.pairs) {
    if (!base_keys.count(b)) {
      return usage(
          fmt::format("--pair {}={}: the base ({}) has no config key '{}'", b, h, base->label, b));
    }
    if (!head_keys.count(h)) {
      return usage(
          fmt::format("--pair {}={}: the head ({}) has no config key '{}'", b, h, head->label, h));
    }
  }
  const verdict::Comparison c = verdict::compare(*base, *head, co);
  if (!o.markdown.empty()) {
    if (auto st = write_file_atomic(o.markdown, verdict::comparison_markdown(c)); !st) {
      return fail("compare", usage_error(fmt::format("--markdown: {}", st.error().message)));
    }
  }
  if (o.json) {
    write_out(json_text(verdict::comparison_json(c)) + "\n");
  } else {
    write_out(verdict::comparison_text(c));
  }
  return o.exit_code && c.regressed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

RunFn register_compare(CLI::App& root) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* app = root.add_subcommand(
      "compare",
      "Compare two sides (stored runs, git revisions' runs, or folders of result files): "
      "per-metric changes with confidence intervals and verdicts, frontiers, confounders");
  app->add_option("sides", o->sides,
                  "BASE HEAD: run ids or names (a run of a `sweep --repeat` group brings its "
                  "repeats), or folders of result JSON files");
  app->add_option("--base-rev", o->base_rev,
                  "Base side: the stored runs whose recorded git revision is REV");
  app->add_option("--head-rev", o->head_rev,
                  "Head side: the stored runs whose recorded git revision is REV");
  app->add_option("--db", o->db, "Results database file")
      ->check(database_file())
      ->default_str(store::database_name(o->db));
  app->add_option("--pair", o->pairs,
                  "Pair base config key A with head config key B (A=B; repeatable; default: "
                  "equal keys)")
      ->allow_extra_args(false);  // one value each, so `--pair A=B BASE HEAD` works
  app->add_option("--confidence", o->confidence, "Confidence level in percent")
      ->capture_default_str();
  app->add_option("--min-effect", o->min_effect,
                  "Smallest change in percent that counts as improved or regressed")
      ->capture_default_str();
  app->add_option("--accept-confounder", o->accept,
                  "Do not label the comparison confounded by this differing field (model, "
                  "image, hardware, ...; repeatable)")
      ->allow_extra_args(false);
  // Bounded: each resample recomputes every metric of every pair, and a huge count would run for
  // hours without a word.
  add_integer(app, "--resamples", o->resamples, "Bootstrap resamples (100 to 100000)", 100, 100000)
      ->capture_default_str();
  add_integer(app, "--seed", o->seed, "Bootstrap seed", 0, kMaxSeed)->capture_default_str();
  app->add_flag("--json", o->json, "Print the comparison as JSON");
  app->add_option("--markdown", o->markdown,
                  "Also write the comparison as markdown (a PR comment) to FILE")
      ->check(output_file());
  app->add_option("--window", o->window,
                  "run: each point's whole run; steady: its steady state, the window with at "
                  "least 95% of its concurrency in flight (lower variance; docs/compare.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"run", "steady"}));
  app->add_flag("--exit-code", o->exit_code, "Exit 1 when any metric regressed");
  return [o]() { return run_compare(*o); };
}

}  // namespace ib::cli
