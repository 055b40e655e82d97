// Benchmarks of the hot paths, each next to the raw system call it stands on, so results read as
// ratios: aclrtMemcpy H2D against pwrite into a memfd, pointer queries against a plain
// std::map lookup, map/unmap pairs against mmap/munmap of a memfd.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "acl/acl.h"

namespace {

constexpr size_t k2M = 2u << 20;

struct Device {
  Device() {
    aclInit(nullptr);
    aclrtSetDevice(0);
  }
  ~Device() {
    aclrtResetDeviceForce(0);
    aclFinalize();
  }
};

aclrtPhysicalMemProp prop() {
  aclrtPhysicalMemProp p{};
  p.memAttr = ACL_HBM_MEM_HUGE;
  p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  return p;
}

void BM_RawPwriteMemfd(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  int fd = memfd_create("bench", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(n)) != 0) {
    state.SkipWithError("memfd");
    return;
  }
  std::vector<char> src(n, 1);
  for (auto _ : state) benchmark::DoNotOptimize(pwrite(fd, src.data(), n, 0));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  close(fd);
}
BENCHMARK(BM_RawPwriteMemfd)->Arg(4096)->Arg(1 << 20)->Arg(16 << 20);

void BM_MemcpyHostToDevice(benchmark::State& state) {
  Device dev;
  const size_t n = static_cast<size_t>(state.range(0));
  void* d = nullptr;
  if (aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    state.SkipWithError("aclrtMalloc");
    return;
  }
  std::vector<char> src(n, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(aclrtMemcpy(d, n, src.data(), n, ACL_MEMCPY_HOST_TO_DEVICE));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  aclrtFree(d);
}
BENCHMARK(BM_MemcpyHostToDevice)->Arg(4096)->Arg(1 << 20)->Arg(16 << 20);

void BM_RawMapLookup(benchmark::State& state) {
  std::map<uint64_t, uint64_t> tree;
  const int n = static_cast<int>(state.range(0));
  for (int i = 0; i < n; ++i) tree[static_cast<uint64_t>(i) * k2M] = k2M;
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    uint64_t a = (rng() % static_cast<uint64_t>(n)) * k2M + 100;
    auto it = tree.upper_bound(a);
    benchmark::DoNotOptimize(--it);
  }
}
BENCHMARK(BM_RawMapLookup)->Arg(1024)->Arg(65536);

void BM_PointerGetAttributes(benchmark::State& state) {
  Device dev;
  const size_t n = static_cast<size_t>(state.range(0));
  aclrtPhysicalMemProp p = prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  if (aclrtMallocPhysical(&h, k2M, &p, 0) != ACL_SUCCESS ||
      aclrtReserveMemAddress(&va, n * k2M, 0, nullptr, 0) != ACL_SUCCESS) {
    state.SkipWithError("setup");
    return;
  }
  auto* base = static_cast<char*>(va);
  for (size_t i = 0; i < n; ++i) aclrtMapMem(base + i * k2M, k2M, 0, h, 0);
  std::mt19937_64 rng(1);
  aclrtPtrAttributes attr;
  for (auto _ : state) {
    benchmark::DoNotOptimize(aclrtPointerGetAttributes(base + (rng() % n) * k2M + 100, &attr));
  }
  for (size_t i = 0; i < n; ++i) aclrtUnmapMem(base + i * k2M);
  aclrtFreePhysical(h);
  aclrtReleaseMemAddress(va);
}
BENCHMARK(BM_PointerGetAttributes)->Arg(1024)->Arg(65536);

void BM_RawMmapMunmap(benchmark::State& state) {
  int fd = memfd_create("bench", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, k2M) != 0) {
    state.SkipWithError("memfd");
    return;
  }
  for (auto _ : state) {
    void* p = mmap(nullptr, k2M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    munmap(p, k2M);
  }
  close(fd);
}
BENCHMARK(BM_RawMmapMunmap);

void BM_MapUnmap(benchmark::State& state) {
  Device dev;
  aclrtPhysicalMemProp p = prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  if (aclrtMallocPhysical(&h, k2M, &p, 0) != ACL_SUCCESS ||
      aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0) != ACL_SUCCESS) {
    state.SkipWithError("setup");
    return;
  }
  for (auto _ : state) {
    aclrtMapMem(va, k2M, 0, h, 0);
    aclrtUnmapMem(va);
  }
  aclrtFreePhysical(h);
  aclrtReleaseMemAddress(va);
}
BENCHMARK(BM_MapUnmap);

}  // namespace
