// Map/unmap throughput from 1, 2 and 4 threads, each on its own reservation and handle, against
// the same pattern of raw mmap calls. The kernel serialises the mappings of one process; the
// library must add no serialisation of its own, so its scaling is compared with the kernel's.
#include <sys/mman.h>
#include <unistd.h>

#include "bench_util.h"

namespace bench {
namespace {

void Raw_MapUnmapThreads(benchmark::State& state) {
  int fd = memfd_create("bench", MFD_CLOEXEC);
  void* base = mmap(nullptr, k2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (fd < 0 || ftruncate(fd, k2M) != 0 || base == MAP_FAILED) {
    state.SkipWithError("setup");
    return;
  }
  for (auto _ : state) {
    mmap(base, k2M, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    mmap(base, k2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  }
  state.SetItemsProcessed(state.iterations());
  munmap(base, k2M);
  close(fd);
}
BENCHMARK(Raw_MapUnmapThreads)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// range(0): 0 device memory (no CPU view), 1 host memory (CPU-visible: mmap each way).
void Acl_MapUnmapThreads(benchmark::State& state) {
  aclrtPhysicalMemProp p = state.range(0) ? host_prop() : device_prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  if (!ensure_device() || !ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical") ||
      !ok(state, aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), "aclrtReserveMemAddress")) {
    return;
  }
  for (auto _ : state) {
    if (aclrtMapMem(va, k2M, 0, h, 0) != ACL_SUCCESS) {
      state.SkipWithError("aclrtMapMem");
      break;
    }
    aclrtUnmapMem(va);
  }
  state.SetItemsProcessed(state.iterations());
  aclrtReleaseMemAddress(va);
  aclrtFreePhysical(h);
}
BENCHMARK(Acl_MapUnmapThreads)->Arg(0)->Arg(1)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

}  // namespace
}  // namespace bench
