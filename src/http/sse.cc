#include "http/sse.h"

namespace ib::http {

bool SseParser::process_line(std::string_view line) {
  if (line.empty()) {
    // Blank line: dispatch if any data or surfaced unknown field was seen. Per the spec an event
    // without data is not dispatched, but an unknown field is surfaced anyway.
    bool dispatch = has_data_ || !unknown_field_.empty();
    if (!dispatch) reset_event();
    return dispatch;
  }
  if (line.front() == ':') return false;  // comment
  std::string_view field = line;
  std::string_view value;
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  has_fields_ = true;
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_event_bytes_) {
      overflow();
      return false;
    }
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_.assign(value);
  } else if (field == "id" || field == "retry") {
    // Not used by OpenAI-compatible servers; accepted and ignored.
  } else {
    unknown_field_.assign(field);
    unknown_value_.assign(value);
  }
  return false;
}

void SseParser::reset_event() {
  data_.clear();
  type_.clear();
  unknown_field_.clear();
  unknown_value_.clear();
  has_data_ = false;
  has_fields_ = false;
}

}  // namespace ib::http
