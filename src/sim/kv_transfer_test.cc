#include "sim/kv_transfer.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "http/awaitable.h"

namespace ib::sim {
namespace {

namespace asio = boost::asio;

KvPull pull_once(asio::io_context& io, uint16_t port, const std::string& id, const KvLink& link) {
  KvPull out;
  asio::co_spawn(io, pull_kv("127.0.0.1", port, id, link, 10.0),
                 [&](std::exception_ptr e, KvPull p) {
                   io.stop();  // the acceptor would keep run_for() busy to its end
                   rethrow(e);
                   out = std::move(p);
                 });
  io.restart();
  io.run_for(std::chrono::seconds(20));
  return out;
}

TEST(KvTransfer, LinkPresetsAndTheirTimes) {
  auto rdma = kv_link_preset("rdma");
  ASSERT_TRUE(rdma.ok());
  EXPECT_DOUBLE_EQ(kv_transfer_seconds(*rdma, 50e9), 1.0 + 5e-6);
  auto bad = kv_link_preset("carrier-pigeon");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("nvlink, rdma, ethernet or tcp"), std::string::npos);
}

// A held KV is pulled once, at the slower end's pace, its bytes capped on the wire; a second
// pull, or one of an id never held, is an answer naming why, never a hang.
TEST(KvTransfer, APullTakesTheSlowerEndsTimeAndOnlyOnce) {
  asio::io_context io(1);
  KvChannelOptions options;
  options.link = KvLink{"fast", 100e9, 0};
  options.wire_max_bytes = 4096;
  KvSender sender(io, options);
  auto port = sender.listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  const std::string id = sender.hold(20e6);
  EXPECT_EQ(sender.counters().held, 1);
  const KvLink slow{"slow", 1e9, 0.002};  // 20 MB at 1 GB/s + 2 ms: 22 ms
  const KvPull first = pull_once(io, *port, id, slow);
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.bytes, 20e6);
  EXPECT_EQ(first.wire_bytes, 4096);
  EXPECT_GE(first.seconds, 0.022);
  const KvPull again = pull_once(io, *port, id, slow);
  EXPECT_FALSE(again.ok);
  EXPECT_NE(again.error.find("already pulled"), std::string::npos) << again.error;
  const KvPull never = pull_once(io, *port, "kv-nope", slow);
  EXPECT_FALSE(never.ok);
  const KvTransferCounters c = sender.counters();
  EXPECT_EQ(c.served, 1);
  EXPECT_EQ(c.held, 0);
  EXPECT_EQ(c.wire_bytes, 4096);
}

TEST(KvTransfer, WireLinesAreCheckedFieldByField) {
  auto ok = parse_pull_line("PULL kv-1 50000000000 5e-06");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->id, "kv-1");
  EXPECT_DOUBLE_EQ(ok->link.bytes_per_s, 50e9);
  EXPECT_FALSE(parse_pull_line("PULL kv-1 0 0"));
  EXPECT_FALSE(parse_pull_line("PULL kv-1 nan 0"));
  EXPECT_FALSE(parse_pull_line("PULL kv-1 1e9 0 extra"));
  EXPECT_FALSE(parse_pull_line("GET kv-1 1e9 0"));
  double bytes = 0;
  int64_t wire = 0;
  EXPECT_TRUE(parse_kv_header("KV 67108864 1048576", bytes, wire));
  EXPECT_EQ(wire, 1048576);
  EXPECT_FALSE(parse_kv_header("KV -1 10", bytes, wire));
  EXPECT_FALSE(parse_kv_header("KV 10 10 10", bytes, wire));
}

}  // namespace
}  // namespace ib::sim
