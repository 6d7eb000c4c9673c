// Errors as values: expected failures such as bad input, server errors or a missing
// file are returned as Error, never thrown across module boundaries.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ib {

/// What kind of failure an Error is; the command line maps it to the exit code in one place
/// (cli/commands.h, exit_code): usage and input errors exit 2, I/O and run failures 1, an
/// interrupt 130 (or 128 + the signal).
enum class ErrorKind {
  kRun,          // the benchmark or an operation on a server failed (the default)
  kUsage,        // a command-line option or combination that cannot work
  kInput,        // a file or value given to the tool is malformed (recipe, trace, result file)
  kIo,           // reading or writing a file or the database failed
  kInterrupted,  // stopped by a signal (what was measured is kept)
};

/// A human-readable failure description. Messages name the offending input (file, field, value).
struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::kRun;
};

inline Error usage_error(std::string message) { return {std::move(message), ErrorKind::kUsage}; }
inline Error input_error(std::string message) { return {std::move(message), ErrorKind::kInput}; }
inline Error io_error(std::string message) { return {std::move(message), ErrorKind::kIo}; }
/// The same error as another kind (a recipe's parse error is a usage error of `--recipe`).
inline Error with_kind(Error e, ErrorKind kind) {
  e.kind = kind;
  return e;
}

/// Either a value of T or an Error. A tiny stand-in for C++23 std::expected.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  /// REQUIRES: ok().
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

  /// REQUIRES: !ok().
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

/// Success or an Error, for operations without a result value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status Ok() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace ib
