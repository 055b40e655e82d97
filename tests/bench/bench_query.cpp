// Pointer queries at 1 000, 100 000 and 1 000 000 live mappings against a std::map lookup over
// the same ranges, and the same query from one and two threads (reads must not serialise).
#include <sys/mman.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "bench_query.h"
#include "bench_util.h"

namespace bench {
namespace {

struct Range {
  uint64_t base, size;
};

// n mappings of one 2 MiB handle laid out back to back in one reservation, built once per size
// and kept for the whole run (building a million mappings takes a while).
struct MappedSet {
  size_t n = 0;
  aclrtDrvMemHandle handle = nullptr;
  char* base = nullptr;
  std::map<uint64_t, Range> baseline;  // the same ranges in a plain std::map
  bool ok = false;
};

std::mutex g_sets_mu;
std::map<size_t, std::unique_ptr<MappedSet>> g_sets;

MappedSet& mapped_set(size_t n) {
  std::lock_guard<std::mutex> lock(g_sets_mu);
  auto& slot = g_sets[n];
  if (slot) return *slot;
  slot = std::make_unique<MappedSet>();
  MappedSet& s = *slot;
  s.n = n;
  aclrtPhysicalMemProp p = device_prop();
  void* va = nullptr;
  if (aclrtMallocPhysical(&s.handle, k2M, &p, 0) != ACL_SUCCESS ||
      aclrtReserveMemAddress(&va, n * k2M, 0, nullptr, 0) != ACL_SUCCESS) {
    return s;
  }
  s.base = static_cast<char*>(va);
  for (size_t i = 0; i < n; ++i) {
    if (aclrtMapMem(s.base + i * k2M, k2M, 0, s.handle, 0) != ACL_SUCCESS) return s;
    const uint64_t a = reinterpret_cast<uint64_t>(s.base) + i * k2M;
    s.baseline.emplace(a, Range{a, k2M});
  }
  s.ok = true;
  return s;
}

// The set of n mappings, or nullptr with the benchmark marked skipped.
MappedSet* set_or_skip(benchmark::State& state, size_t n) {
  MappedSet& s = mapped_set(n);
  if (s.ok) return &s;
  state.SkipWithError("could not build the mappings");
  return nullptr;
}

// An address inside a random mapping of `s`, away from its start.
inline char* pick(const MappedSet& s, XorShift& rng) { return s.base + (rng.next() % s.n) * k2M + 4096; }

void Raw_MapLookup(benchmark::State& state) {
  MappedSet* set = set_or_skip(state, static_cast<size_t>(state.range(0)));
  if (!set) return;
  MappedSet& s = *set;
  XorShift rng;
  for (auto _ : state) {
    const uint64_t a = reinterpret_cast<uint64_t>(pick(s, rng));
    auto it = s.baseline.upper_bound(a);
    const Range* r = nullptr;
    if (it != s.baseline.begin()) {
      --it;
      if (a - it->second.base < it->second.size) r = &it->second;
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Raw_MapLookup)->Arg(1000)->Arg(100000)->Arg(1000000);

// The physical limit of any lookup at n live mappings: the latency of one load from a random one
// of n 8-byte words (a flat index, one entry per mapping, on huge pages as the chunk index is).
// The loads depend on each other (a random cycle), so each one's latency shows. At 1 000 the words
// sit in L1; at 1 000 000 (8 MiB) they do not fit in L2 and every load waits for L3 or memory.
void Raw_DependentLoad(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t bytes = (n * sizeof(uint64_t) + k2M - 1) / k2M * k2M;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap");
    return;
  }
  (void)madvise(mem, bytes, MADV_HUGEPAGE);
  auto* next = static_cast<uint64_t*>(mem);
  for (size_t i = 0; i < n; ++i) next[i] = i;
  XorShift rng;
  for (size_t i = n - 1; i > 0; --i) std::swap(next[i], next[rng.next() % i]);  // one cycle
  uint64_t at = 0;
  for (auto _ : state) {
    at = next[at];
    benchmark::DoNotOptimize(at);
  }
  state.SetItemsProcessed(state.iterations());
  munmap(mem, bytes);
}
BENCHMARK(Raw_DependentLoad)->Arg(1000)->Arg(100000)->Arg(1000000);

void Acl_PointerGetAttributes(benchmark::State& state) {
  MappedSet* set = set_or_skip(state, static_cast<size_t>(state.range(0)));
  if (!set) return;
  MappedSet& s = *set;
  XorShift rng;
  aclrtPtrAttributes attr;
  for (auto _ : state) {
    if (aclrtPointerGetAttributes(pick(s, rng), &attr) != ACL_SUCCESS) {
      state.SkipWithError("aclrtPointerGetAttributes");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Acl_PointerGetAttributes)->Arg(1000)->Arg(100000)->Arg(1000000);

void Acl_MemGetAddressRange(benchmark::State& state) {
  MappedSet* set = set_or_skip(state, static_cast<size_t>(state.range(0)));
  if (!set) return;
  MappedSet& s = *set;
  XorShift rng;
  void* base = nullptr;
  size_t size = 0;
  for (auto _ : state) {
    if (aclrtMemGetAddressRange(pick(s, rng), &base, &size) != ACL_SUCCESS) {
      state.SkipWithError("aclrtMemGetAddressRange");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Acl_MemGetAddressRange)->Arg(1000)->Arg(100000)->Arg(1000000);

// Read scaling: every thread queries the same 1 000 mappings.
void Acl_PointerGetAttributesThreads(benchmark::State& state) {
  MappedSet* set = set_or_skip(state, 1000);
  if (!set) return;
  MappedSet& s = *set;
  XorShift rng;
  rng.s += static_cast<uint64_t>(state.thread_index()) * 7919;
  aclrtPtrAttributes attr;
  for (auto _ : state) benchmark::DoNotOptimize(aclrtPointerGetAttributes(pick(s, rng), &attr));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Acl_PointerGetAttributesThreads)->Threads(1)->Threads(2)->UseRealTime();

// The same read scaling for a plain std::map nobody writes: what two cores of this machine give
// perfectly parallel readers.
void Raw_MapLookupThreads(benchmark::State& state) {
  MappedSet* set = set_or_skip(state, 1000);
  if (!set) return;
  MappedSet& s = *set;
  XorShift rng;
  rng.s += static_cast<uint64_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    const uint64_t a = reinterpret_cast<uint64_t>(pick(s, rng));
    auto it = s.baseline.upper_bound(a);
    benchmark::DoNotOptimize(it);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Raw_MapLookupThreads)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

void release_mapped_sets() {
  std::lock_guard<std::mutex> lock(g_sets_mu);
  for (auto& [n, s] : g_sets) {
    if (!s->base) continue;
    for (size_t i = 0; i < s->n; ++i) aclrtUnmapMem(s->base + i * k2M);
    aclrtReleaseMemAddress(s->base);
    aclrtFreePhysical(s->handle);
  }
  g_sets.clear();
}

}  // namespace bench
