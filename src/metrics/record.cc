#include "metrics/record.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace ib::metrics {

std::string_view failure_cause_name(FailureCause cause) {
  switch (cause) {
    case FailureCause::kNone:
      return "none";
    case FailureCause::kConnect:
      return "connect";
    case FailureCause::kConnectTimeout:
      return "connect_timeout";
    case FailureCause::kHttpStatus:
      return "http_status";
    case FailureCause::kStreamError:
      return "stream_error";
    case FailureCause::kNoDone:
      return "no_done";
    case FailureCause::kNoContent:
      return "no_content";
    case FailureCause::kMalformed:
      return "malformed";
    case FailureCause::kFirstByteTimeout:
      return "first_byte_timeout";
    case FailureCause::kIdleTimeout:
      return "idle_timeout";
    case FailureCause::kTotalTimeout:
      return "total_timeout";
    case FailureCause::kConnectionReset:
      return "connection_reset";
    case FailureCause::kTransport:
      return "transport";
    case FailureCause::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view event_tokens_name(EventTokens t) {
  switch (t) {
    case EventTokens::kUsageDeltas:
      return "usage_deltas";
    case EventTokens::kOnePerEvent:
      return "one_per_event";
    case EventTokens::kTokenizer:
      return "tokenizer";
    case EventTokens::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

// Scales `counts` (each >= 1) to add up to `target` (>= their number), each staying >= 1: the
// largest-remainder rounding of count · target / sum.
void scale_counts(std::vector<int32_t>& counts, int64_t target) {
  const int64_t sum = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (sum == target || sum <= 0) return;
  const auto n = static_cast<int64_t>(counts.size());
  // One token each first, the rest shared in proportion to what is above one.
  const int64_t extra = target - n, above = sum - n;
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double share = above > 0 ? static_cast<double>(counts[i] - 1) *
                                         static_cast<double>(extra) / static_cast<double>(above)
                                   : static_cast<double>(extra) / static_cast<double>(n);
    const auto whole = static_cast<int64_t>(std::floor(share));
    counts[i] = static_cast<int32_t>(1 + whole);
    given += whole;
    remainders.emplace_back(share - static_cast<double>(whole), i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < extra && k < remainders.size(); ++k, ++given) {
    ++counts[remainders[k].second];
  }
}

}  // namespace

EventTokens event_token_counts(const RequestRecord& r, std::vector<int32_t>* counts) {
  counts->clear();
  const size_t events = r.content_ns.size();
  if (events == 0) return EventTokens::kUnknown;
  // Continuous usage on every content event, each one counting at least the token it carried.
  if (r.content_tokens.size() == events &&
      std::all_of(r.content_tokens.begin(), r.content_tokens.end(),
                  [](int32_t n) { return n >= 1; })) {
    *counts = r.content_tokens;
    return EventTokens::kUsageDeltas;
  }
  // The final count equals the events (a natural stop's EOS token is counted but never sent as
  // text): one token each.
  const auto n = static_cast<int64_t>(events);
  if (r.completion_tokens == n || (r.completion_tokens == n + 1 && r.finish_reason == "stop")) {
    counts->assign(events, 1);
    return EventTokens::kOnePerEvent;
  }
  // The client's tokenizer on each event's text: every event carried at least one token (a
  // piece of a character that encodes to nothing still came from one).
  if (r.text_tokens.size() == events) {
    counts->resize(events);
    std::transform(r.text_tokens.begin(), r.text_tokens.end(), counts->begin(),
                   [](int32_t k) { return std::max<int32_t>(k, 1); });
    // Text re-encoded in pieces does not count what the server generated (a word split across
    // events, another merge): with the server's final count, the tokenizer only says how the
    // tokens were spread over the events.
    const int64_t target = r.completion_tokens - (r.finish_reason == "stop" ? 1 : 0);
    if (r.completion_tokens >= 0 && target >= n) scale_counts(*counts, target);
    return EventTokens::kTokenizer;
  }
  return EventTokens::kUnknown;
}

void append_per_token_itl(const RequestRecord& r, const std::vector<int32_t>& counts,
                          std::vector<double>* out) {
  for (size_t i = 1; i < r.content_ns.size() && i < counts.size(); ++i) {
    const double gap_ms = static_cast<double>(r.content_ns[i] - r.content_ns[i - 1]) / 1e6;
    const int32_t n = std::max<int32_t>(counts[i], 1);
    out->insert(out->end(), static_cast<size_t>(n), gap_ms / n);
  }
}

}  // namespace ib::metrics
