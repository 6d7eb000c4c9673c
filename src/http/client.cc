#include "http/client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "core/clock.h"
#include "http/awaitable.h"

namespace ib::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string Endpoint::authority() const {
  // An IPv6 literal is bracketed, as in the URL it came from (http://[::1]:8000).
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string Endpoint::url() const {
  return "http://" + authority() + base_path;
}

Expected<Endpoint> parse_endpoint(std::string_view url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    return Error{fmt::format("invalid endpoint URL '{}': {}", url, parsed.error().message())};
  }
  const auto& u = *parsed;
  if (u.scheme() != "http") {
    return Error{fmt::format("endpoint URL '{}': scheme '{}' is not supported (use http://)", url,
                             u.scheme())};
  }
  Endpoint e;
  e.host = std::string(u.encoded_host());
  if (e.host.empty()) return Error{fmt::format("endpoint URL '{}' has no host", url)};
  if (e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
  if (u.has_port()) {
    if (u.port().empty() || u.port_number() == 0) {
      return Error{fmt::format("endpoint URL '{}' has an invalid port", url)};
    }
    e.port = u.port_number();
  }
  e.base_path = std::string(u.encoded_path());
  while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  return e;
}

Expected<tcp::resolver::results_type> resolve(const Endpoint& endpoint) {
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
  if (ec) {
    return Error{fmt::format("cannot resolve '{}': {}", endpoint.host, ec.message())};
  }
  return results;
}

bool HttpOutcome::reset() const {
  return ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         (!response_started && (ec == http::error::end_of_stream || ec == asio::error::eof));
}

namespace {

// Size of the window body bytes are parsed into, and the most the read buffer may hold. SSE
// events of OpenAI-compatible servers are a few hundred bytes; larger bodies take more reads.
constexpr size_t kBodyWindow = 2048;
constexpr size_t kReadBufferMax = 8192;
constexpr size_t kReadChunk = 4096;

using steady_time = std::chrono::steady_clock::time_point;

}  // namespace

namespace detail {

/// One level-triggered epoll set per io_context holding every connected client socket. It is one
/// descriptor in Asio's own reactor: when any socket is ready, one Asio completion runs dispatch(),
/// which collects up to kBatch ready sockets with one epoll_wait and serves each in place. The
/// wait is armed only while some exchange is in progress, so an io_context with nothing to do
/// still returns from run(); idle keep-alive sockets stay in the set, and a server's close of one
/// is seen (and the socket closed) while other requests run.
class StreamPoller : public asio::execution_context::service {
 public:
  using key_type = StreamPoller;
  static inline asio::execution_context::id id;

  explicit StreamPoller(asio::execution_context& context)
      : asio::execution_context::service(context), epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {}
  ~StreamPoller() override {
    descriptor_.reset();
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }

  /// The poller of the io_context `executor` runs on.
  static StreamPoller& of(const asio::any_io_executor& executor) {
    auto& context = asio::query(executor, asio::execution::context);
    StreamPoller& poller = asio::use_service<StreamPoller>(context);
    if (!poller.descriptor_) poller.descriptor_.emplace(executor);
    return poller;
  }

  bool usable() const { return epoll_fd_ >= 0; }

  /// Buffers shared by this io_context's connections, used only inside one on_ready() call:
  /// reads land here, and parsed body bytes are handed to the sink from here, so each connection
  /// keeps only what a read left unparsed (usually nothing). Hot in cache, small per stream.
  char* read_buffer() { return read_buffer_; }
  char* body_window() { return body_window_; }

  boost::system::error_code add(int fd, HttpConnection* conn, bool want_write) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
    ev.data.ptr = conn;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return last_error();
    return {};
  }
  boost::system::error_code modify(int fd, HttpConnection* conn, bool want_write) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
    ev.data.ptr = conn;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) return last_error();
    return {};
  }
  void remove(int fd, HttpConnection* conn) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    // A ready event of this connection may still be in the batch being dispatched.
    for (int i = next_; i < batch_size_; ++i) {
      if (batch_[i].data.ptr == conn) batch_[i].data.ptr = nullptr;
    }
  }

  /// An exchange started / ended: the poller waits for readiness while any is in progress.
  void exchange_started() {
    if (active_++ == 0) arm();
  }
  void exchange_ended() {
    if (--active_ == 0 && armed_ && !dispatching_) {
      boost::system::error_code ignored;
      descriptor_->cancel(ignored);
    }
  }

 private:
  static constexpr int kBatch = 128;

  static boost::system::error_code last_error() {
    return {errno, boost::system::system_category()};
  }

  void shutdown() override { descriptor_.reset(); }

  void arm() {
    if (armed_ || active_ == 0 || !descriptor_) return;
    if (!descriptor_->is_open()) descriptor_->assign(epoll_fd_);
    armed_ = true;
    descriptor_->async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](boost::system::error_code ec) {
                              armed_ = false;
                              if (!ec) dispatch();
                              arm();
                            });
  }

  // One batch per wake-up: a dispatch is bounded (kBatch reads, about a millisecond at the
  // kernel's cost per read), so the thread's timers (open-loop arrivals, the lag ticker) are
  // never held back longer than that.
  void dispatch() {
    dispatching_ = true;
    int n;
    do {
      n = ::epoll_wait(epoll_fd_, batch_, kBatch, 0);
    } while (n < 0 && errno == EINTR);
    batch_size_ = std::max(n, 0);
    for (next_ = 0; next_ < batch_size_;) {
      const epoll_event& ev = batch_[next_++];
      if (ev.data.ptr != nullptr) static_cast<HttpConnection*>(ev.data.ptr)->on_ready(ev.events);
    }
    batch_size_ = next_ = 0;
    dispatching_ = false;
  }

  int epoll_fd_;
  // Released (in the destructor, before the epoll descriptor closes) without closing it: the
  // descriptor only watches epoll_fd_, which this poller owns.
  struct Descriptor : asio::posix::stream_descriptor {
    using asio::posix::stream_descriptor::stream_descriptor;
    ~Descriptor() {
      if (is_open()) release();
    }
  };
  std::optional<Descriptor> descriptor_;
  epoll_event batch_[kBatch];
  char read_buffer_[kReadChunk];
  char body_window_[kBodyWindow];
  int batch_size_ = 0;
  int next_ = 0;
  int active_ = 0;
  bool armed_ = false;
  bool dispatching_ = false;
};

}  // namespace detail

/// What one request needs while it is in flight.
struct HttpConnection::Exchange {
  http::response_parser<http::buffer_body> parser;
  HttpOutcome out;
  ResponseSink* sink = nullptr;
  std::string_view body;  // the caller's; alive while request() is awaited
  size_t sent = 0;        // bytes of head_ + body written
  int64_t first_byte_deadline = INT64_MAX;
  int64_t total_deadline = INT64_MAX;
  int64_t idle_ns = 0;
  int64_t rx_ns = 0;  // arrival time of the last bytes read
};

HttpConnection::HttpConnection(asio::any_io_executor executor, const Endpoint& endpoint,
                               const tcp::resolver::results_type& addresses,
                               ClientTimeouts timeouts, std::optional<asio::ip::address> source)
    : endpoint_(&endpoint),
      addresses_(&addresses),
      timeouts_(timeouts),
      source_(std::move(source)),
      stream_(executor),
      poller_(&detail::StreamPoller::of(executor)),
      host_header_(endpoint.authority()),
      deadline_timer_(executor) {}

HttpConnection::~HttpConnection() {
  close();
}

void HttpConnection::close_socket() {
  if (fd_ >= 0) {
    poller_->remove(fd_, this);
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    fd_ = -1;
  }
  beast::error_code ignored;
  if (stream_.socket().is_open()) stream_.socket().close(ignored);
  pending_.clear();
  pending_.shrink_to_fit();
  open_ = false;
  requests_on_connection_ = 0;
}

void HttpConnection::close() {
  if (phase_ == Phase::kWriting || phase_ == Phase::kReading) {
    finish(asio::error::operation_aborted);  // closes the socket
    return;
  }
  close_socket();
}

asio::awaitable<boost::system::error_code> HttpConnection::connect() {
  stream_.expires_after(timeouts_.connect);
  boost::system::error_code ec;
  if (source_) {
    // Bind the local address first; connect to each resolved address in turn.
    for (const auto& entry : *addresses_) {
      const tcp::endpoint target = entry.endpoint();
      if (target.address().is_v4() != source_->is_v4()) continue;
      stream_.socket().open(target.protocol(), ec);
      if (!ec) stream_.socket().bind(tcp::endpoint(*source_, 0), ec);
      if (!ec) std::tie(ec) = co_await stream_.async_connect(target, use_tuple);
      if (!ec) break;
      stream_.close();
    }
    if (!ec && !stream_.socket().is_open()) ec = asio::error::address_family_not_supported;
  } else {
    tcp::endpoint ep;
    std::tie(ec, ep) = co_await stream_.async_connect(*addresses_, use_tuple);
  }
  stream_.expires_never();
  if (ec) co_return ec;
  if (!poller_->usable())
    co_return boost::system::error_code(EMFILE, boost::system::system_category());
  stream_.socket().set_option(tcp::no_delay(true), ec);
  // Kernel receive timestamps; failure only costs precision.
  const int on = 1;
  ::setsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  // From here the descriptor is this connection's, watched by the poller (non-blocking).
  fd_ = stream_.socket().release(ec);
  if (ec || fd_ < 0) {
    fd_ = -1;
    co_return ec ? ec : boost::system::error_code(asio::error::bad_descriptor);
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  ec = poller_->add(fd_, this, /*want_write=*/false);
  if (ec) {
    ::close(fd_);
    fd_ = -1;
    co_return ec;
  }
  open_ = true;
  requests_on_connection_ = 0;
  pending_.clear();
  co_return boost::system::error_code{};
}

int64_t HttpConnection::current_deadline() const {
  const Exchange& x = *exchange_;
  int64_t deadline = x.first_byte_deadline;
  if (x.out.response_started) {
    deadline = INT64_MAX;
    if (x.idle_ns > 0) {
      const std::optional<int64_t> progress = x.sink->progress_ns();
      deadline = (progress ? *progress : last_rx_ns_) + x.idle_ns;
    }
  }
  return std::min(deadline, x.total_deadline);
}

void HttpConnection::finish(boost::system::error_code ec, TimeoutKind timeout) {
  if (phase_ != Phase::kWriting && phase_ != Phase::kReading) return;
  Exchange& x = *exchange_;
  phase_ = Phase::kDone;
  x.out.ec = ec;
  x.out.timeout = timeout;
  switch (timeout) {
    case TimeoutKind::kTotal:
      x.out.timeout_limit = timeouts_.total;
      break;
    case TimeoutKind::kFirstByte:
      x.out.timeout_limit = timeouts_.first_byte;
      break;
    case TimeoutKind::kIdle:
      x.out.timeout_limit = timeouts_.idle;
      break;
    case TimeoutKind::kConnect:
      x.out.timeout_limit = timeouts_.connect;
      break;
    case TimeoutKind::kNone:
      break;
  }
  if (ec) {
    close_socket();
  } else {
    x.out.complete = true;
    if (!x.parser.get().keep_alive()) close_socket();
  }
  poller_->exchange_ended();
  deadline_timer_.cancel();  // wakes request()
}

// The request head, written by hand into a reused buffer (Beast's serializer allocates).
void HttpConnection::write_head(http::verb verb, std::string_view path, std::string_view body,
                                std::string_view request_id, std::string_view correlation_id,
                                std::string_view extra_headers) {
  head_.clear();
  head_ += http::to_string(verb);
  head_ += ' ';
  head_ += endpoint_->base_path;
  head_ += path;
  head_ += " HTTP/1.1\r\nHost: ";
  head_ += host_header_;
  head_ += "\r\nUser-Agent: inferbench\r\n";
  if (!endpoint_->bearer.empty()) {
    head_ += "Authorization: Bearer ";
    head_ += endpoint_->bearer;
    head_ += "\r\n";
  }
  if (!request_id.empty()) {
    head_ += "X-Request-Id: ";
    head_ += request_id;
    head_ += "\r\n";
  }
  if (!correlation_id.empty()) {
    head_ += "X-Correlation-ID: ";
    head_ += correlation_id;
    head_ += "\r\n";
  }
  head_ += extra_headers;
  if (!body.empty() || verb == http::verb::post) {
    head_ += "Content-Type: application/json\r\nAccept: text/event-stream, application/json\r\n";
    head_ += "Content-Length: ";
    head_ += std::to_string(body.size());
    head_ += "\r\n";
  }
  head_ += "\r\n";
}

asio::awaitable<boost::system::error_code> HttpConnection::open() {
  if (open_) co_return boost::system::error_code();
  auto ec = co_await connect();
  if (ec) close_socket();
  co_return ec;
}

asio::awaitable<HttpOutcome> HttpConnection::request(http::verb verb, std::string_view path,
                                                     std::string_view body, ResponseSink& sink,
                                                     std::string_view request_id,
                                                     std::string_view correlation_id,
                                                     std::string_view extra_headers) {
  HttpOutcome early;
  early.send_ns = mono_ns();  // replaced by the write time once connected
  if (!open_) {
    early.ec = co_await connect();
    if (early.ec) {
      early.connect_failed = true;
      if (early.ec == beast::error::timeout) {
        early.timeout = TimeoutKind::kConnect;
        early.timeout_limit = timeouts_.connect;
      }
      close_socket();
      co_return early;
    }
  }
  write_head(verb, path, body, request_id, correlation_id, extra_headers);

  exchange_ = std::make_unique<Exchange>();
  Exchange& x = *exchange_;
  x.parser.body_limit(boost::none);
  x.parser.eager(true);
  x.sink = &sink;
  x.body = body;
  // Deadlines on the monotonic clock: first byte and whole request from the send, idle from
  // the last progress (kept by the sink, or the last read).
  x.out.send_ns = mono_ns();
  auto after_send = [&](std::chrono::milliseconds limit) {
    return limit.count() > 0 ? x.out.send_ns + std::chrono::nanoseconds(limit).count() : INT64_MAX;
  };
  x.total_deadline = after_send(timeouts_.total);
  x.first_byte_deadline = after_send(timeouts_.first_byte);
  x.idle_ns = timeouts_.idle.count() > 0 ? std::chrono::nanoseconds(timeouts_.idle).count() : 0;
  x.rx_ns = x.out.send_ns;
  ++requests_on_connection_;
  phase_ = Phase::kWriting;
  poller_->exchange_started();
  if (send_some() && phase_ == Phase::kWriting) {
    phase_ = Phase::kReading;
    // Bytes left over from the previous response are parsed now (they are an error).
    if (!pending_.empty()) {
      std::string leftover = std::move(pending_);
      pending_.clear();
      parse(leftover, x.rx_ns);
    }
  } else if (phase_ == Phase::kWriting) {
    if (auto ec = poller_->modify(fd_, this, /*want_write=*/true)) finish(ec);
  }

  // Sleep until the exchange ends or its deadline passes.
  while (phase_ != Phase::kDone) {
    const int64_t deadline = current_deadline();
    const int64_t now = mono_ns();
    if (deadline != INT64_MAX && now >= deadline) {
      const TimeoutKind kind = now >= x.total_deadline ? TimeoutKind::kTotal
                               : x.out.response_started      ? TimeoutKind::kIdle
                                                             : TimeoutKind::kFirstByte;
      finish(beast::error::timeout, kind);
      break;
    }
    timer_at_ns_ = deadline;
    deadline_timer_.expires_at(deadline == INT64_MAX
                                   ? steady_time::max()
                                   : steady_time(std::chrono::nanoseconds(deadline)));
    co_await deadline_timer_.async_wait(use_tuple);
  }
  HttpOutcome out = x.out;
  exchange_.reset();
  phase_ = Phase::kIdle;
  co_return out;
}

bool HttpConnection::send_some() {
  Exchange& x = *exchange_;
  const size_t total = head_.size() + x.body.size();
  while (x.sent < total) {
    iovec iov[2];
    int count = 0;
    if (x.sent < head_.size()) {
      iov[count++] = {head_.data() + x.sent, head_.size() - x.sent};
      if (!x.body.empty()) iov[count++] = {const_cast<char*>(x.body.data()), x.body.size()};
    } else {
      const size_t off = x.sent - head_.size();
      iov[count++] = {const_cast<char*>(x.body.data()) + off, x.body.size() - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      finish(boost::system::error_code(errno, boost::system::system_category()));
      return true;
    }
    x.sent += static_cast<size_t>(n);
  }
  return true;
}

void HttpConnection::on_ready(uint32_t events) {
  if (phase_ != Phase::kWriting && phase_ != Phase::kReading) {
    // An idle keep-alive connection became readable: the server closed it (or sent bytes no
    // request asked for). Either way it cannot serve the next request.
    if (fd_ >= 0) close_socket();
    return;
  }
  if (phase_ == Phase::kWriting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) {
      send_some();
      if (phase_ != Phase::kWriting) return;  // the write failed
    }
    if (exchange_->sent == head_.size() + exchange_->body.size()) {
      phase_ = Phase::kReading;
      if (auto ec = poller_->modify(fd_, this, /*want_write=*/false)) {
        finish(ec);
        return;
      }
    } else if ((events & EPOLLIN) == 0) {
      return;  // still writing; a response before the request is complete is read below
    }
  }
  // Readable (or hung up): one read, up to two more while the reads fill their chunk.
  for (int i = 0; i < 3; ++i) {
    boost::system::error_code ec;
    int64_t rx_ns = 0;
    char* const scratch = poller_->read_buffer();
    const ssize_t n = receive(scratch, kReadChunk, ec, rx_ns);
    if (ec == asio::error::would_block) return;
    if (ec) {
      finish(ec);
      return;
    }
    Exchange& x = *exchange_;
    if (n == 0) {
      // Orderly close: ends a body delimited by the connection, else cuts the message.
      if (x.out.response_started) {
        x.parser.put_eof(ec);
        if (!ec && x.parser.is_done()) {
          finish({});
          return;
        }
      }
      finish(x.out.response_started ? http::error::partial_message : http::error::end_of_stream);
      return;
    }
    x.rx_ns = rx_ns;
    if (pending_.empty()) {
      if (!parse(std::string_view(scratch, static_cast<size_t>(n)), rx_ns)) return;
    } else {
      // The rare read that completes what an earlier one left unparsed.
      pending_.append(scratch, static_cast<size_t>(n));
      std::string input = std::move(pending_);
      pending_.clear();
      if (!parse(input, rx_ns)) return;
    }
    if (static_cast<size_t>(n) < kReadChunk) return;
  }
}

bool HttpConnection::parse(std::string_view input, int64_t rx_ns) {
  Exchange& x = *exchange_;
  char* const window = poller_->body_window();
  while (!input.empty()) {
    x.parser.get().body().data = window;
    x.parser.get().body().size = kBodyWindow;
    boost::system::error_code ec;
    const size_t used = x.parser.put(asio::const_buffer(input.data(), input.size()), ec);
    input.remove_prefix(used);
    if (ec == http::error::need_buffer || ec == http::error::need_more) ec = {};
    if (!x.out.response_started && x.parser.is_header_done()) {
      x.out.response_started = true;
      x.out.status = static_cast<int>(x.parser.get().result_int());
      x.sink->on_headers(x.out.status, rx_ns);
      // The idle limit now applies: wake request() if it ends before the timer it sleeps on.
      if (current_deadline() < timer_at_ns_) deadline_timer_.cancel();
    }
    const size_t got = kBodyWindow - x.parser.get().body().size;
    if (got > 0) x.sink->on_body(std::string_view(window, got), rx_ns);
    if (ec) {
      finish(ec);
      return false;
    }
    if (x.parser.is_done()) {
      finish({});
      return false;
    }
    if (used == 0 && got == 0) break;  // needs more bytes
  }
  if (input.size() >= kReadBufferMax) {
    finish(http::error::header_limit);  // nothing the parser can take in this much
    return false;
  }
  pending_.assign(input);
  return true;
}

ssize_t HttpConnection::receive(char* into, size_t size, boost::system::error_code& ec,
                                int64_t& rx_ns) {
  iovec iov{into, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(fd_, &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  const int64_t now = mono_ns();
  if (n < 0) {
    ec = boost::system::error_code(errno, boost::system::system_category());
    if (errno == EAGAIN || errno == EWOULDBLOCK) ec = asio::error::would_block;
    return n;
  }
  rx_ns = now;
  ++reads_;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      // The kernel stamps with CLOCK_REALTIME; move it onto the monotonic clock.
      timespec real_now;
      ::clock_gettime(CLOCK_REALTIME, &real_now);
      const int64_t real_ns = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
      const int64_t real_now_ns = real_now.tv_sec * 1'000'000'000LL + real_now.tv_nsec;
      const int64_t stamped = now - (real_now_ns - real_ns);
      // Never later than the read, never absurdly early (clock steps): else keep the read time.
      if (stamped <= now && now - stamped < 60'000'000'000LL) {
        rx_ns = stamped;
        ++stamped_reads_;
      }
    }
  }
  // Bytes of one stream cannot arrive before earlier bytes of it; the kernel's stamps of coalesced
  // segments can be a few nanoseconds out of order, so keep them monotonic.
  if (rx_ns < last_rx_ns_) rx_ns = last_rx_ns_;
  last_rx_ns_ = rx_ns;
  return n;
}

namespace {

class CollectSink : public ResponseSink {
 public:
  void on_headers(int status, int64_t) override { status_ = status; }
  void on_body(std::string_view bytes, int64_t) override { body_.append(bytes); }
  int status_ = 0;
  std::string body_;
};

}  // namespace

Expected<SimpleResponse> http_get(const Endpoint& endpoint, std::string_view path,
                                  std::chrono::milliseconds timeout) {
  return http_get(endpoint, path, ClientTimeouts{timeout, timeout, timeout, timeout});
}

namespace {

Expected<SimpleResponse> simple_request(const Endpoint& endpoint, http::verb verb,
                                        std::string_view path, std::string_view body,
                                        const ClientTimeouts& t,
                                        std::string_view extra_headers = {}) {
  const char* method = verb == http::verb::get ? "GET" : "POST";
  auto addresses = resolve(endpoint);
  if (!addresses) return addresses.error();
  asio::io_context io;
  HttpConnection conn(io.get_executor(), endpoint, *addresses, t);
  CollectSink sink;
  std::optional<HttpOutcome> outcome;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        outcome = co_await conn.request(verb, path, body, sink, {}, {}, extra_headers);
        conn.close();
      },
      asio::detached);
  // The connection enforces each limit; this bound only guards against a bug there.
  const auto bound = t.total.count() > 0 ? t.total : t.connect + t.first_byte + t.idle;
  io.run_for(bound + std::chrono::milliseconds(100));
  if (!outcome) return Error{fmt::format("{} {}{}: timed out", method, endpoint.url(), path)};
  if (outcome->timed_out()) {
    const double limit_s = static_cast<double>(outcome->timeout_limit.count()) / 1000.0;
    const char* what = "";
    switch (outcome->timeout) {
      case TimeoutKind::kConnect:
        what = "not connected within {} s (--connect-timeout)";
        break;
      case TimeoutKind::kFirstByte:
        what = "no first byte within {} s (--first-byte-timeout)";
        break;
      case TimeoutKind::kIdle:
        what = "no progress for {} s (--idle-timeout)";
        break;
      case TimeoutKind::kTotal:
      case TimeoutKind::kNone:
        what = "not complete within {} s (--request-timeout)";
        break;
    }
    return Error{fmt::format("{} {}{}: {}", method, endpoint.url(), path,
                             fmt::format(fmt::runtime(what), limit_s))};
  }
  if (outcome->ec) {
    return Error{
        fmt::format("{} {}{}: {}", method, endpoint.url(), path, outcome->ec.message())};
  }
  return SimpleResponse{sink.status_, std::move(sink.body_)};
}

}  // namespace

Expected<SimpleResponse> http_get(const Endpoint& endpoint, std::string_view path,
                                  const ClientTimeouts& t) {
  return simple_request(endpoint, http::verb::get, path, {}, t);
}

Expected<SimpleResponse> http_post(const Endpoint& endpoint, std::string_view path,
                                   std::string_view body, const ClientTimeouts& t,
                                   std::string_view extra_headers) {
  return simple_request(endpoint, http::verb::post, path, body, t, extra_headers);
}

}  // namespace ib::http
