// Managed memory: what moving a 2 MiB page costs when the CPU faults on it, and the throughput
// of prefetching, both against memcpy of the same bytes (the copy that migration cannot avoid).
#include <chrono>
#include <cstring>

#include "bench_util.h"

namespace bench {
namespace {

constexpr size_t kPages = 32;
constexpr size_t kRange = kPages * k2M;

aclrtMemManagedLocation location(aclrtMemManagedLocationType type, int id) {
  aclrtMemManagedLocation l{};
  l.type = type;
  l.id = id;
  return l;
}

bool prefetch(void* p, aclrtMemManagedLocationType type, int id) {
  return aclrtMemManagedPrefetchAsync(p, kRange, location(type, id), 0, nullptr) == ACL_SUCCESS &&
         aclrtSynchronizeStream(nullptr) == ACL_SUCCESS;
}

struct ManagedRange {
  void* p = nullptr;
  explicit ManagedRange(benchmark::State& state) {
    if (!ensure_device() ||
        !ok(state, aclrtMemAllocManaged(&p, kRange, ACL_RT_MEM_ATTACH_GLOBAL), "aclrtMemAllocManaged")) {
      p = nullptr;
      return;
    }
    std::memset(p, 1, kRange);  // populated on the host
  }
  ~ManagedRange() {
    if (p) aclrtFree(p);
  }
};

// Per 2 MiB page: the range is prefetched to device 0 (not timed), then the CPU touches one byte
// of each page; each touch faults and migrates the page back to the host.
void Acl_ManagedHostFaultPerPage(benchmark::State& state) {
  ManagedRange r(state);
  if (!r.p) return;
  auto* bytes = static_cast<volatile char*>(r.p);
  for (auto _ : state) {
    if (!prefetch(r.p, ACL_MEM_LOCATIONTYPE_DEVICE, 0)) {
      state.SkipWithError("prefetch to device");
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < kPages; ++i) bytes[i * k2M] = 2;
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kPages);
  }
}
BENCHMARK(Acl_ManagedHostFaultPerPage)->UseManualTime();

// 64 MiB to device 0 and back per iteration; the baseline copies the same 128 MiB.
void Acl_ManagedPrefetchRoundTrip(benchmark::State& state) {
  ManagedRange r(state);
  if (!r.p) return;
  for (auto _ : state) {
    if (!prefetch(r.p, ACL_MEM_LOCATIONTYPE_DEVICE, 0) || !prefetch(r.p, ACL_MEM_LOCATIONTYPE_HOST, 0)) {
      state.SkipWithError("prefetch");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * kRange));
}
BENCHMARK(Acl_ManagedPrefetchRoundTrip);

}  // namespace
}  // namespace bench
