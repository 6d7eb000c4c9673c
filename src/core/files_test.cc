#include "core/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/temp_dir.h"

namespace ib {
namespace {

// File errors are I/O errors (core/expected.h's kinds): a command maps them to exit 1.
TEST(Files, ErrorsAreIoErrorsNamingThePath) {
  TempDir dir("ib-files");
  ASSERT_FALSE(dir.path().empty());
  const auto missing = dir.path() / "missing.txt";
  auto r = read_file(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kIo);
  EXPECT_NE(r.error().message.find(missing.string()), std::string::npos);
  auto w = write_file_atomic(dir.path() / "no" / "such" / "x", "x");  // folders are made
  EXPECT_TRUE(w.ok());
  auto bad = write_file_atomic(dir.path() / "no" / "such" / "x" / "y", "y");  // x is a file
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kIo);
}

// What is already at the path decides how it is written (issue 30): never replaced by a regular
// file unless it was one.
TEST(Files, ALinkIsFollowedAndKept) {
  TempDir dir("ib-files");
  const auto target = dir.path() / "real.json";
  const auto link = dir.path() / "link.json";
  ASSERT_TRUE(write_file_atomic(target, "old").ok());
  std::filesystem::create_symlink("real.json", link);  // relative, as users make them
  ASSERT_TRUE(write_file_atomic(link, "new").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(*read_file(target), "new");
  // A dangling link names the file it would create.
  const auto dangling = dir.path() / "dangling.json";
  std::filesystem::create_symlink(dir.path() / "sub" / "made.json", dangling);
  ASSERT_TRUE(write_file_atomic(dangling, "made").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(dangling));
  EXPECT_EQ(*read_file(dir.path() / "sub" / "made.json"), "made");
}

TEST(Files, DevicesAndPipesAreWrittenThroughNeverReplaced) {
  ASSERT_TRUE(write_file_atomic("/dev/null", "discarded").ok());
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  TempDir dir("ib-files");
  const auto fifo = dir.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Nobody reads it: an error now, not a hang.
  auto unread = write_file_atomic(fifo, "x");
  ASSERT_FALSE(unread.ok());
  EXPECT_NE(unread.error().message.find("nobody reads"), std::string::npos);
  std::string got;
  std::thread reader([&] {
    int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[64];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, n);
    if (fd >= 0) ::close(fd);
  });
  Status s = Status::Ok();
  for (int i = 0; i < 2000; ++i) {  // until the reader has opened its end
    s = write_file_atomic(fifo, "through the pipe");
    if (s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reader.join();
  EXPECT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  auto folder = write_file_atomic(dir.path(), "x");
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("is a folder"), std::string::npos);
}

}  // namespace
}  // namespace ib
