// Option checks shared by every command, so that no numeric option, URL or output path of any
// command is accepted unchecked. CLI11's own conversions are lax: integers are read with base 0
// ("0x10" is 16, "010" is 8), a value too large for int64 saturates, "-1" wraps into an unsigned
// variable, a double takes "nan", "inf" and "1e400" (as inf), and CLI::Range lets nan through.
// The validators here parse the text strictly, check it against a range the option's variable can
// hold, and rewrite it in canonical decimal before CLI11 converts it, so what CLI11 reads is what
// was checked. A failed check is a usage error (exit 2) naming the option and its valid range:
//   --concurrency: must be an integer from 1 to 100000, got '3000000000'
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/expected.h"

namespace ib::cli {

/// Sane limits for inputs that size memory or connections (checked before anything is
/// allocated): requests in one point, concurrent requests, tokens of one prompt or output.
inline constexpr int64_t kMaxRequests = 10'000'000;
inline constexpr int64_t kMaxConcurrency = 100'000;
inline constexpr int64_t kMaxTokens = 16'777'216;  // 2^24: beyond any served context length
/// The longest duration or timeout in seconds an option takes (about 11.6 days).
inline constexpr double kMaxSeconds = 1'000'000;
inline constexpr double kMaxRequestRate = 1'000'000;  // requests per second
inline constexpr double kMaxTimeScale = 1'000'000;    // --time-scale K (speed-up of a schedule)
inline constexpr int64_t kMaxGpus = 100'000;
inline constexpr int64_t kMaxTraces = 1'000'000;
inline constexpr int64_t kMaxWarmupsPerLane = 10'000;
inline constexpr int64_t kMaxRunning = 1'000'000;     // serve-sim --max-num-seqs
inline constexpr int64_t kMaxGpuBlocks = 1 << 22;     // serve-sim --num-gpu-blocks-override

/// The name CLI11 knows the validators below by; options_without_range() looks for it.
inline constexpr const char* kRangeValidatorName = "ib-range";

/// Strict decimal integer: an optional '-' then digits, nothing else (no '+', spaces, "0x", or
/// exponent); nullopt when malformed or out of the range of T.
template <class T>
std::optional<T> parse_integer(std::string_view text);
extern template std::optional<int> parse_integer<int>(std::string_view);
extern template std::optional<int64_t> parse_integer<int64_t>(std::string_view);
extern template std::optional<uint16_t> parse_integer<uint16_t>(std::string_view);
extern template std::optional<uint64_t> parse_integer<uint64_t>(std::string_view);

/// Strict finite decimal number ("2", "-0.5", "1e-3", ".5"); nullopt for nan, inf, hex, values
/// beyond double's range ("1e400"), underflow to zero of a nonzero text, and trailing text.
std::optional<double> parse_real(std::string_view text);

/// A bound as a person writes it: 1000000, 0.5, 1e+12 (never 300 digits).
std::string bound_text(double v);

/// An integer option in [min, max]. The range is checked against the text and the text
/// rewritten in canonical decimal; `min`/`max` must fit the option's variable type (see
/// add_integer, which checks that at compile time).
CLI::Validator integer_in(int64_t min, int64_t max);
CLI::Validator unsigned_integer();  // any uint64: 0 to 18446744073709551615
/// Every command's seeds take one range: 0 to 2^63 - 1 (what every JSON reader keeps exactly).
inline constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();
/// A comma-separated list of integers in [min, max] ("1,4,16"), checked whole: an empty item
/// ("1,,4", "4,") is an error. Rewritten as canonical decimals joined by commas.
CLI::Validator integer_list(int64_t min, int64_t max);

/// A real-number option: finite, and min < v (min_open) or min <= v, and v <= max.
CLI::Validator real_in(double min, double max, bool min_open = false);
inline CLI::Validator positive_real(double max) { return real_in(0, max, true); }

/// Adds an integer option whose range is checked against its variable's type at compile time.
template <class T>
CLI::Option* add_integer(CLI::App* app, const std::string& name, T& var,
                         const std::string& help, int64_t min, int64_t max) {
  static_assert(std::is_integral_v<T>, "add_integer is for integer variables");
  if (min > max || (std::is_unsigned_v<T> && min < 0) ||
      static_cast<uint64_t>(max) > static_cast<uint64_t>(std::numeric_limits<T>::max()) ||
      (std::is_signed_v<T> &&
       min < static_cast<int64_t>(std::numeric_limits<T>::min()))) {
    throw std::logic_error("add_integer: the range of " + name + " does not fit its variable");
  }
  return app->add_option(name, var, help)->transform(integer_in(min, max));
}

/// "--endpoint": an http:// base URL with a host and a port in 1..65535 (none given: 80), no
/// query, fragment or user info. Normalized once, here: trailing slashes and one trailing "/v1"
/// are removed, since every request path (/v1/models, /v1/completions, ...) is added to it, so
/// http://h:8000, http://h:8000/, http://h:8000/v1 and http://h:8000/v1/ all mean the server at
/// http://h:8000. A prefix (http://h/proxy) is kept.
Expected<std::string> normalize_endpoint_url(std::string_view url);
CLI::Validator endpoint_url();

/// For an option naming a file to write: an empty name or an existing folder is an error, and so
/// is (with `parent_must_exist`) a parent folder that does not exist.
CLI::Validator output_file(bool parent_must_exist = true);
/// For an option naming a folder that is created when missing: an existing file is an error.
CLI::Validator folder_to_write();
/// An existing file (not a folder) to read.
CLI::Validator input_file();
/// An existing file or folder to read (recipes, traces).
CLI::Validator existing_path();

/// --db: an SQLite file path. A URL (postgresql://...) is refused with what this build stores,
/// instead of becoming a file under a folder named "postgresql:".
CLI::Validator database_file();
/// A results database a command writes: database_file(), and for a file, output_file(false).
CLI::Validator database_to_write();

/// Output paths of one command, each with the option it came from. Two that name the same file
/// (compared after resolving ".", "..", symlinks and hard links) are a usage error: the second
/// write would replace the first. Empty paths (not given) are skipped. Returns the message.
std::optional<std::string> same_output_files(
    const std::vector<std::pair<std::string, std::string>>& option_and_path);

/// A path given on the command line of a git-reading command: absolute as it is, relative from
/// the repository directory `repo` (-C), as git -C does.
std::filesystem::path in_repo(const std::string& repo, const std::string& path);

/// Every option (of `app` and its subcommands, as "command --option") whose value is a number
/// (CLI11 type INT, UINT or FLOAT) and that has no range check from this file. Empty when
/// every command checks every number (a unit test asserts that).
std::vector<std::string> options_without_range(CLI::App& app);

/// --api-key KEY (default: $OPENAI_API_KEY): the server's API key, sent as "Authorization:
/// Bearer KEY" with every request, the models probe and the server's metrics scrapes; never
/// printed or stored (the caller registers it with add_secret()). An empty value is refused.
CLI::Option* add_api_key_option(CLI::App* app, std::string& key);

}  // namespace ib::cli
