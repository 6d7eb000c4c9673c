// `inferbench runs` and `inferbench show`: a database written through the store API, read back by
// the real binary as tables and JSON.
#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "e2e_util.h"
#include "store/store.h"

namespace ib::e2e {
namespace {

struct RunsFixture {
  int64_t old_run = 0, run = 0, config = 0, failed_config = 0;
};

// Two runs: an older successful one (the reuse source) and a sweep with an ok, a reused and a
// failed point, one failed server configuration and two failures.
RunsFixture fill(const fs::path& db) {
  RunsFixture f;
  auto opened = store::Store::open(db);
  if (!opened) {
    ADD_FAILURE() << opened.error().message;
    return f;
  }
  auto& s = *opened;
  store::RunRecord old;
  old.name = "20261129-080000";
  old.tool_version = "0.1.0";
  old.git_revision = "1111111111111111";
  old.started_at = 1795939200;  // 2026-11-29 08:00:00Z
  f.old_run = *s.begin_run(old);
  EXPECT_TRUE(s.finish_run(f.old_run, store::RunStatus::kOk).ok());

  store::RunRecord r;
  r.name = "20261130-104500";
  r.tool_version = "0.1.0";
  r.git_revision = "0123456789abcdef0123";
  r.host = "node-7";
  r.command_line = "inferbench sweep examples/recipes/serve-sim.yaml";
  r.labels = {"nightly", "h200"};
  r.started_at = 1796035500;  // 2026-11-30 10:45:00Z
  f.run = *s.begin_run(r);

  store::ServerConfigRecord c;
  c.run_id = f.run;
  c.config_key = "llama8b-bf16-h200-servesim";
  c.fingerprint = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
  c.launcher = "local";
  c.row = {{"tp", 1}};
  c.log_path = "runs/20261130-104500/server-1.log";
  c.status = store::ConfigStatus::kOk;
  f.config = *s.add_server_config(c);
  c.config_key = "llama70b-fp8-h200-vllm";
  c.fingerprint = "feedface" + std::string(56, '0');
  c.status = store::ConfigStatus::kFailed;
  c.error = "server exited with code 1 before becoming healthy\nmore detail";
  f.failed_config = *s.add_server_config(c);

  store::PointRecord p;
  p.run_id = f.run;
  p.server_config_id = f.config;
  p.fingerprint = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
  p.workload_key = "1024/1024";
  p.concurrency = 8;
  p.result = {{"request_throughput", 3.14159},
              {"output_throughput", 3216.9},
              {"median_ttft_ms", 45.25},
              {"median_tpot_ms", 12.5},
              {"median_intvty", 80.0},
              {"tput_per_gpu", 6433.8},
              {"completed", 80},
              {"failed", 0},
              {"marker", "full-result-json"}};
  store::set_headline_from_result(p);
  EXPECT_TRUE(s.add_point(p).ok());
  p.concurrency = 16;
  p.status = metrics::PointStatus::kReused;
  p.reused_from_run = f.old_run;
  EXPECT_TRUE(s.add_point(p).ok());
  store::PointRecord failed;
  failed.run_id = f.run;
  failed.server_config_id = f.failed_config;
  failed.fingerprint = c.fingerprint;
  failed.workload_key = "1024/1024";
  failed.concurrency = 4;
  failed.status = metrics::PointStatus::kFailed;
  failed.error = "server not healthy";
  auto failed_id = s.add_point(failed);
  EXPECT_TRUE(failed_id.ok());

  store::FailureRecord fr;
  fr.run_id = f.run;
  fr.server_config_id = f.failed_config;
  fr.kind = "server-start";
  fr.message = "server exited with code 1 before becoming healthy";
  fr.log_tail = "Traceback ...\nRuntimeError: CUDA out of memory\n";
  fr.at = 1796035600;
  EXPECT_TRUE(s.add_failure(fr).ok());
  fr.kind = "point";
  fr.point_id = failed_id.ok() ? std::optional(*failed_id) : std::nullopt;
  fr.message = "point skipped: its server did not start";
  EXPECT_TRUE(s.add_failure(fr).ok());
  return f;
}

boost::json::value parse_output(const CommandResult& r) {
  boost::system::error_code ec;
  auto v = boost::json::parse(r.output, ec);
  EXPECT_FALSE(ec) << r.output.substr(0, 2000);
  return v;
}

TEST(RunsCli, ListsRunsAsTableAndJson) {
  TempDir dir;
  const fs::path db = dir.path() / "results" / "inferbench.db";
  auto f = fill(db);

  auto table = run_inferbench({"runs", "--db", db.string()}, dir.path() / "runs.log");
  ASSERT_EQ(table.exit.code, 0) << table.output;
  std::istringstream lines(table.output);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  for (const char* col :
       {"ID", "NAME", "STARTED", "STATUS", "OK", "FAILED", "REUSED", "LABELS", "GIT"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col << " in " << header;
  }
  // Newest first: the sweep (running, 1 ok, 1 failed, 1 reused), then the older run.
  EXPECT_EQ(first.rfind(std::to_string(f.run) + " ", 0), 0u) << first;
  for (const char* cell :
       {"20261130-104500", "2026-11-30 10:45:00Z", "running", "nightly,h200", "0123456789ab"}) {
    EXPECT_NE(first.find(cell), std::string::npos) << cell << " in " << first;
  }
  EXPECT_NE(first.find("  1  "), std::string::npos) << first;
  EXPECT_NE(second.find("20261129-080000"), std::string::npos) << second;
  EXPECT_NE(second.find(" ok "), std::string::npos) << second;

  auto json = run_inferbench({"runs", "--db", db.string(), "--json"}, dir.path() / "runs.json");
  ASSERT_EQ(json.exit.code, 0) << json.output;
  auto v = parse_output(json);
  ASSERT_TRUE(v.is_array()) << json.output;
  ASSERT_EQ(v.as_array().size(), 2u);
  const auto& newest = v.as_array()[0].as_object();
  EXPECT_EQ(newest.at("id").as_int64(), f.run);
  EXPECT_EQ(newest.at("name").as_string(), "20261130-104500");
  EXPECT_EQ(newest.at("status").as_string(), "running");
  EXPECT_EQ(newest.at("git_revision").as_string(), "0123456789abcdef0123");
  EXPECT_EQ(newest.at("labels").as_array().size(), 2u);
  const auto& counts = newest.at("points").as_object();
  EXPECT_EQ(counts.at("ok").as_int64(), 1);
  EXPECT_EQ(counts.at("failed").as_int64(), 1);
  EXPECT_EQ(counts.at("reused").as_int64(), 1);

  auto limited = run_inferbench({"runs", "--db", db.string(), "--json", "--limit", "1"},
                                dir.path() / "limited.json");
  ASSERT_EQ(limited.exit.code, 0) << limited.output;
  EXPECT_EQ(parse_output(limited).as_array().size(), 1u);
}

TEST(RunsCli, ShowsOneRunByIdOrNameAsTable) {
  TempDir dir;
  const fs::path db = dir.path() / "inferbench.db";
  auto f = fill(db);
  for (const std::string& which : {std::to_string(f.run), std::string("20261130-104500")}) {
    SCOPED_TRACE(which);
    auto r = run_inferbench({"show", which, "--db", db.string()}, dir.path() / "show.log");
    ASSERT_EQ(r.exit.code, 0) << r.output;
    const std::string& out = r.output;
    EXPECT_EQ(out.rfind(fmt::format("run {}  20261130-104500  running", f.run), 0), 0u) << out;
    for (const char* text : {"git 0123456789abcdef0123",
                             "labels nightly,h200",
                             "1 ok, 1 failed, 1 reused",
                             "SERVER CONFIGURATIONS",
                             "llama8b-bf16-h200-servesim",
                             "abcdef012345",
                             "runs/20261130-104500/server-1.log",
                             "server exited with code 1 before becoming healthy",
                             "POINTS",
                             "REQ/S",
                             "P50 TTFT MS",
                             "P50 TPOT MS",
                             "TOK/S/USER",
                             "TPUT/GPU",
                             "3.14",
                             "3216.9",
                             "45.2",
                             "12.50",
                             "80.0",
                             "6433.8",
                             "reused from run",
                             "server not healthy",
                             "FAILURES",
                             "server-start",
                             "point skipped: its server did not start"}) {
      EXPECT_NE(out.find(text), std::string::npos) << "'" << text << "' in\n" << out;
    }
    EXPECT_NE(out.find(fmt::format("reused from run {}", f.old_run)), std::string::npos) << out;
    EXPECT_EQ(out.find("more detail"), std::string::npos) << out;  // first line of errors only
  }
}

TEST(RunsCli, ShowJsonHasEverythingIncludingFullResults) {
  TempDir dir;
  const fs::path db = dir.path() / "inferbench.db";
  auto f = fill(db);
  auto r = run_inferbench({"show", "20261130-104500", "--db", db.string(), "--json"},
                          dir.path() / "show.json");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  auto v = parse_output(r);
  ASSERT_TRUE(v.is_object()) << r.output;
  const auto& o = v.as_object();
  EXPECT_EQ(o.at("run").as_object().at("id").as_int64(), f.run);
  EXPECT_EQ(o.at("run").as_object().at("points").as_object().at("reused").as_int64(), 1);
  ASSERT_EQ(o.at("server_configs").as_array().size(), 2u);
  EXPECT_EQ(o.at("server_configs").as_array()[1].as_object().at("status").as_string(), "failed");
  const auto& points = o.at("points").as_array();
  ASSERT_EQ(points.size(), 3u);
  const auto& ok = points[0].as_object();
  EXPECT_EQ(ok.at("concurrency").as_int64(), 8);
  EXPECT_EQ(ok.at("request_throughput").as_double(), 3.14159);
  EXPECT_EQ(ok.at("result").as_object().at("marker").as_string(), "full-result-json");
  EXPECT_EQ(points[1].as_object().at("reused_from_run").as_int64(), f.old_run);
  const auto& failed = points[2].as_object();
  EXPECT_EQ(failed.at("status").as_string(), "failed");
  EXPECT_TRUE(failed.at("request_throughput").is_null());
  const auto& failures = o.at("failures").as_array();
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].as_object().at("log_tail").as_string(),
            "Traceback ...\nRuntimeError: CUDA out of memory\n");
}

TEST(RunsCli, UnknownRunOrMissingDatabaseExitsTwo) {
  TempDir dir;
  const fs::path db = dir.path() / "inferbench.db";
  fill(db);
  auto r = run_inferbench({"show", "no-such-run", "--db", db.string()}, dir.path() / "a.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no run 'no-such-run'"), std::string::npos) << r.output;
  r = run_inferbench({"show", "999", "--db", db.string()}, dir.path() / "b.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;

  const fs::path missing = dir.path() / "nowhere" / "x.db";
  r = run_inferbench({"runs", "--db", missing.string()}, dir.path() / "c.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("no results database at"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(missing));  // reading never creates a database
  r = run_inferbench({"show", "1", "--db", missing.string()}, dir.path() / "d.log");
  EXPECT_EQ(r.exit.code, 2) << r.output;
  r = run_inferbench({"show"}, dir.path() / "e.log");  // RUN is required
  EXPECT_EQ(r.exit.code, 2) << r.output;
}


std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reading commands open the database read-only: they work on a file nobody may write (as root,
// whom chmod does not stop, the proof is that the file's bytes and time are unchanged) and
// never create, migrate or fill a file.
TEST(RunsCli, ReadingCommandsNeverWriteTheDatabase) {
  TempDir dir;
  const fs::path db = dir.path() / "inferbench.db";
  auto f = fill(db);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = bytes_of(db);
  const auto mtime = fs::last_write_time(db);
  const std::string run = std::to_string(f.run);
  const std::vector<std::vector<std::string>> reads = {
      {"runs", "--db", db.string()},
      {"runs", "--db", db.string(), "--json"},
      {"show", run, "--db", db.string()},
      {"show", run, "--db", db.string(), "--json"},
      {"report", run, "--db", db.string(), "-o", (dir.path() / "r.html").string()}};
  for (const auto& args : reads) {
    SCOPED_TRACE(args.front());
    auto r = run_inferbench(args, dir.path() / "read.log");
    EXPECT_EQ(r.exit.code, 0) << r.output;
    EXPECT_EQ(r.output.find("readonly"), std::string::npos) << r.output;
  }
  EXPECT_EQ(bytes_of(db), before);
  EXPECT_EQ(fs::last_write_time(db), mtime);

  // An empty file, or one that is not a database, is an error naming it, and stays as it was.
  const fs::path empty = dir.path() / "empty.db";
  std::ofstream(empty).close();
  const fs::path text = dir.path() / "notes.db";
  std::ofstream(text) << std::string(2048, 'x');
  for (const auto& [file, why] : {std::pair{empty, "empty.db: an empty file, not a database"},
                                  std::pair{text, "notes.db: not an SQLite database"}}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"runs", "--db", file.string()},
          {"show", "1", "--db", file.string()},
          {"report", "1", "--db", file.string(), "-o", (dir.path() / "x.html").string()},
          {"compare", "1", "2", "--db", file.string()}}) {
      SCOPED_TRACE(args.front() + " " + file.string());
      auto r = run_inferbench(args, dir.path() / "bad.log");
      EXPECT_EQ(r.exit.code, 2) << r.output;
      EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
    }
  }
  EXPECT_EQ(fs::file_size(empty), 0u);
  EXPECT_EQ(bytes_of(text), std::string(2048, 'x'));
}

// The reading commands work on a database in a folder their user cannot write (issue 30): SQLite's
// reader of a WAL database wants to create the -shm file beside it. They run as a user the folder
// refuses: as root (whom permissions do not stop) through setpriv without the capabilities that
// override them, else as ourselves.
// With a -wal file left by a writer that never finished, the rows in it cannot be read there: an
// error names the file and what to do, never a short answer.
TEST(RunsCli, ReadingCommandsWorkInAFolderTheirUserCannotWrite) {
  TempDir dir;
  const fs::path ro = dir.path() / "ro";
  const fs::path out = dir.path() / "out";
  fs::create_directories(ro);
  fs::create_directories(out);
  const fs::path db = ro / "inferbench.db";
  auto f = fill(db);
  ASSERT_FALSE(fs::exists(db.string() + "-wal"));
  const auto read_x = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                      fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(dir.path(), read_x);
  fs::permissions(ro, read_x);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(out, fs::perms::all);
  // Root loses the capabilities that let it write where permissions say no (setpriv drops them
  // from the bounding set, so the exec'd inferbench never has them).
  std::vector<std::string> as_other;
  if (::geteuid() == 0) {
    as_other = {"setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"};
  }
  const std::string run = std::to_string(f.run), old = std::to_string(f.old_run);
  const std::vector<std::vector<std::string>> reads = {
      {"runs", "--db", db.string()},
      {"show", run, "--db", db.string(), "--json"},
      {"compare", old, run, "--db", db.string()},
      {"report", run, "--db", db.string(), "-o", (out / "r.html").string()}};
  for (const auto& args : reads) {
    SCOPED_TRACE(args.front());
    auto r =
        run_inferbench(args, out / (args.front() + ".log"), std::chrono::seconds(60), {}, as_other);
    EXPECT_NE(r.exit.code, 2) << r.output;  // compare may say "no change" with its own code
    EXPECT_EQ(r.output.find("readonly"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cannot"), std::string::npos) << r.output;
  }
  EXPECT_TRUE(fs::exists(out / "r.html"));
  EXPECT_FALSE(fs::exists(db.string() + "-shm"));

  // A writer's -wal file beside it: refused, naming the -wal file.
  fs::permissions(ro, fs::perms::owner_all, std::filesystem::perm_options::add);
  fs::permissions(db, fs::perms::owner_write, std::filesystem::perm_options::add);
  auto writer = store::Store::open(db);
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  store::RunRecord pending;
  pending.name = "in-the-wal";
  pending.tool_version = "0.1.0";
  ASSERT_TRUE(writer->begin_run(pending).ok());
  const fs::path ro2 = dir.path() / "ro2";
  fs::create_directories(ro2);
  fs::copy_file(db, ro2 / "inferbench.db");
  fs::copy_file(db.string() + "-wal", ro2 / "inferbench.db-wal");
  fs::permissions(ro2, read_x);
  auto r = run_inferbench({"runs", "--db", (ro2 / "inferbench.db").string()}, out / "wal.log",
                          std::chrono::seconds(60), {}, as_other);
  EXPECT_EQ(r.exit.code, 2) << r.output;
  EXPECT_NE(r.output.find("inferbench.db-wal holds rows not yet in the database file"),
            std::string::npos)
      << r.output;
  for (const fs::path& p : {dir.path(), ro, ro2}) fs::permissions(p, fs::perms::owner_all);
}

// A point whose energy counters and sampled power disagree says what that means (issue 30: "counter
// differs 14%" was unexplained).
TEST(RunsCli, AnEnergyCounterMismatchIsExplained) {
  TempDir dir;
  const fs::path db = dir.path() / "inferbench.db";
  auto f = fill(db);
  {
    auto s = store::Store::open(db);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store::PointRecord p;
    p.run_id = f.run;
    p.server_config_id = f.config;
    p.fingerprint = std::string(64, 'e');
    p.workload_key = "1024/1024";
    p.concurrency = 32;
    p.result = {{"request_throughput", 1.0},
                {"completed", 8},
                {"energy",
                 {{"power_valid", true},
                  {"avg_power_w", 650.0},
                  {"accumulator_check",
                   {{"available", true}, {"within_tolerance", false}, {"relative_error", 0.14}}}}}};
    store::set_headline_from_result(p);
    ASSERT_TRUE(s->add_point(p).ok());
  }
  auto r = run_inferbench({"show", std::to_string(f.run), "--db", db.string()},
                          dir.path() / "show.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("valid; energy counter differs 14%*"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("* the GPUs' own energy counters"), std::string::npos) << r.output;
}

// A database of an older schema is read as it is (through a migrated copy), not upgraded.
TEST(RunsCli, OlderSchemaIsReadWithoutUpgradingIt) {
  TempDir dir;
  const fs::path db = dir.path() / "v1.db";
  {
    auto d = store::Database::open(db);
    ASSERT_TRUE(d.ok()) << d.error().message;
    ASSERT_TRUE(store::migrate(*d, store::kMigrations.first(1)).ok());
    ASSERT_TRUE(d->exec("INSERT INTO runs (name, tool_version, started_at, ended_at, status) "
                        "VALUES ('20250101-000000', '0.0.9', 1735689600, 1735689700, 'ok')")
                    .ok());
  }
  const std::string before = bytes_of(db);
  auto r = run_inferbench({"runs", "--db", db.string()}, dir.path() / "runs.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_NE(r.output.find("20250101-000000"), std::string::npos) << r.output;
  EXPECT_EQ(bytes_of(db), before);
  auto d = store::Database::open(db, {.read_only = true});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d->user_version(), 1);
}

}  // namespace
}  // namespace ib::e2e
