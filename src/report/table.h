// Text tables for the terminal: the one column printer every command uses (plan's rows, the sweep's
// points, runs, presets), so columns line up the same way everywhere.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ib::report {

enum class Align { kLeft, kRight };

struct Column {
  std::string title;
  Align align = Align::kRight;
  size_t width = 0;      // minimum width; 0: the title's
  size_t max_width = 0;  // > 0: longer cells are cut to max_width-1 chars + "~"
};

/// A table with a header line and rows of text cells.
///
/// Widths count UTF-8 code points, not bytes, so "→" or "×" take one column. Columns are separated
/// by two spaces; lines never end in spaces (a left-aligned last column is not padded, and the
/// spaces after trailing empty cells are dropped). A column is never narrower than its title or its
/// `width`. `max_width` cuts row cells, never the title. Cells beyond the last column are ignored.
/// Control characters in cells (ESC, CR, newlines, ...) are printed as escapes (ib::printable), so
/// a value from a recipe or a server cannot move the cursor or fake a row.
class Table {
 public:
  explicit Table(std::vector<Column> columns);

  void add_row(std::vector<std::string> cells);  // fewer cells than columns: the rest empty
  size_t rows() const;

  /// Header line, then every row, widths fitted to the content (at least Column::width), columns
  /// separated by two spaces, no trailing spaces, each line ending in '\n'.
  std::string render() const;

  /// Streaming (rows printed as they arrive, e.g. a sweep): widths are the columns' minimum widths
  /// only (never the content), so header and rows line up without knowing later rows.
  /// A cell wider than its column (after `max_width`) pushes the rest of its line right.
  std::string header_line() const;
  std::string format_row(const std::vector<std::string>& cells) const;

 private:
  // One line: `cells` (one per column) padded to `widths`, ending in '\n'.
  std::string line(const std::vector<std::string>& cells, const std::vector<size_t>& widths) const;
  std::vector<std::string> titles() const;
  // Resizes `cells` to one per column and cuts them to their column's max_width.
  void fit(std::vector<std::string>& cells) const;
  // Per column: max(width, the title's width).
  std::vector<size_t> min_widths() const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // fitted: one cell per column, cut
};

/// Number formatting helpers for cells: fixed decimals, "-" for NaN.
/// fixed(3.14159, 2) == "3.14"; fixed(NaN, 2) == "-"; infinities print as "inf" / "-inf".
/// A negative `decimals` counts as 0.
std::string fixed(double v, int decimals);

/// The display width of UTF-8 text in columns: its code points (continuation bytes not counted).
/// Every code point counts as one column (no East Asian wide or combining-mark handling).
size_t text_width(std::string_view text);

}  // namespace ib::report
