// Load stress of the VMM calls from eight threads at once (behavior.md sections 1-3, 6, 8, 9).
//
// Every thread mixes operations on its own objects, where every call must succeed and every byte
// read back must be the one written, with operations on a pool of handles and reservations that
// all threads use, where a call may lose a race and must then fail with one of the codes the
// contract gives for that situation (already mapped, nothing mapped, stale handle). At the end
// everything is released and the live counts and device memory are back where they started.
//
// ACLVMM_STRESS_OPS sets the operations per thread (default 100000; reduced automatically under
// the sanitizers), ACLVMM_STRESS_SEED the random seed (printed). The suite name contains
// "Concurrency" so that the ThreadSanitizer stage selects it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"
#include "api/thread_test_util.h"

namespace {

using namespace aclvmm_test;

constexpr int kThreads = 8;
constexpr size_t kBlock = 4096;
constexpr size_t kBlocks = k2M / kBlock;
constexpr int kSharedReservations = 6;
constexpr int kSharedHandles = 6;
constexpr int kPrivateSlots = 2;

// Sanitized builds run the same mix at a size that keeps each stage within tens of seconds.
long ops_per_thread() {
  if (const char* v = getenv("ACLVMM_STRESS_OPS")) {
    if (*v) return std::max(1L, std::atol(v));
  }
  return kTsan ? 10000 : kAsan ? 30000 : 100000;
}

uint64_t stress_seed() {
  if (const char* v = getenv("ACLVMM_STRESS_SEED")) {
    if (*v) return std::strtoull(v, nullptr, 0);
  }
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

enum Op {
  // private objects: every call succeeds
  kPReserve, kPMalloc, kPMap, kPH2D, kPD2H, kPD2D, kPQuery, kPAccess,
  // the shared pool: calls may lose races
  kSMap, kSUnmap, kSH2D, kSD2H, kSD2D, kSQuery, kSRange, kSAccess, kSRetain, kSMalloc, kSFree,
  kSReserve, kOpCount
};
const char* const kOpNames[kOpCount] = {
    "private reserve/release", "private malloc/free physical", "private map/unmap", "private H2D",
    "private D2H", "private D2D", "private queries", "private set access",
    "shared map", "shared unmap", "shared H2D", "shared D2H", "shared D2D", "shared pointer query",
    "shared address range", "shared set access", "shared retain+free", "shared malloc physical",
    "shared free physical", "shared release+reserve"};
// How often each operation is drawn: mostly copies and map/unmap races, now and then a change of
// the pool itself.
constexpr int kWeight[kOpCount] = {1, 1, 2, 4, 4, 2, 2, 1,  //
                                   4, 2, 3, 3, 2, 1, 1, 1, 2, 2, 1, 1};

// The codes a call on the shared pool may return when another thread got there first: behavior.md
// §3 (already mapped / not mapped → 507899; a freed handle → 107000), §6 (retain on a reservation
// with nothing mapped → 107017), §8 (access on a range that is no mapping → 507899), §9 (a
// reservation with nothing mapped: 107017 from the pointer query, 107000 from the range query)
// and the copies (an unmapped address → 507899).
const std::set<aclError> kLegal[kOpCount] = {
    {kOk}, {kOk}, {kOk}, {kOk}, {kOk}, {kOk}, {kOk}, {kOk},
    {kOk, kDrv, kRtParam},  // map: range taken, or the handle was freed meanwhile
    {kOk, kDrv},            // unmap: nothing mapped there
    {kOk, kDrv},            // H2D into an unmapped part
    {kOk, kDrv},            // D2H from an unmapped part
    {kOk, kDrv},            // D2D with either side unmapped
    {kOk, kBadHandle},      // pointer query: a reservation with nothing mapped yet (§9)
    {kOk, kRtParam},        // address range of an unmapped reservation
    {kOk, kDrv},            // access on a range that is not (or no longer) a mapping
    {kOk, kBadHandle, kDrv},  // retain: nothing mapped at the reservation
    {kOk}, {kOk}, {kOk}};

// What one thread saw: calls per (operation, code).
using Tally = std::map<std::pair<int, aclError>, long>;

// A 4 KiB block of private data: every byte has the top bit set, shared data never does, so a
// byte that crossed between the two is caught on either side.
std::string private_block(unsigned seed) {
  std::string s = pattern(kBlock, seed);
  for (char& c : s) c = static_cast<char>(c | 0x80);
  return s;
}

// The pool every thread uses. Reservation addresses are handed out again after a release, so a
// thread must never use the address of a released shared reservation (it could be another
// thread's private one by then): every use holds the slot's lock shared, and only replacing the
// reservation takes it exclusively. Handles need no such care: a freed handle's value is never
// valid again (the table's generations), which is one of the races under test.
struct SharedPool {
  std::shared_mutex lock[kSharedReservations];
  void* va[kSharedReservations] = {};
  std::atomic<uint64_t> handle[kSharedHandles] = {};
};

aclrtDrvMemHandle as_handle(uint64_t v) { return reinterpret_cast<aclrtDrvMemHandle>(v); }
uint64_t as_value(aclrtDrvMemHandle h) { return reinterpret_cast<uintptr_t>(h); }

class Worker {
 public:
  Worker(int id, uint64_t seed, SharedPool* pool, Failures* failures)
      : id_(id), rng_(seed), pool_(pool), failures_(failures), prop_(device_prop()) {}

  void run(long ops) {
    if (aclrtSetDevice(0) != kOk) return failures_->add("aclrtSetDevice(0) failed");
    int total = 0;
    for (int w : kWeight) total += w;
    for (long i = 0; i < ops && failures_->count() == 0; ++i) {
      int x = static_cast<int>(pick(static_cast<size_t>(total)));
      int op = 0;
      while (x >= kWeight[op]) x -= kWeight[op++];
      step(static_cast<Op>(op));
    }
    for (Slot& s : slots_) {
      verify_all(s);
      if (s.mapped) expect(kPMap, aclrtUnmapMem(s.va), "final unmap");
      if (s.h) expect(kPMalloc, aclrtFreePhysical(s.h), "final free");
      if (s.va) expect(kPReserve, aclrtReleaseMemAddress(s.va), "final release");
      s = Slot{};
    }
  }
  const Tally& tally() const { return tally_; }

 private:
  struct Slot {
    void* va = nullptr;
    aclrtDrvMemHandle h = nullptr;
    bool mapped = false;                  // h is mapped at va
    std::string shadow;                   // the bytes h should hold, where known
    std::vector<bool> known = std::vector<bool>(kBlocks, false);
  };

  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }
  size_t block_off() { return pick(kBlocks) * kBlock; }
  std::string where(Op op) const { return std::string("thread ") + std::to_string(id_) + " " + kOpNames[op]; }

  void count(Op op, aclError rc) { ++tally_[{op, rc}]; }
  // A private call: it must succeed.
  bool expect(Op op, aclError rc, const char* what) {
    count(op, rc);
    if (rc == kOk) return true;
    failures_->add(where(op) + ": " + what + " = " + std::to_string(rc));
    return false;
  }
  // A shared call: any code the contract allows for a lost race.
  aclError legal(Op op, aclError rc) {
    count(op, rc);
    if (!kLegal[op].count(rc)) failures_->add(where(op) + ": code " + std::to_string(rc) + " is not allowed");
    return rc;
  }

  void step(Op op) {
    if (op < kSMap) {
      private_step(op, slots_[pick(kPrivateSlots)]);
    } else {
      shared_step(op);
    }
  }

  // ---- private objects: each operation changes or uses the slot's state; when the state does
  // not allow it, the call that leads towards it is made instead.
  void private_step(Op op, Slot& s) {
    if (op == kPReserve) {
      if (!s.va) {
        expect(op, aclrtReserveMemAddress(&s.va, k2M, 0, nullptr, 0), "reserve");
      } else if (!s.mapped) {
        if (expect(op, aclrtReleaseMemAddress(s.va), "release")) s.va = nullptr;
      } else {
        unmap(s);
      }
    } else if (op == kPMalloc) {
      if (!s.h) {
        if (expect(op, aclrtMallocPhysical(&s.h, k2M, &prop_, 0), "malloc physical")) {
          s.known.assign(kBlocks, false);
        }
      } else if (!s.mapped) {
        if (expect(op, aclrtFreePhysical(s.h), "free physical")) s.h = nullptr;
      } else {
        unmap(s);
      }
    } else if (!s.mapped) {
      if (op == kPMap && s.va && s.h) {
        if (expect(op, aclrtMapMem(s.va, k2M, 0, s.h, 0), "map")) s.mapped = true;
      } else {
        private_step(!s.va ? kPReserve : kPMalloc, s);
      }
    } else if (op == kPMap) {
      unmap(s);
    } else {
      mapped_step(op, s);
    }
  }

  void unmap(Slot& s) {
    if (expect(kPMap, aclrtUnmapMem(s.va), "unmap")) s.mapped = false;
  }

  void mapped_step(Op op, Slot& s) {
    const size_t off = block_off();
    if (op == kPH2D) {
      const std::string data = private_block(static_cast<unsigned>(rng_()));
      if (expect(op, aclrtMemcpy(at(s.va, off), kBlock, data.data(), kBlock, ACL_MEMCPY_HOST_TO_DEVICE), "H2D")) {
        remember(s, off, data);
      }
    } else if (op == kPD2H) {
      verify(s, off, op);
    } else if (op == kPD2D) {
      Slot& from = slots_[pick(kPrivateSlots)];
      if (!from.mapped) return mapped_step(kPH2D, s);
      const size_t src = block_off();
      if (expect(op, aclrtMemcpy(at(s.va, off), kBlock, at(from.va, src), kBlock, ACL_MEMCPY_DEVICE_TO_DEVICE), "D2D")) {
        if (from.known[src / kBlock]) {
          remember(s, off, from.shadow.substr(src, kBlock));
        } else {
          s.known[off / kBlock] = false;
        }
      }
    } else if (op == kPQuery) {
      aclrtPtrAttributes a{};
      if (expect(op, aclrtPointerGetAttributes(at(s.va, off), &a), "pointer attributes") &&
          (a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE || a.location.id != 0 || a.pageSize != k2M)) {
        failures_->add(where(op) + ": pointer attributes of a private mapping are wrong");
      }
      void* base = nullptr;
      size_t size = 0;
      if (expect(op, aclrtMemGetAddressRange(at(s.va, off), &base, &size), "address range") &&
          (base != s.va || size != k2M)) {
        failures_->add(where(op) + ": address range of a private mapping is wrong");
      }
      aclrtDrvMemHandle r = nullptr;
      if (expect(op, aclrtMemRetainAllocationHandle(s.va, &r), "retain")) {
        if (r != s.h) failures_->add(where(op) + ": retain gave another handle");
        expect(op, aclrtFreePhysical(r), "free of the retained handle");
      }
    } else if (op == kPAccess) {
      expect(op, set1(s.va, k2M, kRW, dev(0)), "set access");
      uint64_t flags = 0;
      aclrtMemLocation l = dev(0);
      if (expect(op, aclrtMemGetAccess(at(s.va, off), &l, &flags), "get access") && flags != static_cast<uint64_t>(kRW)) {
        failures_->add(where(op) + ": access flags " + std::to_string(flags));
      }
    }
  }

  void remember(Slot& s, size_t off, const std::string& data) {
    if (s.shadow.empty()) s.shadow.assign(k2M, '\0');
    s.shadow.replace(off, kBlock, data);
    s.known[off / kBlock] = true;
  }
  void verify(Slot& s, size_t off, Op op) {
    std::string got(kBlock, '\0');
    if (!expect(op, aclrtMemcpy(&got[0], kBlock, at(s.va, off), kBlock, ACL_MEMCPY_DEVICE_TO_HOST), "D2H")) return;
    if (s.known[off / kBlock] && got.compare(0, kBlock, s.shadow, off, kBlock) != 0) {
      failures_->add(where(op) + ": private bytes differ at offset " + std::to_string(off));
    }
    for (char c : got) {
      if (!(c & 0x80) && c != 0) return failures_->add(where(op) + ": a shared byte in private memory");
    }
  }
  void verify_all(Slot& s) {
    if (!s.mapped) return;
    for (size_t b = 0; b < kBlocks; ++b) {
      if (s.known[b]) verify(s, b * kBlock, kPD2H);
    }
  }

  // ---- the shared pool
  void shared_step(Op op) {
    const int r = static_cast<int>(pick(kSharedReservations));
    const int j = static_cast<int>(pick(kSharedHandles));
    if (op == kSMalloc) {
      if (pool_->handle[j].load() != 0) return;
      aclrtDrvMemHandle h = nullptr;
      if (!expect(op, aclrtMallocPhysical(&h, k2M, &prop_, 0), "malloc physical")) return;
      uint64_t empty = 0;
      if (!pool_->handle[j].compare_exchange_strong(empty, as_value(h))) {
        expect(kSFree, aclrtFreePhysical(h), "free of a handle that lost the slot");
      }
      return;
    }
    if (op == kSFree) {
      // The slot's reference is this thread's now; mappings keep their own.
      if (uint64_t h = pool_->handle[j].exchange(0)) expect(op, aclrtFreePhysical(as_handle(h)), "free physical");
      return;
    }
    if (op == kSReserve) {
      std::unique_lock<std::shared_mutex> lock(pool_->lock[r]);
      legal(kSUnmap, aclrtUnmapMem(pool_->va[r]));
      if (expect(op, aclrtReleaseMemAddress(pool_->va[r]), "release")) pool_->va[r] = nullptr;
      expect(op, aclrtReserveMemAddress(&pool_->va[r], k2M, 0, nullptr, 0), "reserve");
      return;
    }
    if (op == kSD2D) {
      const int r2 = static_cast<int>(pick(kSharedReservations));
      // Two shared locks: always the lower slot first, so no writer waits between them.
      std::shared_lock<std::shared_mutex> first(pool_->lock[std::min(r, r2)]);
      std::shared_lock<std::shared_mutex> second;
      if (r != r2) second = std::shared_lock<std::shared_mutex>(pool_->lock[std::max(r, r2)]);
      legal(op, aclrtMemcpy(at(pool_->va[r], block_off()), kBlock, at(pool_->va[r2], block_off()), kBlock,
                            ACL_MEMCPY_DEVICE_TO_DEVICE));
      return;
    }
    std::shared_lock<std::shared_mutex> lock(pool_->lock[r]);
    void* const va = pool_->va[r];
    const size_t off = block_off();
    switch (op) {
      case kSMap:
        if (uint64_t h = pool_->handle[j].load()) legal(op, aclrtMapMem(va, k2M, 0, as_handle(h), 0));
        break;
      case kSUnmap:
        legal(op, aclrtUnmapMem(va));
        break;
      case kSH2D: {
        const std::string data(kBlock, static_cast<char>(id_ + 1));
        legal(op, aclrtMemcpy(at(va, off), kBlock, data.data(), kBlock, ACL_MEMCPY_HOST_TO_DEVICE));
        break;
      }
      case kSD2H: {
        std::string got(kBlock, '\0');
        if (legal(op, aclrtMemcpy(&got[0], kBlock, at(va, off), kBlock, ACL_MEMCPY_DEVICE_TO_HOST)) != kOk) break;
        for (char c : got) {
          if (static_cast<unsigned char>(c) > kThreads) {
            failures_->add(where(op) + ": a byte no shared write produced");
            break;
          }
        }
        break;
      }
      case kSQuery: {
        aclrtPtrAttributes a{};
        if (legal(op, aclrtPointerGetAttributes(at(va, off), &a)) == kOk &&
            (a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE || a.location.id != 0)) {
          failures_->add(where(op) + ": a shared reservation is not device-0 memory");
        }
        break;
      }
      case kSRange: {
        void* base = nullptr;
        size_t size = 0;
        if (legal(op, aclrtMemGetAddressRange(at(va, off), &base, &size)) == kOk && (base != va || size != k2M)) {
          failures_->add(where(op) + ": address range of a shared mapping is wrong");
        }
        break;
      }
      case kSAccess:
        legal(op, set1(va, k2M, kRW, dev(0)));
        break;
      case kSRetain: {
        aclrtDrvMemHandle h = nullptr;
        // The retained reference is this thread's: its free succeeds whatever the others do.
        if (legal(op, aclrtMemRetainAllocationHandle(va, &h)) == kOk) expect(op, aclrtFreePhysical(h), "free of a retained handle");
        break;
      }
      default:
        break;
    }
  }

  const int id_;
  std::mt19937_64 rng_;
  SharedPool* const pool_;
  Failures* const failures_;
  const aclrtPhysicalMemProp prop_;
  Slot slots_[kPrivateSlots];
  Tally tally_;
};

long calls_failed(const Tally& t, Op op) {
  long n = 0;
  for (const auto& [key, count] : t) {
    if (key.first == op && key.second != kOk) n += count;
  }
  return n;
}

using StressConcurrency = AclTest;

// 8 threads × ACLVMM_STRESS_OPS operations, private and shared, all at once.
TEST_F(StressConcurrency, EightThreadsMixedOperations) {
  const long ops = ops_per_thread();
  const uint64_t seed = stress_seed();
  std::printf("stress: %d threads x %ld operations, seed %llu (ACLVMM_STRESS_SEED reproduces it)\n",
              kThreads, ops, static_cast<unsigned long long>(seed));
  const LiveCounts before = live_counts();

  SharedPool pool;
  for (int r = 0; r < kSharedReservations; ++r) pool.va[r] = reserve(k2M);
  for (int j = 0; j < kSharedHandles; ++j) pool.handle[j] = as_value(make_handle(k2M));

  Failures failures;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < kThreads; ++t) workers.emplace_back(new Worker(t, seed + t, &pool, &failures));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w, ops] { w->run(ops); });
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(failures.count(), 0) << "seed " << seed << "\n" << failures.text();

  // Everything the pool still holds goes; each call has exactly one legal answer now.
  for (int r = 0; r < kSharedReservations; ++r) {
    const aclError u = aclrtUnmapMem(pool.va[r]);
    EXPECT_TRUE(u == kOk || u == kDrv) << u;
    EXPECT_EQ(aclrtReleaseMemAddress(pool.va[r]), kOk);
  }
  for (int j = 0; j < kSharedHandles; ++j) {
    if (uint64_t h = pool.handle[j].load()) {
      EXPECT_EQ(aclrtFreePhysical(as_handle(h)), kOk);
    }
  }
  const LiveCounts after = live_counts();
  EXPECT_EQ(after, before) << "before: " << describe(before) << "\nafter:  " << describe(after);

  Tally all;
  long calls = 0;
  for (auto& w : workers) {
    for (const auto& [key, n] : w->tally()) {
      all[key] += n;
      calls += n;
    }
  }
  std::printf("stress: %ld calls in %.1f s\n", calls, secs);
  for (const auto& [key, n] : all) std::printf("  %-30s %6d  %8ld\n", kOpNames[key.first], key.second, n);
  // The races happened: shared maps both won and lost, shared copies both found and missed a
  // mapping. (Only a run long enough to make that certain checks it.)
  if (ops >= 1000) {
    for (Op op : {kSMap, kSUnmap, kSH2D, kSD2H, kSRetain}) {
      EXPECT_GT((all[{op, kOk}]), 0) << kOpNames[op] << " never succeeded";
      EXPECT_GT(calls_failed(all, op), 0) << kOpNames[op] << " never lost a race";
    }
  }
}

}  // namespace
