// One streamed request's protocol handling: SSE framing, chunk decoding and classification into a
// RequestRecord (docs/metrics.md: TTFT is the first content event, never the role chunk or
// headers).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "http/client.h"
#include "http/sse.h"
#include "metrics/record.h"
#include "openai/stream.h"

namespace ib::load {

/// Receives one response and fills `record`. Reusable across requests (reset()); allocation-free
/// per event once warmed up, apart from content_ns growth (reserved up front).
class StreamingResponse : public http::ResponseSink {
 public:
  /// Uses its own chunk decoder.
  StreamingResponse()
      : owned_decoder_(std::make_unique<openai::StreamDecoder>()), decoder_(owned_decoder_.get()) {}
  /// Shares `decoder` (one per thread keeps memory per connection small); it must outlive this.
  explicit StreamingResponse(openai::StreamDecoder& decoder) : decoder_(&decoder) {}

  /// Counts each content event's text with `count` (the client's tokenizer) into
  /// RequestRecord::text_tokens; the decoder must keep text (StreamDecoder::keep_text). `count`
  /// must outlive this; null: no counting.
  void count_text_tokens(const std::function<int32_t(std::string_view)>* count) {
    count_text_ = count;
  }

  /// Starts a new request: `record` receives every timestamp and count.
  void reset(metrics::RequestRecord* record);

  void on_headers(int status, int64_t t_ns) override;
  void on_body(std::string_view bytes, int64_t t_ns) override;
  /// An event stream makes progress with its data events (a role or usage chunk too), never with
  /// comments; another body with every byte.
  std::optional<int64_t> progress_ns() const override {
    return streaming_ ? std::optional<int64_t>(progress_ns_) : std::nullopt;
  }

  /// Classifies the finished exchange into record->failure / record->error.
  void finish(const http::HttpOutcome& outcome);

 private:
  void on_event(const http::SseEvent& event, int64_t t_ns);
  void fail(metrics::FailureCause cause, std::string message);

  metrics::RequestRecord* record_ = nullptr;
  http::SseParser sse_;
  std::unique_ptr<openai::StreamDecoder> owned_decoder_;
  openai::StreamDecoder* decoder_;
  std::string error_body_;  // body of a non-200 response
  bool streaming_ = false;  // 200 with an event stream
  bool done_ = false;       // saw [DONE]
  bool failed_ = false;
  int64_t progress_ns_ = 0;  // the headers' or the last data event's arrival
  int64_t usage_completion_ = 0;  // the last continuous usage's completion_tokens
  const std::function<int32_t(std::string_view)>* count_text_ = nullptr;
};

}  // namespace ib::load
