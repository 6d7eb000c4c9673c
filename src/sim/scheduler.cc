#include "sim/scheduler.h"

#include <algorithm>
#include <cassert>

#include "sim/tokens.h"

namespace ib::sim {

namespace {

// Seed of the first block's chained hash (any constant; equal prefixes give equal chains).
constexpr uint64_t kRootHash = 0x7072656669780000ULL;

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config), pool_(config.num_blocks, config.block_size, config.prefix_caching) {
  assert(config_.max_num_seqs >= 1 && config_.max_num_batched_tokens >= 1);
  assert(config_.block_size >= 1 && config_.num_blocks >= 1 && config_.sliding_window >= 0);
}

Scheduler::Seq* Scheduler::find(Id id) {
  const uint32_t slot = static_cast<uint32_t>(id & 0xffffffffu);
  if (slot >= seqs_.size()) return nullptr;
  Seq& s = seqs_[slot];
  return s.live && s.generation == static_cast<uint32_t>(id >> 32) ? &s : nullptr;
}

const Scheduler::Seq* Scheduler::find(Id id) const {
  return const_cast<Scheduler*>(this)->find(id);
}

Scheduler::Id Scheduler::add(SequenceSpec spec, void* owner) {
  assert(spec.prompt_tokens >= 1 && spec.output_tokens >= 1);
  assert(static_cast<int64_t>(spec.prompt_tokens) + spec.output_tokens <=
         static_cast<int64_t>(config_.num_blocks) * config_.block_size);
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(seqs_.size());
    seqs_.emplace_back();
  }
  Seq& s = seqs_[slot];
  ++s.generation;
  s.live = true;
  s.state = State::kWaiting;
  s.owner = owner;
  s.spec = std::move(spec);
  if (static_cast<int>(s.spec.prompt_keys.size()) != s.spec.prompt_tokens) {
    s.spec.prompt_keys.clear();  // keys must describe every prompt token to be usable
  }
  s.generated = 0;
  s.rng.seed(s.spec.output_seed ^ 0x5eedc0dedeadbeefULL);
  s.computed = 0;
  s.scheduled_before = false;
  s.cached_tokens = 0;
  s.preemptions = 0;
  s.blocks.clear();
  s.hashes.clear();
  s.registered = 0;
  extend_hashes(s);
  const Id id = make_id(slot, s.generation);
  waiting_.push_back(id);
  ++waiting_count_;
  return id;
}

uint64_t Scheduler::token_key(const Seq& s, int position) const {
  if (position < s.spec.prompt_tokens) return s.spec.prompt_keys[position];
  const int index = position - s.spec.prompt_tokens;
  if (s.spec.ends_with_eos && index == s.spec.output_tokens - 1) return kKeyEos;
  return output_token_key(s.spec.output_seed, index);
}

void Scheduler::extend_hashes(Seq& s) {
  if (!pool_.prefix_caching() || s.spec.prompt_keys.empty()) return;
  const int bs = config_.block_size;
  while (static_cast<int>(s.hashes.size() + 1) * bs <= s.known()) {
    uint64_t h = s.hashes.empty() ? kRootHash : s.hashes.back();
    const int first = static_cast<int>(s.hashes.size()) * bs;
    for (int p = first; p < first + bs; ++p) h = mix64(h ^ token_key(s, p));
    s.hashes.push_back(h);
  }
}

void Scheduler::register_blocks(Seq& s) {
  const int full = std::min<int>(s.computed / config_.block_size,
                                 static_cast<int>(std::min(s.hashes.size(), s.blocks.size())));
  for (int j = s.registered; j < full; ++j) pool_.cache(s.blocks[j], s.hashes[j]);
  s.registered = std::max(s.registered, full);
}

void Scheduler::free_slot(uint32_t slot) {
  Seq& s = seqs_[slot];
  pool_.release(s.blocks);
  s.live = false;
  s.state = State::kDone;
  s.owner = nullptr;
  s.spec.prompt_keys.clear();
  s.hashes.clear();
  free_slots_.push_back(slot);
}

void Scheduler::abort(Id id) {
  Seq* s = find(id);
  if (s == nullptr) return;
  const uint32_t slot = static_cast<uint32_t>(id & 0xffffffffu);
  if (s->state == State::kWaiting) {
    --waiting_count_;  // its queue entry is skipped when reached
  } else if (s->state == State::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), slot));
  }
  free_slot(slot);
}

void Scheduler::preempt(uint32_t slot) {
  assert(!running_.empty() && running_.back() == slot);
  Seq& s = seqs_[slot];
  running_.pop_back();
  // Recompute: the KV is dropped and rebuilt on readmission (its full blocks stay in the prefix
  // cache until evicted, so the recompute may find them).
  pool_.release(s.blocks);
  s.computed = 0;
  s.registered = 0;
  s.state = State::kWaiting;
  ++s.preemptions;
  ++stats_.preemptions;
  waiting_.push_front(make_id(slot, s.generation));
  ++waiting_count_;
}

bool Scheduler::try_admit(uint32_t slot, int& budget, Plan& plan) {
  Seq& s = seqs_[slot];
  const int bs = config_.block_size;
  const int known = s.known();
  scratch_ids_.clear();
  int hit_blocks = 0;
  if (pool_.prefix_caching() && !s.hashes.empty()) {
    // At least the last token is computed, to produce logits.
    const int usable = std::min<int>(static_cast<int>(s.hashes.size()), (known - 1) / bs);
    hit_blocks = pool_.lookup(std::span<const uint64_t>(s.hashes.data(), usable), scratch_ids_);
  }
  int computed = hit_blocks * bs;
  if (!s.scheduled_before && s.spec.external_tokens > computed) {
    // A decode instance's request: its prompt's KV arrived with it (not after a preemption,
    // which dropped it).
    computed = std::min(s.spec.external_tokens, known - 1);
  }
  const int n = std::min(known - computed, budget);
  const int new_blocks = blocks_for(computed + n) - hit_blocks;
  if (new_blocks + pool_.count_unreferenced(scratch_ids_) > pool_.num_free()) return false;

  if (pool_.prefix_caching()) {
    stats_.prefix_queries += known;
    stats_.prefix_hits += computed;
  }
  if (!s.scheduled_before) s.cached_tokens = computed;
  pool_.take(scratch_ids_, s.blocks);
  pool_.allocate(new_blocks, s.blocks);
  s.computed = computed;
  s.registered = hit_blocks;
  s.state = State::kRunning;
  running_.push_back(slot);

  const bool samples = computed + n == known;
  plan.entries.push_back(
      {make_id(slot, s.generation), s.owner, n, !s.scheduled_before, samples, 0});
  plan.batch.add(n, computed, samples, config_.sliding_window);
  s.scheduled_before = true;
  budget -= n;
  return true;
}

bool Scheduler::schedule(Plan& plan) {
  plan.clear();
  int budget = config_.max_num_batched_tokens;
  bool preempted = false;

  // Running requests first, in admission order.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const uint32_t slot = running_[i];
    Seq& s = seqs_[slot];
    int n = std::min(s.known() - s.computed, budget);
    assert(n >= 1);
    const bool samples = s.computed + n == s.known();
    // A decode step speculates: the last token and up to K drafts, as far as the budget and the
    // output's end allow.
    int draft = 0;
    if (config_.spec.enabled() && samples && n == 1 && s.generated >= 1) {
      draft = std::max(0, std::min({config_.spec.num_speculative_tokens, budget - 1,
                                    s.spec.output_tokens - s.generated - 1}));
      n += draft;
    }
    const int extra = blocks_for(s.computed + n) - static_cast<int>(s.blocks.size());
    bool self_preempted = false;
    while (extra > pool_.num_free()) {
      const uint32_t victim = running_.back();
      preempt(victim);
      preempted = true;
      if (victim == slot) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // everything after it was preempted first
    if (extra > 0) pool_.allocate(extra, s.blocks);
    plan.entries.push_back(
        {make_id(slot, s.generation), s.owner, n, !s.scheduled_before, samples, draft});
    plan.batch.add(n, s.computed, samples, config_.sliding_window);
    s.scheduled_before = true;
    budget -= n;
  }

  // Then waiting requests in arrival order, unless this step had to preempt (memory is short).
  if (!preempted) {
    while (waiting_count_ > 0 && static_cast<int>(running_.size()) < config_.max_num_seqs &&
           budget > 0) {
      const Id id = waiting_.front();
      Seq* s = find(id);
      if (s == nullptr || s->state != State::kWaiting) {
        waiting_.pop_front();  // aborted while waiting
        continue;
      }
      if (!try_admit(static_cast<uint32_t>(id & 0xffffffffu), budget, plan)) break;
      waiting_.pop_front();
      --waiting_count_;
    }
  }
  if (plan.entries.empty()) return false;
  ++stats_.steps;
  return true;
}

void Scheduler::complete(const Plan& plan, std::vector<Emission>& emissions) {
  bool any_finished = false;
  for (const Entry& e : plan.entries) {
    Seq* s = find(e.id);
    if (s == nullptr || s->state != State::kRunning) continue;  // aborted during the step
    s->computed += e.new_tokens;
    int produced = 0;
    int accepted = -1;
    if (e.samples) {
      produced = 1;
      if (e.draft > 0) {
        // The accepted drafts join the target's token; the rejected ones' KV is dropped.
        accepted = std::min(draw_accepted(s->rng, config_.spec), e.draft);
        stats_.spec.count(accepted, config_.spec.num_speculative_tokens);
        s->computed -= e.draft - accepted;
        produced += accepted;
      }
      s->generated += produced;
      stats_.generation_tokens += produced;
      if (s->generated == produced) stats_.prompt_tokens += s->spec.prompt_tokens;
    }
    extend_hashes(*s);
    register_blocks(*s);
    const bool finished = s->generated >= s->spec.output_tokens;
    if (e.samples) {
      emissions.push_back(
          {s->owner, finished, s->cached_tokens, s->preemptions, produced, accepted});
    }
    if (finished) {
      s->state = State::kDone;  // removed from running_ below, then freed
      any_finished = true;
    }
  }
  if (!any_finished) return;
  size_t kept = 0;
  for (uint32_t slot : running_) {
    if (seqs_[slot].state == State::kDone) {
      free_slot(slot);
    } else {
      running_[kept++] = slot;
    }
  }
  running_.resize(kept);
}

int Scheduler::cached_tokens(Id id) const {
  const Seq* s = find(id);
  return s == nullptr ? 0 : s->cached_tokens;
}

int Scheduler::preemptions(Id id) const {
  const Seq* s = find(id);
  return s == nullptr ? 0 : s->preemptions;
}

}  // namespace ib::sim
