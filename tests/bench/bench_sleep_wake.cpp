// vLLM's sleep mode on the VMM calls (issue 19): back device memory up to the host, unmap and
// free it, then allocate, map at the same addresses and copy the bytes back. The baseline is what
// the cycle cannot do without, the same bytes copied out and back between host buffers; an info
// row shows the same cycle on raw memfds, whose fresh pages the kernel faults in 4 KiB at a time.
//
// The size is 16 GiB where the machine has room for it (the device memory, the backup and the
// baseline's buffers are not all alive at once, but two of them are), else the largest power of
// two that fits in a third of the available memory (64 MiB in CI's smoke run); the benchmarks
// report it as "gib".
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "bench_util.h"

namespace bench {
namespace {

size_t cycle_bytes() {
  static const size_t bytes = [] {
    size_t available = 0;
    if (FILE* f = std::fopen("/proc/meminfo", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f)) {
        unsigned long long kib = 0;
        if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) available = kib << 10;
      }
      std::fclose(f);
    }
    size_t size = size_t{16} << 30;
    while (size > k1G && size > available / 3) size /= 2;
    return smoke() ? k64M : size;
  }();
  return bytes;
}

// Host memory of `n` bytes with every page present (the backup of a real sleep is such memory).
char* host_buffer(size_t n, int fill) {
  void* p =
      mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, fill, n);
  return static_cast<char*>(p);
}

void report_size(benchmark::State& state, size_t n) {
  state.counters["gib"] = static_cast<double>(n) / static_cast<double>(k1G);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * n));
}

void Raw_SleepWakeMemcpy(benchmark::State& state) {
  const size_t n = cycle_bytes();
  char* device = host_buffer(n, 1);
  char* backup = host_buffer(n, 2);
  if (!device || !backup) {
    state.SkipWithError("host memory");
  } else {
    for (auto _ : state) {
      std::memcpy(backup, device, n);
      std::memcpy(device, backup, n);
      benchmark::ClobberMemory();
    }
    report_size(state, n);
  }
  if (device) munmap(device, n);
  if (backup) munmap(backup, n);
}
BENCHMARK(Raw_SleepWakeMemcpy)->Iterations(1)->Unit(benchmark::kMillisecond);

// The cycle on a raw memfd: copy out, unmap and close; create, map and copy back into fresh pages.
void Raw_MemfdSleepWake(benchmark::State& state) {
  const size_t n = cycle_bytes();
  char* backup = host_buffer(n, 2);
  int fd = memfd_create("bench-sleep", MFD_CLOEXEC);
  void* device = fd >= 0 && ftruncate(fd, static_cast<off_t>(n)) == 0
                     ? mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                     : MAP_FAILED;
  if (!backup || device == MAP_FAILED) {
    state.SkipWithError("memfd");
  } else {
    std::memset(device, 1, n);
    for (auto _ : state) {
      std::memcpy(backup, device, n);
      munmap(device, n);
      close(fd);
      fd = memfd_create("bench-sleep", MFD_CLOEXEC);
      if (fd < 0 || ftruncate(fd, static_cast<off_t>(n)) != 0 ||
          (device = mmap(device, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        state.SkipWithError("memfd again");
        device = MAP_FAILED;
        break;
      }
      std::memcpy(device, backup, n);
      benchmark::ClobberMemory();
    }
    report_size(state, n);
  }
  if (device != MAP_FAILED) munmap(device, n);
  if (fd >= 0) close(fd);
  if (backup) munmap(backup, n);
}
BENCHMARK(Raw_MemfdSleepWake)->Iterations(1)->Unit(benchmark::kMillisecond);

// The cycle through aclvmm: D2H backup, unmap, free; malloc, map at the same address, H2D restore.
void Acl_SleepWake(benchmark::State& state) {
  const size_t n = cycle_bytes();
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  char* backup = host_buffer(n, 2);
  if (!backup || !ensure_device() ||
      !ok(state, aclrtReserveMemAddress(&va, n, 0, nullptr, 0), "aclrtReserveMemAddress") ||
      !ok(state, aclrtMallocPhysical(&h, n, &p, 0), "aclrtMallocPhysical") ||
      !ok(state, aclrtMapMem(va, n, 0, h, 0), "aclrtMapMem") ||
      !ok(state, aclrtMemset(va, n, 1, n), "aclrtMemset")) {
    if (backup) munmap(backup, n);
    return;
  }
  for (auto _ : state) {
    if (aclrtMemcpy(backup, n, va, n, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS ||
        aclrtUnmapMem(va) != ACL_SUCCESS || aclrtFreePhysical(h) != ACL_SUCCESS) {
      state.SkipWithError("sleep");
      h = nullptr;
      break;
    }
    h = nullptr;
    if (aclrtMallocPhysical(&h, n, &p, 0) != ACL_SUCCESS ||
        aclrtMapMem(va, n, 0, h, 0) != ACL_SUCCESS ||
        aclrtMemcpy(va, n, backup, n, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
      state.SkipWithError("wake");
      break;
    }
  }
  report_size(state, n);
  if (h) {
    aclrtUnmapMem(va);
    aclrtFreePhysical(h);
  }
  aclrtReleaseMemAddress(va);
  munmap(backup, n);
}
BENCHMARK(Acl_SleepWake)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace bench
