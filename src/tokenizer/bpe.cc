#include "tokenizer/bpe.h"

#include <algorithm>
#include <bit>

namespace ib::tokenizer {

void PairTable::insert(int32_t left, int32_t right, Merge merge) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(left, right);
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) {
      s.merge = merge;
      return;
    }
    if (s.key == kEmpty) {
      s = Slot{key, merge};
      ++size_;
      return;
    }
  }
}

void PairTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  const size_t capacity = old.empty() ? 1024 : old.size() * 2;
  slots_.assign(capacity, Slot{kEmpty, {}});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
  for (const Slot& s : old) {
    if (s.key != kEmpty) insert(int32_t(s.key >> 32), int32_t(uint32_t(s.key)), s.merge);
  }
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  bool live;
};

struct Candidate {
  uint32_t rank;
  int32_t pos;
  int32_t id;
};

// Heap order: the top is the lowest rank, then the lowest position (tokenizers' Merge::cmp on a
// max-heap).
bool after(const Candidate& a, const Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

}  // namespace

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    const int32_t id = byte_ids[static_cast<uint8_t>(piece[0])];
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_id >= 0) {
      out.push_back(unk_id);
    }
    return;
  }
  if (ignore_merges) {
    if (auto it = vocab.find(piece); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }

  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.clear();
  heap.clear();
  for (char c : piece) {
    int32_t id = byte_ids[static_cast<uint8_t>(c)];
    if (id < 0) id = unk_id;
    if (id < 0) continue;  // no such byte and no unk token: dropped, as tokenizers does
    const auto i = int32_t(symbols.size());
    symbols.push_back(Symbol{id, i - 1, i + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const auto* m = merges.find(symbols[i].id, symbols[i + 1].id)) {
      heap.push_back(Candidate{m->rank, int32_t(i), m->id});
    }
  }
  std::make_heap(heap.begin(), heap.end(), after);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[size_t(top.pos)];
    if (!left.live || left.next < 0) continue;
    Symbol& right = symbols[size_t(left.next)];
    // A stale entry: the pair at this position changed since it was queued. Like tokenizers,
    // only the merged id is compared.
    const auto* m = merges.find(left.id, right.id);
    if (m == nullptr || m->id != top.id) continue;

    left.id = top.id;
    right.live = false;
    left.next = right.next;
    if (left.next >= 0) symbols[size_t(left.next)].prev = top.pos;
    if (left.prev >= 0) {
      if (const auto* pm = merges.find(symbols[size_t(left.prev)].id, left.id)) {
        heap.push_back(Candidate{pm->rank, left.prev, pm->id});
        std::push_heap(heap.begin(), heap.end(), after);
      }
    }
    if (left.next >= 0) {
      if (const auto* nm = merges.find(left.id, symbols[size_t(left.next)].id)) {
        heap.push_back(Candidate{nm->rank, top.pos, nm->id});
        std::push_heap(heap.begin(), heap.end(), after);
      }
    }
  }
  for (const Symbol& s : symbols) {
    if (s.live) out.push_back(s.id);
  }
}

}  // namespace ib::tokenizer
