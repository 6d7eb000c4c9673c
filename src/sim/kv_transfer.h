// KV-cache transfer between the roles of a disaggregated serve-sim deployment (docs/serve-sim.md,
// "Disaggregated prefill and decode"). A prefill instance (--role prefill) keeps each finished
// prefill's KV and serves it on a side-channel port, as vLLM's NixlConnector does; a decode
// instance (--role decode) pulls it over a real TCP connection before it decodes. The transfer
// is sized from the model's KV bytes per token and paced by a link model (bandwidth and latency:
// NVLink, RDMA, Ethernet or TCP classes), so that its time is the link's, whatever loopback
// could do; the bytes that cross the socket are capped (a test moves kilobytes, not gigabytes)
// and counted apart.
//
// Wire protocol (one pull a connection): the decode side sends "PULL <id> <bytes_per_s>
// <latency_s>\n" (its end of the link: the transfer runs at the slower end); the prefill side
// answers "KV <model_bytes> <wire_bytes>\n" and the wire bytes, the last at the link's time, or
// "ERR <reason>\n"; then it closes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/expected.h"
#include "sim/server_metrics.h"

namespace ib::sim {

/// A link between a prefill and a decode instance.
struct KvLink {
  std::string name;        // the preset's, or "custom"
  double bytes_per_s = 0;  // > 0
  double latency_s = 0;    // >= 0, once per transfer
};

/// nvlink (450 GB/s, 3 µs), rdma (50 GB/s: 400 Gb/s InfiniBand NDR, 5 µs), ethernet (12.5 GB/s:
/// 100 GbE, 20 µs), tcp (1.25 GB/s: 10 GbE through the kernel, 50 µs). Error names the choices.
Expected<KvLink> kv_link_preset(std::string_view name);

/// Seconds the link takes to move `bytes`: latency + bytes / bandwidth.
double kv_transfer_seconds(const KvLink& link, double bytes);

/// What a KV side channel does, on both sides.
struct KvChannelOptions {
  KvLink link;
  double time_scale = 1.0;           // transfer times divided by it, as every serve-sim time
  int64_t wire_max_bytes = 1 << 20;  // bytes a pull puts on the socket at most
  double lease_s = 480.0;  // KV not pulled within this is dropped (vLLM's NIXL abort timeout)
};

/// The prefill side: holds KV until a decode instance pulls it, and serves the pulls on its own
/// port. Thread-safe: hold() may be called from any I/O thread; the pulls are served on the
/// io_context given to the constructor.
class KvSender {
 public:
  KvSender(boost::asio::io_context& io, KvChannelOptions options);
  ~KvSender();
  KvSender(const KvSender&) = delete;
  KvSender& operator=(const KvSender&) = delete;

  /// Listens on host:port (0: a free one) and serves pulls; the port, or why not.
  Expected<uint16_t> listen(const std::string& host, uint16_t port);
  /// Closes the acceptor (the pulls in flight end on their own).
  void stop();

  /// Keeps `bytes` of KV for a decode instance; the id it pulls it by.
  std::string hold(double bytes);

  /// The counters (held, served, expired, wire bytes).
  KvTransferCounters counters() const;

 private:
  struct Entry {
    double bytes;
    double held_at_s;
  };
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  std::optional<Entry> take(const std::string& id);
  void expire_locked(double now_s);

  boost::asio::io_context& io_;
  KvChannelOptions options_;
  boost::asio::ip::tcp::acceptor acceptor_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> held_;
  uint64_t next_id_ = 0;
  KvTransferCounters counters_;
};

/// A pull request line, "PULL <id> <bytes_per_s> <latency_s>" (outside input: bounded, every
/// field checked); nullopt when it is not one.
struct PullRequest {
  std::string id;
  KvLink link;  // the puller's end
};
std::optional<PullRequest> parse_pull_line(std::string_view line);

/// A pull's answer header, "KV <model_bytes> <wire_bytes>"; false when it is not one.
bool parse_kv_header(std::string_view line, double& bytes, int64_t& wire);

/// One pull, as the decode side saw it.
struct KvPull {
  bool ok = false;
  std::string error;   // when !ok: what failed, naming the prefill instance
  double seconds = 0;  // connect to the last byte
  double bytes = 0;    // the model's KV bytes
  int64_t wire_bytes = 0;
};

/// Pulls KV `id` from the prefill instance at host:port over `link` (this end's: the transfer
/// runs at the slower of the two ends), within `timeout_s`.
boost::asio::awaitable<KvPull> pull_kv(std::string host, int port, std::string id, KvLink link,
                                       double timeout_s);

}  // namespace ib::sim
