#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/strings.h"

namespace ib::report {

namespace {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The byte length of the first `n` code points of `text` (all of it when it has fewer).
size_t prefix_bytes(std::string_view text, size_t n) {
  size_t i = 0;
  for (size_t points = 0; i < text.size(); ++points) {
    if (points == n) return i;
    ++i;
    while (i < text.size() && is_continuation(text[i])) ++i;
  }
  return i;
}

}  // namespace

size_t text_width(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !is_continuation(c); }));
}

std::string fixed(double v, int decimals) {
  if (std::isnan(v)) return "-";
  return fmt::format("{:.{}f}", v, std::max(decimals, 0));
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  fit(cells);
  rows_.push_back(std::move(cells));
}

size_t Table::rows() const {
  return rows_.size();
}

std::string Table::render() const {
  std::vector<size_t> widths = min_widths();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], text_width(row[i]));
  }
  std::string out = line(titles(), widths);
  for (const auto& row : rows_) out += line(row, widths);
  return out;
}

std::string Table::header_line() const {
  return line(titles(), min_widths());
}

std::string Table::format_row(const std::vector<std::string>& cells) const {
  std::vector<std::string> fitted = cells;
  fit(fitted);
  return line(fitted, min_widths());
}

std::string Table::line(const std::vector<std::string>& cells,
                        const std::vector<size_t>& widths) const {
  std::string out;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) out += "  ";
    const std::string_view cell = cells[i];
    const size_t w = text_width(cell);
    const size_t pad = widths[i] > w ? widths[i] - w : 0;
    if (columns_[i].align == Align::kRight) {
      out.append(pad, ' ');
      out += cell;
    } else {
      out += cell;
      if (i + 1 < columns_.size()) out.append(pad, ' ');
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  out += '\n';
  return out;
}

std::vector<std::string> Table::titles() const {
  std::vector<std::string> out;
  out.reserve(columns_.size());
  for (const auto& c : columns_) out.push_back(c.title);
  return out;
}

void Table::fit(std::vector<std::string>& cells) const {
  cells.resize(columns_.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    // Cells come from recipes, databases and servers: a control character (ESC, CR, a newline)
    // would move the cursor or break the row, so each is shown as an escape ("\x1b"), escaped
    // before widths are measured.
    if (std::any_of(cells[i].begin(), cells[i].end(), is_control)) {
      cells[i] = printable(cells[i], std::string::npos);
    }
    const size_t max = columns_[i].max_width;
    if (max > 0 && text_width(cells[i]) > max) {
      cells[i].resize(prefix_bytes(cells[i], max - 1));
      cells[i] += '~';
    }
  }
}

std::vector<size_t> Table::min_widths() const {
  std::vector<size_t> out;
  out.reserve(columns_.size());
  for (const auto& c : columns_) out.push_back(std::max(c.width, text_width(c.title)));
  return out;
}

}  // namespace ib::report
