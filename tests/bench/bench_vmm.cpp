// Reservations, physical allocations and mappings, each against the system calls that are its
// physical limit in the emulator: mmap(PROT_NONE)+munmap, memfd_create+ftruncate+close and a
// MAP_FIXED|MAP_SHARED mapping put back to a PROT_NONE placeholder.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "bench_util.h"

namespace bench {
namespace {

void Raw_ReserveRelease(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      state.SkipWithError("mmap");
      return;
    }
    munmap(p, n);
  }
}
BENCHMARK(Raw_ReserveRelease)->Arg(k2M)->Arg(k1G);

void Acl_ReserveRelease(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* va = nullptr;
    if (!ok(state, aclrtReserveMemAddress(&va, n, 0, nullptr, 0), "aclrtReserveMemAddress")) return;
    aclrtReleaseMemAddress(va);
  }
}
BENCHMARK(Acl_ReserveRelease)->Arg(k2M)->Arg(k1G);

void Raw_MemfdCreate(benchmark::State& state) {
  for (auto _ : state) {
    int fd = memfd_create("bench", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, k2M) != 0) {
      state.SkipWithError("memfd");
      return;
    }
    close(fd);
  }
}
BENCHMARK(Raw_MemfdCreate);

void Acl_MallocPhysical(benchmark::State& state) {
  aclrtPhysicalMemProp p = device_prop();
  for (auto _ : state) {
    aclrtDrvMemHandle h = nullptr;
    if (!ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical")) return;
    aclrtFreePhysical(h);
  }
}
BENCHMARK(Acl_MallocPhysical);

// What an emulated mapping that the CPU can see costs the kernel: map the memory over a
// placeholder, then put the placeholder back. range(0) is the placeholder's size: exactly the
// mapping (2 MiB), or a larger reserved window the mapping sits in, as a reservation is (the
// kernel then splits the window's VMA on map and merges it again on unmap).
void Raw_MapUnmap(benchmark::State& state) {
  const size_t window = static_cast<size_t>(state.range(0));
  int fd = memfd_create("bench", MFD_CLOEXEC);
  auto* region = static_cast<char*>(
      mmap(nullptr, window, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (fd < 0 || ftruncate(fd, k2M) != 0 || region == MAP_FAILED) {
    state.SkipWithError("setup");
    return;
  }
  char* base = region + (window - k2M) / 2;  // inside the window, away from its ends
  for (auto _ : state) {
    mmap(base, k2M, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    mmap(base, k2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  }
  state.SetItemsProcessed(state.iterations());
  munmap(region, window);
  close(fd);
}
// Also from 1, 2 and 4 threads at once, each with its own placeholder and memfd: how the kernel
// scales mappings of one process (it serialises them on the process's mmap lock).
BENCHMARK(Raw_MapUnmap)->Arg(k2M)->Arg(k1G);
BENCHMARK(Raw_MapUnmap)->Arg(k2M)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// Maps and unmaps 2 MiB of one handle at the middle of a reservation of `reserved` bytes, until
// the state says stop. host: host memory (the CPU sees it: one mmap each way), else device memory
// (no CPU view: only the emulated page tables change).
void map_unmap_loop(benchmark::State& state, bool host, size_t reserved) {
  aclrtPhysicalMemProp p = host ? host_prop() : device_prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  if (!ensure_device() || !ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical") ||
      !ok(state, aclrtReserveMemAddress(&va, reserved, 0, nullptr, 0), "aclrtReserveMemAddress")) {
    return;
  }
  void* at = static_cast<char*>(va) + (reserved - k2M) / 2 / k2M * k2M;
  for (auto _ : state) {
    if (aclrtMapMem(at, k2M, 0, h, 0) != ACL_SUCCESS) {
      state.SkipWithError("aclrtMapMem");
      break;
    }
    aclrtUnmapMem(at);
  }
  state.SetItemsProcessed(state.iterations());
  aclrtReleaseMemAddress(va);
  aclrtFreePhysical(h);
}

// range(0): 0 maps device memory, 1 host memory; the reservation is exactly the mapping.
void Acl_MapUnmap(benchmark::State& state) { map_unmap_loop(state, state.range(0) != 0, k2M); }
BENCHMARK(Acl_MapUnmap)->Arg(0)->Arg(1);

// Scaling: each thread maps and unmaps on its own reservation and handle. The library must add no
// serialisation of its own, so its scaling is compared with the raw calls' scaling above.
// range(1) places the threads' ranges. 1: each reservation is 32 MiB, so no two threads' mappings
// have page-table words in one cache line (a line holds the words of 16 MiB, in emu's device page
// table as in the core's pointer index); that is the row with the target, since the raw calls'
// threads do not share one either (mmap writes no page-table entry). 0: 2 MiB reservations, which
// the allocator places next to each other: both threads then write one line on every map and
// unmap, as two CPUs do when they change neighbouring entries of one page table (info).
void Acl_MapUnmapScaling(benchmark::State& state) {
  map_unmap_loop(state, state.range(0) != 0, state.range(1) != 0 ? 16 * k2M : k2M);
}
BENCHMARK(Acl_MapUnmapScaling)
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 0})
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

double heap_bytes() {
  struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd);
}

// Resident bytes of the process: catches memory that is not from malloc (index pages).
double resident_bytes() {
  FILE* f = fopen("/proc/self/statm", "re");
  unsigned long long size = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
    fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Bytes one live mapping holds (the mapping record, its tree node and index entries), measured
// over 100 000 mappings of one handle as the larger of the heap and the resident-set growth:
// the heap misses mmap-ed index pages, the resident set misses reused free heap.
void Acl_MetadataPerMapping(benchmark::State& state) {
  constexpr size_t kMappings = 100000;
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  if (!ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical") ||
      !ok(state, aclrtReserveMemAddress(&va, kMappings * k2M, 0, nullptr, 0), "reserve")) {
    return;
  }
  auto* base = static_cast<char*>(va);
  double per_mapping = 0;
  for (auto _ : state) {
    const double heap0 = heap_bytes(), rss0 = resident_bytes();
    for (size_t i = 0; i < kMappings; ++i) aclrtMapMem(base + i * k2M, k2M, 0, h, 0);
    per_mapping = std::max(heap_bytes() - heap0, resident_bytes() - rss0) / kMappings;
    for (size_t i = 0; i < kMappings; ++i) aclrtUnmapMem(base + i * k2M);
  }
  state.counters["bytes_per_mapping"] = per_mapping;
  aclrtReleaseMemAddress(va);
  aclrtFreePhysical(h);
}
BENCHMARK(Acl_MetadataPerMapping)->Iterations(1);

}  // namespace
}  // namespace bench
