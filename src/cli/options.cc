#include "cli/options.h"

#include <fmt/format.h>

#include <boost/url/parse.hpp>
#include <charconv>
#include <cmath>
#include <system_error>

#include "core/strings.h"
#include "store/pg.h"

namespace ib::cli {

namespace fs = std::filesystem;

namespace {

// What a message repeats of a value from the command line: escaped and short.
std::string shown(std::string_view text) { return "'" + printable(text, 40) + "'"; }
// A path is the point of its message: kept whole up to a generous cap.
std::string shown_path(std::string_view path) { return "'" + printable(path, 400) + "'"; }

}  // namespace

template <class T>
std::optional<T> parse_integer(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const bool negative = text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  // Out of the range of T, or a '-' for an unsigned T.
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

template std::optional<int> parse_integer<int>(std::string_view);
template std::optional<int64_t> parse_integer<int64_t>(std::string_view);
template std::optional<uint16_t> parse_integer<uint16_t>(std::string_view);
template std::optional<uint64_t> parse_integer<uint64_t>(std::string_view);

std::optional<double> parse_real(std::string_view text) {
  if (text.empty()) return std::nullopt;
  // Only the characters of a decimal number: this refuses nan, inf and hex ("0x10") before
  // from_chars sees them.
  for (char c : text) {
    const bool ok = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == 'e' || c == 'E' ||
                    c == '+';
    if (!ok) return std::nullopt;
  }
  if (text.front() == '+') return std::nullopt;
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string bound_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  return fmt::format("{:g}", v);
}

CLI::Validator integer_in(int64_t min, int64_t max) {
  const std::string rule = fmt::format("an integer from {} to {}", min, max);
  CLI::Validator v(
      [=](std::string& text) -> std::string {
        auto value = parse_integer<int64_t>(text);
        if (!value || *value < min || *value > max) {
          return fmt::format("must be {}, got {}", rule, text.empty() ? "nothing" : shown(text));
        }
        text = std::to_string(*value);  // what CLI11 converts: plain decimal (it reads "010" as 8)
        return "";
      },
      fmt::format("{}..{}", min, max));
  v.name(kRangeValidatorName);
  return v;
}

CLI::Validator integer_list(int64_t min, int64_t max) {
  CLI::Validator v(
      [=](std::string& text) -> std::string {
        std::vector<std::string> items = split(text, ',');
        for (auto& item : items) {
          auto value = parse_integer<int64_t>(item);
          if (!value || *value < min || *value > max) {
            if (items.size() == 1) {
              return fmt::format("must be an integer from {} to {} (or a list of them separated "
                                 "by commas), got {}",
                                 min, max, text.empty() ? "nothing" : shown(text));
            }
            return fmt::format("must be integers from {} to {} separated by commas, got {} in {}",
                               min, max, item.empty() ? "an empty item" : shown(item),
                               shown(text));
          }
          item = std::to_string(*value);
        }
        text = join(items, ",");
        return "";
      },
      fmt::format("{}..{},...", min, max));
  v.name(kRangeValidatorName);
  return v;
}

CLI::Validator unsigned_integer() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        auto value = parse_integer<uint64_t>(text);
        if (!value) {
          return fmt::format("must be an integer from 0 to {}, got {}",
                             std::numeric_limits<uint64_t>::max(),
                             text.empty() ? "nothing" : shown(text));
        }
        text = std::to_string(*value);
        return "";
      },
      "0..2^64-1");
  v.name(kRangeValidatorName);
  return v;
}

CLI::Validator real_in(double min, double max, bool min_open) {
  std::string rule;
  if (std::isinf(max)) {
    rule = min == 0 ? (min_open ? "a positive number" : "zero or a positive number")
                    : fmt::format("a number {} {}", min_open ? "above" : "of at least",
                                  bound_text(min));
  } else if (min_open) {
    rule = fmt::format("a number above {} and at most {}", bound_text(min), bound_text(max));
  } else {
    rule = fmt::format("a number from {} to {}", bound_text(min), bound_text(max));
  }
  const std::string desc =
      fmt::format("{}{}, {}]", min_open ? "(" : "[", bound_text(min), bound_text(max));
  CLI::Validator v(
      [=](std::string& text) -> std::string {
        auto value = parse_real(text);
        const bool ok = value && (min_open ? *value > min : *value >= min) && *value <= max;
        if (!ok) {
          return fmt::format("must be {}, got {}", rule, text.empty() ? "nothing" : shown(text));
        }
        // Shortest text that reads back as the same double.
        text = fmt::format("{}", *value);
        return "";
      },
      desc);
  v.name(kRangeValidatorName);
  return v;
}

Expected<std::string> normalize_endpoint_url(std::string_view url) {
  if (url.empty()) return Error{"an empty URL; give http://HOST:PORT"};
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    return Error{fmt::format("{} is not a URL ({}); give http://HOST:PORT", shown(url),
                             parsed.error().message())};
  }
  const auto& u = *parsed;
  if (u.scheme() != "http") {
    return Error{fmt::format("{}: scheme '{}' is not supported; give http://HOST:PORT", shown(url),
                             printable(u.scheme(), 20))};
  }
  if (u.encoded_host().empty()) {
    return Error{fmt::format("{} has no host; give http://HOST:PORT", shown(url))};
  }
  if (u.has_userinfo()) {
    return Error{fmt::format("{}: user info in the URL is not supported", shown(url))};
  }
  if (u.has_query() || u.has_fragment()) {
    return Error{fmt::format("{}: a base URL has no query or fragment", shown(url))};
  }
  if (u.has_port()) {
    auto port = parse_integer<int64_t>(u.port());
    if (!port || *port < 1 || *port > 65535) {
      return Error{fmt::format("{}: the port must be an integer from 1 to 65535, got '{}'",
                               shown(url), printable(u.port(), 20))};
    }
  }
  std::string out(url);
  auto strip_slashes = [&] {
    while (out.size() > 7 && out.back() == '/') out.pop_back();
  };
  strip_slashes();
  // The path, not a host named like it: only strip "/v1" that follows the authority.
  if (!u.encoded_path().empty() && out.size() >= 3 && out.compare(out.size() - 3, 3, "/v1") == 0) {
    out.resize(out.size() - 3);
    strip_slashes();
  }
  return out;
}

CLI::Validator endpoint_url() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        auto normalized = normalize_endpoint_url(text);
        if (!normalized) return normalized.error().message;
        text = std::move(*normalized);
        return "";
      },
      "URL");
  v.name("ib-url");
  return v;
}

CLI::Validator output_file(bool parent_must_exist) {
  CLI::Validator v(
      [parent_must_exist](std::string& text) -> std::string {
        if (text.empty()) return "an empty file name; name the file to write";
        std::error_code ec;
        const fs::path p(text);
        if (fs::is_directory(p, ec)) {
          return fmt::format("{} is a folder; name the file to write", shown_path(text));
        }
        const fs::path parent = p.parent_path();
        if (parent_must_exist && !parent.empty() && !fs::is_directory(parent, ec)) {
          return fmt::format("{}: {} {}", shown_path(text), shown_path(parent.string()),
                             fs::exists(parent, ec) ? "is a file, not a folder"
                                                    : "is a folder that does not exist");
        }
        return "";
      },
      "FILE");
  v.name("ib-output");
  return v;
}

CLI::Validator database_to_write() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        std::string why = database_file()(text);
        if (!why.empty() || store::is_postgres_url(text)) return why;
        return output_file(false)(text);
      },
      "FILE");
  v.name("ib-database-out");
  return v;
}

CLI::Validator database_file() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        if (text.empty()) return "an empty file name; name the results database";
        const size_t scheme = text.find("://");
        if (scheme != std::string::npos && !store::is_postgres_url(text)) {
          return fmt::format(
              "'{}' is a URL of no store this build has: give an SQLite file's path, or a "
              "postgresql:// URL (docs/store.md)",
              printable(store::redact_pg_url(text), 80));
        }
        return "";
      },
      "FILE");
  v.name("ib-database");
  return v;
}

CLI::Validator folder_to_write() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        if (text.empty()) return "an empty folder name";
        std::error_code ec;
        if (fs::exists(text, ec) && !fs::is_directory(text, ec)) {
          return fmt::format("{} is a file, not a folder", shown_path(text));
        }
        return "";
      },
      "DIR");
  v.name("ib-folder");
  return v;
}

CLI::Validator input_file() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        std::error_code ec;
        if (text.empty()) return "an empty file name";
        if (fs::is_directory(text, ec)) {
          return fmt::format("{} is a folder, not a file", shown_path(text));
        }
        if (!fs::exists(text, ec)) return fmt::format("{}: no such file", shown_path(text));
        return "";
      },
      "FILE");
  v.name("ib-input");
  return v;
}

CLI::Validator existing_path() {
  CLI::Validator v(
      [](std::string& text) -> std::string {
        std::error_code ec;
        if (text.empty()) return "an empty path";
        if (!fs::exists(text, ec)) {
          return fmt::format("{}: no such file or folder", shown_path(text));
        }
        return "";
      },
      "PATH");
  v.name("ib-input");
  return v;
}

std::optional<std::string> same_output_files(
    const std::vector<std::pair<std::string, std::string>>& option_and_path) {
  // weakly_canonical resolves what exists ("." and "..", symlinks) and keeps the rest as written;
  // equivalent() also catches two names of one existing file (hard links).
  auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::equivalent(a, b, ec) && !ec) return true;
    ec.clear();
    const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
    if (ec) return false;
    const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
    return !ec && ca == cb;
  };
  for (size_t i = 0; i < option_and_path.size(); ++i) {
    for (size_t j = i + 1; j < option_and_path.size(); ++j) {
      const auto& [oa, pa] = option_and_path[i];
      const auto& [ob, pb] = option_and_path[j];
      if (pa.empty() || pb.empty() || !same(pa, pb)) continue;
      // A device or a pipe is written through, not replaced: two outputs to /dev/null are fine.
      std::error_code ec;
      const auto kind = fs::status(pa, ec).type();
      if (kind == fs::file_type::character || kind == fs::file_type::fifo) continue;
      return fmt::format("{} and {} name the same file ({}); the second would overwrite the "
                         "first: give each its own file",
                         oa, ob, shown_path(pa));
    }
  }
  return std::nullopt;
}

fs::path in_repo(const std::string& repo, const std::string& path) {
  const fs::path p(path);
  if (p.is_absolute() || repo.empty()) return p;
  return fs::path(repo) / p;
}

std::vector<std::string> options_without_range(CLI::App& app) {
  std::vector<std::string> out;
  auto visit = [&](auto& self, CLI::App& a, const std::string& prefix) -> void {
    for (CLI::Option* opt : a.get_options()) {
      // The raw type CLI11 derived from the variable (get_type_name adds validators' texts).
      std::string type = opt->get_type_name();
      type = type.substr(0, type.find(':'));
      const bool numeric = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 ||
                           type.rfind("FLOAT", 0) == 0;
      if (!numeric) continue;
      try {
        opt->get_validator(kRangeValidatorName);
      } catch (const CLI::OptionNotFound&) {
        out.push_back(prefix + opt->get_name());
      }
    }
    for (CLI::App* sub : a.get_subcommands({})) {
      self(self, *sub, prefix + sub->get_name() + " ");
    }
  };
  visit(visit, app, "");
  return out;
}

CLI::Option* add_api_key_option(CLI::App* app, std::string& key) {
  return app
      ->add_option("--api-key", key,
                   "The server's API key, sent as 'Authorization: Bearer KEY' (default: "
                   "$OPENAI_API_KEY); never printed or stored")
      ->envname("OPENAI_API_KEY")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.empty() ? std::string("must not be empty") : std::string();
          },
          "KEY", "non-empty"));
}

}  // namespace ib::cli
