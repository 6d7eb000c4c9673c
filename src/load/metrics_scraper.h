// Scrapes a server's Prometheus endpoints during a point (docs/telemetry.md, "Server metrics"):
// every `slice_s` seconds, on an absolute schedule, one GET per URL on a connection of its own,
// from a thread of its own, so that the benchmark's event loops never wait for it. What it
// costs is measured (scrapes, latency, bytes) for the client-health block.
#pragma once

#include <boost/json.hpp>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/client.h"
#include "telemetry/timeslices.h"

namespace ib::load {

/// One scrape as it came back (parsing happens after the point, off the measurement).
struct RawScrape {
  double t_unix = 0;  // when the request was sent
  int64_t t_mono_ns = 0;
  std::string url;
  int status = 0;    // 0: no response (see error)
  std::string body;  // exposition text
  double took_ms = 0;
  std::string error;
};

struct ScrapeCost {
  int64_t scrapes = 0, failures = 0;
  int64_t bytes = 0;
  double mean_ms = 0, max_ms = 0;
  int64_t late = 0;  // slices whose scrape could not start on time (the previous one overran)
  std::string first_error;
};

/// A metrics URL: the endpoint and the path (http://host:port/metrics).
struct ScrapeTarget {
  http::Endpoint endpoint;
  std::string path = "/metrics";
  std::string url() const { return endpoint.url() + path; }
};

/// Parses "http://host:port/path" (path default /metrics). Error names the URL.
Expected<ScrapeTarget> parse_scrape_target(const std::string& url);
/// The targets of `urls`, or the endpoint's /metrics when there are none.
Expected<std::vector<ScrapeTarget>> scrape_targets(const std::vector<std::string>& urls,
                                                   const http::Endpoint& endpoint);
/// The parsed scrapes of a point's measured window [start, end] (unix seconds): from the last
/// one at or before the start to the first one at or after the end; t_s is seconds from the
/// start. Failed and unparseable scrapes are left out (their count is in the cost).
std::vector<telemetry::TimedScrape> window_scrapes(const std::vector<RawScrape>& scrapes,
                                                   double start_unix, double end_unix);

/// The cost block of the client-health JSON ("server_metrics_scrape").
boost::json::object cost_to_json(const ScrapeCost& c, double slice_s);

class MetricsScraper {
 public:
  /// REQUIRES: slice_s > 0.
  MetricsScraper(std::vector<ScrapeTarget> targets, double slice_s);
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  /// Starts scraping: one round before returning (so it precedes the load), then every slice on
  /// the scraper's thread.
  void start();
  /// Takes one last round and stops; idempotent.
  void stop();
  /// The scrapes so far, in time order (call after stop()).
  const std::vector<RawScrape>& scrapes() const { return scrapes_; }
  ScrapeCost cost() const;

 private:
  void loop(int64_t first_ns);
  void round();

  std::vector<ScrapeTarget> targets_;
  double slice_s_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::vector<RawScrape> scrapes_;
  int64_t late_ = 0;
};

}  // namespace ib::load
