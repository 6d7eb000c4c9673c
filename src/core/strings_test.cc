#include "core/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ib {
namespace {

using Fields = std::vector<std::string>;

TEST(Strings, TrimRemovesAsciiWhitespaceAtBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f\v"), "x");
  EXPECT_EQ(trim("x"), "x");
  EXPECT_EQ(trim(" \t\n "), "");
  EXPECT_EQ(trim(""), "");
  // Not ASCII whitespace: kept (a no-break space is two UTF-8 bytes, neither a space).
  EXPECT_EQ(trim("\xc2\xa0x\xc2\xa0"), "\xc2\xa0x\xc2\xa0");
  EXPECT_EQ(trim(std::string_view("\0x\0", 3)), std::string_view("\0x\0", 3));
}

TEST(Strings, TrimReturnsAViewIntoItsArgument) {
  const std::string s = "  abc  ";
  const std::string_view t = trim(s);
  EXPECT_EQ(t.data(), s.data() + 2);
  EXPECT_EQ(t.size(), 3u);
}

TEST(Strings, RtrimKeepsLeadingWhitespace) {
  EXPECT_EQ(rtrim("  a b \r\n"), "  a b");
  EXPECT_EQ(rtrim("/repo\n"), "/repo");
  EXPECT_EQ(rtrim("\n\n"), "");
  EXPECT_EQ(rtrim(""), "");
}

TEST(Strings, MarkdownCellEscapesPipesAndJoinsLines) {
  EXPECT_EQ(markdown_cell("a|b\nc\r\nd"), "a\\|b c  d");
  EXPECT_EQ(markdown_cell(""), "");
  // Raw HTML from a key is shown, not rendered by the PR comment (issue 30).
  EXPECT_EQ(markdown_cell("<img src=x onerror=alert(1)>&"),
            "&lt;img src=x onerror=alert(1)&gt;&amp;");
  EXPECT_EQ(markdown_code("a|b`<c>"), "a\\|b'<c>");
}

TEST(Strings, LowerIsAsciiOnly) {
  EXPECT_EQ(lower("FP8 Auto-Dtype_Z"), "fp8 auto-dtype_z");
  EXPECT_EQ(lower("already lower 123 @[`{"), "already lower 123 @[`{");
  EXPECT_EQ(lower("\xc3\x84X"), "\xc3\x84x");  // "ÄX": the UTF-8 bytes are left alone
  EXPECT_EQ(lower(""), "");
}

TEST(Strings, JoinPutsTheSeparatorBetweenItems) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({"", "b", ""}, ","), ",b,");  // empty items still get their separators
  EXPECT_EQ(join({"a", "b"}, ""), "ab");
}

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,b,c", ','), (Fields{"a", "b", "c"}));
  EXPECT_EQ(split("a,,b", ','), (Fields{"a", "", "b"}));
  EXPECT_EQ(split(",a,", ','), (Fields{"", "a", ""}));
  EXPECT_EQ(split("a", ','), (Fields{"a"}));
  EXPECT_EQ(split("", ','), (Fields{""}));
  EXPECT_EQ(split(",", ','), (Fields{"", ""}));
  EXPECT_EQ(split(std::string_view("x\0y\0", 4), '\0'), (Fields{"x", "y", ""}));
}

TEST(Strings, SplitThenJoinRoundTrips) {
  for (const char* s : {"", ",", "a", "a,b", ",a,,b,"}) {
    EXPECT_EQ(join(split(s, ','), ","), std::string(s)) << s;
  }
}

TEST(Strings, PrintableEscapesControlCharactersAndCapsLength) {
  EXPECT_EQ(printable("plain"), "plain");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable("\x1b[2J"), "\\x1b[2J");  // a terminal escape is shown, not obeyed
  EXPECT_EQ(printable(std::string_view("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  EXPECT_EQ(printable(std::string(1000, 'a'), 10), "aaaaaaaaaa... (1000 bytes in all)");
  // "ä" is two bytes: a cut at byte 2 of "aä…" backs up to the character's start.
  EXPECT_EQ(printable("a\xc3\xa4" "bbbb", 2), "a... (7 bytes in all)");
  EXPECT_EQ(printable("\xc3\xa4"), "\xc3\xa4");  // UTF-8 is kept as it is
}

}  // namespace
}  // namespace ib

namespace ib {
namespace {

TEST(LineReader, LinesWithoutTheirEndingsNumberedFromOne) {
  LineReader r("a\r\n\nlast");
  std::string_view line;
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "a");
  EXPECT_EQ(r.number(), 1);
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "last");
  EXPECT_EQ(r.number(), 3);
  EXPECT_FALSE(r.next(line));
  LineReader empty("");
  EXPECT_FALSE(empty.next(line));
  LineReader one("x\n");
  ASSERT_TRUE(one.next(line));
  EXPECT_EQ(line, "x");
  EXPECT_FALSE(one.next(line));
}

}  // namespace
}  // namespace ib
