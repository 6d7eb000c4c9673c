// RunRecorder: a sweep's writes go through it, and a write that fails is reported, not dropped.
#include "sweep/recorder.h"

#include <gtest/gtest.h>

#include "core/files.h"
#include "core/redact.h"
#include "core/temp_dir.h"

namespace ib::sweep {
namespace {

namespace fs = std::filesystem;

store::RunRecord fresh() {
  store::RunRecord r;
  r.tool_version = "0.0.0-test";
  return r;
}

metrics::PointResult measured_point(const std::string& dir) {
  metrics::PointResult p;
  p.id = {"key", "fp0123456789", 4, "fixed-seq-len:{}", "isl 8 / osl 2", "0.0.0-test"};
  p.status = metrics::PointStatus::kOk;
  p.headline.set("output_throughput", 12.5);
  p.result = {{"output_throughput", 12.5}, {"workload_label", "isl 8 / osl 2"}};
  p.artifacts_dir = dir;
  return p;
}

TEST(RunRecorderTest, PointsFilesAndResumeGoThroughOnePlace) {
  TempDir tmp;
  auto rec = RunRecorder::open(tmp.path() / "db.sqlite", tmp.path() / "runs", "", fresh());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_TRUE(fs::is_directory(rec->run_dir()));
  const fs::path dir = rec->config_dir(1, "a key/with slash", "fp0123456789");
  EXPECT_EQ(dir.filename().string(), "01-a_key_with_slash-fp012345");
  fs::create_directories(dir);
  store::ServerConfigRecord c;
  c.config_key = "key";
  c.fingerprint = "fp0123456789";
  ASSERT_TRUE(rec->add_config(c));
  metrics::PointResult p = measured_point(dir.string());
  // A server's error that repeats a credential it was sent: the records never keep it.
  ASSERT_TRUE(add_secret("rec-s3cret-key-42"));
  metrics::RequestRecord failed;
  failed.error = "HTTP 401: invalid key rec-s3cret-key-42";
  rec->write_point_files(p, {{"conc", 4}}, {failed}, 0);
  rec->record_point(p, c.id);
  auto records = read_file(dir / "records_conc_4.jsonl");
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(records->find("rec-s3cret-key-42"), std::string::npos) << *records;
  EXPECT_NE(records->find("HTTP 401: invalid key"), std::string::npos) << *records;
  EXPECT_TRUE(fs::exists(dir / "conc_4.json"));
  EXPECT_TRUE(fs::exists(dir / "agg_conc_4.json"));
  EXPECT_TRUE(fs::exists(dir / "records_conc_4.jsonl"));
  EXPECT_TRUE(rec->errors().empty());
  auto again = rec->resumed(p.id);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, metrics::PointStatus::kResumed);
  EXPECT_EQ(again->id.workload_label, "isl 8 / osl 2");
  EXPECT_DOUBLE_EQ(again->headline.get("output_throughput"), 12.5);
  metrics::PointIdentity other = p.id;
  other.concurrency = 8;
  EXPECT_FALSE(rec->resumed(other).has_value());
  rec->finish({{"status", "ok"}}, store::RunStatus::kOk);
  EXPECT_TRUE(fs::exists(rec->run_dir() / "summary.json"));
  EXPECT_TRUE(rec->errors().empty());
}

TEST(RunRecorderTest, AFailedWriteIsAnErrorTheRunReports) {
  TempDir tmp;
  auto rec = RunRecorder::open(tmp.path() / "db.sqlite", tmp.path() / "runs", "", fresh());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  // The artifacts folder is a regular file: nothing can be written under it.
  const fs::path blocker = tmp.path() / "not-a-folder";
  ASSERT_TRUE(write_file_atomic(blocker, "x").ok());
  rec->write_point_files(measured_point((blocker / "sub").string()), {}, {}, 0);
  ASSERT_EQ(rec->errors().size(), 3u);  // result, aggregate, records
  EXPECT_NE(rec->errors()[0].find("conc_4.json"), std::string::npos) << rec->errors()[0];
  // A point the database refuses (skipped points are never stored; a reused one needs its source).
  metrics::PointResult p = measured_point(tmp.path().string());
  p.status = metrics::PointStatus::kReused;
  rec->record_point(p, 0);
  ASSERT_EQ(rec->errors().size(), 4u);
  EXPECT_NE(rec->errors()[3].find("reused_from_run"), std::string::npos) << rec->errors()[3];
}

TEST(RunRecorderTest, ResumeNeedsAKnownRun) {
  TempDir tmp;
  auto rec = RunRecorder::open(tmp.path() / "db.sqlite", tmp.path() / "runs", "nope", fresh());
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.error().message.find("--resume nope: no such run"), std::string::npos);
}

}  // namespace
}  // namespace ib::sweep
