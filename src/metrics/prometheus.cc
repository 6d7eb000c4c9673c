#include "metrics/prometheus.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/strings.h"

namespace ib::metrics {

namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_label_start(char c) {
  return is_name_start(c) && c != ':';
}
bool is_label_char(char c) {
  return is_name_char(c) && c != ':';
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::optional<MetricType> parse_type(std::string_view word) {
  if (word == "counter") return MetricType::kCounter;
  if (word == "gauge") return MetricType::kGauge;
  if (word == "histogram") return MetricType::kHistogram;
  if (word == "summary") return MetricType::kSummary;
  if (word == "untyped") return MetricType::kUntyped;
  return std::nullopt;
}

// A sample value as Go's strconv.ParseFloat reads it (what Prometheus uses): decimal or
// exponent notation, and NaN / Inf / Infinity with an optional sign, case-insensitively.
std::optional<double> parse_value(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::string_view body = text;
  bool negative = false;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  const std::string word = lower(body);
  if (word == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (word == "inf" || word == "infinity") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  // Decimal only: strtod would also read hex floats, which no exposition writes.
  if (text.find_first_of("xX") != std::string_view::npos) return std::nullopt;
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_timestamp(std::string_view text) {
  int64_t v = 0;
  const char* first = text.data();
  if (!text.empty() && text[0] == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || first == ptr) return std::nullopt;
  return v;
}

// HELP text: \\ and \n are the only escapes; any other backslash is kept as written.
std::string unescape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == 'n')) {
      out += text[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

class LineParser {
 public:
  LineParser(std::string_view line, int number) : s_(line), line_(number) {}

  Status sample(Sample& out) {
    size_t start = pos_;
    if (pos_ >= s_.size() || !is_name_start(s_[pos_])) {
      return fail(fmt::format("expected a metric name, got '{}'", rest()));
    }
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    out.name = std::string(s_.substr(start, pos_ - start));
    skip_blanks();
    if (pos_ < s_.size() && s_[pos_] == '{') {
      ++pos_;
      if (auto st = labels(out); !st) return st;
    }
    skip_blanks();
    const std::string_view value = word();
    if (value.empty()) return fail(fmt::format("{} has no value", out.name));
    const std::optional<double> v = parse_value(value);
    if (!v) return fail(fmt::format("value '{}' of {} is not a number", value, out.name));
    out.value = *v;
    skip_blanks();
    const std::string_view ts = word();
    if (!ts.empty()) {
      out.timestamp_ms = parse_timestamp(ts);
      if (!out.timestamp_ms) {
        return fail(
            fmt::format("timestamp '{}' of {} is not an integer (milliseconds)", ts, out.name));
      }
    }
    skip_blanks();
    if (pos_ < s_.size()) {
      return fail(fmt::format("unexpected '{}' after the sample of {}", rest(), out.name));
    }
    std::sort(out.labels.begin(), out.labels.end());
    for (size_t i = 1; i < out.labels.size(); ++i) {
      if (out.labels[i].first == out.labels[i - 1].first) {
        return fail(fmt::format("label {} appears twice in {}", out.labels[i].first, out.name));
      }
    }
    return Status::Ok();
  }

  Error fail(std::string message) const {
    return Error{fmt::format("line {}: {}", line_, message)};
  }

 private:
  Status labels(Sample& out) {
    while (true) {
      skip_blanks();
      if (pos_ >= s_.size()) return fail(fmt::format("labels of {} are not closed", out.name));
      if (s_[pos_] == '}') {
        ++pos_;
        return Status::Ok();
      }
      if (!is_label_start(s_[pos_])) {
        return fail(fmt::format("expected a label name in {}, got '{}'", out.name, rest()));
      }
      const size_t start = pos_;
      while (pos_ < s_.size() && is_label_char(s_[pos_])) ++pos_;
      std::string name(s_.substr(start, pos_ - start));
      skip_blanks();
      if (pos_ >= s_.size() || s_[pos_] != '=') {
        return fail(fmt::format("expected '=' after label {} of {}", name, out.name));
      }
      ++pos_;
      skip_blanks();
      if (pos_ >= s_.size() || s_[pos_] != '"') {
        return fail(fmt::format("label value of {} in {} must be quoted", name, out.name));
      }
      ++pos_;
      std::string value;
      bool closed = false;
      while (pos_ < s_.size()) {
        const char c = s_[pos_++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          value += c;
          continue;
        }
        if (pos_ >= s_.size()) break;
        const char e = s_[pos_++];
        if (e == '\\' || e == '"') {
          value += e;
        } else if (e == 'n') {
          value += '\n';
        } else {
          return fail(fmt::format("invalid escape '\\{}' in label {} of {}", e, name, out.name));
        }
      }
      if (!closed) {
        return fail(fmt::format("label value of {} in {} is not terminated", name, out.name));
      }
      out.labels.emplace_back(std::move(name), std::move(value));
      skip_blanks();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') continue;
      if (pos_ >= s_.size()) return fail(fmt::format("labels of {} are not closed", out.name));
      return fail(fmt::format("expected ',' or '}}' after label {} of {}", out.labels.back().first,
                              out.name));
    }
  }

  void skip_blanks() {
    while (pos_ < s_.size() && is_blank(s_[pos_])) ++pos_;
  }
  std::string_view word() {
    const size_t start = pos_;
    while (pos_ < s_.size() && !is_blank(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  std::string_view rest() const {
    std::string_view r = s_.substr(std::min(pos_, s_.size()));
    return r.size() > 40 ? r.substr(0, 40) : r;
  }

  std::string_view s_;
  int line_;
  size_t pos_ = 0;
};

// The family of a sample and its type, per Scrape::type_of.
const Family* family_of(const Scrape& s, std::string_view name) {
  if (auto it = s.families.find(std::string(name)); it != s.families.end()) return &it->second;
  struct Suffix {
    std::string_view text;
    MetricType a, b;
  };
  static constexpr Suffix kSuffixes[] = {
      {"_bucket", MetricType::kHistogram, MetricType::kHistogram},
      {"_sum", MetricType::kHistogram, MetricType::kSummary},
      {"_count", MetricType::kHistogram, MetricType::kSummary},
      {"_total", MetricType::kCounter, MetricType::kCounter},
      {"_created", MetricType::kCounter, MetricType::kCounter},
  };
  for (const Suffix& x : kSuffixes) {
    if (!ends_with(name, x.text)) continue;
    auto it = s.families.find(std::string(name.substr(0, name.size() - x.text.size())));
    if (it != s.families.end() && (it->second.type == x.a || it->second.type == x.b)) {
      return &it->second;
    }
  }
  return nullptr;
}

}  // namespace

std::string_view to_string(MetricType type) {
  switch (type) {
    case MetricType::kUntyped:
      return "untyped";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
  }
  return "untyped";
}

const std::string* Sample::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

MetricType Scrape::type_of(std::string_view sample_name) const {
  const Family* f = family_of(*this, sample_name);
  return f == nullptr ? MetricType::kUntyped : f->type;
}

Expected<Scrape> parse_prometheus(std::string_view text) {
  Scrape out;
  std::map<std::string, bool> typed;  // families with a # TYPE line
  LineReader lines(text);
  std::string_view line;
  while (lines.next(line)) {
    const int number = lines.number();
    size_t first = 0;
    while (first < line.size() && is_blank(line[first])) ++first;
    line.remove_prefix(first);
    if (line.empty()) continue;

    if (line[0] == '#') {
      // "# HELP name text" and "# TYPE name type"; anything else is a comment.
      std::string_view rest = line.substr(1);
      while (!rest.empty() && is_blank(rest[0])) rest.remove_prefix(1);
      auto keyword = [&](std::string_view k) {
        return rest.substr(0, 4) == k && (rest.size() == 4 || is_blank(rest[4]));
      };
      const bool help = keyword("HELP");
      const bool type = keyword("TYPE");
      if (!help && !type) continue;
      rest.remove_prefix(4);
      while (!rest.empty() && is_blank(rest[0])) rest.remove_prefix(1);
      size_t n = 0;
      while (n < rest.size() && is_name_char(rest[n])) ++n;
      if (n == 0 || !is_name_start(rest[0]) || (n < rest.size() && !is_blank(rest[n]))) {
        return Error{
            fmt::format("line {}: # {} needs a metric name", number, help ? "HELP" : "TYPE")};
      }
      const std::string name(rest.substr(0, n));
      rest.remove_prefix(n);
      while (!rest.empty() && is_blank(rest[0])) rest.remove_prefix(1);
      Family& family = out.families[name];
      if (help) {
        family.help = unescape_help(rest);
        continue;
      }
      while (!rest.empty() && is_blank(rest.back())) rest.remove_suffix(1);
      const std::optional<MetricType> t = parse_type(rest);
      if (!t) {
        return Error{
            fmt::format("line {}: unknown type '{}' for {} (counter, gauge, histogram, "
                        "summary or untyped)",
                        number, rest, name)};
      }
      if (typed[name]) return Error{fmt::format("line {}: a second # TYPE for {}", number, name)};
      typed[name] = true;
      family.type = *t;
      continue;
    }

    LineParser parser(line, number);
    Sample sample;
    if (auto st = parser.sample(sample); !st) return st.error();
    const Family* family = family_of(out, sample.name);
    if (family != nullptr && family->type == MetricType::kHistogram &&
        ends_with(sample.name, "_bucket")) {
      const std::string* le = sample.label("le");
      if (le == nullptr) {
        return parser.fail(fmt::format("histogram bucket {} has no le label", sample.name));
      }
      if (!parse_value(*le)) {
        return parser.fail(fmt::format("le=\"{}\" of {} is not a number", *le, sample.name));
      }
    }
    if (family != nullptr && family->type == MetricType::kSummary &&
        out.families.count(sample.name) > 0 && sample.label("quantile") == nullptr) {
      return parser.fail(fmt::format("summary sample {} has no quantile label", sample.name));
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

std::optional<double> sum_samples(const Scrape& scrape, std::string_view name,
                                  const Labels& match) {
  std::optional<double> total;
  for (const Sample& s : scrape.samples) {
    if (s.name != name) continue;
    bool matches = true;
    for (const auto& [k, v] : match) {
      const std::string* have = s.label(k);
      if (have == nullptr || *have != v) {
        matches = false;
        break;
      }
    }
    if (!matches) continue;
    total = total.value_or(0.0) + s.value;
  }
  return total;
}

std::string_view to_string(PrefixCacheSource source) {
  switch (source) {
    case PrefixCacheSource::kNone:
      return "none";
    case PrefixCacheSource::kVllm:
      return "vllm";
    case PrefixCacheSource::kVllmGpu:
      return "vllm_gpu";
    case PrefixCacheSource::kSglangTokens:
      return "sglang_tokens";
    case PrefixCacheSource::kSglangRealtime:
      return "sglang_realtime";
    case PrefixCacheSource::kSglangGauge:
      return "sglang_gauge";
  }
  return "none";
}

PrefixCacheCounters read_prefix_cache(const Scrape& scrape) {
  PrefixCacheCounters c;
  auto pair = [&](PrefixCacheSource source, std::string_view queries, std::string_view hits) {
    const std::optional<double> q = sum_samples(scrape, queries);
    const std::optional<double> h = sum_samples(scrape, hits);
    if (!q || !h) return false;
    c.source = source;
    c.queries = *q;
    c.hits = *h;
    return true;
  };
  if (pair(PrefixCacheSource::kVllm, "vllm:prefix_cache_queries_total",
           "vllm:prefix_cache_hits_total")) {
    return c;
  }
  if (pair(PrefixCacheSource::kVllmGpu, "vllm:gpu_prefix_cache_queries_total",
           "vllm:gpu_prefix_cache_hits_total")) {
    return c;
  }
  // Counted per finished request, so a scrape right after the last response includes it (the
  // scheduler's realtime counters lag by up to one log interval).
  if (pair(PrefixCacheSource::kSglangTokens, "sglang:prompt_tokens_total",
           "sglang:cached_tokens_total")) {
    return c;
  }
  const std::optional<double> compute =
      sum_samples(scrape, "sglang:realtime_tokens_total", {{"mode", "prefill_compute"}});
  const std::optional<double> cached =
      sum_samples(scrape, "sglang:realtime_tokens_total", {{"mode", "prefill_cache"}});
  if (compute && cached) {
    c.source = PrefixCacheSource::kSglangRealtime;
    c.queries = *compute + *cached;
    c.hits = *cached;
    return c;
  }
  // One gauge per scheduler (tp/dp rank); their mean stands for the server's rate.
  int n = 0;
  double sum = 0;
  for (const Sample& s : scrape.samples) {
    if (s.name != "sglang:cache_hit_rate" || std::isnan(s.value)) continue;
    sum += s.value;
    ++n;
  }
  if (n > 0) {
    c.source = PrefixCacheSource::kSglangGauge;
    c.gauge = sum / n;
  }
  return c;
}

std::optional<double> prefix_hit_rate(const PrefixCacheCounters& before,
                                      const PrefixCacheCounters& after) {
  if (after.source == PrefixCacheSource::kSglangGauge) return after.gauge;
  if (after.source == PrefixCacheSource::kNone || before.source != after.source) {
    return std::nullopt;
  }
  const double dq = after.queries - before.queries;
  const double dh = after.hits - before.hits;
  if (!(dq > 0) || dh < 0) return std::nullopt;
  return dh / dq;
}

}  // namespace ib::metrics
