#include "history/history.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <numeric>

#include "core/strings.h"
#include "govern/changelog.h"
#include "govern/gate_policy.h"
#include "govern/git.h"
#include "metrics/keys.h"

namespace ib::history {

namespace json = boost::json;

const std::vector<std::string> kDefaultMetrics = {"median_tpot_ms",    "median_ttft_ms",
                                                  "output_throughput", "request_throughput",
                                                  "median_intvty",     "tput_per_gpu"};

void use_repository(HistoryOptions& o, const std::filesystem::path& dir,
                    const std::vector<std::string>& recipes, const std::string& runners,
                    const std::string& changelog) {
  auto top = govern::git(dir, {"rev-parse", "--show-toplevel"});
  if (!top) return;
  const std::filesystem::path root(std::string(trim(*top)));
  auto rel = [&](const std::string& p) {
    std::error_code ec;
    auto r = std::filesystem::relative(std::filesystem::absolute(dir) / p, root, ec);
    return ec ? p : r.generic_string();
  };
  o.recipes = {};
  for (const auto& p :
       recipes.empty() ? std::vector<std::string>{"recipes", "examples/recipes"} : recipes) {
    o.recipes.recipe_paths.push_back(rel(p));
  }
  if (!runners.empty()) o.recipes.runners_path = rel(runners);
  o.changelog = rel(changelog);
  o.repo = root;
}

double Position::mean() const {
  if (values.empty()) return std::nan("");
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

json::object Attribution::to_json() const {
  json::array es, ks, cs;
  for (const auto& e : entries) {
    json::array d;
    for (const auto& l : e.description) d.emplace_back(l);
    es.push_back(json::object{{"line", e.line}, {"description", d}, {"pr_link", e.pr_link}});
  }
  for (const auto& k : key_changes) ks.emplace_back(k);
  for (const auto& c : confounders) cs.push_back(c.to_json());
  json::object o{{"from_revision", from_revision},
                 {"to_revision", to_revision},
                 {"changelog_entries", std::move(es)},
                 {"key_changes", std::move(ks)},
                 {"confounders", std::move(cs)}};
  if (!unread.empty()) o["unread"] = unread;
  return o;
}

bool Series::regression(size_t i) const {
  const auto& c = change_points.at(i);
  return higher_is_better ? c.step_pct < 0 : c.step_pct > 0;
}

namespace {

json::value number(double v) {
  return std::isfinite(v) ? json::value(v) : json::value(nullptr);
}

std::string date_of(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min);
}

// The mean of positions [from, to).
double segment_mean(const std::vector<Position>& p, size_t from, size_t to) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = from; i < to && i < p.size(); ++i) {
    for (double v : p[i].values) sum += v, ++n;
  }
  return n == 0 ? std::nan("") : sum / static_cast<double>(n);
}

}  // namespace

json::object Series::to_json() const {
  json::array ps, cps;
  for (const auto& p : positions) {
    json::array runs, values, images, labels;
    for (size_t i = 0; i < p.run_ids.size(); ++i) {
      runs.push_back(json::object{{"id", p.run_ids[i]}, {"name", p.run_names[i]}});
    }
    for (double v : p.values) values.push_back(number(v));
    for (const auto& im : p.images) images.emplace_back(im);
    for (const auto& l : p.labels) labels.emplace_back(l);
    ps.push_back(json::object{{"revision", p.revision},
                              {"time", p.time},
                              {"runs", std::move(runs)},
                              {"values", std::move(values)},
                              {"mean", number(p.mean())},
                              {"images", std::move(images)},
                              {"labels", std::move(labels)}});
  }
  for (size_t i = 0; i < change_points.size(); ++i) {
    const auto& c = change_points[i];
    json::object o{{"index", c.index},
                   {"revision", positions.at(c.index).revision},
                   {"before", number(c.before)},
                   {"after", number(c.after)},
                   {"step_pct", number(c.step_pct)},
                   {"step_ci_pct", json::array{number(c.step_ci_pct.lo), number(c.step_ci_pct.hi)}},
                   {"pvalue", number(c.pvalue)},
                   {"regression", regression(i)}};
    if (i < attributions.size()) o["attribution"] = attributions[i].to_json();
    cps.push_back(std::move(o));
  }
  const size_t last_cp = change_points.empty() ? 0 : change_points.back().index;
  const double latest = positions.empty() ? std::nan("") : positions.back().mean();
  const double stable =
      segment_mean(positions, last_cp, positions.empty() ? 0 : positions.size() - 1);
  return json::object{
      {"config_key", key.config_key},
      {"workload", key.workload_label},
      {"workload_key", key.workload_key},
      {"concurrency", key.concurrency},
      {"metric", key.metric},
      {"higher_is_better", higher_is_better},
      {"positions", std::move(ps)},
      {"change_points", std::move(cps)},
      {"latest", json::object{{"value", number(latest)},
                              {"last_segment_mean", number(stable)},
                              {"last_segment_from", last_cp},
                              {"delta_pct", number((latest - stable) / stable * 100.0)}}}};
}

json::object History::to_json() const {
  json::array ss, ns;
  for (const auto& s : series) ss.push_back(s.to_json());
  for (const auto& n : notes) ns.emplace_back(n);
  return json::object{{"order", order}, {"series", std::move(ss)}, {"notes", std::move(ns)}};
}

namespace {

// A point's place before the metric is chosen: its series key without the metric, and its
// position's key (the revision, or the run when it recorded none).
struct Measured {
  SeriesKey key;
  std::string position;
  const store::RunRecord* run = nullptr;
  const store::PointRecord* point = nullptr;
  const store::ServerConfigRecord* config = nullptr;
};

bool matches_any(const std::vector<std::string>& globs, const std::string& key) {
  if (globs.empty()) return true;
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return ::fnmatch(g.c_str(), key.c_str(), 0) == 0;
  });
}

std::string label_of(const store::PointRecord& p) {
  const auto* v = p.result.if_contains("workload_label");
  if (v && v->is_string()) return std::string(v->as_string());
  const size_t colon = p.workload_key.find(':');
  return p.workload_key.substr(0, colon);
}

// Every run's configurations and points, read once.
struct Stored {
  std::vector<store::RunRecord> runs;
  std::map<int64_t, std::vector<store::ServerConfigRecord>> configs;
  std::map<int64_t, std::vector<store::PointRecord>> points;
};

Expected<Stored> read_store(store::Store& db) {
  Stored s;
  auto list = db.list_runs();
  if (!list) return list.error();
  for (auto& r : *list) {
    auto configs = db.server_configs(r.run.id);
    if (!configs) return configs.error();
    auto points = db.points(r.run.id);
    if (!points) return points.error();
    s.configs[r.run.id] = std::move(*configs);
    s.points[r.run.id] = std::move(*points);
    s.runs.push_back(std::move(r.run));
  }
  // Oldest first: a position's repeats in the order they were measured.
  std::sort(s.runs.begin(), s.runs.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return s;
}

// Measured points: valid, measured by the run itself (a reused point repeats another run's).
std::vector<Measured> measured_points(const Stored& s, const HistoryOptions& o) {
  std::vector<Measured> out;
  for (const auto& r : s.runs) {
    const auto& configs = s.configs.at(r.id);
    for (const auto& p : s.points.at(r.id)) {
      if (p.status != metrics::PointStatus::kOk || !p.validity.valid()) continue;
      const store::ServerConfigRecord* c = nullptr;
      for (const auto& x : configs) {
        if (x.id == p.server_config_id) c = &x;
      }
      if (c == nullptr || !matches_any(o.keys, c->config_key)) continue;
      Measured m;
      m.key = {c->config_key, p.workload_key, label_of(p), p.concurrency, ""};
      m.position = r.git_revision.empty() ? fmt::format("run:{}", r.id) : r.git_revision;
      m.run = &r;
      m.point = &p;
      m.config = c;
      out.push_back(std::move(m));
    }
  }
  return out;
}

// Git order of the repository's history (oldest first), or empty when there is none to read.
std::map<std::string, size_t> git_order(const std::optional<std::filesystem::path>& repo) {
  std::map<std::string, size_t> order;
  if (!repo) return order;
  auto out = govern::git(*repo, {"rev-list", "--topo-order", "--reverse", "--all"});
  if (!out) return order;
  size_t i = 0;
  for (const auto& line : split(*out, '\n')) {
    std::string c(trim(line));
    if (!c.empty()) order.emplace(std::move(c), i++);
  }
  return order;
}

}  // namespace

namespace {

// What changed between two revisions, read once per pair and shared by every series.
class Attributor {
 public:
  explicit Attributor(const HistoryOptions& o) : o_(o) {}

  Attribution attribute(const std::string& key, const Position& from, const Position& to) {
    Attribution a;
    a.from_revision = from.revision;
    a.to_revision = to.revision;
    a.confounders = metrics::confounders(from.identities, to.identities);
    if (!o_.repo) {
      a.unread = "no repository given (-C): the changelog and recipe changes were not read";
      return a;
    }
    if (from.revision.empty() || to.revision.empty()) {
      a.unread = "a run recorded no git revision";
      return a;
    }
    auto& range = ranges_[{from.revision, to.revision}];
    if (!range.read) read_range(range, from.revision, to.revision);
    a.unread = range.error;
    for (const auto& e : range.entries) {
      for (const auto& pattern : e.config_keys) {
        if (!govern::changelog_key_matches(pattern, key)) continue;
        a.entries.push_back({e.line, e.description, e.pr_link});
        break;
      }
    }
    if (range.changed) {
      for (const auto& k : range.changed->keys) {
        if (k.key != key) continue;
        if (k.status != "modified") a.key_changes.push_back("the key was " + k.status);
        for (const auto& r : k.reasons)
          a.key_changes.push_back(r.detail.empty() ? r.path : r.detail);
      }
    }
    return a;
  }

 private:
  struct Range {
    bool read = false;
    std::string error;
    std::vector<govern::ChangelogEntry> entries;  // appended in the range
    std::optional<govern::ChangedReport> changed;
  };

  void read_range(Range& r, const std::string& from, const std::string& to) {
    r.read = true;
    auto base = govern::TreeView::open(*o_.repo, from);
    auto head = govern::TreeView::open(*o_.repo, to);
    if (!base || !head) {
      r.error = (!base ? base.error() : head.error()).message;
      return;
    }
    auto before = base->read(o_.changelog);
    auto after = head->read(o_.changelog);
    if (before && after && *after) {
      const size_t known =
          *before ? govern::parse_changelog(**before, o_.changelog).entries.size() : 0;
      auto parsed = govern::parse_changelog(**after, o_.changelog);
      for (size_t i = known; i < parsed.entries.size(); ++i) {
        r.entries.push_back(std::move(parsed.entries[i]));
      }
    }
    auto changed = govern::changed_keys(*base, *head, o_.recipes);
    if (changed) {
      r.changed = std::move(*changed);
    } else {
      r.error = "the recipes could not be compared: " + changed.error().message;
    }
  }

  const HistoryOptions& o_;
  std::map<std::pair<std::string, std::string>, Range> ranges_;
};

// Position keys in order: git order when every position has a revision the repository knows,
// else the time of each position's first run.
std::vector<std::string> order_positions(const std::map<std::string, int64_t>& first_time,
                                         const std::map<std::string, size_t>& git, History& h) {
  std::vector<std::string> keys;
  for (const auto& [k, t] : first_time) keys.push_back(k);
  const bool all_known = !git.empty() && std::all_of(keys.begin(), keys.end(),
                                                     [&](auto& k) { return git.count(k) > 0; });
  if (all_known) {
    h.order = "git";
    std::sort(keys.begin(), keys.end(),
              [&](const auto& a, const auto& b) { return git.at(a) < git.at(b); });
  } else {
    h.order = "time";
    if (!git.empty()) {
      h.notes.push_back(
          "some runs recorded no revision, or one the repository does not know: positions are in "
          "the order the runs started");
    }
    std::sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
      return std::pair(first_time.at(a), a) < std::pair(first_time.at(b), b);
    });
  }
  return keys;
}

}  // namespace

namespace {

// Shaped like YYYY-MM-DD (then it must be a date: 2026-13-45 is refused, not read as a revision).
bool date_shaped(const std::string& s) {
  return s.size() == 10 && s[4] == '-' && s[7] == '-' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || c == '-';
         });
}

int64_t date_seconds(const std::string& d) {
  std::tm tm{};
  tm.tm_year = std::stoi(d.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(d.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(d.substr(8, 2));
  return static_cast<int64_t>(timegm(&tm));
}

// Keeps the points measured at or after `since` (a date, or a revision in git order).
Status filter_since(std::vector<Measured>& points, const HistoryOptions& o,
                    const std::map<std::string, size_t>& git) {
  if (o.since.empty()) return Status::Ok();
  if (date_shaped(o.since)) {
    if (!govern::is_iso_date(o.since)) {
      return usage_error("--since " + o.since + ": not a date (YYYY-MM-DD)");
    }
    const int64_t from = date_seconds(o.since);
    std::erase_if(points, [&](const Measured& m) { return m.run->started_at < from; });
    return Status::Ok();
  }
  if (!o.repo) return usage_error("--since " + o.since + ": a revision needs the repository (-C)");
  auto rev = govern::git(*o.repo, {"rev-parse", "--verify", "--quiet", o.since + "^{commit}"});
  if (!rev)
    return usage_error(
        fmt::format("--since: {} is not a revision of {}", o.since, o.repo->string()));
  const auto at = git.find(std::string(trim(*rev)));
  if (at == git.end())
    return usage_error("--since: " + o.since + " is not in the repository's history");
  std::erase_if(points, [&](const Measured& m) {
    auto it = git.find(m.position);
    return it == git.end() || it->second < at->second;
  });
  return Status::Ok();
}

}  // namespace

Expected<History> build_history(store::Store& db, const HistoryOptions& o) {
  const auto& wanted = o.metrics.empty() ? kDefaultMetrics : o.metrics;
  for (const auto& m : wanted) {
    if (!metrics::headline_index(m)) {
      return usage_error(fmt::format("--metric {}: not a headline metric (one of {})", m,
                                     metrics::headline_keys_text()));
    }
  }
  auto stored = read_store(db);
  if (!stored) return stored.error();
  auto points = measured_points(*stored, o);
  const auto git = git_order(o.repo);
  if (auto st = filter_since(points, o, git); !st) return st.error();
  History h;
  std::map<std::string, int64_t> first_time;
  for (const auto& m : points) {
    auto [it, fresh] = first_time.emplace(m.position, m.run->started_at);
    if (!fresh) it->second = std::min(it->second, m.run->started_at);
  }
  const auto order = order_positions(first_time, git, h);
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  // Series key (without the metric) -> position rank -> its points.
  std::map<SeriesKey, std::map<size_t, std::vector<const Measured*>>> groups;
  for (const auto& m : points) groups[m.key][rank.at(m.position)].push_back(&m);
  Attributor attributor(o);
  for (const auto& [key, by_position] : groups) {
    for (const auto& metric : wanted) {
      const size_t mi = *metrics::headline_index(metric);
      Series s;
      s.key = key;
      s.key.metric = metric;
      s.higher_is_better = metrics::kHeadlineMetrics[mi].higher_is_better;
      for (const auto& [r, ms] : by_position) {
        Position p;
        p.revision = ms.front()->run->git_revision;
        p.time = ms.front()->run->started_at;
        for (const auto* m : ms) {
          const double v = m->point->headline.at(mi);
          if (!std::isfinite(v)) continue;
          p.values.push_back(v);
          p.point_ids.push_back(m->point->id);
          if (std::find(p.run_ids.begin(), p.run_ids.end(), m->run->id) == p.run_ids.end()) {
            p.run_ids.push_back(m->run->id);
            p.run_names.push_back(m->run->name);
            p.time = std::min(p.time, m->run->started_at);
            for (const auto& l : m->run->labels) p.labels.push_back(l);
          }
          p.identities.push_back(m->config->identity());
          const auto* img = m->config->row.if_contains("image");
          if (img && img->is_string()) p.images.insert(std::string(img->as_string()));
        }
        if (!p.values.empty()) s.positions.push_back(std::move(p));
      }
      if (s.positions.empty()) continue;
      std::vector<std::vector<double>> values;
      for (const auto& p : s.positions) values.push_back(p.values);
      s.change_points = verdict::find_change_points(values, o.detector);
      for (const auto& c : s.change_points) {
        s.attributions.push_back(attributor.attribute(key.config_key, s.positions.at(c.index - 1),
                                                      s.positions.at(c.index)));
      }
      h.series.push_back(std::move(s));
    }
  }
  return h;
}

Expected<std::vector<std::pair<const Series*, size_t>>> change_points_since(
    const History& h, const std::filesystem::path& repo, const std::string& revision) {
  auto rev = govern::git(repo, {"rev-parse", "--verify", "--quiet", revision + "^{commit}"});
  if (!rev)
    return usage_error(
        fmt::format("--new-since: {} is not a revision of {}", revision, repo.string()));
  const std::string base(trim(*rev));
  std::vector<std::pair<const Series*, size_t>> out;
  for (const auto& s : h.series) {
    for (size_t i = 0; i < s.change_points.size(); ++i) {
      const std::string& at = s.positions.at(s.change_points[i].index).revision;
      if (at.empty()) continue;
      // New: its first position after the change is not an ancestor of (or equal to) base.
      auto ancestor = govern::git(repo, {"merge-base", "--is-ancestor", at, base});
      if (!ancestor) out.emplace_back(&s, i);
    }
  }
  return out;
}

namespace {

std::string short_rev(const std::string& r) {
  return r.empty() ? "-" : r.substr(0, 12);
}

std::string value_text(const Position& p) {
  if (p.values.size() == 1) return fmt::format("{:.3f}", p.values.front());
  const auto [lo, hi] = std::minmax_element(p.values.begin(), p.values.end());
  return fmt::format("{:.3f} ({} runs: {:.3f}..{:.3f})", p.mean(), p.values.size(), *lo, *hi);
}

void attribution_text(const Attribution& a, std::string& out) {
  for (const auto& e : a.entries) {
    out += fmt::format("        changelog (line {}): {}{}\n", e.line,
                       e.description.empty() ? "" : e.description.front(),
                       e.pr_link.empty() ? "" : " " + e.pr_link);
  }
  for (const auto& k : a.key_changes) out += fmt::format("        recipe: {}\n", k);
  for (const auto& c : a.confounders) out += fmt::format("        identity: {}\n", c.text());
  if (a.entries.empty() && a.key_changes.empty() && a.confounders.empty()) {
    out +=
        "        nothing recorded changed between these runs (the engine, the machine or noise)\n";
  }
  if (!a.unread.empty()) out += fmt::format("        not read: {}\n", a.unread);
}

}  // namespace

std::string history_text(const History& h, bool all_series) {
  std::string out;
  size_t shown = 0, points = 0;
  for (const auto& s : h.series) points += s.change_points.size();
  for (const auto& s : h.series) {
    if (!all_series && s.change_points.empty()) continue;
    ++shown;
    out += fmt::format("\n{}  {}  conc {}  {} ({} is better)\n", s.key.config_key,
                       s.key.workload_label, s.key.concurrency, s.key.metric,
                       s.higher_is_better ? "higher" : "lower");
    size_t next = 0;
    for (size_t i = 0; i < s.positions.size(); ++i) {
      const auto& p = s.positions[i];
      std::string mark;
      if (next < s.change_points.size() && s.change_points[next].index == i) {
        const auto& c = s.change_points[next];
        mark = fmt::format("  <- change {:+.2f}% [{:+.2f}, {:+.2f}] p={:.2g}{}", c.step_pct,
                           c.step_ci_pct.lo, c.step_ci_pct.hi, c.pvalue,
                           s.regression(next) ? " REGRESSION" : "");
      }
      std::string line = fmt::format("  {:>3}  {:<12}  {}  {:<24}{}", i + 1, short_rev(p.revision),
                                     date_of(p.time), value_text(p), mark);
      out += std::string(rtrim(line)) + "\n";
      if (!mark.empty()) attribution_text(s.attributions.at(next++), out);
    }
  }
  out = fmt::format("{} series ({} order), {} change point{}{}\n", h.series.size(), h.order, points,
                    points == 1 ? "" : "s",
                    all_series || shown == h.series.size()
                        ? ""
                        : fmt::format("; {} series without one not shown (--all)",
                                      h.series.size() - shown)) +
        out;
  for (const auto& n : h.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace ib::history
