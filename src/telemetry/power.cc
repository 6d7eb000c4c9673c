#include "telemetry/power.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "core/strings.h"

namespace ib::telemetry {

namespace {

// ---- Lines and cells --------------------------------------------------------------------------

struct Line {
  int number = 0;         // 1-based
  std::string_view text;  // without the line end (\n or \r\n)
};

// `drop_partial`: a last line without its newline is left out. A monitor killed while writing
// leaves such a line, and a cut cell could still parse as a (wrong) number.
std::vector<Line> split_lines(std::string_view text, bool drop_partial) {
  std::vector<Line> lines;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    ++number;
    const size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      if (!drop_partial) lines.push_back({number, text.substr(start)});
      break;
    }
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({number, line});
    start = end + 1;
  }
  return lines;
}

// The cells of a CSV line, trimmed. Quoted cells ("a, b" with "" for a quote) are what Python's
// csv writer makes of a value with a comma, such as amd-smi's per-engine activity lists;
// nvidia-smi never quotes. nullopt for an unterminated quote.
std::optional<std::vector<std::string>> cells_of(std::string_view line) {
  std::vector<std::string> cells;
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string cell;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return std::nullopt;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        cell += line[i++];
      }
      const size_t comma = line.find(',', i);
      cell += std::string(
          trim(line.substr(i, comma == std::string_view::npos ? line.size() - i : comma - i)));
      i = comma == std::string_view::npos ? line.size() : comma;
    } else {
      const size_t comma = line.find(',', i);
      const size_t stop = comma == std::string_view::npos ? line.size() : comma;
      cell = std::string(trim(line.substr(i, stop - i)));
      i = stop;
    }
    cells.push_back(std::move(cell));
    if (i >= line.size()) return cells;
    ++i;  // the comma
  }
}

Error unterminated_quote(const Line& line) {
  return Error{fmt::format("line {}: a quoted cell is not terminated", line.number)};
}

// A header cell: "power.draw [W]" -> name "power.draw", unit "W".
struct Column {
  std::string header;  // as written, for messages
  std::string name;
  std::string unit;
};

Column column_of(const std::string& cell) {
  Column c{cell, cell, ""};
  const size_t open = cell.rfind(" [");
  if (open != std::string::npos && cell.back() == ']') {
    c.name = std::string(trim(std::string_view(cell).substr(0, open)));
    c.unit = cell.substr(open + 2, cell.size() - open - 3);
  }
  return c;
}

// Tokens the tools print instead of a number: nvidia-smi's bracketed ones ([N/A],
// [Not Supported], [Insufficient Permissions], [Unknown Error], ...), bare N/A (nvidia-smi's
// fabric.* and temperature.memory, amd-smi, rocm-smi), dmon's "-", and nothing at all.
bool is_absent(std::string_view cell) {
  if (cell.empty() || cell == "-") return true;
  if (cell.front() == '[' && cell.back() == ']') return true;
  const std::string l = lower(cell);
  return l == "n/a" || l == "na";
}

std::optional<double> parse_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string where(const Line& line, const Column& column) {
  return fmt::format("line {}, column {}", line.number, column.header);
}

// A numeric cell, "627.40 W" or "627.40"; a unit when written must be `unit`.
Expected<std::optional<double>> parse_cell(std::string_view cell, const Line& line,
                                           const Column& column, std::string_view unit) {
  if (is_absent(cell)) return std::optional<double>();
  std::string_view number = cell;
  std::string_view written_unit;
  const size_t space = cell.find(' ');
  if (space != std::string_view::npos) {
    number = cell.substr(0, space);
    written_unit = trim(cell.substr(space + 1));
  }
  const auto v = parse_double(number);
  if (!v) return Error{fmt::format("{}: \"{}\" is not a number", where(line, column), cell)};
  if (!written_unit.empty() && written_unit != unit) {
    return Error{fmt::format("{}: \"{}\" is in {}, expected {}", where(line, column), cell,
                             written_unit, unit.empty() ? "no unit" : unit)};
  }
  return std::optional<double>(*v);
}

// Where the PowerSample fields are in a row; -1 when absent.
struct Layout {
  std::vector<Column> columns;
  int timestamp = -1;
  int gpu = -1;
  int power = -1;
  int util = -1;
  int mem = -1;
  int clock = -1;
  int energy = -1;
  // Units the cells must have where they carry one.
  std::string power_unit = "W", util_unit = "%", mem_unit = "MiB", clock_unit = "MHz";
  std::string energy_unit = "J";
  double energy_divisor = 1;  // to joules

  int find(std::initializer_list<std::string_view> names) const {
    for (const std::string_view n : names) {
      for (size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].name == n) return static_cast<int>(i);
      }
    }
    return -1;
  }
};

// A header's declared unit must be the one the field is read in; the problem otherwise.
std::optional<std::string> header_unit_problem(const Layout& l, int index, std::string_view unit) {
  if (index < 0) return std::nullopt;
  const Column& c = l.columns[static_cast<size_t>(index)];
  if (c.unit.empty() || c.unit == unit) return std::nullopt;
  return fmt::format("column {}: unit {}, expected {}", c.header, c.unit, unit);
}

// One data row by `layout`. `read_gpu` turns the GPU cell into an index.
template <class ReadGpu>
Expected<PowerSample> parse_row(const Line& line, const std::vector<std::string>& cells,
                                const Layout& l, double utc_offset_s, ReadGpu read_gpu,
                                std::optional<double> fixed_time) {
  if (cells.size() != l.columns.size()) {
    return Error{fmt::format("line {}: {} cells, the header has {}", line.number, cells.size(),
                             l.columns.size())};
  }
  auto cell = [&](int i) -> std::string_view { return cells[static_cast<size_t>(i)]; };
  auto col = [&](int i) -> const Column& { return l.columns[static_cast<size_t>(i)]; };
  PowerSample s;
  if (fixed_time) {
    s.t_s = *fixed_time;
  } else {
    const auto t = parse_smi_timestamp(cell(l.timestamp), utc_offset_s);
    if (!t) {
      return Error{fmt::format("{}: \"{}\" is not a timestamp", where(line, col(l.timestamp)),
                               cell(l.timestamp))};
    }
    s.t_s = *t;
  }
  const std::optional<int> gpu = read_gpu(cell(l.gpu));
  if (!gpu) {
    return Error{
        fmt::format("{}: \"{}\" is not a GPU index", where(line, col(l.gpu)), cell(l.gpu))};
  }
  s.gpu = *gpu;
  struct Field {
    int index;
    const std::string& unit;
    std::optional<double> PowerSample::*member;
  };
  const Field fields[] = {{l.power, l.power_unit, &PowerSample::power_w},
                          {l.util, l.util_unit, &PowerSample::util_pct},
                          {l.mem, l.mem_unit, &PowerSample::mem_used_mib},
                          {l.clock, l.clock_unit, &PowerSample::sm_clock_mhz},
                          {l.energy, l.energy_unit, &PowerSample::energy_j}};
  for (const Field& f : fields) {
    if (f.index < 0) continue;
    auto v = parse_cell(cell(f.index), line, col(f.index), f.unit);
    if (!v.ok()) return v.error();
    s.*f.member = *v;
  }
  if (s.energy_j) *s.energy_j /= l.energy_divisor;
  return s;
}

std::optional<int> read_index(std::string_view cell) {
  const auto v = parse_int(cell);
  if (!v || *v < 0 || *v > 1'000'000) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<int> read_card(std::string_view cell) {
  if (cell.substr(0, 4) != "card") return std::nullopt;
  return read_index(cell.substr(4));
}

std::vector<Column> columns_of(const std::vector<std::string>& cells) {
  std::vector<Column> columns;
  for (const auto& c : cells) columns.push_back(column_of(c));
  return columns;
}

bool has_cell(const std::vector<std::string>& cells, std::string_view name) {
  return std::any_of(cells.begin(), cells.end(),
                     [&](const std::string& c) { return column_of(c).name == name; });
}

// ---- Time -------------------------------------------------------------------------------------

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int days_in_month(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// Exactly `n` digits at s[pos...].
std::optional<int> digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// "+HH:MM", "+HHMM" (and "Z" when `allow_z`) as seconds east of UTC.
std::optional<double> parse_offset(std::string_view s, bool allow_z) {
  if (allow_z && (s == "Z" || s == "z")) return 0.0;
  if (s.size() != 5 && s.size() != 6) return std::nullopt;
  if (s[0] != '+' && s[0] != '-') return std::nullopt;
  const auto h = digits(s, 1, 2);
  const size_t mpos = s.size() == 6 ? 4 : 3;
  if (s.size() == 6 && s[3] != ':') return std::nullopt;
  const auto m = digits(s, mpos, 2);
  if (!h || !m || *h > 23 || *m > 59) return std::nullopt;
  const double v = *h * 3600.0 + *m * 60.0;
  return s[0] == '-' ? -v : v;
}

// ---- Integration ------------------------------------------------------------------------------

struct Point {
  double t = 0;
  double p = 0;
  double e = 0;  // accumulator, where used
};

// Per GPU and time, the sum of the readings and their count.
using RawReadings = std::map<int, std::map<double, std::pair<Point, int>>>;

void add_reason(std::vector<PowerIssue>& reasons, std::string_view reason, std::string message) {
  for (auto& r : reasons) {
    if (r.reason == reason) {
      r.message += "; " + message;
      return;
    }
  }
  reasons.push_back({std::string(reason), std::move(message)});
}

// Linear interpolation at `t`. REQUIRES: points sorted by t, points.front().t <= t <=
// points.back().t.
double interpolate(const std::vector<Point>& points, double t) {
  auto right = std::lower_bound(points.begin(), points.end(), t,
                                [](const Point& p, double v) { return p.t < v; });
  if (right != points.end() && std::abs(right->t - t) <= 1e-9) return right->p;
  auto left = right - 1;
  const double f = (t - left->t) / (right->t - left->t);
  return left->p + f * (right->p - left->p);
}

double trapezoid(const std::vector<Point>& points) {
  double e = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    e += (points[i].t - points[i - 1].t) * (points[i].p + points[i - 1].p) / 2;
  }
  return e;
}

// The energy over [start, end]. REQUIRES: bracketed.
double integrate_window(const std::vector<Point>& points, double start, double end) {
  std::vector<Point> clipped;
  clipped.push_back({start, interpolate(points, start)});
  for (const Point& p : points) {
    if (p.t > start && p.t < end) clipped.push_back(p);
  }
  clipped.push_back({end, interpolate(points, end)});
  return trapezoid(clipped);
}

// Per GPU, sorted, readings at the same time averaged (InferenceX: some SMI versions stamp at a
// coarser resolution than they sample).
std::map<int, std::vector<Point>> by_gpu(const RawReadings& raw) {
  std::map<int, std::vector<Point>> out;
  for (const auto& [gpu, times] : raw) {
    auto& points = out[gpu];
    for (const auto& [t, sum] : times) {
      points.push_back({t, sum.first.p / sum.second, sum.first.e / sum.second});
    }
  }
  return out;
}

bool usable_power(const PowerSample& s) {
  return s.power_w && std::isfinite(*s.power_w) && *s.power_w >= 0;
}

void check_accumulators(const std::vector<PowerSample>& samples, const std::vector<int>& observed,
                        const IntegrateOptions& options, EnergyResult& r) {
  AccumulatorCheck& a = r.accumulator;
  a.tolerance = options.accumulator_tolerance;
  RawReadings raw;
  for (const PowerSample& s : samples) {
    if (!usable_power(s) || !s.energy_j || !std::isfinite(*s.energy_j) || !std::isfinite(s.t_s)) {
      continue;
    }
    auto& [sum, n] = raw[s.gpu][s.t_s];
    sum.p += *s.power_w;
    sum.e += *s.energy_j;
    ++n;
  }
  if (raw.empty()) return;
  const auto points = by_gpu(raw);
  double first = INFINITY, last = -INFINITY;
  for (const auto& [gpu, p] : points) {
    if (p.size() < 2) continue;
    const double delta = p.back().e - p.front().e;
    a.per_gpu_delta_j[gpu] = delta;
    a.integrated_gpu_ids.push_back(gpu);
    a.accumulator_delta_j += delta;
    a.integrated_stream_j += trapezoid(p);
    if (delta < 0) a.negative_delta_gpus.push_back(gpu);
    first = std::min(first, p.front().t);
    last = std::max(last, p.back().t);
  }
  for (const int gpu : observed) {
    if (!a.per_gpu_delta_j.contains(gpu)) a.unmatched_gpus.push_back(gpu);
  }
  a.available = !a.integrated_gpu_ids.empty();
  if (!a.available) return;
  a.stream_span_s = last - first;
  if (a.accumulator_delta_j > 0) {
    a.relative_error =
        std::abs(a.accumulator_delta_j - a.integrated_stream_j) / a.accumulator_delta_j;
  }
  a.within_tolerance =
      a.negative_delta_gpus.empty() && a.relative_error && *a.relative_error <= a.tolerance;
  if (!options.accumulator_decides_validity || a.within_tolerance) return;
  std::string message = fmt::format(
      "the energy accumulators counted {:.3f} J over {:.3f} s, the integrated power {:.3f} J",
      a.accumulator_delta_j, a.stream_span_s, a.integrated_stream_j);
  if (a.relative_error) {
    message +=
        fmt::format(" (relative error {:.4f}, tolerance {})", *a.relative_error, a.tolerance);
  }
  for (const int gpu : a.negative_delta_gpus) {
    message +=
        fmt::format("; gpu {}'s accumulator ended {:.3f} J below its start (a driver reload?)", gpu,
                    -a.per_gpu_delta_j[gpu]);
  }
  add_reason(r.reasons, "accumulator_mismatch", std::move(message));
}

// The window integrate_power works on and the largest allowed sample gap.
struct PowerWindow {
  double start = 0, end = 0;
  double gap = 0;                                   // IntegrateOptions::max_sample_gap_s
  double rel(double t) const { return t - start; }  // seconds from the window start
};

// Records what is wrong with the window and the options themselves; false when nothing can be
// integrated.
bool check_window(const PowerWindow& w, int expected_gpus, const IntegrateOptions& options,
                  std::vector<PowerIssue>& reasons) {
  const double start = w.start, end = w.end, gap = w.gap;
  if (!std::isfinite(start) || !std::isfinite(end) || end <= start) {
    add_reason(reasons, "invalid_benchmark_window",
               fmt::format("the window [{:.3f}, {:.3f}] does not end after it starts", start, end));
    return false;
  }
  if (expected_gpus <= 0) {
    add_reason(reasons, "invalid_expected_gpu_count",
               fmt::format("{} GPUs expected; the count must be positive", expected_gpus));
  }
  if (!std::isfinite(gap) || gap <= 0) {
    add_reason(reasons, "invalid_max_sample_gap",
               fmt::format("the largest allowed sample gap is {} s; it must be positive", gap));
    return false;
  }
  if (options.reported_duration_s) {
    // InferenceX: the measured (perf_counter) duration against the wall-clock window.
    const double wall = end - start, measured = *options.reported_duration_s;
    const double tolerance = std::max(0.5, 0.01 * wall);
    if (!std::isfinite(measured) || std::abs(measured - wall) > tolerance) {
      add_reason(reasons, "benchmark_duration_mismatch",
                 fmt::format("the window is {:.3f} s on the wall clock but {:.3f} s were "
                             "measured (tolerance {:.3f} s)",
                             wall, measured, tolerance));
    }
  }
  return true;
}

// Samples near the window: it and one gap either side (farther readings, from warm-up or
// another point, cannot matter and must not invalidate this one).
struct NearbySamples {
  RawReadings raw;  // the usable ones
  int in_range = 0, without_power = 0, bad_power = 0, without_gpu = 0, bad_time = 0;
  const PowerSample* first_without = nullptr;
  const PowerSample* first_bad = nullptr;
};

NearbySamples nearby_samples(const std::vector<PowerSample>& samples, const PowerWindow& w) {
  NearbySamples n;
  for (const PowerSample& s : samples) {
    if (!std::isfinite(s.t_s)) {
      ++n.bad_time;
      continue;
    }
    if (s.t_s < w.start - w.gap || s.t_s > w.end + w.gap) continue;
    ++n.in_range;
    if (!s.power_w) {
      if (!n.without_power++) n.first_without = &s;
      continue;
    }
    if (!usable_power(s)) {
      if (!n.bad_power++) n.first_bad = &s;
      continue;
    }
    if (s.gpu < 0) {
      ++n.without_gpu;
      continue;
    }
    auto& [sum, count] = n.raw[s.gpu][s.t_s];
    sum.p += *s.power_w;
    ++count;
  }
  return n;
}

// Records what is wrong with the samples near the window; false when no GPU can be integrated.
bool check_nearby(const NearbySamples& n, const PowerWindow& w, size_t all_samples,
                  std::vector<PowerIssue>& reasons) {
  if (n.bad_time > 0) {
    add_reason(reasons, "invalid_timestamp_sample",
               fmt::format("{} samples have a non-finite time", n.bad_time));
  }
  if (n.in_range > 0 && n.without_power == n.in_range) {
    add_reason(reasons, "power_column_missing",
               fmt::format("none of the {} samples near the window has a power reading (no "
                           "power column, or every cell absent)",
                           n.in_range));
    return false;
  }
  if (n.without_power > 0) {
    add_reason(reasons, "invalid_power_sample",
               fmt::format("{} samples near the window have no power reading ([N/A] or the "
                           "like), the first gpu {} at window start {:+.3f} s",
                           n.without_power, n.first_without->gpu, w.rel(n.first_without->t_s)));
  }
  if (n.bad_power > 0) {
    add_reason(
        reasons, "invalid_power_sample",
        fmt::format("{} samples near the window have a negative or non-finite power, "
                    "the first gpu {} at window start {:+.3f} s: {} W",
                    n.bad_power, n.first_bad->gpu, w.rel(n.first_bad->t_s), *n.first_bad->power_w));
  }
  if (n.without_gpu > 0) {
    add_reason(reasons, "gpu_identity_missing",
               fmt::format("{} samples near the window have no GPU index", n.without_gpu));
  }
  if (n.raw.empty()) {
    add_reason(reasons, "no_usable_power_samples",
               fmt::format("no usable power sample within {} s of the window [{:.3f}, {:.3f}] "
                           "({} samples in all)",
                           w.gap, w.start, w.end, all_samples));
    return false;
  }
  return true;
}

// The observed GPUs, ascending; records a count other than `expected_gpus` (when positive).
std::vector<int> observed_gpus(const std::map<int, std::vector<Point>>& points, int expected_gpus,
                               std::vector<PowerIssue>& reasons) {
  std::vector<int> observed;
  for (const auto& [gpu, p] : points) observed.push_back(gpu);
  if (expected_gpus > 0 && static_cast<int>(observed.size()) != expected_gpus) {
    std::vector<std::string> ids;
    for (const int g : observed) ids.push_back(std::to_string(g));
    add_reason(reasons, "expected_gpu_count_mismatch",
               fmt::format("{} GPUs expected, {} observed ({})", expected_gpus, observed.size(),
                           join(ids, ", ")));
  }
  return observed;
}

// What is missing at the window's edges of a GPU whose samples do not bracket it.
std::string unbracketed_message(const std::vector<Point>& p, const PowerWindow& w) {
  std::string message;
  if (p.front().t > w.start) {
    message =
        fmt::format("the first sample is {:.3f} s after the window start", p.front().t - w.start);
  }
  if (p.back().t < w.end) {
    if (!message.empty()) message += ", ";
    message += fmt::format("the last sample is {:.3f} s before the window end", w.end - p.back().t);
  }
  return message;
}

// The largest gap between consecutive samples and the index of the sample before it.
struct LargestGap {
  double gap_s = 0;
  size_t at = 0;
};

// From the last sample at or before the start to the first at or after the end. REQUIRES:
// bracketed.
LargestGap largest_gap(const std::vector<Point>& p, const PowerWindow& w) {
  const auto by_t = [](const Point& a, double t) { return a.t < t; };
  const size_t left =
      static_cast<size_t>(std::upper_bound(p.begin(), p.end(), w.start,
                                           [](double t, const Point& a) { return t < a.t; }) -
                          p.begin() - 1);
  const size_t right =
      static_cast<size_t>(std::lower_bound(p.begin(), p.end(), w.end, by_t) - p.begin());
  LargestGap g{0, left};
  for (size_t i = left + 1; i <= right; ++i) {
    if (p[i].t - p[i - 1].t > g.gap_s) {
      g.gap_s = p[i].t - p[i - 1].t;
      g.at = i - 1;
    }
  }
  return g;
}

// One GPU's energy over the window (set only when its samples bracket it) and its issues, which
// are also recorded in `reasons`.
GpuEnergy integrate_gpu(int gpu, const std::vector<Point>& p, const PowerWindow& w,
                        std::vector<PowerIssue>& reasons) {
  GpuEnergy g;
  g.gpu = gpu;
  g.samples = static_cast<int>(p.size());
  auto issue = [&](std::string_view reason, std::string message) {
    g.issues.emplace_back(reason);
    add_reason(reasons, reason, fmt::format("gpu {}: {}", gpu, message));
  };
  if (p.size() < 2) {
    issue("insufficient_power_samples",
          fmt::format("{} sample near the window, at window start {:+.3f} s", p.size(),
                      w.rel(p.front().t)));
  } else if (p.front().t > w.start || p.back().t < w.end) {
    issue("benchmark_window_not_bracketed", unbracketed_message(p, w));
  } else {
    const LargestGap largest = largest_gap(p, w);
    g.max_gap_s = largest.gap_s;
    if (largest.gap_s > w.gap) {
      issue("sampling_gap_exceeded",
            fmt::format("{:.3f} s between the samples at window start {:+.3f} s and {:+.3f} s "
                        "(limit {} s)",
                        largest.gap_s, w.rel(p[largest.at].t), w.rel(p[largest.at + 1].t), w.gap));
    }
    g.energy_j = integrate_window(p, w.start, w.end);
  }
  return g;
}

// Integrates every observed GPU into `r.gpus`, and the totals when all of them were.
void integrate_gpus(const std::map<int, std::vector<Point>>& points, const PowerWindow& w,
                    EnergyResult& r) {
  double total = 0;
  bool all_integrated = true;
  for (const auto& [gpu, p] : points) {
    GpuEnergy g = integrate_gpu(gpu, p, w, r.reasons);
    if (g.energy_j) {
      total += *g.energy_j;
    } else {
      all_integrated = false;
    }
    r.gpus.push_back(std::move(g));
  }
  if (all_integrated) {
    r.total_energy_j = total;
    r.avg_total_power_w = total / (w.end - w.start);
    r.avg_power_per_gpu_w = total / (w.end - w.start) / static_cast<double>(r.gpus.size());
  }
}

}  // namespace

// ---- Public: time -----------------------------------------------------------------------------

std::optional<double> parse_smi_timestamp(std::string_view text, double utc_offset_s) {
  const std::string_view s = trim(text);
  if (s.empty()) return std::nullopt;
  // A bare epoch number (amd-smi's int(time.time()); milliseconds from other samplers).
  if (s.find_first_not_of("0123456789.-") == std::string_view::npos) {
    const auto v = parse_double(s);
    if (!v) return std::nullopt;
    return *v > 1e12 ? *v / 1000 : *v;
  }
  // YYYY?MM?DD?HH:MM:SS with '/' and ' ' (nvidia-smi) or '-' and 'T'/' ' (ISO-8601).
  const auto year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
  const auto hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = digits(s, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  const char sep = s[4];
  if ((sep != '/' && sep != '-') || s[7] != sep || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  if (s[10] != ' ' && !(sep == '-' && (s[10] == 'T' || s[10] == 't'))) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  size_t pos = 19;
  double fraction = 0;
  if (pos < s.size() && s[pos] == '.') {
    const size_t begin = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == begin) return std::nullopt;
    fraction = *parse_double(fmt::format("0.{}", s.substr(begin, pos - begin)));
  }
  double offset = utc_offset_s;
  if (pos < s.size()) {
    if (sep != '-') return std::nullopt;  // nvidia-smi prints no zone
    const auto zone = parse_offset(s.substr(pos), true);
    if (!zone) return std::nullopt;
    offset = *zone;
  }
  const int64_t days = days_from_civil(*year, *month, *day);
  const double local = static_cast<double>(days * 86400 + *hour * 3600 + *minute * 60 + *second);
  return local + fraction - offset;
}

Expected<double> parse_utc_offset(std::string_view text) {
  const std::string_view s = trim(text);
  if (const auto v = parse_offset(s, false)) return *v;
  return Error{fmt::format("UTC offset \"{}\" is not of the form +HHMM or +HH:MM", s)};
}

// ---- Public: parsers --------------------------------------------------------------------------

namespace {

// What tells nvidia-smi's and amd-smi's CSV apart; read_smi_csv reads either.
struct SmiCsvDialect {
  // Whether a row is a header (it names its columns) rather than data.
  bool (*is_header)(const std::vector<std::string>& cells);
  // Finds the fields among `l.columns` and names the log's power and energy columns; what is
  // wrong with the columns otherwise.
  std::optional<std::string> (*set_layout)(Layout& l, PowerLog& log);
  // Data lines before the first header: skipped (a preamble), or else read by `query`.
  bool skip_preamble = false;
  // nvidia-smi's --query-gpu fields, the columns of output written with --format=csv,noheader.
  const std::vector<std::string>* query = nullptr;
  std::string_view no_header;  // the error when the text has no header row
  double utc_offset_s = 0;
};

// A header names its columns; a data row's index and timestamp cells are numbers.
bool is_nvidia_smi_header(const std::vector<std::string>& cells) {
  return has_cell(cells, "index") || has_cell(cells, "timestamp");
}

std::optional<std::string> set_nvidia_smi_layout(Layout& l, PowerLog& log) {
  l.timestamp = l.find({"timestamp"});
  l.gpu = l.find({"index"});
  if (l.timestamp < 0) return "no timestamp column";
  if (l.gpu < 0) return "no index column";
  // power.draw is what InferenceX queries; the others where only they were asked for.
  l.power = l.find({"power.draw"});
  if (l.power < 0) l.power = l.find({"power.draw.average"});
  if (l.power < 0) l.power = l.find({"power.draw.instant"});
  l.util = l.find({"utilization.gpu"});
  l.mem = l.find({"memory.used"});
  l.clock = l.find({"clocks.current.sm", "clocks.sm"});
  const std::pair<int, std::string_view> units[] = {
      {l.power, l.power_unit}, {l.util, l.util_unit}, {l.mem, l.mem_unit}, {l.clock, l.clock_unit}};
  for (const auto& [index, unit] : units) {
    if (auto problem = header_unit_problem(l, index, unit)) return problem;
  }
  if (l.power >= 0) log.power_column = l.columns[static_cast<size_t>(l.power)].header;
  return std::nullopt;
}

bool is_amd_smi_header(const std::vector<std::string>& cells) {
  return cells[0] == "timestamp" || cells[0] == "gpu";
}

std::optional<std::string> set_amd_smi_layout(Layout& l, PowerLog& log) {
  l.timestamp = l.find({"timestamp"});
  l.gpu = l.find({"gpu"});
  if (l.timestamp < 0) return "no timestamp column (amd-smi writes one only in watch mode, -w)";
  if (l.gpu < 0) return "no gpu column";
  l.power = l.find({"socket_power"});
  l.util = l.find({"gfx_activity"});
  l.energy = l.find({"total_energy_consumption"});
  if (l.power >= 0) log.power_column = "socket_power";
  if (l.energy >= 0) log.energy_column = "total_energy_consumption";
  return std::nullopt;
}

// The layout of output without a header row (nvidia-smi --format=csv,noheader): the --query-gpu
// fields'.
Status set_headerless_layout(const Line& line, const SmiCsvDialect& d, Layout& l, PowerLog& log) {
  if (d.query == nullptr || d.query->empty()) {
    return Error{
        fmt::format("line {}: no header row; output written with --format=csv,noheader needs the "
                    "--query-gpu fields",
                    line.number)};
  }
  for (const auto& q : *d.query) l.columns.push_back(column_of(std::string(trim(q))));
  if (auto problem = d.set_layout(l, log)) {
    return Error{fmt::format("the --query-gpu fields: {}", *problem)};
  }
  return Status::Ok();
}

// The CSV of a sampler in watch mode: one header (repeated copies of it are skipped: a restarted
// monitor, or amd-smi's before every watch iteration), then one row per GPU reading. Blank lines
// are skipped; a last line without its newline is dropped (see split_lines).
Expected<PowerLog> read_smi_csv(std::string_view text, const SmiCsvDialect& d) {
  PowerLog log;
  Layout l;
  std::string header_line;  // trimmed, to skip repeats
  int header_number = 0;
  for (const Line& line : split_lines(text, true)) {
    const std::string_view trimmed = trim(line.text);
    if (trimmed.empty()) continue;
    const auto parsed = cells_of(trimmed);
    if (!parsed) return unterminated_quote(line);
    const std::vector<std::string>& cells = *parsed;
    const bool is_header = d.is_header(cells);
    if (l.columns.empty()) {
      if (is_header) {
        l.columns = columns_of(cells);
        if (auto problem = d.set_layout(l, log)) {
          return Error{fmt::format("line {}: {}", line.number, *problem)};
        }
        header_line = std::string(trimmed);
        header_number = line.number;
        continue;
      }
      if (d.skip_preamble) continue;
      if (Status set = set_headerless_layout(line, d, l, log); !set.ok()) return set.error();
    } else if (is_header) {
      if (trimmed == header_line) continue;
      return Error{fmt::format("line {}: a header different from the one on line {}", line.number,
                               header_number)};
    }
    auto s = parse_row(line, cells, l, d.utc_offset_s, read_index, std::nullopt);
    if (!s.ok()) return s.error();
    log.samples.push_back(*s);
  }
  if (l.columns.empty()) return Error{std::string(d.no_header)};
  return log;
}

}  // namespace

Expected<PowerLog> parse_nvidia_smi_csv(std::string_view text, const NvidiaSmiOptions& options) {
  return read_smi_csv(text, {.is_header = is_nvidia_smi_header,
                             .set_layout = set_nvidia_smi_layout,
                             .skip_preamble = false,
                             .query = &options.query,
                             .no_header = "no header row and no samples",
                             .utc_offset_s = options.utc_offset_s});
}

Expected<PowerLog> parse_amd_smi_csv(std::string_view text, double utc_offset_s) {
  // amd-smi prints a preamble before the header (InferenceX keeps from `^timestamp,`).
  return read_smi_csv(text, {.is_header = is_amd_smi_header,
                             .set_layout = set_amd_smi_layout,
                             .skip_preamble = true,
                             .query = nullptr,
                             .no_header = "no header row (a line starting with \"timestamp,\")",
                             .utc_offset_s = utc_offset_s});
}

Expected<PowerLog> parse_rocm_smi_csv(std::string_view text, double t_s) {
  PowerLog log;
  Layout l;
  l.energy_unit = "";
  l.power_unit = "";
  l.energy_divisor = 1e6;  // µJ
  for (const Line& line : split_lines(text, false)) {
    const std::string_view trimmed = trim(line.text);
    if (l.columns.empty()) {
      const auto cells = cells_of(trimmed);
      if (!cells || (*cells)[0] != "device") continue;  // banners before the table
      // Names such as "Average Graphics Package Power (W)" are whole: no [unit] to split.
      for (const auto& c : *cells) l.columns.push_back({c, c, ""});
      l.gpu = l.find({"device"});
      l.power = l.find(
          {"Current Socket Graphics Package Power (W)", "Average Graphics Package Power (W)"});
      l.energy = l.find({"Accumulated Energy (uJ)"});
      if (l.power >= 0) log.power_column = l.columns[static_cast<size_t>(l.power)].header;
      if (l.energy >= 0) log.energy_column = l.columns[static_cast<size_t>(l.energy)].header;
      continue;
    }
    if (trimmed.empty()) break;  // system-level `name, value` lines may follow
    const auto cells = cells_of(trimmed);
    if (!cells) return unterminated_quote(line);
    auto s = parse_row(line, *cells, l, 0, read_card, t_s);
    if (!s.ok()) return s.error();
    log.samples.push_back(*s);
  }
  if (l.columns.empty()) return Error{"no header row (a line starting with \"device,\")"};
  return log;
}

// ---- Public: integration ----------------------------------------------------------------------

bool EnergyResult::has_reason(std::string_view reason) const {
  return std::any_of(reasons.begin(), reasons.end(),
                     [&](const PowerIssue& r) { return r.reason == reason; });
}

EnergyResult integrate_power(const std::vector<PowerSample>& samples, double window_start_unix,
                             double window_end_unix, int expected_gpus,
                             const IntegrateOptions& options) {
  EnergyResult r;
  r.window_start_unix = window_start_unix;
  r.window_end_unix = window_end_unix;
  r.expected_gpus = expected_gpus;
  r.reported_duration_s = options.reported_duration_s;
  r.accumulator.tolerance = options.accumulator_tolerance;
  const PowerWindow w{window_start_unix, window_end_unix, options.max_sample_gap_s};
  auto finish = [&] {
    r.power_valid = r.reasons.empty();
    return r;
  };
  if (!check_window(w, expected_gpus, options, r.reasons)) return finish();
  const NearbySamples nearby = nearby_samples(samples, w);
  if (!check_nearby(nearby, w, samples.size(), r.reasons)) return finish();
  const auto points = by_gpu(nearby.raw);
  const std::vector<int> observed = observed_gpus(points, expected_gpus, r.reasons);
  integrate_gpus(points, w, r);
  check_accumulators(samples, observed, options, r);
  return finish();
}

// ---- Public: per token and JSON ---------------------------------------------------------------

EnergyPerToken energy_per_token(double energy_j, const TokenCounts& counts) {
  auto per = [&](int64_t n) -> std::optional<double> {
    if (n <= 0) return std::nullopt;
    return energy_j / static_cast<double>(n);
  };
  return {per(counts.requests), per(counts.input_tokens), per(counts.output_tokens),
          per(counts.input_tokens + counts.output_tokens)};
}

boost::json::object energy_to_json(const EnergyResult& result, const TokenCounts& counts) {
  namespace json = boost::json;
  json::object o;
  o["power_valid"] = result.power_valid;
  json::array reasons;
  for (const PowerIssue& r : result.reasons) {
    reasons.push_back(json::object{{"reason", r.reason}, {"message", r.message}});
  }
  o["reasons"] = std::move(reasons);
  o["integration_method"] = kIntegrationMethod;
  json::object window{{"start_time_unix", result.window_start_unix},
                      {"end_time_unix", result.window_end_unix},
                      {"integration_duration_s", result.duration_s()}};
  if (result.reported_duration_s) window["reported_duration_s"] = *result.reported_duration_s;
  o["benchmark_window"] = std::move(window);
  o["expected_gpu_count"] = result.expected_gpus;
  o["observed_gpu_count"] = result.gpus.size();
  json::array ids;
  json::object counts_by_gpu, gaps, energies, issues;
  for (const GpuEnergy& g : result.gpus) {
    const std::string key = std::to_string(g.gpu);
    ids.push_back(g.gpu);
    counts_by_gpu[key] = g.samples;
    if (g.max_gap_s) gaps[key] = *g.max_gap_s;
    if (g.energy_j) energies[key] = *g.energy_j;
    if (!g.issues.empty()) {
      json::array list;
      for (const auto& i : g.issues) list.push_back(json::string(i));
      issues[key] = std::move(list);
    }
  }
  o["observed_gpu_ids"] = std::move(ids);
  o["per_gpu_sample_counts"] = std::move(counts_by_gpu);
  o["per_gpu_max_sample_gap_s"] = std::move(gaps);
  o["per_gpu_energy_j"] = std::move(energies);
  o["device_issues"] = std::move(issues);

  const AccumulatorCheck& a = result.accumulator;
  json::object acc{{"available", a.available}, {"tolerance", a.tolerance}};
  if (a.available) {
    acc["accumulator_delta_j"] = a.accumulator_delta_j;
    acc["integrated_stream_j"] = a.integrated_stream_j;
    acc["relative_error"] = a.relative_error ? json::value(*a.relative_error) : json::value();
    acc["within_tolerance"] = a.within_tolerance;
    json::object deltas;
    for (const auto& [gpu, d] : a.per_gpu_delta_j) deltas[std::to_string(gpu)] = d;
    acc["per_gpu_delta_j"] = std::move(deltas);
    auto list = [](const std::vector<int>& v) {
      json::array out;
      for (const int g : v) out.push_back(g);
      return out;
    };
    acc["integrated_gpu_ids"] = list(a.integrated_gpu_ids);
    acc["unmatched_gpus"] = list(a.unmatched_gpus);
    acc["negative_delta_gpus"] = list(a.negative_delta_gpus);
    acc["stream_span_s"] = a.stream_span_s;
  }
  o["accumulator_check"] = std::move(acc);

  // The figures only when they can be trusted (InferenceX writes them only when valid).
  if (result.power_valid && result.total_energy_j) {
    const double e = *result.total_energy_j;
    o["total_gpu_energy_j"] = e;
    o["avg_total_gpu_power_w"] = *result.avg_total_power_w;
    o["avg_power_w"] = *result.avg_power_per_gpu_w;
    const EnergyPerToken per = energy_per_token(e, counts);
    const std::pair<const char*, std::optional<double>> figures[] = {
        {"joules_per_successful_query", per.joules_per_request},
        {"joules_per_input_token", per.joules_per_input_token},
        {"joules_per_output_token", per.joules_per_output_token},
        {"joules_per_total_token", per.joules_per_total_token}};
    for (const auto& [key, value] : figures) {
      if (value) o[key] = *value;
    }
  }
  return o;
}

}  // namespace ib::telemetry
