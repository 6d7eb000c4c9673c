#include "load/metrics_scraper.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <map>

#include "core/clock.h"

namespace ib::load {

Expected<ScrapeTarget> parse_scrape_target(const std::string& url) {
  // The endpoint parser keeps a path as the base path; split it off: the last component set
  // is the metrics path itself.
  auto ep = http::parse_endpoint(url);
  if (!ep) return Error{fmt::format("--server-metrics-url: {}", ep.error().message)};
  ScrapeTarget t;
  t.endpoint = *ep;
  if (!ep->base_path.empty()) {
    t.path = ep->base_path;
    t.endpoint.base_path.clear();
  }
  return t;
}

Expected<std::vector<ScrapeTarget>> scrape_targets(const std::vector<std::string>& urls,
                                                   const http::Endpoint& endpoint) {
  std::vector<ScrapeTarget> out;
  for (const auto& u : urls) {
    auto t = parse_scrape_target(u);
    if (!t) return t.error();
    // The server's own metrics (same host and port) need its key as its API does.
    if (t->endpoint.host == endpoint.host && t->endpoint.port == endpoint.port) {
      t->endpoint.bearer = endpoint.bearer;
    }
    out.push_back(std::move(*t));
  }
  if (out.empty()) {
    ScrapeTarget t;
    t.endpoint = endpoint;
    t.path = endpoint.base_path + "/metrics";
    t.endpoint.base_path.clear();
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<telemetry::TimedScrape> window_scrapes(const std::vector<RawScrape>& scrapes,
                                                   double start_unix, double end_unix) {
  // Per URL, the bracketing scrapes count too: the counters' increase over the window needs
  // the values just before and just after it.
  std::vector<telemetry::TimedScrape> out;
  std::map<std::string, std::vector<const RawScrape*>> by_url;
  for (const auto& s : scrapes) {
    if (s.status == 200) by_url[s.url].push_back(&s);
  }
  for (auto& [url, list] : by_url) {
    std::sort(list.begin(), list.end(),
              [](const RawScrape* a, const RawScrape* b) { return a->t_unix < b->t_unix; });
    size_t first = 0, last = list.size();
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i]->t_unix <= start_unix) first = i;
    }
    for (size_t i = list.size(); i-- > 0;) {
      if (list[i]->t_unix >= end_unix) last = i + 1;
    }
    for (size_t i = first; i < last; ++i) {
      auto parsed = metrics::parse_prometheus(list[i]->body);
      if (!parsed) continue;
      out.push_back({list[i]->t_unix - start_unix, std::move(*parsed), url});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.t_s < b.t_s; });
  return out;
}

boost::json::object cost_to_json(const ScrapeCost& c, double slice_s) {
  return {{"slice_s", slice_s},    {"scrapes", c.scrapes},        {"failures", c.failures},
          {"bytes", c.bytes},      {"mean_ms", c.mean_ms},        {"max_ms", c.max_ms},
          {"late_slices", c.late}, {"first_error", c.first_error}};
}

MetricsScraper::MetricsScraper(std::vector<ScrapeTarget> targets, double slice_s)
    : targets_(std::move(targets)), slice_s_(slice_s) {
  assert(slice_s_ > 0);
}

MetricsScraper::~MetricsScraper() {
  stop();
}

void MetricsScraper::start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || targets_.empty()) return;
    started_ = true;
  }
  // The first round before returning, so that it precedes the load: counters' increases and GPU
  // power need a reading at or before the window's start.
  const int64_t first = mono_ns();
  round();
  thread_ = std::thread([this, first] { loop(first); });
}

void MetricsScraper::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  round();  // the state at the end of the point
}

void MetricsScraper::round() {
  const auto timeout =
      std::chrono::milliseconds(std::max<int64_t>(500, static_cast<int64_t>(slice_s_ * 1000)));
  for (const auto& t : targets_) {
    RawScrape s;
    s.t_unix = unix_seconds();
    s.t_mono_ns = mono_ns();
    s.url = t.url();
    auto r = http::http_get(t.endpoint, t.path, timeout);
    s.took_ms = static_cast<double>(mono_ns() - s.t_mono_ns) / 1e6;
    if (r) {
      s.status = r->status;
      s.body = std::move(r->body);
      if (s.status != 200) s.error = fmt::format("HTTP {}", s.status);
    } else {
      s.error = r.error().message;
    }
    std::lock_guard<std::mutex> lock(mu_);
    scrapes_.push_back(std::move(s));
  }
}

void MetricsScraper::loop(int64_t next) {
  const int64_t period = static_cast<int64_t>(slice_s_ * 1e9);
  for (;;) {
    next += period;
    const int64_t now = mono_ns();
    if (next < now) {  // the round overran its slice: skip to the next slot, counted
      const int64_t missed = (now - next) / period + 1;
      next += missed * period;
      std::lock_guard<std::mutex> lock(mu_);
      late_ += missed;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, MonoClock::time_point(std::chrono::nanoseconds(next)),
                       [this] { return stopping_; })) {
      return;
    }
    lock.unlock();
    round();
  }
}

ScrapeCost MetricsScraper::cost() const {
  std::lock_guard<std::mutex> lock(mu_);
  ScrapeCost c;
  c.late = late_;
  double sum = 0;
  for (const auto& s : scrapes_) {
    ++c.scrapes;
    c.bytes += static_cast<int64_t>(s.body.size());
    sum += s.took_ms;
    c.max_ms = std::max(c.max_ms, s.took_ms);
    if (!s.error.empty()) {
      ++c.failures;
      if (c.first_error.empty()) c.first_error = fmt::format("{}: {}", s.url, s.error);
    }
  }
  if (c.scrapes > 0) c.mean_ms = sum / static_cast<double>(c.scrapes);
  return c;
}

}  // namespace ib::load
