#include "metrics/record.h"

#include <algorithm>

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
    case EventTokens::kUnknown:
      break;
  }
  return "unknown";
}

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
