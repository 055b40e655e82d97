// Client patterns A16-A19 of clients.md: address queries, basic runtime copies, memory info and
// init/finalize reference counting as applications use them.
#include <cstdlib>

#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;
using Clients = AclTest;

const uint32_t kHostPage = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));

struct Attr {
  aclError rc;
  aclrtPtrAttributes a;
};
Attr attrs_of(const void* p) {
  Attr r{};
  r.rc = aclrtPointerGetAttributes(p, &r.a);
  return r;
}

TEST_F(Clients, A16_AddressRangeAndPointerAttributesOnAnyPointer) {
  // Plain malloc and stack memory: UNREGISTERED, id 0, host page (behavior.md §9).
  void* heap = std::malloc(12345);
  ASSERT_NE(heap, nullptr);
  int on_stack = 7;
  for (const void* p : {static_cast<const void*>(heap), static_cast<const void*>(&on_stack)}) {
    Attr r = attrs_of(p);
    ASSERT_EQ(r.rc, ACL_SUCCESS);
    EXPECT_EQ(r.a.location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
    EXPECT_EQ(r.a.location.id, 0u);
    EXPECT_EQ(r.a.pageSize, kHostPage);
  }
  void* base = nullptr;
  size_t size = 0;
  // hixl: a plain malloc pointer has no range (§9: start == 0 → 107000).
  EXPECT_EQ(aclrtMemGetAddressRange(heap, &base, &size), ACL_ERROR_RT_PARAM_INVALID);
  std::free(heap);

  // Pinned host memory: HOST, 0, host page; its range is its own node.
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, 1000), ACL_SUCCESS);
  Attr hp = attrs_of(static_cast<char*>(pinned) + 100);
  ASSERT_EQ(hp.rc, ACL_SUCCESS);
  EXPECT_EQ(hp.a.location.type, ACL_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(hp.a.location.id, 0u);
  EXPECT_EQ(hp.a.pageSize, kHostPage);
  ASSERT_EQ(aclrtMemGetAddressRange(static_cast<char*>(pinned) + 100, &base, &size), ACL_SUCCESS);
  EXPECT_EQ(base, pinned);
  EXPECT_GE(size, 1000u);
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);

  // aclrtMalloc: DEVICE + the user device id.
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 3 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  Attr dm = attrs_of(static_cast<char*>(dev) + kMiB);
  ASSERT_EQ(dm.rc, ACL_SUCCESS);
  EXPECT_EQ(dm.a.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(dm.a.location.id, 0u);
  ASSERT_EQ(aclrtMemGetAddressRange(static_cast<char*>(dev) + kMiB, &base, &size), ACL_SUCCESS);
  EXPECT_EQ(base, dev);
  EXPECT_GE(size, 3 * kMiB);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);

  // VMM mappings of devices 0 and 1 inside two reservations: DEVICE + mapping device, 2 MiB
  // pages; the range is the mapping containing the pointer.
  for (uint32_t d : {0u, 1u}) {
    SCOPED_TRACE(d);
    aclrtDrvMemHandle h1 = make_handle(4 * kMiB, d), h2 = make_handle(2 * kMiB, d);
    void* va = reserve(16 * kMiB);
    ASSERT_EQ(aclrtMapMem(at(va, 2 * kMiB), 4 * kMiB, 0, h1, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMapMem(at(va, 6 * kMiB), 2 * kMiB, 0, h2, 0), ACL_SUCCESS);
    Attr vm = attrs_of(at(va, 5 * kMiB + 17));
    ASSERT_EQ(vm.rc, ACL_SUCCESS);
    EXPECT_EQ(vm.a.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
    EXPECT_EQ(vm.a.location.id, d);
    EXPECT_EQ(vm.a.pageSize, 2 * kMiB);
    ASSERT_EQ(aclrtMemGetAddressRange(at(va, 5 * kMiB + 17), &base, &size), ACL_SUCCESS);
    EXPECT_EQ(base, at(va, 2 * kMiB));
    EXPECT_EQ(size, 4 * kMiB);
    base = nullptr;
    ASSERT_EQ(aclrtMemGetAddressRange(at(va, 7 * kMiB), &base, nullptr), ACL_SUCCESS);
    EXPECT_EQ(base, at(va, 6 * kMiB));
    // The unmapped part of the reservation: §9 → 107017 for attributes, 107000 for the range.
    EXPECT_EQ(attrs_of(at(va, 10 * kMiB)).rc, ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtMemGetAddressRange(at(va, 10 * kMiB), &base, &size), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(aclrtUnmapMem(at(va, 2 * kMiB)), ACL_SUCCESS);
    EXPECT_EQ(aclrtUnmapMem(at(va, 6 * kMiB)), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h1), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h2), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    // Released: an unallocated address inside the device window → 507899.
    EXPECT_EQ(attrs_of(at(va, 2 * kMiB)).rc, ACL_ERROR_RT_DRV_INTERNAL_ERROR);
  }
}

TEST_F(Clients, A17_BasicCopiesAndSetsAsApplicationsCallThem) {
  const size_t n = 2 * kMiB;
  aclrtDrvMemHandle h = make_handle(2 * n);
  void* va = reserve(2 * n);
  ASSERT_EQ(aclrtMapMem(va, 2 * n, 0, h, 0), ACL_SUCCESS);
  void* a = va;
  void* b = at(va, n);
  // vllm-ascend: destMax far larger than the real destination.
  const std::string bytes = pattern(n, 30);
  ASSERT_EQ(aclrtMemcpy(a, 2 * n + 12345, bytes.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(get(a, n), bytes);
  // destMax < count → 107000 (behavior.md "deliberately differs").
  EXPECT_EQ(aclrtMemcpy(a, n - 1, bytes.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
  // Sample 12: aclrtMemset on a host stack object.
  aclrtMemFabricHandle fabric;
  std::memset(&fabric, 0x11, sizeof fabric);
  ASSERT_EQ(aclrtMemset(&fabric, sizeof fabric, 0, sizeof fabric), ACL_SUCCESS);
  EXPECT_TRUE(all_bytes(std::string(reinterpret_cast<char*>(fabric.data), sizeof fabric), '\0'));
  // D2D, then DEFAULT-kind copies in both directions.
  ASSERT_EQ(aclrtMemcpy(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  std::string back(n, '\0');
  ASSERT_EQ(aclrtMemcpy(&back[0], n, b, n, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  EXPECT_EQ(back, bytes);
  // Async on a created stream and on the default stream (NULL).
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  const std::string other = pattern(n, 31);
  std::string out1(n, '\0'), out2(n, '\0');
  ASSERT_EQ(aclrtMemcpyAsync(a, n, other.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(&out1[0], n, b, n, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(out1, other);
  ASSERT_EQ(aclrtMemsetAsync(b, n, 0x42, n / 2, nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(&out2[0], n, b, n, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_TRUE(all_bytes(out2.substr(0, n / 2), 0x42));
  EXPECT_EQ(out2.substr(n / 2), other.substr(n / 2));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

TEST_F(Clients, A18_MemInfoReflectsPhysicalAllocations) {
  const aclrtMemAttr attrs[] = {ACL_HBM_MEM, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_HUGE1G};
  MemInfo before[3];
  for (int i = 0; i < 3; ++i) {
    before[i] = mem_info(attrs[i]);
    EXPECT_EQ(before[i].total, 64 * kGiB) << i;  // torch_npu sizes its VA by total
    EXPECT_LE(before[i].free, before[i].total);
  }
  // Famem pool: 1 GiB pages; a 1-byte 1G request costs 1 GiB. torch_npu: 2 MiB pages.
  aclrtPhysicalMemProp p1g = device_prop(0, ACL_HBM_MEM_HUGE1G);
  aclrtDrvMemHandle big = nullptr, tiny1g = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&big, kGiB, &p1g, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocPhysical(&tiny1g, 1, &p1g, 0), ACL_SUCCESS);
  aclrtDrvMemHandle small = make_handle(6 * kMiB);
  const size_t used = 2 * kGiB + 6 * kMiB;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(before[i].free - mem_info(attrs[i]).free, used) << i;
  // tms: mapping does not change the count; pausing (unmap + free) restores it.
  void* va = reserve(6 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 6 * kMiB, 0, small, 0), ACL_SUCCESS);
  EXPECT_EQ(before[1].free - mem_info(ACL_HBM_MEM_HUGE).free, used);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(small), ACL_SUCCESS);
  // vllm-ascend: freed bytes = free after - free before.
  EXPECT_EQ(mem_info(ACL_HBM_MEM).free - (before[0].free - used), 6 * kMiB);
  EXPECT_EQ(aclrtFreePhysical(big), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(tiny1g), ACL_SUCCESS);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(mem_info(attrs[i]).free, before[i].free) << i;
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  // Memory of device 1 does not count against device 0.
  aclrtDrvMemHandle on1 = make_handle(4 * kMiB, 1);
  EXPECT_EQ(mem_info(ACL_HBM_MEM).free, before[0].free);
  EXPECT_EQ(aclrtFreePhysical(on1), ACL_SUCCESS);
}

TEST_F(Clients, A19_ContextAfterSetDeviceAndInitFinalizeCounting) {
  aclrtContext ctx = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&ctx), ACL_SUCCESS);
  EXPECT_NE(ctx, nullptr);
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  aclrtContext ctx1 = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&ctx1), ACL_SUCCESS);
  EXPECT_NE(ctx1, nullptr);
  EXPECT_NE(ctx1, ctx);
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);

  // behavior.md §13 / decisions: aclInit again → 100002 (counted); each aclFinalize drops one;
  // the last one finalises; one more → 100037.
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);  // Famem accepts this code
  aclrtDrvMemHandle h = make_handle();  // still initialised after the first aclFinalize below
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(live_count("physical_handles"), 1);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  (void)h;
  // Back to the fixture's state.
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(live_count("physical_handles"), 0);  // the last finalize released the leak
}

}  // namespace
