// The paged KV cache of the simulated engine: fixed-size blocks with reference counts, and (when
// prefix caching is on) a table from block content hash to block, so requests sharing a prefix
// reuse its blocks. Unreferenced blocks wait in an LRU queue: they stay reusable until a new
// allocation evicts the least recently freed one, as vLLM's block pool does.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace ib::sim {

class BlockPool {
 public:
  /// REQUIRES: num_blocks >= 1, block_size >= 1.
  BlockPool(int num_blocks, int block_size, bool prefix_caching);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }

  /// Blocks an allocation can use now: every unreferenced block, cached or not.
  int num_free() const { return num_free_; }
  /// Fraction of blocks referenced by requests (vLLM's kv_cache_usage_perc).
  double usage() const;

  /// Appends to `ids` the cached blocks holding the longest prefix of `hashes` and returns how
  /// many there are. Takes no reference. Always 0 with prefix caching off.
  int lookup(std::span<const uint64_t> hashes, std::vector<int>& ids) const;
  /// How many of `ids` are unreferenced (taking them uses up free blocks).
  int count_unreferenced(std::span<const int> ids) const;
  /// Takes a reference to each block of `ids` (found by lookup) and appends them to `table`.
  void take(std::span<const int> ids, std::vector<int>& table);
  /// Appends `n` fresh blocks to `table`, evicting the least recently freed cached blocks.
  /// REQUIRES: n <= num_free().
  void allocate(int n, std::vector<int>& table);
  /// Drops one reference to every block of `table` and clears it. Blocks are queued for reuse
  /// last block first, so a request's tail is evicted before the prefix others may share.
  void release(std::vector<int>& table);
  /// Records that full block `id` holds the content `hash` (a chained hash of its tokens and all
  /// before them). No effect with prefix caching off or when another block holds `hash`.
  void cache(int id, uint64_t hash);

  /// Forgets every cached block's content (SGLang's /flush_cache, vLLM's reset_prefix_cache);
  /// false, and nothing forgotten, while a request holds a block.
  bool reset_prefix_cache();
  /// Blocks whose content is cached (findable by lookup).
  int cached_blocks() const { return static_cast<int>(by_hash_.size()); }

  /// Cached blocks evicted to make room so far.
  int64_t evictions() const { return evictions_; }

 private:
  struct Block {
    int ref = 0;
    int prev = -1;  // free-queue links (valid while ref == 0)
    int next = -1;
    bool hashed = false;
    uint64_t hash = 0;
  };

  void push_free(int id);
  void unlink_free(int id);

  int block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  int free_head_ = -1;  // least recently freed
  int free_tail_ = -1;
  int num_free_ = 0;
  int64_t evictions_ = 0;
  std::unordered_map<uint64_t, int> by_hash_;
};

}  // namespace ib::sim
