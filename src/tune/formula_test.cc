// The objective expression (tune/formula.h): the grammar, the arithmetic, every error message,
// and that no text, however malformed or deep, crashes the parser.
#include "tune/formula.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

namespace ib::tune {
namespace {

const std::set<std::string, std::less<>> kKnown = {
    "tput_per_gpu", "median_ttft_ms", "p99_tpot_ms", "a", "b", "c", "x.y"};

bool known(std::string_view name) {
  return kKnown.contains(name);
}

Formula parse_ok(std::string_view text) {
  auto f = Formula::parse(text, known);
  EXPECT_TRUE(f.ok()) << text << ": " << (f.ok() ? "" : f.error().message);
  return std::move(f).value();
}

std::string parse_error(std::string_view text) {
  auto f = Formula::parse(text, known);
  if (f.ok()) return "(parsed)";
  return f.error().message;
}

// a = 2, b = 3, c = 5, the named metrics as given, every other known metric 1.
double eval(std::string_view text, const std::map<std::string, double, std::less<>>& values = {}) {
  const Formula f = parse_ok(text);
  return f.eval([&](std::string_view m) {
    if (auto it = values.find(m); it != values.end()) return it->second;
    if (m == "a") return 2.0;
    if (m == "b") return 3.0;
    if (m == "c") return 5.0;
    return 1.0;
  });
}

TEST(Formula, NumbersInEveryForm) {
  EXPECT_DOUBLE_EQ(eval("2"), 2);
  EXPECT_DOUBLE_EQ(eval("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(eval(".5"), 0.5);
  EXPECT_DOUBLE_EQ(eval("3."), 3);
  EXPECT_DOUBLE_EQ(eval("1e3"), 1000);
  EXPECT_DOUBLE_EQ(eval("2.5E-2"), 0.025);
  EXPECT_DOUBLE_EQ(eval("1e+2"), 100);
}

TEST(Formula, PrecedenceAndAssociativity) {
  EXPECT_DOUBLE_EQ(eval("a + b * c"), 17);
  EXPECT_DOUBLE_EQ(eval("(a + b) * c"), 25);
  EXPECT_DOUBLE_EQ(eval("c - b - a"), 0);   // left to right, not c - (b - a)
  EXPECT_DOUBLE_EQ(eval("12 / a / b"), 2);  // (12 / 2) / 3
  EXPECT_DOUBLE_EQ(eval("a * b / c"), 1.2);
  EXPECT_DOUBLE_EQ(eval("c - a * b + 1"), 0);
  EXPECT_DOUBLE_EQ(eval(" \ta\n+\r b "), 5);
}

TEST(Formula, UnaryMinus) {
  EXPECT_DOUBLE_EQ(eval("-a"), -2);
  EXPECT_DOUBLE_EQ(eval("-a * b"), -6);
  EXPECT_DOUBLE_EQ(eval("b * -a"), -6);
  EXPECT_DOUBLE_EQ(eval("b - -a"), 5);
  EXPECT_DOUBLE_EQ(eval("-(a - c)"), 3);
  EXPECT_DOUBLE_EQ(eval("-a + c"), 3);  // binds tighter than +: (-a) + c
  // One minus per operand, as the grammar says: a second needs parentheses.
  EXPECT_EQ(parse_error("--a"),
            "--objective '--a': expected a number, a metric or '(' at offset 1");
  EXPECT_DOUBLE_EQ(eval("-(-a)"), 2);
}

TEST(Formula, MinAndMax) {
  EXPECT_DOUBLE_EQ(eval("min(a, b)"), 2);
  EXPECT_DOUBLE_EQ(eval("max(a, b)"), 3);
  EXPECT_DOUBLE_EQ(eval("max(min(a, b), c - 4) * 10"), 20);
  EXPECT_DOUBLE_EQ(eval("min ( -a , b+c )"), -2);
  EXPECT_DOUBLE_EQ(eval("max(tput_per_gpu, 0)", {{"tput_per_gpu", -4}}), 0);
}

TEST(Formula, DivisionByZeroIsNaN) {
  EXPECT_TRUE(std::isnan(eval("a / 0")));
  EXPECT_TRUE(std::isnan(eval("a / (b - b)")));
  EXPECT_TRUE(std::isnan(eval("0 / 0")));
  EXPECT_TRUE(std::isnan(eval("tput_per_gpu / median_ttft_ms", {{"median_ttft_ms", 0}})));
  EXPECT_DOUBLE_EQ(eval("0 / a"), 0);
}

TEST(Formula, AMissingMetricMakesTheValueNaN) {
  const double nan = std::nan("");
  const double inf = HUGE_VAL;
  EXPECT_TRUE(std::isnan(eval("tput_per_gpu", {{"tput_per_gpu", nan}})));
  // min/max would drop a NaN operand; the objective is still unknown.
  EXPECT_TRUE(std::isnan(eval("max(tput_per_gpu, 1)", {{"tput_per_gpu", nan}})));
  EXPECT_TRUE(std::isnan(eval("min(1, tput_per_gpu)", {{"tput_per_gpu", nan}})));
  EXPECT_TRUE(std::isnan(eval("0 * tput_per_gpu", {{"tput_per_gpu", nan}})));
  EXPECT_TRUE(std::isnan(eval("tput_per_gpu", {{"tput_per_gpu", inf}})));
  // Overflow on the way is not finite, even where max would hide it.
  EXPECT_TRUE(std::isnan(eval("1e308 * 10")));
  EXPECT_TRUE(std::isnan(eval("min(1e308 * 10, 1)")));
}

TEST(Formula, MetricsAreDistinctInFirstUseOrder) {
  const Formula f =
      parse_ok("median_ttft_ms / tput_per_gpu + max(median_ttft_ms, p99_tpot_ms) - x.y");
  EXPECT_EQ(f.metrics(),
            (std::vector<std::string>{"median_ttft_ms", "tput_per_gpu", "p99_tpot_ms", "x.y"}));
  EXPECT_EQ(f.text(), "median_ttft_ms / tput_per_gpu + max(median_ttft_ms, p99_tpot_ms) - x.y");
  EXPECT_FALSE(f.is_single_metric());
  // Each metric is asked for once, however often it is used.
  std::map<std::string, int> asked;
  const Formula g = parse_ok("a * a + a");
  const double v = g.eval([&](std::string_view m) {
    ++asked[std::string(m)];
    return 3.0;
  });
  EXPECT_DOUBLE_EQ(v, 12);
  EXPECT_EQ(asked, (std::map<std::string, int>{{"a", 1}}));
  EXPECT_TRUE(parse_ok("2 + 3").metrics().empty());
}

TEST(Formula, SingleMetric) {
  EXPECT_TRUE(parse_ok("tput_per_gpu").is_single_metric());
  EXPECT_TRUE(parse_ok("  (tput_per_gpu) ").is_single_metric());
  EXPECT_FALSE(parse_ok("-tput_per_gpu").is_single_metric());
  EXPECT_FALSE(parse_ok("tput_per_gpu * 1").is_single_metric());
  EXPECT_FALSE(parse_ok("max(tput_per_gpu, tput_per_gpu)").is_single_metric());
  EXPECT_FALSE(parse_ok("2").is_single_metric());
}

TEST(Formula, ErrorMessages) {
  EXPECT_EQ(parse_error("tput_per_gpu/foo"),
            "--objective 'tput_per_gpu/foo': unknown metric 'foo' at offset 13");
  EXPECT_EQ(parse_error("a+"), "--objective 'a+': expected a number, a metric or '(' at offset 2");
  EXPECT_EQ(parse_error("*a"), "--objective '*a': expected a number, a metric or '(' at offset 0");
  EXPECT_EQ(parse_error("a + ."),
            "--objective 'a + .': expected a number, a metric or '(' at offset 4");
  EXPECT_EQ(parse_error(""), "--objective '': the expression is empty");
  EXPECT_EQ(parse_error("   "), "--objective '   ': the expression is empty");
  EXPECT_EQ(parse_error("(a + b"),
            "--objective '(a + b': expected ')' at offset 6 (to close the '(' at offset 0)");
  EXPECT_EQ(parse_error("((a) b)"),
            "--objective '((a) b)': expected ')' at offset 5 (to close the '(' at offset 0)");
  EXPECT_EQ(parse_error("a + b)"), "--objective 'a + b)': unmatched ')' at offset 5");
  EXPECT_EQ(parse_error("a b"), "--objective 'a b': unexpected 'b' at offset 2");
  EXPECT_EQ(parse_error("2x"), "--objective '2x': unexpected 'x' at offset 1");
  EXPECT_EQ(parse_error("a # b"), "--objective 'a # b': unexpected '#' at offset 2");
  EXPECT_EQ(parse_error("a\x01"), "--objective 'a?': unexpected '?' at offset 1");
  EXPECT_EQ(parse_error("2e"), "--objective '2e': malformed number '2e' at offset 0");
  EXPECT_EQ(parse_error("a * 1.5e+"),
            "--objective 'a * 1.5e+': malformed number '1.5e+' at offset 4");
  EXPECT_EQ(parse_error("1e999"),
            "--objective '1e999': number '1e999' is out of range at offset 0");
  EXPECT_EQ(parse_error("min"), "--objective 'min': expected '(' after 'min' at offset 3");
  EXPECT_EQ(parse_error("max(a)"),
            "--objective 'max(a)': expected ',' at offset 5 ('max' takes two arguments)");
  EXPECT_EQ(parse_error("min(a, b, c)"),
            "--objective 'min(a, b, c)': expected ')' at offset 8 (to close the '(' at offset 3)");
  EXPECT_EQ(parse_error("log(a)"),
            "--objective 'log(a)': unknown function 'log' at offset 0 (there are min and max)");
  EXPECT_EQ(parse_error("a(b)"), "--objective 'a(b)': unexpected '(' at offset 1");
  EXPECT_EQ(parse_error(std::string(1001, 'a')),
            "--objective: 1001 characters, more than the 1000 allowed");
  // At the limit, a long text is fine.
  std::string sum = "a";
  while (sum.size() + 2 <= 1000) sum += "+a";
  EXPECT_DOUBLE_EQ(eval(sum), 2.0 * static_cast<double>((sum.size() + 1) / 2));
}

TEST(Formula, NestingIsBoundedNotAStackOverflow) {
  std::string ok = std::string(100, '(') + "a" + std::string(100, ')');
  EXPECT_DOUBLE_EQ(eval(ok), 2);
  std::string deep = std::string(101, '(') + "a" + std::string(101, ')');
  EXPECT_EQ(parse_error(deep),
            "--objective '" + deep + "': nested deeper than 100 levels at offset 100");
  // Every prefix of a text of parentheses only: no crash, the depth error past 100.
  const std::string opens(1000, '(');
  EXPECT_NE(parse_error(opens).find("nested deeper than 100 levels at offset 100"),
            std::string::npos);
  // min/max calls count as nesting too.
  std::string calls;
  for (int i = 0; i < 101; ++i) calls += "min(a,";
  calls += "a" + std::string(101, ')');
  EXPECT_NE(parse_error(calls).find("nested deeper than 100 levels at offset 600"),
            std::string::npos);
  // A long flat expression needs no depth.
  std::string chain = "a";
  for (int i = 0; i < 300; ++i) chain += "*-a";
  EXPECT_TRUE(Formula::parse(chain, known).ok());
}

// Random texts over a small alphabet of tokens: parsing either succeeds or names the option, and
// evaluating what parsed never crashes (run under the sanitizers too).
TEST(Formula, RandomTextsNeverCrash) {
  const std::vector<std::string> tokens = {"a", "b", "foo", "min", "max", "(",  ")",
                                           ",", "+", "-",   "*",   "/",   "0",  "2",
                                           ".", "e", "1e",  "3.5", " ",   "x.y"};
  std::mt19937_64 rng(42);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const auto n = rng() % 24;
    for (size_t k = 0; k < n; ++k) text += tokens[rng() % tokens.size()];
    auto f = Formula::parse(text, known);
    if (!f.ok()) {
      EXPECT_TRUE(f.error().message.starts_with("--objective '" + text + "': "))
          << f.error().message;
      continue;
    }
    ++parsed;
    const double v = f->eval([](std::string_view) { return 1.5; });
    EXPECT_TRUE(std::isnan(v) || std::isfinite(v)) << text;
    // Parsing is deterministic, and the text is kept as given.
    EXPECT_EQ(f->text(), text);
  }
  EXPECT_GT(parsed, 100);  // the alphabet makes valid texts too, or the test proves little
  // Arbitrary bytes, too.
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const auto n = rng() % 16;
    for (size_t k = 0; k < n; ++k) text += static_cast<char>(rng() % 256);
    auto f = Formula::parse(text, known);
    if (f.ok()) f->eval([](std::string_view) { return 1.0; });
  }
}

}  // namespace
}  // namespace ib::tune
