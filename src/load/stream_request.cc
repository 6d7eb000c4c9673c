#include "load/stream_request.h"

#include <fmt/format.h>

namespace ib {

void StreamingResponse::reset(RequestRecord* record) {
  record_ = record;
  sse_.reset();
  error_body_.clear();
  streaming_ = false;
  done_ = false;
  failed_ = false;
}

void StreamingResponse::fail(FailureCause cause, std::string message) {
  if (failed_) return;  // the first cause is the one that matters
  failed_ = true;
  record_->failure = cause;
  record_->error = std::move(message);
}

void StreamingResponse::on_headers(int status, int64_t t_ns) {
  record_->http_status = status;
  record_->first_byte_ns = t_ns;
  streaming_ = status == 200;
}

void StreamingResponse::on_body(std::string_view bytes, int64_t t_ns) {
  if (!streaming_) {
    if (error_body_.size() < 64 * 1024) error_body_.append(bytes);
    return;
  }
  sse_.feed(bytes, [&](const SseEvent& ev) { on_event(ev, t_ns); });
}

void StreamingResponse::on_event(const SseEvent& event, int64_t t_ns) {
  if (!event.unknown_field.empty() && event.data.empty()) {
    // e.g. `error: {...}` lines of older llama.cpp builds.
    if (event.unknown_field == "error") {
      fail(FailureCause::kStreamError, error_message_from_body(event.unknown_value));
    }
    return;
  }
  if (done_) return;  // nothing after [DONE] counts
  StreamChunk chunk = decoder_->decode(event.data);
  switch (chunk.kind) {
    case StreamChunk::Kind::kDone:
      done_ = true;
      return;
    case StreamChunk::Kind::kError:
      fail(FailureCause::kStreamError, chunk.error_message);
      return;
    case StreamChunk::Kind::kMalformed:
      fail(FailureCause::kMalformed, chunk.error_message);
      return;
    case StreamChunk::Kind::kContent:
      record_->content_ns.push_back(t_ns);
      break;
    case StreamChunk::Kind::kNoContent:
      break;
  }
  if (chunk.usage) {
    // With continuous usage stats every chunk carries usage; the last one is the total.
    if (chunk.usage->prompt_tokens >= 0) record_->prompt_tokens = chunk.usage->prompt_tokens;
    if (chunk.usage->completion_tokens >= 0) {
      record_->completion_tokens = chunk.usage->completion_tokens;
    }
  }
  if (!chunk.finish_reason.empty()) record_->finish_reason = std::move(chunk.finish_reason);
}

namespace {

FailureCause timeout_cause(TimeoutKind kind) {
  switch (kind) {
    case TimeoutKind::kConnect: return FailureCause::kConnectTimeout;
    case TimeoutKind::kFirstByte: return FailureCause::kFirstByteTimeout;
    case TimeoutKind::kIdle: return FailureCause::kIdleTimeout;
    case TimeoutKind::kTotal: return FailureCause::kTotalTimeout;
    case TimeoutKind::kNone: break;
  }
  return FailureCause::kTransport;
}

}  // namespace

void StreamingResponse::finish(const HttpOutcome& outcome) {
  if (outcome.timed_out()) {
    // A timeout is the cause even when a partial stream already arrived.
    const double limit_s = static_cast<double>(outcome.timeout_limit.count()) / 1000.0;
    std::string what;
    switch (outcome.timeout) {
      case TimeoutKind::kConnect: what = fmt::format("not connected within {} s", limit_s); break;
      case TimeoutKind::kFirstByte:
        what = fmt::format("no response byte within {} s of sending", limit_s);
        break;
      case TimeoutKind::kIdle:
        what = fmt::format("no data for {} s after {} content events", limit_s,
                           record_->content_ns.size());
        break;
      case TimeoutKind::kTotal:
        what = fmt::format("request not complete within {} s ({} content events received)",
                           limit_s, record_->content_ns.size());
        break;
      case TimeoutKind::kNone: break;
    }
    fail(timeout_cause(outcome.timeout), std::move(what));
    return;
  }
  if (outcome.connect_failed) {
    fail(FailureCause::kConnect, fmt::format("connect: {}", outcome.ec.message()));
    return;
  }
  if (!outcome.response_started) {
    if (outcome.reset()) {
      fail(FailureCause::kConnectionReset,
           outcome.ec == boost::asio::error::connection_reset
               ? std::string("connection reset before any response byte")
               : std::string("connection closed by the server before any response byte"));
    } else {
      fail(FailureCause::kTransport, fmt::format("no response: {}", outcome.ec.message()));
    }
    return;
  }
  if (outcome.status != 200) {
    fail(FailureCause::kHttpStatus,
         fmt::format("HTTP {}: {}", outcome.status, error_message_from_body(error_body_)));
    return;
  }
  if (outcome.complete && !done_) {
    sse_.finish([&](const SseEvent& ev) { on_event(ev, record_->done_ns); });
  }
  if (failed_) return;
  if (outcome.ec) {
    if (outcome.ec == boost::asio::error::connection_reset) {
      fail(FailureCause::kConnectionReset,
           fmt::format("connection reset mid-stream{}", done_ ? " after [DONE]" : ""));
    } else if (!done_) {
      fail(FailureCause::kNoDone,
           fmt::format("stream cut without [DONE]: {}", outcome.ec.message()));
    }
    if (failed_) return;
  }
  if (!done_) {
    fail(FailureCause::kNoDone, "stream ended without [DONE]");
    return;
  }
  if (record_->content_ns.empty()) {
    fail(FailureCause::kNoContent, "stream completed without any content event");
  }
}

}  // namespace ib
