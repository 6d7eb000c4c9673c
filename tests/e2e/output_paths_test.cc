// What is already at an output path is respected (issue 30): a symbolic link is followed and
// kept, a device is written through, and a file the tool did not create is never deleted.
#include <sys/stat.h>

#include "e2e_util.h"

namespace ib::e2e {
namespace {

TEST(OutputPaths, BenchWritesThroughLinksAndDevices) {
  TempDir dir;
  SimServer sim(dir.path(), {"--decode-base-ms", "1", "--decode-per-running-ms", "0"});
  ASSERT_TRUE(sim.running());
  const fs::path real = dir.path() / "kept" / "result.json";
  fs::create_directories(real.parent_path());
  const fs::path link = dir.path() / "result-link.json";
  fs::create_symlink(real, link);
  auto r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "8", "--osl", "4",
                           "--num-prompts", "4", "--concurrency", "2", "--output", link.string(),
                           "--details", "/dev/null"},
                          dir.path() / "bench.log");
  ASSERT_EQ(r.exit.code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(num(read_json(real), "completed"), 4);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // Two outputs to one device are not "the same file overwritten": both are written through.
  r = run_inferbench({"bench", "--endpoint", sim.url(), "--isl", "8", "--osl", "4", "--num-prompts",
                      "2", "--output", "/dev/null", "--details", "/dev/null"},
                     dir.path() / "bench2.log");
  EXPECT_EQ(r.exit.code, 0) << r.output;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(OutputPaths, ServeSimLeavesAPortFileItDidNotCreate) {
  TempDir dir;
  // The user's own file, named as the port file: written (the parent needs the port), kept.
  const fs::path mine = dir.path() / "mine.port";
  ASSERT_TRUE(write_file_atomic(mine, "user data\n").ok());
  SpawnOptions so;
  so.argv = {INFERBENCH_BIN, "serve-sim", "--port", "0", "--port-file", mine.string()};
  so.log_path = dir.path() / "sim.log";
  auto child = ChildProcess::spawn(so);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(wait_for([&] {
    auto t = read_file(mine);
    return t && t->find("user data") == std::string::npos && !t->empty() && t->back() == '\n';
  })) << file_tail(so.log_path);
  const auto stopped = child->stop(std::chrono::milliseconds(10000));
  EXPECT_EQ(stopped.code, 0) << file_tail(so.log_path);
  EXPECT_TRUE(fs::exists(mine));
  // One it made itself is removed at exit, as before (a stale port would mislead a parent).
  SimServer sim(dir.path());
  ASSERT_TRUE(sim.running());
  EXPECT_TRUE(fs::exists(sim.port_file()));
  sim.stop();
  EXPECT_FALSE(fs::exists(sim.port_file()));
}

}  // namespace
}  // namespace ib::e2e
