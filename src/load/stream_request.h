// One streamed request's protocol handling: SSE framing, chunk decoding and classification into a
// RequestRecord (docs/metrics.md: TTFT is the first content event, never the role chunk or
// headers).
#pragma once

#include <memory>
#include <string>

#include "http/client.h"
#include "http/sse.h"
#include "metrics/record.h"
#include "openai/stream.h"

namespace ib {

/// Receives one response and fills `record`. Reusable across requests (reset()); allocation-free
/// per event once warmed up, apart from content_ns growth (reserved up front).
class StreamingResponse : public ResponseSink {
 public:
  /// Uses its own chunk decoder.
  StreamingResponse() : owned_decoder_(std::make_unique<StreamDecoder>()), decoder_(owned_decoder_.get()) {}
  /// Shares `decoder` (one per thread keeps memory per connection small); it must outlive this.
  explicit StreamingResponse(StreamDecoder& decoder) : decoder_(&decoder) {}

  /// Starts a new request: `record` receives every timestamp and count.
  void reset(RequestRecord* record);

  void on_headers(int status, int64_t t_ns) override;
  void on_body(std::string_view bytes, int64_t t_ns) override;

  /// Classifies the finished exchange into record->failure / record->error.
  void finish(const HttpOutcome& outcome);

 private:
  void on_event(const SseEvent& event, int64_t t_ns);
  void fail(FailureCause cause, std::string message);

  RequestRecord* record_ = nullptr;
  SseParser sse_;
  std::unique_ptr<StreamDecoder> owned_decoder_;
  StreamDecoder* decoder_;
  std::string error_body_;  // body of a non-200 response
  bool streaming_ = false;  // 200 with an event stream
  bool done_ = false;       // saw [DONE]
  bool failed_ = false;
};

}  // namespace ib
