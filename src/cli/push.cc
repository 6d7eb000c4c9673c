// `inferbench push RUN... --to URL` and `inferbench pull RUN... --from URL`: copy runs between
// one engineer's results file and a team's store (docs/store.md), idempotently: a run copied
// before is found by its origin and nothing is written again.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/files.h"
#include "core/json_text.h"
#include "core/sha256.h"
#include "store/pg.h"
#include "store/store.h"

namespace ib::cli {

namespace {

namespace fs = std::filesystem;

struct CopyOptions {
  std::vector<std::string> runs;
  std::string local = store::default_database();  // --db
  std::string remote;                             // --to / --from
  bool json = false;
};

// Where a run comes from: the database it was read from (a file's absolute path, a server's URL
// without its password) and its id, name and start there.
boost::json::object origin_of(const std::string& db, const store::RunRecord& r) {
  std::string where = store::database_name(db);
  if (!store::is_postgres_url(db)) {
    std::error_code ec;
    where = fs::absolute(db, ec).lexically_normal().string();
  }
  return boost::json::object{{"db", where},
                             {"run_id", r.id},
                             {"name", r.name},
                             {"host", r.host},
                             {"started_at", r.started_at}};
}

// The run of `to` a copied run was measured as, when `to` is the database its origin names.
std::optional<store::RunRecord> measured_in(store::Store& to, const std::string& to_db,
                                            const store::RunRecord& r) {
  const auto* o = r.options.if_contains("origin");
  if (!o || !o->is_object()) return std::nullopt;
  const auto here = origin_of(to_db, r).at("db");
  const auto* db = o->as_object().if_contains("db");
  const auto* id = o->as_object().if_contains("run_id");
  const auto* name = o->as_object().if_contains("name");
  if (!db || *db != here || !id || !id->is_int64() || !name || !name->is_string()) {
    return std::nullopt;
  }
  auto run = to.run(id->as_int64());
  if (!run || !*run || (*run)->name != name->as_string()) return std::nullopt;
  return **run;
}

// Each point's artifacts as they are on this machine: file name -> sha256, so that the copy says
// which records it was measured from (the files themselves stay where they are).
void add_artifact_digests(store::RunDetails& d) {
  for (auto& p : d.points) {
    std::error_code ec;
    if (p.artifacts_dir.empty() || !fs::is_directory(p.artifacts_dir, ec)) continue;
    boost::json::object digests;
    for (const auto& e : fs::directory_iterator(p.artifacts_dir, ec)) {
      if (!e.is_regular_file(ec)) continue;
      if (auto bytes = read_file(e.path()); bytes) {
        digests[e.path().filename().string()] = sha256_hex(*bytes);
      }
    }
    if (!digests.empty() && !p.result.contains("artifacts_sha256")) {
      p.result["artifacts_sha256"] = std::move(digests);
    }
  }
}

// The files a copied point keeps: those the source store keeps with it and, pushed from this
// machine, its request records from its folder (readers of the team's store elsewhere resample
// compare's intervals from them). Read one point at a time, as it is copied.
Expected<std::vector<store::PointFile>> files_of(store::Store& from, const store::PointRecord& p,
                                                 bool push) {
  auto kept = from.point_files(p.id);
  if (!kept) return kept.error();
  const std::string name = store::records_file_name(p.concurrency);
  if (!push || p.artifacts_dir.empty() ||
      std::any_of(kept->begin(), kept->end(), [&](const auto& f) { return f.name == name; })) {
    return kept;
  }
  if (auto body = read_file(fs::path(p.artifacts_dir) / name); body) {
    kept->push_back({name, "", std::move(*body)});
  }
  return kept;
}

int copy_runs(const CopyOptions& o, bool push) {
  const char* verb = push ? "push" : "pull";
  const std::string& from_db = push ? o.local : o.remote;
  const std::string& to_db = push ? o.remote : o.local;
  if (!store::database_exists(from_db)) {
    return fail(
        verb, usage_error(fmt::format("no results database at {}", store::database_name(from_db))));
  }
  auto from = store::Store::open_read_only(from_db);
  if (!from) return fail(verb, from.error());
  auto to = store::Store::open(to_db);
  if (!to) return fail(verb, to.error());
  boost::json::array out;
  std::string text;
  for (const auto& name : o.runs) {
    auto found = from->find_run(name);
    if (!found) return fail(verb, found.error());
    if (!*found) {
      return fail(
          verb, usage_error(fmt::format("no run '{}' in {}", name, store::database_name(from_db))));
    }
    if ((*found)->status == store::RunStatus::kRunning) {
      return fail(verb, usage_error(fmt::format(
                            "run {} ({}) is still being measured: copy it when it has ended",
                            (*found)->id, (*found)->name)));
    }
    auto details = from->run_details(**found, store::WithTimeslices::kYes);
    if (!details) return fail(verb, details.error());
    // Back where it was measured (pushed, then pulled into its own file): the same run.
    if (auto home = measured_in(*to, to_db, details->run); home) {
      out.push_back(boost::json::object{{"run", details->run.name},
                                        {"from_id", details->run.id},
                                        {"id", home->id},
                                        {"name", home->name},
                                        {"existed", true}});
      text += fmt::format("run {} ({}): measured in {} as run {} ({}); nothing copied\n",
                          details->run.id, details->run.name, store::database_name(to_db), home->id,
                          home->name);
      continue;
    }
    if (push) add_artifact_digests(*details);
    auto copied =
        to->import_run(*details, origin_of(from_db, details->run),
                       [&](const store::PointRecord& p) { return files_of(*from, p, push); });
    if (!copied) return fail(verb, copied.error());
    out.push_back(boost::json::object{{"run", details->run.name},
                                      {"from_id", details->run.id},
                                      {"id", copied->id},
                                      {"name", copied->name},
                                      {"existed", copied->existed},
                                      {"configs", copied->configs},
                                      {"points", copied->points},
                                      {"failures", copied->failures},
                                      {"timeslices", copied->timeslices},
                                      {"files", copied->files}});
    text +=
        copied->existed
            ? fmt::format("run {} ({}): already in {} as run {} ({}); nothing copied\n",
                          details->run.id, details->run.name, store::database_name(to_db),
                          copied->id, copied->name)
            : fmt::format(
                  "run {} ({}) -> run {} ({}) in {}: {} configuration{}, {} point{}, "
                  "{} failure{}, {} timeslice{}, {} records file{}\n",
                  details->run.id, details->run.name, copied->id, copied->name,
                  store::database_name(to_db), copied->configs, copied->configs == 1 ? "" : "s",
                  copied->points, copied->points == 1 ? "" : "s", copied->failures,
                  copied->failures == 1 ? "" : "s", copied->timeslices,
                  copied->timeslices == 1 ? "" : "s", copied->files, copied->files == 1 ? "" : "s");
  }
  const std::string shown = o.json ? json_text(out) + "\n" : text;
  std::fwrite(shown.data(), 1, shown.size(), stdout);
  return kExitOk;
}

CLI::App* copy_command(CLI::App& root, const char* name, const char* help,
                       std::shared_ptr<CopyOptions> o, const char* remote_option) {
  CLI::App* app = root.add_subcommand(name, help);
  app->add_option("run", o->runs, "Run ids or names")->required();
  app->add_option(remote_option, o->remote, "The team's store: a postgresql:// URL (or a file)")
      ->required()
      ->check(database_file());
  app->add_option("--db", o->local, "This machine's results database")
      ->check(database_file())
      ->default_str(store::database_name(o->local));
  app->add_flag("--json", o->json, "Print what was copied as JSON");
  return app;
}

}  // namespace

RunFn register_push(CLI::App& root) {
  auto o = std::make_shared<CopyOptions>();
  copy_command(root, "push",
               "Copy runs from this machine's results database into a team's store, with each "
               "point's request records, idempotently (pushing twice adds nothing; docs/store.md)",
               o, "--to");
  return [o]() { return copy_runs(*o, true); };
}

RunFn register_pull(CLI::App& root) {
  auto o = std::make_shared<CopyOptions>();
  copy_command(root, "pull",
               "Copy runs from a team's store into this machine's results database, "
               "idempotently (docs/store.md)",
               o, "--from");
  return [o]() { return copy_runs(*o, false); };
}

}  // namespace ib::cli
