// The objective of `inferbench tune --objective EXPR` (docs/tune.md): an arithmetic expression
// over metric names, e.g. `tput_per_gpu`, `tput_per_gpu / median_ttft_ms` or
// `min(tput_per_gpu, 2 * output_tput_per_gpu)`. Parsed once into a flat postfix program, so
// evaluating it per point is a loop without recursion, and a hostile text can neither throw nor
// overflow the stack. Pure: which names are metrics, and their values, come from the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace ib::tune {

class Formula {
 public:
  static constexpr size_t kMaxLength = 1000;  // characters of text
  static constexpr int kMaxDepth = 100;       // nested parentheses and min/max calls

  /// Grammar (whitespace allowed between tokens):
  ///   expr    := term {('+' | '-') term}
  ///   term    := unary {('*' | '/') unary}
  ///   unary   := ['-'] primary
  ///   primary := NUMBER | NAME | ('min' | 'max') '(' expr ',' expr ')' | '(' expr ')'
  ///   NUMBER  := decimal, optional fraction and exponent: 2, 0.5, .5, 1e3, 2.5E-2
  ///   NAME    := [A-Za-z_][A-Za-z0-9_.]*, a metric: `known_metric(NAME)` must hold
  /// Errors name the option, the text and the byte offset:
  ///   --objective 'tput_per_gpu/foo': unknown metric 'foo' at offset 13
  static Expected<Formula> parse(std::string_view text,
                                 const std::function<bool(std::string_view)>& known_metric);

  /// The value with each metric's value from `value` (called once per distinct metric). NaN when
  /// a metric is NaN or infinite, on a division by zero, or when any step is not finite: a point
  /// that lacks a metric has no objective rather than a misleading one.
  double eval(const std::function<double(std::string_view)>& value) const;

  /// The distinct metric names used, in order of first use.
  const std::vector<std::string>& metrics() const { return metrics_; }
  const std::string& text() const { return text_; }
  /// The expression is one metric (parentheses aside), so the metric's own good direction and
  /// headline column apply as they are.
  bool is_single_metric() const;

 private:
  enum class Op : uint8_t { kNumber, kMetric, kNeg, kAdd, kSub, kMul, kDiv, kMin, kMax };
  struct Step {
    Op op;
    double number = 0;  // kNumber
    size_t metric = 0;  // kMetric: index into metrics_
  };
  class Parser;

  Formula() = default;

  std::string text_;
  std::vector<std::string> metrics_;
  std::vector<Step> program_;  // postfix
  size_t max_stack_ = 0;       // the evaluation stack's high-water mark
};

}  // namespace ib::tune
