#include "cli/options.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cli/commands.h"
#include "core/temp_dir.h"
#include "http/client.h"

namespace ib::cli {
namespace {

namespace fs = std::filesystem;

// One mapping from an error's kind to the exit code, whatever the command.
TEST(ExitCodes, FollowTheErrorsKind) {
  EXPECT_EQ(exit_code(usage_error("x")), kExitUsage);
  EXPECT_EQ(exit_code(input_error("x")), kExitUsage);
  EXPECT_EQ(exit_code(io_error("x")), kExitFailure);
  EXPECT_EQ(exit_code(Error{"x"}), kExitFailure);
  EXPECT_EQ(exit_code(ErrorKind::kInterrupted), 130);  // no signal seen: SIGINT's
  testing::internal::CaptureStderr();
  EXPECT_EQ(fail("bench", usage_error("--isl: must be positive")), kExitUsage);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "inferbench bench: --isl: must be positive\n");
}

TEST(ParseInteger, AcceptsOnlyPlainDecimalInTheTypesRange) {
  EXPECT_EQ(parse_integer<int>("42"), 42);
  EXPECT_EQ(parse_integer<int>("-7"), -7);
  EXPECT_EQ(parse_integer<int>("010"), 10);  // decimal, not CLI11's octal 8
  EXPECT_EQ(parse_integer<int>("2147483647"), 2147483647);
  EXPECT_EQ(parse_integer<int>("2147483648"), std::nullopt);
  EXPECT_EQ(parse_integer<int64_t>("3000000000"), 3000000000LL);
  EXPECT_EQ(parse_integer<int64_t>("99999999999999999999"), std::nullopt);  // no saturation
  EXPECT_EQ(parse_integer<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_integer<uint64_t>("-1"), std::nullopt);  // no wrap-around
  EXPECT_EQ(parse_integer<uint16_t>("65536"), std::nullopt);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "0x10", "12abc", "1e3", "1.0", "nan", "--1"}) {
    EXPECT_EQ(parse_integer<int64_t>(bad), std::nullopt) << bad;
  }
}

TEST(ParseReal, AcceptsOnlyFiniteDecimalNumbers) {
  EXPECT_EQ(parse_real("0.5"), 0.5);
  EXPECT_EQ(parse_real("-2"), -2.0);
  EXPECT_EQ(parse_real("1e-3"), 1e-3);
  EXPECT_EQ(parse_real("1E+3"), 1000.0);
  EXPECT_EQ(parse_real(".5"), 0.5);
  for (const char* bad : {"", "nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e400", "0x10",
                          "12abc", "+1", " 1", "1,5", "e5", "--1"}) {
    EXPECT_EQ(parse_real(bad), std::nullopt) << bad;
  }
}

TEST(BoundText, PrintsBoundsAsAPersonWould) {
  EXPECT_EQ(bound_text(1000000), "1000000");
  EXPECT_EQ(bound_text(0.5), "0.5");
  EXPECT_EQ(bound_text(0), "0");
  EXPECT_EQ(bound_text(1e300), "1e+300");
  EXPECT_LT(bound_text(std::numeric_limits<double>::max()).size(), 20u);
}

// Runs `validator` on `text`: the error ("" when accepted) and the text CLI11 would convert.
std::pair<std::string, std::string> check(const CLI::Validator& validator, std::string text) {
  std::string err = validator(text);
  return {err, text};
}

TEST(IntegerIn, ChecksRangeAndRewritesCanonically) {
  const auto v = integer_in(1, 100000);
  EXPECT_EQ(check(v, "16"), std::make_pair(std::string(), std::string("16")));
  EXPECT_EQ(check(v, "0016").second, "16");
  EXPECT_EQ(check(v, "3000000000").first, "must be an integer from 1 to 100000, got '3000000000'");
  EXPECT_EQ(check(v, "0").first, "must be an integer from 1 to 100000, got '0'");
  EXPECT_EQ(check(v, "").first, "must be an integer from 1 to 100000, got nothing");
  for (const char* bad : {"-1", "0x10", "12abc", "1e3", "nan", "1.5"}) {
    EXPECT_FALSE(check(v, bad).first.empty()) << bad;
  }
  // Control characters are escaped and a long value is cut.
  const std::string shown = check(v, "1\x1b[2J" + std::string(500, '9')).first;
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_LT(shown.size(), 200u);
}

TEST(IntegerList, ChecksEveryItemAndRefusesEmptyOnes) {
  const auto v = integer_list(1, 100);
  EXPECT_EQ(check(v, "1,04,16"), std::make_pair(std::string(), std::string("1,4,16")));
  EXPECT_EQ(check(v, "4,").first,
            "must be integers from 1 to 100 separated by commas, got an empty item in '4,'");
  for (const char* bad : {"", "1,,4", ",", "1,0", "1,101", "1,0x10", "[1,2]", "1, 2"}) {
    EXPECT_FALSE(check(v, bad).first.empty()) << bad;
  }
}

TEST(UnsignedInteger, TakesTheWholeRangeAndNothingNegative) {
  const auto v = unsigned_integer();
  EXPECT_EQ(check(v, "18446744073709551615").first, "");
  EXPECT_NE(check(v, "-1").first, "");
  EXPECT_NE(check(v, "18446744073709551616").first, "");
}

TEST(RealIn, RefusesNanInfAndOutOfRangeWithAHumanBound) {
  const auto v = positive_real(1e6);
  EXPECT_EQ(check(v, "2.5"), std::make_pair(std::string(), std::string("2.5")));
  EXPECT_EQ(check(v, "0").first, "must be a number above 0 and at most 1000000, got '0'");
  for (const char* bad : {"nan", "inf", "-1", "1e400", "0x10", "12abc", "", "1000001"}) {
    EXPECT_FALSE(check(v, bad).first.empty()) << bad;
  }
  const auto closed = real_in(0, 1);
  EXPECT_EQ(check(closed, "0").first, "");
  EXPECT_EQ(check(closed, "1").first, "");
  EXPECT_EQ(check(closed, "1.01").first, "must be a number from 0 to 1, got '1.01'");
  EXPECT_EQ(check(positive_real(std::numeric_limits<double>::infinity()), "0").first,
            "must be a positive number, got '0'");
}

TEST(AddInteger, RefusesARangeItsVariableCannotHold) {
  CLI::App app;
  int small = 0;
  uint16_t port = 0;
  EXPECT_THROW(add_integer(&app, "--a", small, "", 0, int64_t{1} << 40), std::logic_error);
  EXPECT_THROW(add_integer(&app, "--b", port, "", -1, 10), std::logic_error);
  EXPECT_NO_THROW(add_integer(&app, "--c", port, "", 0, 65535));
}

TEST(AddInteger, ParsesThroughCli11WithTheOptionNamedInTheError) {
  CLI::App app;
  int conc = 1;
  add_integer(&app, "--concurrency", conc, "", 1, 100);
  EXPECT_NO_THROW(app.parse(std::vector<std::string>{"010", "--concurrency"}));
  EXPECT_EQ(conc, 10);
  try {
    app.parse(std::vector<std::string>{"0x10", "--concurrency"});
    FAIL() << "0x10 accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--concurrency: must be an integer from 1 to 100"),
              std::string::npos)
        << e.what();
  }
}

TEST(Transforms, Cli11ConvertsTheCheckedCanonicalText) {
  CLI::App app;
  double rate = 0;
  std::string url;
  app.add_option("--rate", rate)->transform(positive_real(1e6));
  app.add_option("--endpoint", url)->transform(endpoint_url());
  app.parse(std::vector<std::string>{"http://h:8000/v1/", "--endpoint", "2.5", "--rate"});
  EXPECT_EQ(rate, 2.5);
  EXPECT_EQ(url, "http://h:8000");
  EXPECT_THROW(app.parse(std::vector<std::string>{"nan", "--rate"}), CLI::ValidationError);
}

TEST(EndpointUrl, NormalizesTheBaseUrlOnce) {
  for (const char* same : {"http://h:8000", "http://h:8000/", "http://h:8000/v1",
                           "http://h:8000/v1/", "http://h:8000//v1//"}) {
    auto n = normalize_endpoint_url(same);
    ASSERT_TRUE(n) << same << ": " << n.error().message;
    EXPECT_EQ(*n, "http://h:8000") << same;
  }
  EXPECT_EQ(*normalize_endpoint_url("http://h/proxy/v1"), "http://h/proxy");
  EXPECT_EQ(*normalize_endpoint_url("http://h/proxy"), "http://h/proxy");
  EXPECT_EQ(*normalize_endpoint_url("http://[::1]:8000/v1"), "http://[::1]:8000");
  EXPECT_EQ(*normalize_endpoint_url("http://v1"), "http://v1");  // a host named v1 stays
}

// An IPv6 endpoint prints as its URL was written, brackets and all (issue 30).
TEST(EndpointUrl, AnIpv6HostKeepsItsBrackets) {
  auto e = http::parse_endpoint("http://[::1]:8000/v1");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->authority(), "[::1]:8000");
  EXPECT_EQ(e->url(), "http://[::1]:8000/v1");
  EXPECT_EQ(http::parse_endpoint("http://h:80")->url(), "http://h:80");
}

TEST(EndpointUrl, RefusesWhatIsNotAnHttpBaseUrl) {
  struct Case {
    const char* url;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{{"", "empty"},
                                         {"http://h:0", "1 to 65535"},
                                         {"http://h:65536", "1 to 65535"},
                                         {"http://h:99999999999", "1 to 65535"},
                                         {"http://:8000", "no host"},
                                         {"http://", "no host"},
                                         {"https://h:8000", "scheme 'https'"},
                                         {"ftp://h", "scheme 'ftp'"},
                                         {"h:8000", "scheme"},
                                         {"localhost", "not a URL"},
                                         {"http://u:p@h:8000", "user info"},
                                         {"http://h:8000/?x=1", "query"}}) {
    auto n = normalize_endpoint_url(c.url);
    ASSERT_FALSE(n) << c.url << " -> " << *n;
    EXPECT_NE(n.error().message.find(c.says), std::string::npos)
        << c.url << ": " << n.error().message;
  }
}

TEST(SameOutputFiles, CatchesOneFileUnderTwoNames) {
  ib::TempDir dir("ib-options");
  const fs::path a = dir.path() / "a.json";
  EXPECT_FALSE(same_output_files({{"--output", a.string()}, {"--details", ""}}));
  EXPECT_FALSE(same_output_files(
      {{"--output", a.string()}, {"--details", (dir.path() / "b.json").string()}}));
  auto msg =
      same_output_files({{"--output", a.string()},
                         {"--details", (dir.path() / "." / "x" / ".." / "a.json").string()}});
  ASSERT_TRUE(msg);
  EXPECT_NE(msg->find("--output and --details name the same file"), std::string::npos) << *msg;
  // A symlink to an existing file, and a hard link.
  { std::ofstream(a) << "x"; }
  fs::create_symlink(a, dir.path() / "link.json");
  EXPECT_TRUE(same_output_files(
      {{"--output", a.string()}, {"--details", (dir.path() / "link.json").string()}}));
  fs::create_hard_link(a, dir.path() / "hard.json");
  EXPECT_TRUE(
      same_output_files({{"-o", a.string()}, {"--db", (dir.path() / "hard.json").string()}}));
}

TEST(OutputFile, RefusesFoldersAndMissingParents) {
  ib::TempDir dir("ib-options");
  const auto v = output_file();
  EXPECT_EQ(check(v, (dir.path() / "out.json").string()).first, "");
  EXPECT_EQ(check(v, "out.json").first, "");
  EXPECT_NE(check(v, dir.path().string()).first.find("is a folder"), std::string::npos);
  EXPECT_NE(check(v, (dir.path() / "no" / "out.json").string()).first.find("does not exist"),
            std::string::npos);
  EXPECT_NE(check(v, "").first, "");
}

TEST(InRepo, RelativePathsAreTakenFromTheRepository) {
  EXPECT_EQ(in_repo("/r", "recipes/a.yaml"), fs::path("/r/recipes/a.yaml"));
  EXPECT_EQ(in_repo("/r", "/abs/a.yaml"), fs::path("/abs/a.yaml"));
  EXPECT_EQ(in_repo(".", "a.yaml"), fs::path("./a.yaml"));
}

// The audit: every command's every numeric option checks its range here, so none can be
// forgotten (a new option without integer_in/real_in/... fails this test).
TEST(AllCommands, EveryNumericOptionHasARangeCheck) {
  CLI::App app;
  for (auto reg :
       {&register_sweep, &register_bench, &register_serve_sim, &register_plan, &register_runs,
        &register_show, &register_changed, &register_verify, &register_changelog, &register_gate,
        &register_history, &register_push, &register_pull, &register_trace, &register_compare,
        &register_report, &register_eval, &register_tokenize, &register_tune}) {
    reg(app);
  }
  const auto unchecked = options_without_range(app);
  EXPECT_TRUE(unchecked.empty()) << "numeric options without a range check: "
                                 << ::testing::PrintToString(unchecked);
  // The audit does see numeric options (it is not vacuous).
  CLI::App probe;
  int n = 0;
  probe.add_option("--n", n);
  EXPECT_EQ(options_without_range(probe), std::vector<std::string>{"--n"});
}

}  // namespace
}  // namespace ib::cli
