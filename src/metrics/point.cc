#include "metrics/point.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace ib::metrics {

namespace {

constexpr std::array<std::pair<PointStatus, std::string_view>, 6> kStatusNames = {{
    {PointStatus::kOk, "ok"},
    {PointStatus::kInvalid, "invalid"},
    {PointStatus::kFailed, "failed"},
    {PointStatus::kSkipped, "skipped"},
    {PointStatus::kReused, "reused"},
    {PointStatus::kResumed, "resumed"},
}};

constexpr std::array<std::pair<InvalidKind, std::string_view>, 11> kInvalidNames = {{
    {InvalidKind::kExpectFailed, "expect_failed"},
    {InvalidKind::kExpectUnobservable, "expect_unobservable"},
    {InvalidKind::kFailureRate, "failure_rate"},
    {InvalidKind::kClientHealth, "client_health"},
    {InvalidKind::kInterrupted, "interrupted"},
    {InvalidKind::kTimedOut, "timed_out"},
    {InvalidKind::kServerExited, "server_exited"},
    {InvalidKind::kWorkload, "workload"},
    {InvalidKind::kPower, "power"},
    {InvalidKind::kEvalGate, "eval_gate"},
    {InvalidKind::kNotSubmission, "not_submission"},
}};

}  // namespace

std::string_view status_name(PointStatus s) {
  for (const auto& [k, n] : kStatusNames) {
    if (k == s) return n;
  }
  return "unknown";
}

std::optional<PointStatus> parse_status(std::string_view name) {
  for (const auto& [k, n] : kStatusNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

bool is_success(PointStatus s) {
  return s == PointStatus::kOk || s == PointStatus::kReused || s == PointStatus::kResumed;
}

std::string_view invalid_kind_name(InvalidKind k) {
  for (const auto& [kind, n] : kInvalidNames) {
    if (kind == k) return n;
  }
  return "unknown";
}

std::optional<InvalidKind> parse_invalid_kind(std::string_view name) {
  for (const auto& [kind, n] : kInvalidNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

boost::json::object InvalidReason::to_json() const {
  boost::json::object o;
  o["kind"] = invalid_kind_name(kind);
  o["message"] = message;
  if (!advice.empty()) o["advice"] = advice;
  if (!rule.empty()) o["rule"] = rule;
  return o;
}

void Validity::add(InvalidKind kind, std::string message, std::string advice) {
  reasons.push_back({kind, std::move(message), std::move(advice), ""});
}

bool Validity::has(InvalidKind kind) const {
  for (const auto& r : reasons) {
    if (r.kind == kind) return true;
  }
  return false;
}

bool Validity::only_chosen() const {
  return !reasons.empty() &&
         std::all_of(reasons.begin(), reasons.end(), [](const auto& r) { return chosen(r.kind); });
}

std::string Validity::text() const {
  std::string out;
  for (const auto& r : reasons) {
    if (!out.empty()) out += "; ";
    out += r.message;
  }
  return out;
}

boost::json::array Validity::to_json() const {
  boost::json::array a;
  for (const auto& r : reasons) a.push_back(r.to_json());
  return a;
}

Validity Validity::from_json(const boost::json::value& v) {
  Validity out;
  if (!v.is_array()) return out;
  for (const auto& e : v.as_array()) {
    if (!e.is_object()) continue;
    const auto& o = e.as_object();
    const auto* kind = o.if_contains("kind");
    if (!kind || !kind->is_string()) continue;
    auto k = parse_invalid_kind(kind->as_string());
    if (!k) continue;
    InvalidReason r{*k, "", "", ""};
    if (const auto* m = o.if_contains("message"); m && m->is_string()) {
      r.message = std::string(m->as_string());
    }
    if (const auto* a = o.if_contains("advice"); a && a->is_string()) {
      r.advice = std::string(a->as_string());
    }
    if (const auto* a = o.if_contains("rule"); a && a->is_string()) {
      r.rule = std::string(a->as_string());
    }
    out.reasons.push_back(std::move(r));
  }
  return out;
}

bool PointResult::fails_run() const {
  if (is_success(status)) return false;
  return !(status == PointStatus::kInvalid && validity.only_chosen());
}

std::string PointResult::status_text() const {
  std::string s(status_name(status));
  if (status == PointStatus::kReused && reused_from_run) {
    return fmt::format("{} (run {})", s, *reused_from_run);
  }
  std::string why = status == PointStatus::kInvalid && !validity.valid() ? validity.text() : error;
  if (why.empty() && !validity.valid()) why = validity.text();
  why = why.substr(0, why.find('\n'));
  return why.empty() ? s : s + ": " + why;
}

}  // namespace ib::metrics
