// HandleTable: opaque, generation-checked tokens for objects the application holds by value
// (physical handles, contexts, streams).
//
// The application gets a token, never a pointer: a stale, double-freed or forged value fails the
// generation or range check and is never dereferenced. Each table stamps its own tag into the
// token so that a stream passed where a physical handle is expected is rejected too.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/read_mostly_mutex.h"

namespace aclvmm {

template <typename T>
class HandleTable {
 public:
  // Every table has the same rank: no thread holds two tables at once (base/lock_rank.h).
  using Mutex = RankedReadMostlyMutex<LockRank::kHandleTable>;

  explicit HandleTable(uint16_t tag) : tag_(tag) {}

  // 0 when the table is full (2^24 - 1 live objects).
  uint64_t insert(std::shared_ptr<T> obj) {
    std::lock_guard<Mutex> lock(mu_);
    uint32_t index;
    if (free_.empty() && slots_.size() >= kMaxSlots) return 0;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<uint32_t>(slots_.size());
      // Room for every slot in the free list now, so that remove never allocates (a bad_alloc
      // there would leave the slot neither live nor free).
      free_.reserve(slots_.size() + 1);
      slots_.push_back(Slot{});
    }
    Slot& s = slots_[index];
    s.obj = std::move(obj);
    ++live_;
    return encode(index, s.generation);
  }

  std::shared_ptr<T> find(uint64_t token) const {
    std::shared_lock<Mutex> lock(mu_);
    const Slot* s = slot(token);
    return s ? s->obj : nullptr;
  }

  // Removes the object; returns it (nullptr when the token is not live).
  std::shared_ptr<T> remove(uint64_t token) {
    std::lock_guard<Mutex> lock(mu_);
    return remove_locked(token);
  }

  // Every live object with its token (for teardown and statistics).
  std::vector<std::pair<uint64_t, std::shared_ptr<T>>> snapshot() const {
    std::shared_lock<Mutex> lock(mu_);
    std::vector<std::pair<uint64_t, std::shared_ptr<T>>> out;
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].obj) out.emplace_back(encode(i, slots_[i].generation), slots_[i].obj);
    }
    return out;
  }

  size_t size() const {
    std::shared_lock<Mutex> lock(mu_);
    return live_;
  }

  // The lock that guards membership; callers that must make a check-and-remove atomic with state
  // kept in the objects (reference counts) hold it around both. Lookups (find) take it shared,
  // membership changes exclusively (a ReadMostlyMutex: lookups from many threads do not contend).
  Mutex& mutex() const { return mu_; }
  std::shared_ptr<T> find_locked(uint64_t token) const {
    const Slot* s = slot(token);
    return s ? s->obj : nullptr;
  }
  std::shared_ptr<T> remove_locked(uint64_t token) {
    mu_.assert_held();
    Slot* s = const_cast<Slot*>(slot(token));
    if (!s) return nullptr;
    std::shared_ptr<T> obj = std::move(s->obj);
    s->obj.reset();
    s->generation = (s->generation + 1) & kGenerationMask;
    if (s->generation == 0) s->generation = 1;
    free_.push_back(index_of(token));
    --live_;
    return obj;
  }

 private:
  static constexpr uint64_t kGenerationMask = (1ull << 24) - 1;
  static constexpr size_t kMaxSlots = (1u << 24) - 1;
  struct Slot {
    uint32_t generation = 1;
    std::shared_ptr<T> obj;
  };

  uint64_t encode(uint32_t index, uint32_t generation) const {
    return (static_cast<uint64_t>(tag_) << 48) | (static_cast<uint64_t>(generation) << 24) |
           (static_cast<uint64_t>(index) + 1);
  }
  static uint32_t index_of(uint64_t token) {
    return static_cast<uint32_t>((token & ((1ull << 24) - 1)) - 1);
  }
  const Slot* slot(uint64_t token) const {
    if ((token >> 48) != tag_) return nullptr;
    uint64_t low = token & ((1ull << 24) - 1);
    if (low == 0 || low > slots_.size()) return nullptr;
    const Slot& s = slots_[low - 1];
    if (!s.obj || s.generation != ((token >> 24) & kGenerationMask)) return nullptr;
    return &s;
  }

  const uint16_t tag_;
  mutable Mutex mu_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace aclvmm
