#include "sim/truth_log.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "core/json_text.h"

namespace ib::sim {

namespace {

using TruthOut = std::back_insert_iterator<std::string>;

void append_times(std::string& out, std::span<const int64_t> times) {
  out += '[';
  for (size_t i = 0; i < times.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(TruthOut(out), "{}", times[i]);
  }
  out += ']';
}

void append_truth(std::string& out, const TruthRecord& r) {
  out += R"({"request_id":)";
  if (r.request_id.empty()) {
    out += "null";
  } else {
    out += json_text(boost::json::string(r.request_id));
  }
  fmt::format_to(TruthOut(out),
                 R"(,"id":{},"api":"{}","stream":{},"arrival_ns":{},"prompt_tokens":{},)"
                 R"("completion_tokens":{},"cached_tokens":{},"preemptions":{},)"
                 R"("finish_reason":"{}","token_ns":)",
                 json_text(boost::json::string(r.id)), r.api, r.stream ? "true" : "false",
                 r.arrival_ns, r.prompt_tokens, r.completion_tokens, r.cached_tokens, r.preemptions,
                 r.finish_reason);
  append_times(out, r.token_ns);
  out += R"(,"due_ns":)";
  append_times(out, r.due_ns);
  out += '}';
}

}  // namespace

std::string truth_json(const TruthRecord& record) {
  std::string out;
  append_truth(out, record);
  return out;
}

Expected<std::unique_ptr<TruthLog>> TruthLog::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return Error{fmt::format("cannot open the truth log {}: {}", path, std::strerror(errno))};
  }
  return std::unique_ptr<TruthLog>(new TruthLog(f));
}

TruthLog::~TruthLog() {
  std::fflush(file_);
  std::fclose(file_);
}

void TruthLog::write(const TruthRecord& record) {
  // Formatted by the calling thread, outside the lock; a thread's buffer is reused.
  thread_local std::string line;
  line.clear();
  append_truth(line, record);
  line += '\n';
  // One write per request, flushed at once so a reader sees every finished request (requests
  // end far less often than tokens are sent, so this costs little).
  std::lock_guard lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

void TruthLog::flush() {
  std::lock_guard lock(mutex_);
  std::fflush(file_);
}

}  // namespace ib::sim
