#include "core/files.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ib
