#include "load/retry.h"

#include <boost/beast/http/verb.hpp>
#include <string>

#include "core/clock.h"

namespace ib::load {

boost::asio::awaitable<bool> send_with_retry(http::HttpConnection& conn,
                                             StreamingResponse& response,
                                             metrics::RequestRecord& record,
                                             const RetriedRequest& request) {
  for (;;) {
    const bool reused = conn.reused();
    response.reset(&record);
    http::HttpOutcome outcome =
        co_await conn.request(boost::beast::http::verb::post, request.path, request.body, response,
                              request.request_id, request.correlation_id, request.extra_headers);
    record.send_ns = outcome.send_ns;
    const std::string_view cut = request.cut_reason ? request.cut_reason() : std::string_view();
    // A request that failed before any response byte arrived never reached the server's
    // response path (typically a keep-alive connection it closed while idle): send it again
    // on a fresh connection. Never after a response byte, never after a timeout.
    if (outcome.ec && !outcome.response_started && !outcome.connect_failed &&
        !outcome.timed_out() && record.retries < request.max_retries && cut.empty() &&
        (reused || outcome.reset())) {
      ++record.retries;
      record.content_ns.clear();
      record.content_tokens.clear();
      record.text_tokens.clear();
      continue;
    }
    record.done_ns = mono_ns();
    if (!cut.empty() && outcome.ec) {
      record.failure = metrics::FailureCause::kCancelled;
      record.error = std::string(cut);
      co_return true;
    }
    response.finish(outcome);
    co_return false;
  }
}

}  // namespace ib::load
