// A loopback HTTP/1.1 test server that answers each request by replaying a scripted byte
// sequence: every write step is one write() call on a TCP_NODELAY socket, after a scripted delay,
// so a test controls where the client's reads can split the stream and when bytes arrive. Steps
// can also end the connection with FIN or RST, stall, or hang until the client gives up.
//
// Used to replay byte-exact transcripts of real servers (vLLM, SGLang, TensorRT-LLM, llama.cpp;
// sources in tests/e2e/dialects_test.cc) against the real `inferbench bench`.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ib::test {

using Ms = std::chrono::milliseconds;

/// One scripted action. `delay` is waited before the action runs.
struct Step {
  enum class Kind {
    kWrite,  // write `bytes` with one write call
    kStall,  // write nothing; only the delay (the stall's length) passes
    kClose,  // half-close (FIN), then wait for the client to close, then close
    kReset,  // SO_LINGER 0 and close: the client sees a connection reset (RST)
    kHang,   // never write again; wait until the client closes the connection
  };
  Kind kind = Kind::kWrite;
  std::string bytes;
  Ms delay{0};
};

/// The response to one request: steps run in order. A script that ends without kClose, kReset
/// or kHang leaves the connection open for the next request (keep-alive).
class Script {
 public:
  /// `bytes` exactly as given, in one write call.
  Script& write(std::string bytes, Ms delay = Ms{0});
  /// `payload` framed as one HTTP/1.1 chunk ("<hex>\r\n<payload>\r\n"), in one write call.
  Script& chunk(std::string_view payload, Ms delay = Ms{0});
  /// The chunked body's terminator "0\r\n\r\n", in one write call.
  Script& end_chunks(Ms delay = Ms{0});
  /// Each byte of `bytes` in its own write call; `delay` is waited before the first byte.
  Script& write_bytewise(std::string_view bytes, Ms delay = Ms{0});
  /// Each byte of `payload` as its own HTTP chunk, in its own write call.
  Script& chunk_bytewise(std::string_view payload, Ms delay = Ms{0});
  Script& stall(Ms duration);
  Script& close(Ms delay = Ms{0});
  Script& reset(Ms delay = Ms{0});
  Script& hang();

  const std::vector<Step>& steps() const { return steps_; }
  /// Number of steps so far: the index the next step will have (to find its write time later).
  size_t size() const { return steps_.size(); }

 private:
  std::vector<Step> steps_;
};

/// "<hex length>\r\n<payload>\r\n". `payload` must not be empty (that would end the body).
std::string http_chunk(std::string_view payload);

/// "HTTP/1.1 <status> <reason>\r\n" + "name: value\r\n"... + "\r\n".
std::string response_head(int status, std::string_view reason,
                          const std::vector<std::pair<std::string, std::string>>& headers);

/// A complete non-streamed response with Content-Length (e.g. an error body).
std::string full_response(int status, std::string_view reason,
                          std::vector<std::pair<std::string, std::string>> headers,
                          std::string_view body);

/// What arrived: one HTTP request.
struct RequestInfo {
  int index = 0;          // 0-based, in order of arrival over the server's life
  int connection = 0;     // 0-based, in order of acceptance
  int on_connection = 0;  // 0-based position of this request on its connection
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int64_t received_ns = 0;  // ib::mono_ns() when the whole request had been read

  /// The first header named `name` (case-insensitive); empty when absent.
  std::string header(std::string_view name) const;
};

/// One request and what the server did about it.
struct Exchange {
  RequestInfo request;
  /// ib::mono_ns() at which each step ran (for a write: just before the write call, so the
  /// client cannot have seen those bytes earlier). Shorter than the script when it stopped early.
  std::vector<int64_t> step_ns;
  bool finished = false;   // every step ran
  std::string write_error; // why a write failed (the client had gone), empty otherwise
};

/// The server. Listens on 127.0.0.1 on an ephemeral port, serves on its own thread, stops in the
/// destructor (in-flight scripts are abandoned and their connections closed).
class TranscriptServer {
 public:
  /// Called on the server's thread for every request; returns the script to replay.
  using Responder = std::function<Script(const RequestInfo&)>;

  explicit TranscriptServer(Responder responder);
  /// The same script for every request.
  explicit TranscriptServer(Script script);
  ~TranscriptServer();
  TranscriptServer(const TranscriptServer&) = delete;
  TranscriptServer& operator=(const TranscriptServer&) = delete;

  uint16_t port() const;
  /// "http://127.0.0.1:<port>"
  std::string url() const;

  /// Snapshot of every request so far, in arrival order.
  std::vector<Exchange> exchanges() const;
  /// Connections accepted so far.
  int connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ib::test
