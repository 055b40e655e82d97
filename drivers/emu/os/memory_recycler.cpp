#include "drivers/emu/os/memory_recycler.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

#include "drivers/emu/os/memfd_memory.h"

namespace aclvmm::dev::emu::os::recycler {
namespace {

// "4G", "512M", "1024": decimal with an optional K/M/G/T suffix (powers of 1024), as
// ACLVMM_DEVICE_MEMORY takes it. false for anything else.
bool parse_bytes(const char* text, uint64_t* out) {
  if (text == nullptr || !std::isdigit(static_cast<unsigned char>(*text))) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  int shift = 0;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case '\0':
      break;
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    case 'T':
      shift = 40;
      break;
    default:
      return false;
  }
  if (shift != 0 && end[1] != '\0') return false;
  if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

uint64_t configured_cap() {
  uint64_t cap = 0;
  if (parse_bytes(std::getenv("ACLVMM_RECYCLE_BYTES"), &cap)) return cap;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4 : 0;
}

struct Pool {
  std::mutex mu;
  std::multimap<uint64_t, MemfdMemory*> by_size;
  std::deque<MemfdMemory*> order;  // oldest first, for trimming
  uint64_t held_bytes = 0;
  uint64_t reused = 0;
  uint64_t cap = configured_cap();
};

// Never destroyed: memory may be freed by threads still running at exit. A forked child gets a
// new one (after_fork_child).
std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  Pool* made = new Pool;
  if (!g_pool.compare_exchange_strong(p, made, std::memory_order_acq_rel)) {
    delete made;
    return *p;
  }
  return *made;
}

void forget_locked(Pool& p, MemfdMemory* m) {
  auto range = p.by_size.equal_range(m->size());
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == m) {
      p.by_size.erase(it);
      break;
    }
  }
  for (auto it = p.order.begin(); it != p.order.end(); ++it) {
    if (*it == m) {
      p.order.erase(it);
      break;
    }
  }
  p.held_bytes -= m->size();
}

void fork_child_handler() { after_fork_child(); }

// Installed when the library loads, before any thread can hold the pool's lock.
const int g_fork_handler = ::pthread_atfork(nullptr, nullptr, &fork_child_handler);

}  // namespace

bool offer(MemfdMemory* m) {
  Pool& p = pool();
  std::unique_lock lock(p.mu);
  if (m->size() > p.cap) return false;
  std::deque<MemfdMemory*> freed;
  while (p.held_bytes + m->size() > p.cap && !p.order.empty()) {
    MemfdMemory* oldest = p.order.front();
    forget_locked(p, oldest);
    freed.push_back(oldest);
  }
  try {
    p.by_size.emplace(m->size(), m);
    try {
      p.order.push_back(m);
    } catch (...) {
      auto range = p.by_size.equal_range(m->size());
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second == m) {
          p.by_size.erase(it);
          break;
        }
      }
      throw;
    }
  } catch (...) {
    lock.unlock();
    for (MemfdMemory* f : freed) delete f;
    return false;
  }
  p.held_bytes += m->size();
  lock.unlock();
  // Outside the lock: unmapping a large view takes a while.
  for (MemfdMemory* f : freed) delete f;
  return true;
}

MemfdMemory* take(uint64_t size) {
  Pool& p = pool();
  std::lock_guard lock(p.mu);
  auto it = p.by_size.find(size);
  if (it == p.by_size.end()) return nullptr;
  MemfdMemory* m = it->second;
  forget_locked(p, m);
  ++p.reused;
  return m;
}

void drain() {
  Pool& p = pool();
  std::deque<MemfdMemory*> all;
  {
    std::lock_guard lock(p.mu);
    all.swap(p.order);
    p.by_size.clear();
    p.held_bytes = 0;
  }
  for (MemfdMemory* m : all) delete m;
}

void after_fork_child() {
  // The parent's lock may be held by a thread that does not exist here, so the child does not
  // touch the parent's pool: it starts a new one, and what the parent held is left as it is (its
  // descriptors are close-on-exec).
  g_pool.store(new Pool, std::memory_order_release);
}

Counts counts() {
  Pool& p = pool();
  std::lock_guard lock(p.mu);
  return Counts{p.held_bytes, p.order.size(), p.reused, p.cap};
}

void set_cap(uint64_t cap) {
  Pool& p = pool();
  std::deque<MemfdMemory*> freed;
  {
    std::lock_guard lock(p.mu);
    p.cap = cap == UINT64_MAX ? configured_cap() : cap;
    while (p.held_bytes > p.cap && !p.order.empty()) {
      MemfdMemory* oldest = p.order.front();
      forget_locked(p, oldest);
      freed.push_back(oldest);
    }
  }
  for (MemfdMemory* m : freed) delete m;
}

}  // namespace aclvmm::dev::emu::os::recycler
