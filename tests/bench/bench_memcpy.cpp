// aclrtMemcpy host-to-device, device-to-host and device-to-device against a plain memcpy of the
// same size between two pre-faulted host buffers: in the emulator device memory is host memory,
// so memcpy is the limit.
#include <cstring>
#include <vector>

#include "bench_util.h"

namespace bench {
namespace {

void Raw_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<char> src(n, 1), dst(n, 2);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(Raw_Memcpy)->Arg(k4K)->Arg(k2M)->Arg(k64M);

// range(0): bytes; range(1): 1 host-to-device, 2 device-to-host, 3 device-to-device.
void Acl_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto kind = static_cast<aclrtMemcpyKind>(state.range(1));
  void* d1 = nullptr;
  void* d2 = nullptr;
  if (!ensure_device() ||
      !ok(state, aclrtMalloc(&d1, n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
      !ok(state, aclrtMalloc(&d2, n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) {
    return;
  }
  std::vector<char> host(n, 1);
  void* dst = kind == ACL_MEMCPY_DEVICE_TO_HOST ? host.data() : d1;
  void* src = kind == ACL_MEMCPY_HOST_TO_DEVICE ? host.data() : d2;
  // Touch both device buffers once: the timed copies then measure copying, not first faults,
  // as the baseline's pre-faulted vectors do.
  aclrtMemcpy(d1, n, host.data(), n, ACL_MEMCPY_HOST_TO_DEVICE);
  aclrtMemcpy(d2, n, host.data(), n, ACL_MEMCPY_HOST_TO_DEVICE);
  for (auto _ : state) {
    if (aclrtMemcpy(dst, n, src, n, kind) != ACL_SUCCESS) {
      state.SkipWithError("aclrtMemcpy");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  aclrtFree(d1);
  aclrtFree(d2);
}
BENCHMARK(Acl_Memcpy)->ArgsProduct({{k4K, k2M, k64M},
                                    {ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                                     ACL_MEMCPY_DEVICE_TO_DEVICE}});

}  // namespace
}  // namespace bench
