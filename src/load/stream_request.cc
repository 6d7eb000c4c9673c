#include "load/stream_request.h"

#include <fmt/format.h>

#include <algorithm>

namespace ib::load {

void StreamingResponse::reset(metrics::RequestRecord* record) {
  record_ = record;
  sse_.reset();
  error_body_.clear();
  streaming_ = false;
  done_ = false;
  failed_ = false;
  progress_ns_ = 0;
  usage_completion_ = 0;  // a connection's next request counts from zero
}

void StreamingResponse::fail(metrics::FailureCause cause, std::string message) {
  if (failed_) return;  // the first cause is the one that matters
  failed_ = true;
  record_->failure = cause;
  record_->error = std::move(message);
}

void StreamingResponse::on_headers(int status, int64_t t_ns) {
  record_->http_status = status;
  record_->first_byte_ns = t_ns;
  streaming_ = status == 200;
  progress_ns_ = t_ns;
}

void StreamingResponse::on_body(std::string_view bytes, int64_t t_ns) {
  if (!streaming_) {
    if (error_body_.size() < 64 * 1024) error_body_.append(bytes);
    return;
  }
  if (sse_.overflowed()) return;  // already failed; the rest of the body is not kept
  sse_.feed(bytes, [&](const http::SseEvent& ev) { on_event(ev, t_ns); });
  if (sse_.overflowed()) {
    fail(metrics::FailureCause::kMalformed,
         fmt::format("the server sent an event of more than {} MiB without ending it (a line "
                     "without a newline?); the rest of the response was not kept",
                     sse_.max_event_bytes() >> 20));
  }
}

void StreamingResponse::on_event(const http::SseEvent& event, int64_t t_ns) {
  if (!event.data.empty() || !event.unknown_field.empty()) progress_ns_ = t_ns;
  if (!event.unknown_field.empty() && event.data.empty()) {
    // e.g. `error: {...}` lines of older llama.cpp builds.
    if (event.unknown_field == "error") {
      fail(metrics::FailureCause::kStreamError,
           openai::error_message_from_body(event.unknown_value));
    }
    return;
  }
  if (done_) return;  // nothing after [DONE] counts
  openai::StreamChunk chunk = decoder_->decode(event.data);
  switch (chunk.kind) {
    case openai::StreamChunk::Kind::kDone:
      done_ = true;
      return;
    case openai::StreamChunk::Kind::kError:
      fail(metrics::FailureCause::kStreamError, chunk.error_message);
      return;
    case openai::StreamChunk::Kind::kMalformed:
      fail(metrics::FailureCause::kMalformed, chunk.error_message);
      return;
    case openai::StreamChunk::Kind::kContent:
      record_->content_ns.push_back(t_ns);
      if (count_text_ != nullptr) record_->text_tokens.push_back((*count_text_)(chunk.text));
      break;
    case openai::StreamChunk::Kind::kNoContent:
      break;
  }
  if (chunk.usage && chunk.usage->completion_tokens >= 0) {
    // The tokens a content event carried, where the server counts them on every event
    // (continuous usage): the growth of completion_tokens since the last count; 0 for an event
    // without one (metrics::event_token_counts decides what a request's counts are worth).
    const int64_t count = chunk.usage->completion_tokens;
    if (chunk.kind == openai::StreamChunk::Kind::kContent) {
      record_->content_tokens.resize(record_->content_ns.size() - 1, 0);
      record_->content_tokens.push_back(
          static_cast<int32_t>(std::clamp<int64_t>(count - usage_completion_, 0, 1 << 30)));
    }
    usage_completion_ = std::max(usage_completion_, count);
  }
  if (chunk.usage) {
    // With continuous usage stats every chunk carries usage; the last one is the total.
    if (chunk.usage->prompt_tokens >= 0) record_->prompt_tokens = chunk.usage->prompt_tokens;
    if (chunk.usage->completion_tokens >= 0) {
      record_->completion_tokens = chunk.usage->completion_tokens;
    }
  }
  if (chunk.spec && chunk.spec->steps > 0) {
    record_->spec_steps = static_cast<int32_t>(std::min<int64_t>(chunk.spec->steps, 1 << 30));
    record_->spec_accepted = static_cast<int32_t>(std::min<int64_t>(chunk.spec->accepted, 1 << 30));
  }
  if (chunk.ttft_parts) {
    record_->ttft_parts.assign(chunk.ttft_parts->begin(), chunk.ttft_parts->end());
  }
  if (chunk.timing) {
    record_->server_queue_ms = static_cast<float>(chunk.timing->queue_ms);
    record_->server_ttft_ms = static_cast<float>(chunk.timing->ttft_ms);
    record_->server_generation_ms = static_cast<float>(chunk.timing->generation_ms);
  }
  if (!chunk.finish_reason.empty()) record_->finish_reason = std::move(chunk.finish_reason);
}

namespace {

metrics::FailureCause timeout_cause(http::TimeoutKind kind) {
  switch (kind) {
    case http::TimeoutKind::kConnect:
      return metrics::FailureCause::kConnectTimeout;
    case http::TimeoutKind::kFirstByte:
      return metrics::FailureCause::kFirstByteTimeout;
    case http::TimeoutKind::kIdle:
      return metrics::FailureCause::kIdleTimeout;
    case http::TimeoutKind::kTotal:
      return metrics::FailureCause::kTotalTimeout;
    case http::TimeoutKind::kNone:
      break;
  }
  return metrics::FailureCause::kTransport;
}

}  // namespace

void StreamingResponse::finish(const http::HttpOutcome& outcome) {
  if (outcome.timed_out()) {
    // A timeout is the cause even when a partial stream already arrived.
    const double limit_s = static_cast<double>(outcome.timeout_limit.count()) / 1000.0;
    std::string what;
    switch (outcome.timeout) {
      case http::TimeoutKind::kConnect:
        what = fmt::format("not connected within {} s", limit_s);
        break;
      case http::TimeoutKind::kFirstByte:
        what = fmt::format("no response byte within {} s of sending", limit_s);
        break;
      case http::TimeoutKind::kIdle:
        what = fmt::format("no data for {} s after {} content events", limit_s,
                           record_->content_ns.size());
        break;
      case http::TimeoutKind::kTotal:
        what = fmt::format("request not complete within {} s ({} content events received)", limit_s,
                           record_->content_ns.size());
        break;
      case http::TimeoutKind::kNone:
        break;
    }
    fail(timeout_cause(outcome.timeout), std::move(what));
    return;
  }
  if (outcome.connect_failed) {
    fail(metrics::FailureCause::kConnect, fmt::format("connect: {}", outcome.ec.message()));
    return;
  }
  if (!outcome.response_started) {
    if (outcome.reset()) {
      fail(metrics::FailureCause::kConnectionReset,
           outcome.ec == boost::asio::error::connection_reset
               ? std::string("connection reset before any response byte")
               : std::string("connection closed by the server before any response byte"));
    } else {
      fail(metrics::FailureCause::kTransport, fmt::format("no response: {}", outcome.ec.message()));
    }
    return;
  }
  if (outcome.status != 200) {
    fail(metrics::FailureCause::kHttpStatus,
         fmt::format("HTTP {}: {}", outcome.status, openai::error_message_from_body(error_body_)));
    return;
  }
  if (outcome.complete && !done_ && !sse_.overflowed()) {
    sse_.finish([&](const http::SseEvent& ev) { on_event(ev, record_->done_ns); });
  }
  if (failed_) return;
  if (outcome.ec) {
    if (outcome.ec == boost::asio::error::connection_reset) {
      fail(metrics::FailureCause::kConnectionReset,
           fmt::format("connection reset mid-stream{}", done_ ? " after [DONE]" : ""));
    } else if (!done_) {
      fail(metrics::FailureCause::kNoDone,
           fmt::format("stream cut without [DONE]: {}", outcome.ec.message()));
    }
    if (failed_) return;
  }
  if (!done_) {
    fail(metrics::FailureCause::kNoDone, "stream ended without [DONE]");
    return;
  }
  if (record_->content_ns.empty()) {
    fail(metrics::FailureCause::kNoContent, "stream completed without any content event");
  }
}

}  // namespace ib::load
