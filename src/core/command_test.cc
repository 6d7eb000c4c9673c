#include "core/command.h"

#include <gtest/gtest.h>

namespace ib {
namespace {

TEST(RunCommand, CapturesStdoutStderrAndExitCode) {
  auto r = run_command({"sh", "-c", "printf out; printf err >&2; exit 3"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, "out");
  EXPECT_EQ(r->err, "err");
  EXPECT_EQ(r->exit.code, 3);
  EXPECT_FALSE(r->ok());
}

TEST(RunCommand, ArgumentsAreNotInterpretedByAShell) {
  const std::string hostile = "a b '$(touch /tmp/x)' `id` *";
  auto r = run_command({"printf", "%s", hostile});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, hostile);
  EXPECT_TRUE(r->ok());
}

TEST(RunCommand, FeedsStdinAndUsesCwdAndEnv) {
  CommandOptions o;
  o.stdin_data = std::string(200000, 'x');  // larger than a pipe buffer
  o.cwd = "/";
  o.env_set["IB_TEST_VAR"] = "v1";
  auto r = run_command({"sh", "-c", "wc -c; pwd; printf %s \"$IB_TEST_VAR\""}, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, "200000\n/\nv1");
}

TEST(RunCommand, MissingProgramIsAnError) {
  auto r = run_command({"/nonexistent/program"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot execute '/nonexistent/program'"), std::string::npos);
}

TEST(RunCommand, TimeoutKillsTheProcessGroup) {
  CommandOptions o;
  o.timeout = std::chrono::milliseconds(200);
  auto r = run_command({"sh", "-c", "sleep 30 & sleep 30"}, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("timed out"), std::string::npos);
}

TEST(DescribeArgv, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(describe_argv({"git", "show", "HEAD:a b"}), "git show 'HEAD:a b'");
  EXPECT_EQ(describe_argv({"x", "it's"}), "x 'it'\\''s'");
}

}  // namespace
}  // namespace ib
