#include "sim/kv_transfer.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cmath>
#include <sstream>

#include "core/clock.h"
#include "http/awaitable.h"

// GCC 12 false positive, as in sim_server.cc: after inlining Asio's recycling allocator for
// coroutine frames it reports mismatched new/delete.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace ib::sim {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t kMaxLine = 256;  // a request or header line
constexpr int kPaceChunks = 16;   // the payload goes out in this many paced writes
constexpr size_t kChunkBytes = 64 << 10;

double now_s() {
  return static_cast<double>(mono_ns()) / 1e9;
}

std::chrono::nanoseconds to_ns(double seconds) {
  return std::chrono::nanoseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1e9));
}

}  // namespace

Expected<KvLink> kv_link_preset(std::string_view name) {
  if (name == "nvlink") return KvLink{"nvlink", 450e9, 3e-6};
  if (name == "rdma") return KvLink{"rdma", 50e9, 5e-6};
  if (name == "ethernet") return KvLink{"ethernet", 12.5e9, 20e-6};
  if (name == "tcp") return KvLink{"tcp", 1.25e9, 50e-6};
  return Error{fmt::format("unknown KV link '{}': nvlink, rdma, ethernet or tcp", name)};
}

double kv_transfer_seconds(const KvLink& link, double bytes) {
  return link.latency_s + (link.bytes_per_s > 0 ? bytes / link.bytes_per_s : 0.0);
}

// ---------------------------------------------------------------------------------------------
// KvSender

KvSender::KvSender(asio::io_context& io, KvChannelOptions options)
    : io_(io), options_(std::move(options)), acceptor_(io) {}

KvSender::~KvSender() {
  stop();
}

Expected<uint16_t> KvSender::listen(const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return Error{fmt::format("KV side channel: bad host '{}': {}", host, ec.message())};
  const tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error{
        fmt::format("KV side channel: cannot listen on {}:{}: {}", host, port, ec.message())};
  }
  const uint16_t bound = acceptor_.local_endpoint().port();
  asio::co_spawn(io_, accept_loop(), asio::detached);
  return bound;
}

void KvSender::stop() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  });
}

std::string KvSender::hold(double bytes) {
  std::lock_guard lock(mutex_);
  const double now = now_s();
  expire_locked(now);
  const std::string id = fmt::format("kv-{:016x}", ++next_id_);
  held_.emplace(id, Entry{bytes, now});
  counters_.held = static_cast<int64_t>(held_.size());
  return id;
}

KvTransferCounters KvSender::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void KvSender::expire_locked(double now_s) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (now_s - it->second.held_at_s > options_.lease_s) {
      it = held_.erase(it);
      ++counters_.expired;
    } else {
      ++it;
    }
  }
  counters_.held = static_cast<int64_t>(held_.size());
}

std::optional<KvSender::Entry> KvSender::take(const std::string& id) {
  std::lock_guard lock(mutex_);
  expire_locked(now_s());
  auto it = held_.find(id);
  if (it == held_.end()) return std::nullopt;
  Entry e = it->second;
  held_.erase(it);
  counters_.held = static_cast<int64_t>(held_.size());
  return e;
}

asio::awaitable<void> KvSender::accept_loop() {
  while (acceptor_.is_open()) {
    auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      continue;  // a failed accept (EMFILE, a reset) does not end the channel
    }
    asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> KvSender::serve(tcp::socket socket) {
  std::string line;
  auto [ec, n] = co_await asio::async_read_until(socket, asio::dynamic_buffer(line, kMaxLine), '\n',
                                                 use_tuple);
  if (ec) co_return;
  // The puller's link: the transfer runs at the slower of the two ends (the lower bandwidth, the
  // longer latency).
  const std::optional<PullRequest> pull = parse_pull_line(std::string_view(line.data(), n - 1));
  if (!pull) {
    std::string reply = "ERR expected PULL <id> <bytes_per_s> <latency_s>\n";
    co_await asio::async_write(socket, asio::buffer(reply), use_tuple);
    co_return;
  }
  const std::string& id = pull->id;
  const KvLink link{"", std::min(options_.link.bytes_per_s, pull->link.bytes_per_s),
                    std::max(options_.link.latency_s, pull->link.latency_s)};
  const std::optional<Entry> entry = take(id);
  if (!entry) {
    std::string reply = fmt::format(
        "ERR no KV held for {} (never held, already pulled, or "
        "expired after {} s)\n",
        id, options_.lease_s);
    co_await asio::async_write(socket, asio::buffer(reply), use_tuple);
    co_return;
  }
  const int64_t wire =
      std::min<int64_t>(static_cast<int64_t>(std::llround(entry->bytes)), options_.wire_max_bytes);
  std::string header = fmt::format("KV {:.0f} {}\n", entry->bytes, wire);
  if (auto [wec, wn] = co_await asio::async_write(socket, asio::buffer(header), use_tuple); wec) {
    co_return;
  }
  // The payload in kPaceChunks writes, each released at its share of the link's time.
  const double total_s = kv_transfer_seconds(link, entry->bytes) / options_.time_scale;
  const double start = now_s();
  asio::steady_timer timer(socket.get_executor());
  std::string chunk(std::min<size_t>(kChunkBytes, static_cast<size_t>(std::max<int64_t>(wire, 1))),
                    '\x5a');
  int64_t sent = 0;
  for (int i = 1; i <= kPaceChunks; ++i) {
    const int64_t until = wire * i / kPaceChunks;
    const double due = start + total_s * i / kPaceChunks;
    if (const double wait = due - now_s(); wait > 0) {
      timer.expires_after(to_ns(wait));
      co_await timer.async_wait(use_tuple);
    }
    while (sent < until) {
      const size_t len = static_cast<size_t>(std::min<int64_t>(until - sent, chunk.size()));
      auto [pec, pn] =
          co_await asio::async_write(socket, asio::buffer(chunk.data(), len), use_tuple);
      if (pec) co_return;
      sent += static_cast<int64_t>(pn);
    }
  }
  std::lock_guard lock(mutex_);
  ++counters_.served;
  counters_.wire_bytes += sent;
}

// ---------------------------------------------------------------------------------------------
// pull_kv

std::optional<PullRequest> parse_pull_line(std::string_view line) {
  if (line.size() > kMaxLine) return std::nullopt;
  std::istringstream in{std::string(line)};
  std::string verb, rest;
  PullRequest p;
  p.link.name = "peer";
  in >> verb >> p.id >> p.link.bytes_per_s >> p.link.latency_s;
  if (in.fail() || verb != "PULL" || p.id.empty()) return std::nullopt;
  if (in >> rest) return std::nullopt;  // nothing after the four fields
  if (!(p.link.bytes_per_s > 0) || !std::isfinite(p.link.bytes_per_s)) return std::nullopt;
  if (!(p.link.latency_s >= 0) || !(p.link.latency_s < 3600)) return std::nullopt;
  return p;
}

bool parse_kv_header(std::string_view line, double& bytes, int64_t& wire) {
  if (line.size() > kMaxLine || !line.starts_with("KV ")) return false;
  std::istringstream in{std::string(line.substr(3))};
  std::string rest;
  in >> bytes >> wire;
  if (in.fail() || (in >> rest)) return false;
  return std::isfinite(bytes) && bytes >= 0 && wire >= 0 && wire <= (int64_t{1} << 40);
}

asio::awaitable<KvPull> pull_kv(std::string host, int port, std::string id, KvLink link,
                                double timeout_s) {
  KvPull out;
  const std::string where = fmt::format("{}:{}", host, port);
  auto executor = co_await asio::this_coro::executor;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    out.error = fmt::format("KV transfer from {}: bad host: {}", where, ec.message());
    co_return out;
  }
  tcp::socket socket(executor);
  // The deadline closes the socket: whatever the pull waits on then fails.
  asio::steady_timer deadline(executor);
  bool timed_out = false;
  deadline.expires_after(to_ns(timeout_s));
  deadline.async_wait([&socket, &timed_out](const boost::system::error_code& e) {
    if (e) return;
    timed_out = true;
    boost::system::error_code ignored;
    socket.close(ignored);
  });
  auto fail = [&](std::string_view what, const boost::system::error_code& e) {
    out.error = timed_out ? fmt::format("KV transfer from {}: no KV within {} s", where, timeout_s)
                          : fmt::format("KV transfer from {}: {}: {}", where, what, e.message());
  };
  const int64_t start = mono_ns();
  if (auto [cec] = co_await socket.async_connect(
          tcp::endpoint(address, static_cast<uint16_t>(port)), use_tuple);
      cec) {
    fail("connect", cec);
    deadline.cancel();
    co_return out;
  }
  const std::string request =
      fmt::format("PULL {} {:.17g} {:.17g}\n", id, link.bytes_per_s, link.latency_s);
  if (auto [wec, wn] = co_await asio::async_write(socket, asio::buffer(request), use_tuple); wec) {
    fail("send", wec);
    deadline.cancel();
    co_return out;
  }
  std::string line;
  auto [rec, n] = co_await asio::async_read_until(socket, asio::dynamic_buffer(line, kMaxLine),
                                                  '\n', use_tuple);
  if (rec) {
    fail("reading the header", rec);
    deadline.cancel();
    co_return out;
  }
  const std::string_view header(line.data(), n - 1);
  int64_t wire = 0;
  if (header.starts_with("ERR ")) {
    out.error = fmt::format("KV transfer from {}: {}", where, header.substr(4));
    deadline.cancel();
    co_return out;
  }
  if (!parse_kv_header(header, out.bytes, wire)) {
    out.error =
        fmt::format("KV transfer from {}: not a KV header: '{}'", where, header.substr(0, 80));
    deadline.cancel();
    co_return out;
  }
  // What read_until took beyond the header is payload already.
  int64_t got = static_cast<int64_t>(line.size() - n);
  std::string buffer(kChunkBytes, '\0');
  while (got < wire) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(wire - got, buffer.size()));
    auto [pec, pn] =
        co_await asio::async_read(socket, asio::buffer(buffer.data(), want), use_tuple);
    got += static_cast<int64_t>(pn);
    if (pec) {
      fail(fmt::format("after {} of {} bytes", got, wire), pec);
      deadline.cancel();
      co_return out;
    }
  }
  deadline.cancel();
  out.ok = true;
  out.wire_bytes = got;
  out.seconds = static_cast<double>(mono_ns() - start) / 1e9;
  co_return out;
}

}  // namespace ib::sim
