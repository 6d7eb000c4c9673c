// Incremental Server-Sent Events parser (WHATWG HTML §9.2 "event stream" interpretation), fed
// with arbitrary byte slices: the result does not depend on where reads or HTTP chunks split the
// stream. Allocation-free in steady state: its buffers keep their capacity between events.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace ib::http {

/// One dispatched event. Views are valid only during the callback.
struct SseEvent {
  std::string_view data;  // "data" lines joined with '\n' (one leading space of each stripped)
  std::string_view type;  // the "event:" field, empty when absent
  /// The last line whose field name is not one SSE defines (data, event, id, retry), e.g. the
  /// `error: {...}` lines of old llama.cpp builds; empty when none. Spec-compliant parsers drop
  /// these silently; we surface them so a server's error is never lost.
  std::string_view unknown_field;
  std::string_view unknown_value;
};

class SseParser {
 public:
  /// The most bytes one event (its unfinished line and its data) may buffer. A server that sends
  /// more without ending the event (a 200 MB line without a newline) would grow the client
  /// without bound: the parser stops there, frees what it held, and says overflowed().
  static constexpr size_t kDefaultMaxEventBytes = size_t{8} << 20;

  /// Parses `bytes`, calling `on_event(const SseEvent&)` for every event completed by them.
  template <class OnEvent>
  void feed(std::string_view bytes, OnEvent&& on_event) {
    size_t i = 0;
    while (i < bytes.size() && !overflowed_) {
      if (skip_lf_) {
        skip_lf_ = false;
        if (bytes[i] == '\n') {
          ++i;
          continue;
        }
      }
      // Find the end of the current line in this slice.
      const size_t j = line_end(bytes, i);
      if (line_.size() + (j - i) + data_.size() > max_event_bytes_) {
        overflow();
        return;
      }
      if (j == bytes.size()) {
        line_.append(bytes.substr(i));
        return;
      }
      std::string_view line;
      if (line_.empty()) {
        line = bytes.substr(i, j - i);
      } else {
        line_.append(bytes.substr(i, j - i));
        line = line_;
      }
      if (bytes[j] == '\r') skip_lf_ = true;
      i = j + 1;
      const bool dispatch = process_line(line);
      if (overflowed_) return;
      if (dispatch) {
        SseEvent ev{data_, type_, unknown_field_, unknown_value_};
        on_event(ev);
        reset_event();
      }
      line_.clear();
    }
  }

  /// Ends the stream: a final line without its line break is processed, and an event that was
  /// not closed by a blank line is dispatched (lenient: some servers omit the last blank line).
  template <class OnEvent>
  void finish(OnEvent&& on_event) {
    if (!line_.empty()) {
      std::string line = std::move(line_);
      line_.clear();
      process_line(line);
    }
    if (has_data_ || !unknown_field_.empty()) {
      SseEvent ev{data_, type_, unknown_field_, unknown_value_};
      on_event(ev);
    }
    reset();
  }

  /// True when bytes of an unfinished line or event are buffered: a stream that ends here was cut.
  bool has_partial() const { return !line_.empty() || has_fields_; }

  /// An event grew past max_event_bytes(): nothing more is parsed until reset().
  bool overflowed() const { return overflowed_; }
  size_t max_event_bytes() const { return max_event_bytes_; }
  void set_max_event_bytes(size_t n) { max_event_bytes_ = n; }

  /// Forgets all buffered state (for reusing the parser on a new response).
  void reset() {
    line_.clear();
    skip_lf_ = false;
    overflowed_ = false;
    reset_event();
  }

 private:
  // The end of the line starting at `from`: the first '\n' or '\r', or bytes.size(). memchr
  // (vectorised) rather than a loop per byte: a chunk's data line is a few hundred bytes.
  static size_t line_end(std::string_view bytes, size_t from) {
    const char* begin = bytes.data() + from;
    const size_t n = bytes.size() - from;
    const void* lf = std::memchr(begin, '\n', n);
    const size_t upto =
        lf != nullptr ? static_cast<size_t>(static_cast<const char*>(lf) - begin) : n;
    const void* cr = std::memchr(begin, '\r', upto);
    const size_t end =
        cr != nullptr ? static_cast<size_t>(static_cast<const char*>(cr) - begin) : upto;
    return from + end;
  }

  // Returns true when the line is blank and an event should be dispatched.
  bool process_line(std::string_view line);
  void reset_event();
  // Too big: drop (and free) everything buffered; feed() parses nothing more.
  void overflow() {
    overflowed_ = true;
    std::string().swap(line_);
    std::string().swap(data_);
    reset_event();
  }

  size_t max_event_bytes_ = kDefaultMaxEventBytes;
  bool overflowed_ = false;
  std::string line_;  // partial line carried across feeds
  std::string data_;
  std::string type_;
  std::string unknown_field_;
  std::string unknown_value_;
  bool has_data_ = false;
  bool has_fields_ = false;
  bool skip_lf_ = false;  // last byte was '\r'; a following '\n' belongs to the same line end
};

}  // namespace ib::http
