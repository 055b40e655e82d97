// The cold paths of issue 19 that stay inside one process: a small copy against memcpy plus one
// system call, a CPU fault on managed memory against a raw userfaultfd minor fault, prefetching
// 1 GiB against memcpy, and the device-memory accounting under threads that map.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace bench {
namespace {

// ---- small copies ----------------------------------------------------------------------------

// What a copy of range(0) bytes cannot do without: the bytes, and one entry into the kernel.
void Raw_MemcpySyscall(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<char> src(n, 1), dst(n, 2);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(syscall(SYS_getppid));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(Raw_MemcpySyscall)->Arg(k4K);

// ---- a CPU fault --------------------------------------------------------------------------------

// A raw userfaultfd minor fault on shmem: a 2 MiB memfd whose pages are in the page cache, mapped
// where a handler thread answers each minor fault with UFFDIO_CONTINUE. Per iteration the mapping
// drops its page (MADV_DONTNEED) outside the timed part, and the CPU's load faults it back: the
// round trip through the handler that any fault service pays.
class MinorFaultRig {
 public:
  bool start() {
    mem_ = memfd_create("bench-uffd", MFD_CLOEXEC);
    uffd_ =
        static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (uffd_ < 0) uffd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    if (mem_ < 0 || uffd_ < 0 || ftruncate(mem_, k2M) != 0) return false;
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_MINOR_SHMEM;
    if (ioctl(uffd_, UFFDIO_API, &api) != 0) return false;
    // The page cache holds the bytes: written once through a plain mapping.
    void* fill = mmap(nullptr, k2M, PROT_READ | PROT_WRITE, MAP_SHARED, mem_, 0);
    if (fill == MAP_FAILED) return false;
    std::memset(fill, 7, k2M);
    munmap(fill, k2M);
    void* p = mmap(nullptr, k2M, PROT_READ | PROT_WRITE, MAP_SHARED, mem_, 0);
    if (p == MAP_FAILED) return false;
    view_ = static_cast<volatile char*>(p);
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uint64_t>(p);
    reg.range.len = k2M;
    reg.mode = UFFDIO_REGISTER_MODE_MINOR;
    if (ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) return false;
    handler_ = std::thread([this] { serve(); });
    return true;
  }

  ~MinorFaultRig() {
    stop_.store(true);
    if (handler_.joinable()) handler_.join();
    if (view_) munmap(const_cast<char*>(view_), k2M);
    if (uffd_ >= 0) close(uffd_);
    if (mem_ >= 0) close(mem_);
  }

  void drop() { madvise(const_cast<char*>(view_), k2M, MADV_DONTNEED); }
  char touch() { return view_[0]; }

 private:
  void serve() {
    pollfd pfd{uffd_, POLLIN, 0};
    while (!stop_.load()) {
      if (poll(&pfd, 1, 50) <= 0) continue;
      uffd_msg msg{};
      if (read(uffd_, &msg, sizeof msg) != static_cast<ssize_t>(sizeof msg)) continue;
      if (msg.event != UFFD_EVENT_PAGEFAULT) continue;
      uffdio_continue c{};
      c.range.start = msg.arg.pagefault.address & ~(uint64_t{k4K} - 1);
      c.range.len = k4K;
      ioctl(uffd_, UFFDIO_CONTINUE, &c);
    }
  }

  int mem_ = -1, uffd_ = -1;
  volatile char* view_ = nullptr;
  std::atomic<bool> stop_{false};
  std::thread handler_;
};

void Raw_UffdMinorFault(benchmark::State& state) {
  MinorFaultRig rig;
  if (!rig.start()) {
    state.SkipWithError("userfaultfd minor faults on shmem are not available here");
    return;
  }
  for (auto _ : state) {
    rig.drop();
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(rig.touch());
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
}
BENCHMARK(Raw_UffdMinorFault)->UseManualTime();

// A CPU load of one byte of a managed 2 MiB page that is on device 0 (prefetched there, not
// timed), until the load returns.
void Acl_ManagedCpuFault(benchmark::State& state) {
  void* p = nullptr;
  if (!ensure_device() ||
      !ok(state, aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL), "aclrtMemAllocManaged")) {
    return;
  }
  std::memset(p, 1, k2M);
  aclrtMemManagedLocation device{};
  device.type = ACL_MEM_LOCATIONTYPE_DEVICE;
  device.id = 0;
  auto* bytes = static_cast<volatile char*>(p);
  for (auto _ : state) {
    if (aclrtMemManagedPrefetchAsync(p, k2M, device, 0, nullptr) != ACL_SUCCESS ||
        aclrtSynchronizeStream(nullptr) != ACL_SUCCESS) {
      state.SkipWithError("prefetch to device");
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(bytes[k2M / 2]);
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  aclrtFree(p);
}
BENCHMARK(Acl_ManagedCpuFault)->UseManualTime();

// ---- prefetch of 1 GiB -------------------------------------------------------------------------

// 1 GiB to device 0 and back per iteration (64 MiB in the smoke run); the baseline copies the
// same bytes out and back.
size_t prefetch_bytes() { return smoke() ? k64M : k1G; }

void Acl_ManagedPrefetch1G(benchmark::State& state) {
  const size_t n = prefetch_bytes();
  void* p = nullptr;
  if (!ensure_device() ||
      !ok(state, aclrtMemAllocManaged(&p, n, ACL_RT_MEM_ATTACH_GLOBAL), "aclrtMemAllocManaged")) {
    return;
  }
  std::memset(p, 1, n);
  aclrtMemManagedLocation device{}, host{};
  device.type = ACL_MEM_LOCATIONTYPE_DEVICE;
  host.type = ACL_MEM_LOCATIONTYPE_HOST;
  for (auto _ : state) {
    if (aclrtMemManagedPrefetchAsync(p, n, device, 0, nullptr) != ACL_SUCCESS ||
        aclrtMemManagedPrefetchAsync(p, n, host, 0, nullptr) != ACL_SUCCESS ||
        aclrtSynchronizeStream(nullptr) != ACL_SUCCESS) {
      state.SkipWithError("prefetch");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * n));
  aclrtFree(p);
}
BENCHMARK(Acl_ManagedPrefetch1G)->Unit(benchmark::kMillisecond);

void Raw_Memcpy1G(benchmark::State& state) {
  const size_t n = prefetch_bytes();
  std::vector<char> src(n, 1), dst(n, 2);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    std::memcpy(src.data(), dst.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * n));
}
BENCHMARK(Raw_Memcpy1G)->Unit(benchmark::kMillisecond);

// ---- accounting under mapping threads -----------------------------------------------------------

// Each thread maps and unmaps 2 MiB of its own and reads the device's memory accounting
// (aclrtGetMemInfo) after each change, as an allocator that checks its budget does. Threads do not
// share a reservation or a handle, so only the library's own locks can make them wait.
void Acl_GetMemInfoWhileMapping(benchmark::State& state) {
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  void* va = nullptr;
  if (!ensure_device() || !ok(state, aclrtMallocPhysical(&h, k2M, &p, 0), "aclrtMallocPhysical") ||
      !ok(state, aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0), "aclrtReserveMemAddress")) {
    return;
  }
  for (auto _ : state) {
    size_t free_bytes = 0, total = 0;
    if (aclrtMapMem(va, k2M, 0, h, 0) != ACL_SUCCESS ||
        aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total) != ACL_SUCCESS ||
        aclrtUnmapMem(va) != ACL_SUCCESS ||
        aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total) != ACL_SUCCESS) {
      state.SkipWithError("map / meminfo / unmap");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  aclrtReleaseMemAddress(va);
  aclrtFreePhysical(h);
}
BENCHMARK(Acl_GetMemInfoWhileMapping)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

// The accounting alone, from range-many threads: the target row's measure of whether reading it
// takes a lock that readers share (with one, two threads are no faster than one).
void Acl_GetMemInfoThreads(benchmark::State& state) {
  if (!ensure_device()) {
    state.SkipWithError("aclrtSetDevice");
    return;
  }
  for (auto _ : state) {
    size_t free_bytes = 0, total = 0;
    if (aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total) != ACL_SUCCESS) {
      state.SkipWithError("aclrtGetMemInfo");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(Acl_GetMemInfoThreads)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace bench
