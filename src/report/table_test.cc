#include "report/table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace ib::report {
namespace {

TEST(Table, RenderFitsWidthsToTheContent) {
  Table t({{"NAME", Align::kLeft}, {"CONC"}, {"TPUT", Align::kRight}});
  t.add_row({"llama", "4", "123.4"});
  t.add_row({"a-much-longer-name", "128", "9.0"});
  EXPECT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.render(),
            "NAME                CONC   TPUT\n"
            "llama                  4  123.4\n"
            "a-much-longer-name   128    9.0\n");
}

TEST(Table, LeftAlignedLastColumnIsNotPadded) {
  Table t({{"KEY", Align::kLeft}, {"NOTE", Align::kLeft}});
  t.add_row({"a", "short"});
  t.add_row({"b", "a longer note"});
  EXPECT_EQ(t.render(),
            "KEY  NOTE\n"
            "a    short\n"
            "b    a longer note\n");
}

TEST(Table, NoLineEndsInSpaces) {
  Table t({{"A", Align::kLeft}, {"B", Align::kLeft}, {"C", Align::kRight}});
  t.add_row({"x"});             // fewer cells: the rest empty
  t.add_row({"x", "", ""});     // empty cells at the end
  t.add_row({"", "", "wide"});  // right-aligned last column is padded on the left only
  const std::string out = t.render();
  EXPECT_EQ(out,
            "A  B     C\n"
            "x\n"
            "x\n"
            "      wide\n");
  EXPECT_EQ(out.find(" \n"), std::string::npos);
}

TEST(Table, EmptyTableIsTheHeader) {
  Table t({{"A", Align::kLeft, 5}, {"B"}});
  EXPECT_EQ(t.rows(), 0u);
  EXPECT_EQ(t.render(), "A      B\n");
  EXPECT_EQ(t.render(), t.header_line());
}

TEST(Table, MinimumWidthAppliesWhenContentIsNarrower) {
  Table t({{"N", Align::kRight, 6}, {"S", Align::kLeft, 4}, {"T", Align::kLeft}});
  t.add_row({"1", "ab", "z"});
  EXPECT_EQ(t.render(),
            "     N  S     T\n"
            "     1  ab    z\n");
}

TEST(Table, WidthBelowTheTitleIsTheTitles) {
  Table t({{"LONG-TITLE", Align::kRight, 3}, {"X", Align::kLeft}});
  EXPECT_EQ(t.header_line(), "LONG-TITLE  X\n");
  EXPECT_EQ(t.format_row({"7", "y"}), "         7  y\n");
}

TEST(Table, MaxWidthCutsCellsWithATilde) {
  Table t({{"MODEL", Align::kLeft, 0, 8}, {"V"}});
  t.add_row({"exactly8", "1"});
  t.add_row({"longer-than-eight", "2"});
  EXPECT_EQ(t.render(),
            "MODEL     V\n"
            "exactly8  1\n"
            "longer-~  2\n");
}

TEST(Table, MaxWidthNeverCutsTheTitle) {
  Table t({{"FINGERPRINT", Align::kLeft, 0, 4}, {"V"}});
  t.add_row({"abcdef", "1"});
  EXPECT_EQ(t.render(),
            "FINGERPRINT  V\n"
            "abc~         1\n");
}

TEST(Table, MaxWidthOneLeavesOnlyTheTilde) {
  Table t({{"A", Align::kLeft, 0, 1}, {"B", Align::kLeft}});
  t.add_row({"abc", "d"});
  EXPECT_EQ(t.render(), "A  B\n~  d\n");
}

TEST(Table, WidthCountsCodePointsNotBytes) {
  // "→" and "×" are three and two bytes in UTF-8 but one column each.
  Table t({{"CHANGE", Align::kLeft}, {"N"}});
  t.add_row({"1→2", "4×8"});
  t.add_row({"10→20", "1"});
  EXPECT_EQ(t.render(),
            "CHANGE    N\n"
            "1→2     4×8\n"
            "10→20     1\n");
}

TEST(Table, MaxWidthCutsOnCodePointBoundaries) {
  Table t({{"A", Align::kLeft, 0, 3}, {"B", Align::kLeft}});
  t.add_row({"→→→→", "x"});
  t.add_row({"a×b×", "y"});
  EXPECT_EQ(t.render(),
            "A    B\n"
            "→→~  x\n"
            "a×~  y\n");
}

TEST(Table, StreamingUsesMinimumWidthsOnly) {
  Table t({{"CONC", Align::kRight, 6}, {"STATUS", Align::kLeft, 8}, {"TPUT", Align::kRight, 8}});
  EXPECT_EQ(t.header_line(), "  CONC  STATUS        TPUT\n");
  EXPECT_EQ(t.format_row({"4", "ok", "1234.5"}), "     4  ok          1234.5\n");
  EXPECT_EQ(t.format_row({"1024", "failed", "-"}), "  1024  failed           -\n");
  // Too wide for its column: the rest of that line moves right (widths never follow content).
  EXPECT_EQ(t.format_row({"4", "interrupted", "1.0"}), "     4  interrupted       1.0\n");
  EXPECT_EQ(t.format_row({"4"}), "     4\n");
  EXPECT_EQ(t.rows(), 0u);  // format_row does not add a row
}

TEST(Table, StreamingAppliesMaxWidth) {
  Table t({{"NAME", Align::kLeft, 6, 6}, {"V"}});
  EXPECT_EQ(t.format_row({"abcdefgh", "1"}), "abcde~  1\n");
}

TEST(Table, ExtraCellsAreIgnored) {
  Table t({{"A", Align::kLeft}, {"B", Align::kLeft}});
  t.add_row({"1", "2", "3"});
  EXPECT_EQ(t.render(), "A  B\n1  2\n");
  EXPECT_EQ(t.format_row({"1", "2", "3"}), "1  2\n");
}

TEST(Table, DefaultAlignmentIsRight) {
  Table t({{"A"}, {"B"}});
  t.add_row({"123", "45"});
  EXPECT_EQ(t.render(),
            "  A   B\n"
            "123  45\n");
}

TEST(TextWidth, CountsCodePoints) {
  EXPECT_EQ(text_width(""), 0u);
  EXPECT_EQ(text_width("abc"), 3u);
  EXPECT_EQ(text_width("→"), 1u);
  EXPECT_EQ(text_width("4×8"), 3u);
  EXPECT_EQ(text_width("\xf0\x9f\x9a\x80"), 1u);  // a four-byte code point
}

TEST(Fixed, FormatsFixedDecimalsAndDashForNan) {
  EXPECT_EQ(fixed(3.14159, 2), "3.14");
  EXPECT_EQ(fixed(2.6, 0), "3");
  EXPECT_EQ(fixed(1234.5, 1), "1234.5");
  EXPECT_EQ(fixed(0.0, 3), "0.000");
  EXPECT_EQ(fixed(-1.26, 1), "-1.3");
  EXPECT_EQ(fixed(7.0, -1), "7");
  EXPECT_EQ(fixed(std::numeric_limits<double>::quiet_NaN(), 2), "-");
  EXPECT_EQ(fixed(-std::numeric_limits<double>::quiet_NaN(), 2), "-");
  EXPECT_EQ(fixed(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(fixed(-std::numeric_limits<double>::infinity(), 2), "-inf");
}

TEST(Table, ControlCharactersInCellsAreEscapedAndMeasuredEscaped) {
  // A config key with an escape sequence or a newline must not reach the terminal raw: it would
  // clear the screen or fake a row.
  Table t({{"KEY", Align::kLeft}, {"N"}});
  t.add_row({"a\x1b[2J", "1"});
  t.add_row({"b\nfake row", "2"});
  EXPECT_EQ(t.render(),
            "KEY          N\n"
            "a\\x1b[2J     1\n"
            "b\\nfake row  2\n");
  EXPECT_EQ(t.format_row({"\r", "3"}), "\\r   3\n");
  // Cut after escaping, so the cut never splits an escape from its column.
  Table narrow({{"KEY", Align::kLeft, 0, 5}});
  narrow.add_row({"\x1b\x1b\x1b"});
  EXPECT_EQ(narrow.render(), "KEY\n\\x1b~\n");
}

}  // namespace
}  // namespace ib::report
