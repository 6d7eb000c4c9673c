#include "sim/kv_cache.h"

#include <cassert>

namespace ib::sim {

BlockPool::BlockPool(int num_blocks, int block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching), blocks_(num_blocks) {
  assert(num_blocks >= 1 && block_size >= 1);
  for (int id = 0; id < num_blocks; ++id) push_free(id);
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(blocks_.size());
}

void BlockPool::push_free(int id) {
  Block& b = blocks_[id];
  b.prev = free_tail_;
  b.next = -1;
  if (free_tail_ >= 0) {
    blocks_[free_tail_].next = id;
  } else {
    free_head_ = id;
  }
  free_tail_ = id;
  ++num_free_;
}

void BlockPool::unlink_free(int id) {
  Block& b = blocks_[id];
  if (b.prev >= 0) {
    blocks_[b.prev].next = b.next;
  } else {
    free_head_ = b.next;
  }
  if (b.next >= 0) {
    blocks_[b.next].prev = b.prev;
  } else {
    free_tail_ = b.prev;
  }
  b.prev = b.next = -1;
  --num_free_;
}

int BlockPool::lookup(std::span<const uint64_t> hashes, std::vector<int>& ids) const {
  if (!prefix_caching_) return 0;
  int found = 0;
  for (uint64_t h : hashes) {
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    ids.push_back(it->second);
    ++found;
  }
  return found;
}

int BlockPool::count_unreferenced(std::span<const int> ids) const {
  int n = 0;
  for (int id : ids) n += blocks_[id].ref == 0 ? 1 : 0;
  return n;
}

void BlockPool::take(std::span<const int> ids, std::vector<int>& table) {
  for (int id : ids) {
    Block& b = blocks_[id];
    if (b.ref == 0) unlink_free(id);
    ++b.ref;
    table.push_back(id);
  }
}

void BlockPool::allocate(int n, std::vector<int>& table) {
  assert(n <= num_free_);
  for (int i = 0; i < n; ++i) {
    const int id = free_head_;
    unlink_free(id);
    Block& b = blocks_[id];
    if (b.hashed) {
      // Evict: its content can no longer be found.
      auto it = by_hash_.find(b.hash);
      if (it != by_hash_.end() && it->second == id) by_hash_.erase(it);
      b.hashed = false;
      ++evictions_;
    }
    b.ref = 1;
    table.push_back(id);
  }
}

void BlockPool::release(std::vector<int>& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    Block& b = blocks_[*it];
    assert(b.ref > 0);
    if (--b.ref == 0) push_free(*it);
  }
  table.clear();
}

void BlockPool::cache(int id, uint64_t hash) {
  if (!prefix_caching_) return;
  Block& b = blocks_[id];
  if (b.hashed) return;
  auto [it, inserted] = by_hash_.emplace(hash, id);
  if (!inserted) return;  // another block already holds this content; this one stays private
  b.hashed = true;
  b.hash = hash;
}

bool BlockPool::reset_prefix_cache() {
  if (num_free_ != num_blocks()) return false;
  for (Block& b : blocks_) b.hashed = false;
  by_hash_.clear();
  return true;
}

}  // namespace ib::sim
