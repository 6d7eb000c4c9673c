#include "sweep/cache_flush.h"

#include <fmt/format.h>

#include <thread>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/strings.h"
#include "http/client.h"

namespace ib::sweep {

namespace json = boost::json;

namespace {

struct WorkerFlush {
  bool flushed = false;
  int tries = 0;
  int status = 0;    // the last answer's HTTP status (0: none)
  std::string said;  // the last answer's body, or the connection error
  double seconds = 0;
};

WorkerFlush flush_one(const FlushTarget& t, const FlushOptions& o) {
  WorkerFlush w;
  const int64_t start = mono_ns();
  auto endpoint = http::parse_endpoint(t.url);
  if (!endpoint) {
    w.said = endpoint.error().message;
    return w;
  }
  http::ClientTimeouts timeouts;
  timeouts.connect = std::chrono::milliseconds(5'000);
  timeouts.first_byte = std::chrono::milliseconds(30'000);
  timeouts.total = std::chrono::milliseconds(60'000);
  const auto elapsed = [&] { return static_cast<double>(mono_ns() - start) / 1e9; };
  while (true) {
    ++w.tries;
    auto r = http::http_post(*endpoint, o.path, "", timeouts);
    if (r) {
      w.status = r->status;
      w.said = printable(trim(r->body), 160);
      if (r->status == 200) {
        w.flushed = true;
        break;
      }
    } else {
      w.status = 0;
      w.said = r.error().message;
    }
    // 404/405: the server has no such endpoint; retrying will not make one.
    if (w.status == 404 || w.status == 405 || w.status == 501) break;
    if (interrupt_requested() || elapsed() + o.retry_s > o.timeout_s) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.retry_s));
  }
  w.seconds = elapsed();
  return w;
}

}  // namespace

FlushOutcome flush_caches(const std::vector<FlushTarget>& targets, const FlushOptions& o) {
  FlushOutcome out;
  json::array workers;
  for (const FlushTarget& t : targets) {
    const WorkerFlush w = flush_one(t, o);
    workers.push_back(json::object{{"worker", t.label},
                                   {"url", redact_text(t.url)},
                                   {"flushed", w.flushed},
                                   {"tries", w.tries},
                                   {"seconds", w.seconds},
                                   {"status", w.status},
                                   {"answer", redact_text(w.said)}});
    if (w.flushed) continue;
    out.all_flushed = false;
    out.warnings.push_back(fmt::format(
        "the prefix cache of {} was not confirmed empty before this point (POST {}: {}{} after "
        "{} tr{} in {:.1f} s): the point may have started warm",
        t.label, o.path, w.status != 0 ? fmt::format("HTTP {} ", w.status) : std::string(),
        redact_text(w.said), w.tries, w.tries == 1 ? "y" : "ies", w.seconds));
  }
  out.json = json::object{{"path", o.path},
                          {"timeout_s", o.timeout_s},
                          {"all_flushed", out.all_flushed},
                          {"workers", std::move(workers)}};
  return out;
}

}  // namespace ib::sweep
