#include "sim/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace ib::sim {
namespace {

TEST(BlockPool, AllocateAndReleaseTrackFreeBlocksAndUsage) {
  BlockPool pool(10, 16, true);
  EXPECT_EQ(pool.num_free(), 10);
  EXPECT_EQ(pool.usage(), 0);
  std::vector<int> a, b;
  pool.allocate(4, a);
  pool.allocate(6, b);
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_EQ(pool.usage(), 1.0);
  pool.release(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.6);
}

TEST(BlockPool, CachedBlocksAreFoundUntilEvicted) {
  BlockPool pool(4, 16, true);
  std::vector<int> a;
  pool.allocate(2, a);
  pool.cache(a[0], 111);
  pool.cache(a[1], 222);
  const std::vector<int> held = a;
  pool.release(a);
  // Freed but still cached: a lookup finds the chain, and taking it uses up free blocks.
  std::vector<int> ids;
  const uint64_t chain[] = {111, 222, 333};
  EXPECT_EQ(pool.lookup(chain, ids), 2);
  EXPECT_EQ(ids, held);
  EXPECT_EQ(pool.count_unreferenced(ids), 2);
  std::vector<int> b;
  pool.take(ids, b);
  EXPECT_EQ(pool.num_free(), 2);
  pool.release(b);
  // Fresh allocations evict the least recently freed cached blocks first.
  std::vector<int> c;
  pool.allocate(3, c);
  EXPECT_EQ(pool.evictions(), 1);
  ids.clear();
  // The request's tail (queued for eviction first) is gone; its head is still cached.
  EXPECT_EQ(pool.lookup(chain, ids), 1);
}

TEST(BlockPool, ReleaseQueuesTheTailForEvictionBeforeTheHead) {
  BlockPool pool(3, 16, true);
  std::vector<int> a;
  pool.allocate(3, a);
  pool.cache(a[0], 1);
  pool.cache(a[1], 2);
  pool.cache(a[2], 3);
  pool.release(a);
  std::vector<int> b;
  pool.allocate(1, b);  // evicts block 3's content, the request's tail
  std::vector<int> ids;
  const uint64_t chain[] = {1, 2, 3};
  EXPECT_EQ(pool.lookup(chain, ids), 2);
}

TEST(BlockPool, SameContentIsCachedOnce) {
  BlockPool pool(4, 16, true);
  std::vector<int> a, b;
  pool.allocate(1, a);
  pool.allocate(1, b);
  pool.cache(a[0], 7);
  pool.cache(b[0], 7);  // a duplicate computed concurrently stays private
  std::vector<int> ids;
  const uint64_t chain[] = {7};
  EXPECT_EQ(pool.lookup(chain, ids), 1);
  EXPECT_EQ(ids[0], a[0]);
}

TEST(BlockPool, NoLookupsWithPrefixCachingOff) {
  BlockPool pool(4, 16, false);
  std::vector<int> a;
  pool.allocate(1, a);
  pool.cache(a[0], 7);
  pool.release(a);
  std::vector<int> ids;
  const uint64_t chain[] = {7};
  EXPECT_EQ(pool.lookup(chain, ids), 0);
}

}  // namespace
}  // namespace ib::sim
