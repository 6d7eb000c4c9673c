// One streamed request with the retry of a request that met a stale keep-alive connection: a
// request that failed before any response byte arrived never reached the server's response path
// (typically a keep-alive connection the server closed while it was idle), so it is sent again on
// a fresh connection. Shared by the run loop (load/runner.h) and the agentic replay
// (load/agentic_run.h).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string_view>

#include "http/client.h"
#include "load/stream_request.h"
#include "metrics/record.h"

namespace ib::load {

/// What to send, and how the run that sends it is being cut.
struct RetriedRequest {
  std::string_view path;
  std::string_view body;
  std::string_view request_id;      // X-Request-Id; empty: not sent
  std::string_view correlation_id;  // X-Correlation-ID; empty: not sent
  std::string_view extra_headers;   // more header lines, each "Name: value\r\n"
  int max_retries = 1;              // re-sends of a request that failed before any response byte
  /// Why the run is being cut (an interrupt, the end of a grace period): the error of a request
  /// the cut ended; empty while the run is not cut. Asked once after each try.
  std::function<std::string_view()> cut_reason;
};

/// Sends `request` on `conn` and records it in `record` through `response`: the send and done
/// times, the retries, and the failure (StreamingResponse::finish). A try that failed before any
/// response byte, neither in connecting nor by a timeout, on a reused connection or by a reset,
/// is sent again (at most request.max_retries times) unless the run is being cut; a try that
/// failed while the run is cut is recorded as kCancelled with the cut's reason. Returns true in
/// that case (the request was cancelled, it measures nothing).
boost::asio::awaitable<bool> send_with_retry(http::HttpConnection& conn,
                                             StreamingResponse& response,
                                             metrics::RequestRecord& record,
                                             const RetriedRequest& request);

}  // namespace ib::load
