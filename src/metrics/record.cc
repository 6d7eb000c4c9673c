#include "metrics/record.h"

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

}  // namespace ib::metrics
