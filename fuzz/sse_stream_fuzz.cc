// SSE framing and stream-chunk decoding, as the client sees a response body: the bytes are parsed
// whole and again in slices whose lengths the input chooses, and the two event lists must be equal
// (the parser's contract: where reads split the stream does not matter). Every event's data goes
// through the chunk decoder, and the whole input through the non-streaming body decoder and the
// error-message extractor.
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "http/sse.h"
#include "openai/stream.h"

namespace {

struct Event {
  std::string data, type, unknown_field, unknown_value;
  bool operator==(const Event&) const = default;
};

std::vector<Event> parse(std::string_view bytes, uint8_t stride, ib::openai::StreamDecoder* decoder) {
  ib::http::SseParser parser;
  std::vector<Event> events;
  auto on_event = [&](const ib::http::SseEvent& e) {
    events.push_back({std::string(e.data), std::string(e.type), std::string(e.unknown_field),
                      std::string(e.unknown_value)});
    if (decoder != nullptr) {
      const auto chunk = decoder->decode(e.data);
      if (chunk.kind == ib::openai::StreamChunk::Kind::kContent && chunk.content_bytes == 0 &&
          chunk.usage && chunk.usage->completion_tokens < -1) {
        std::abort();  // unreachable: keeps the result observed
      }
    }
  };
  if (stride == 0) {
    parser.feed(bytes, on_event);
  } else {
    size_t step = 1 + stride % 17;
    for (size_t i = 0; i < bytes.size(); i += step, step = 1 + (step * 7 + stride) % 23) {
      parser.feed(bytes.substr(i, step), on_event);
    }
  }
  (void)parser.has_partial();
  parser.finish(on_event);
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ib::fuzz::Input in(data, size);
  const uint8_t stride = in.byte();
  const std::string_view body = in.rest();
  static ib::openai::StreamDecoder decoder;
  const auto whole = parse(body, 0, &decoder);
  const auto sliced = parse(body, static_cast<uint8_t>(stride | 1), nullptr);
  if (whole != sliced) std::abort();  // the split changed the events
  (void)decoder.decode_body(body);
  (void)ib::openai::error_message_from_body(body);
  return 0;
}
