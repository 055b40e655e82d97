// Robustness of the virtual-memory calls: no call crashes on null, forged or stale arguments; each
// returns the code of behavior.md and leaves no partial state. The rows of the runtime calls
// (devices, contexts, streams, plain memory, copies, sharing, managed, extensions) are in
// robustness_runtime_test.cpp; the coverage test below checks that every exported function has rows.
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "api/robustness_util.h"
#include "api/test_env.h"

namespace aclvmm_test {
namespace {


// Creators clean up after an unexpected success so that the stats check reports only the code.
aclError malloc_physical(size_t size, aclrtPhysicalMemProp p, uint64_t flags = 0) {
  aclrtDrvMemHandle h = nullptr;
  aclError e = aclrtMallocPhysical(&h, size, &p, flags);
  if (e == ACL_SUCCESS) (void)aclrtFreePhysical(h);
  return e;
}
aclError reserve_at(size_t size, size_t alignment, void* expect, uint64_t flags, bool no_uc = false) {
  void* p = nullptr;
  aclError e = no_uc ? aclrtReserveMemAddressNoUCMemory(&p, size, alignment, expect, flags)
                     : aclrtReserveMemAddress(&p, size, alignment, expect, flags);
  if (e == ACL_SUCCESS) (void)aclrtReleaseMemAddress(p);
  return e;
}
aclError map_at(void* va, size_t size, size_t offset, aclrtDrvMemHandle h, uint64_t flags,
                bool no_access = false) {
  aclError e = no_access ? aclrtMemMapNoAccess(va, size, offset, h, flags)
                         : aclrtMapMem(va, size, offset, h, flags);
  if (e == ACL_SUCCESS) (void)aclrtUnmapMem(va);
  return e;
}
aclError granularity(aclrtPhysicalMemProp p, int option = ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM) {
  size_t g = 0;
  return aclrtMemGetAllocationGranularity(&p, static_cast<aclrtMemGranularityOptions>(option), &g);
}
aclrtMemAccessDesc desc_of(int flags, uint32_t id, int type) { return desc(flags, loc(type, id)); }
aclError set_access(void* va, size_t size, aclrtMemAccessDesc d, size_t count = 1) {
  return aclrtMemSetAccess(va, size, &d, count);
}
aclError get_access(void* va, uint32_t id, int type) {
  aclrtMemLocation l = loc(type, id);
  uint64_t f = 0;
  return aclrtMemGetAccess(va, &l, &f);
}
aclError retain(void* va) {
  aclrtDrvMemHandle h = nullptr;
  aclError e = aclrtMemRetainAllocationHandle(va, &h);
  if (e == ACL_SUCCESS) (void)aclrtFreePhysical(h);
  return e;
}
aclError props(aclrtDrvMemHandle h) {
  aclrtPhysicalMemProp p{};
  return aclrtMemGetAllocationPropertiesFromHandle(h, &p);
}
aclError range(void* p) {
  void* base = nullptr;
  size_t size = 0;
  return aclrtMemGetAddressRange(p, &base, &size);
}
// PointerGetAttributes must succeed and report `type`; -1 when the type is wrong.
aclError attrs_are(const void* p, int type) {
  aclrtPtrAttributes a{};
  aclError e = aclrtPointerGetAttributes(p, &a);
  if (e == ACL_SUCCESS && static_cast<int>(a.location.type) != type) return -1;
  return e;
}
aclError attrs(const void* p) {
  aclrtPtrAttributes a{};
  return aclrtPointerGetAttributes(p, &a);
}

}  // namespace

std::vector<Row> vmm_rows(RobustnessBase& t) {
  World& w = t.w;
  std::vector<Row> rows;
  const auto dev = [](uint32_t id = 0, aclrtMemAttr a = ACL_HBM_MEM_HUGE) { return device_prop(id, a); };
  auto prop_with = [dev](const std::function<void(aclrtPhysicalMemProp&)>& f) {
    aclrtPhysicalMemProp p = dev();
    f(p);
    return p;
  };

  // §1 aclrtMallocPhysical: ACL checks → 100000; device id → 107001; driver → 107000/207000;
  // out of memory (incl. sizes that overflow when rounded) → 207001.
  const char* api = "aclrtMallocPhysical";
  rows.push_back({api, "handle NULL", [dev] { auto p = dev(); return aclrtMallocPhysical(nullptr, k2M, &p, 0); }, kParam});
  rows.push_back({api, "prop NULL", [] { aclrtDrvMemHandle h = nullptr; return aclrtMallocPhysical(&h, k2M, nullptr, 0); }, kParam});
  rows.push_back({api, "size 0", [dev] { return malloc_physical(0, dev()); }, kParam});
  rows.push_back({api, "flags 1", [dev] { return malloc_physical(k2M, dev(), 1); }, kParam});
  rows.push_back({api, "handleType POSIX", [=] { return malloc_physical(k2M, prop_with([](auto& p) { p.handleType = ACL_MEM_HANDLE_TYPE_POSIX; })); }, kParam});
  rows.push_back({api, "allocationType 1", [=] { return malloc_physical(k2M, prop_with([](auto& p) { p.allocationType = static_cast<aclrtMemAllocationType>(1); })); }, kParam});
  rows.push_back({api, "location UNREGISTERED", [=] { return malloc_physical(k2M, prop_with([](auto& p) { p.location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED; })); }, kParam});
  rows.push_back({api, "location MANAGED", [=] { return malloc_physical(k2M, prop_with([](auto& p) { p.location.type = ACL_MEM_LOCATION_TYPE_MANAGED; })); }, kParam});
  rows.push_back({api, "device + DDR attr", [dev] { return malloc_physical(k2M, dev(0, ACL_DDR_MEM_HUGE)); }, kParam});
  rows.push_back({api, "memAttr ACL_HBM_MEM", [dev] { return malloc_physical(k2M, dev(0, ACL_HBM_MEM)); }, kParam});
  rows.push_back({api, "memAttr 18", [dev] { return malloc_physical(k2M, dev(0, static_cast<aclrtMemAttr>(18))); }, kParam});
  rows.push_back({api, "memAttr 31", [dev] { return malloc_physical(k2M, dev(0, static_cast<aclrtMemAttr>(31))); }, kParam});
  rows.push_back({api, "device id 8", [dev] { return malloc_physical(k2M, dev(8)); }, kBadDevice});
  rows.push_back({api, "device id 0xffffffff", [dev] { return malloc_physical(k2M, dev(0xffffffffu)); }, kBadDevice});
  rows.push_back({api, "reserve != 0", [=] { return malloc_physical(k2M, prop_with([](auto& p) { p.reserve = 1; })); }, kRtParam});
  rows.push_back({api, "location type 5", [=] { return malloc_physical(k2M, prop_with([](auto& p) { p.location.type = static_cast<aclrtMemLocationType>(5); })); }, kRtParam});
  rows.push_back({api, "host location id 1", [] { auto p = host_prop(); p.location.id = 1; return malloc_physical(k2M, p); }, kNotSupported});
  rows.push_back({api, "host location id 64", [] { auto p = host_prop(); p.location.id = 64; return malloc_physical(k2M, p); }, kRtParam});
  rows.push_back({api, "HOST_NUMA without context", [&t] { return t.without_context([] { auto p = host_prop(); p.location.type = ACL_MEM_LOCATION_TYPE_HOST_NUMA; return malloc_physical(k2M, p); }); }, kNoContext});
  rows.push_back({api, "size SIZE_MAX", [dev] { return malloc_physical(kMax, dev()); }, kNoMemory});
  rows.push_back({api, "size overflowing 2M rounding", [dev] { return malloc_physical(kMax - kMiB, dev()); }, kNoMemory});
  rows.push_back({api, "size SIZE_MAX/2", [dev] { return malloc_physical(kMax / 2, dev()); }, kNoMemory});
  rows.push_back({api, "size 1 TiB > device memory", [dev] { return malloc_physical(size_t(1) << 40, dev()); }, kNoMemory});
  rows.push_back({api, "1G pages, size overflowing 1G rounding", [dev] { return malloc_physical(kMax - kMiB, dev(0, ACL_HBM_MEM_HUGE1G)); }, kNoMemory});
  rows.push_back({api, "host, size SIZE_MAX", [] { return malloc_physical(kMax, host_prop()); }, kNoMemory});

  // §1 aclrtFreePhysical: NULL → 100000; stale/forged/double-freed → 107000 (decisions table).
  api = "aclrtFreePhysical";
  rows.push_back({api, "NULL", [] { return aclrtFreePhysical(nullptr); }, kParam});
  t.add_forged(rows, api, "handle", kRtParam, [](void* v) { return aclrtFreePhysical(v); });
  rows.push_back({api, "freed handle", [&w] { return aclrtFreePhysical(w.freed_h); }, kRtParam});
  rows.push_back({api, "stream passed as handle", [&w] { return aclrtFreePhysical(w.stream); }, kRtParam});
  rows.push_back({api, "context passed as handle", [&w] { return aclrtFreePhysical(w.primary); }, kRtParam});
  rows.push_back({api, "second free while mapped", [] {
    aclrtPhysicalMemProp p = device_prop();
    aclrtDrvMemHandle h = nullptr;
    void* va = nullptr;
    if (aclrtMallocPhysical(&h, k2M, &p, 0) || aclrtReserveMemAddress(&va, k2M, 0, nullptr, 0)) return -1;
    if (aclrtMapMem(va, k2M, 0, h, 0) || aclrtFreePhysical(h)) return -2;
    aclError e = aclrtFreePhysical(h);  // ref <= map_ref: "released too many times"
    if (aclrtUnmapMem(va) || aclrtReleaseMemAddress(va)) return -3;
    return e;
  }, kRtParam});

  // §2 aclrtReserveMemAddress: ACL → 100000; alignment / expectPtr → 107000; occupied → 507899.
  api = "aclrtReserveMemAddress";
  rows.push_back({api, "virPtr NULL", [] { return aclrtReserveMemAddress(nullptr, k2M, 0, nullptr, 0); }, kParam});
  rows.push_back({api, "size 0", [] { return reserve_at(0, 0, nullptr, 0); }, kParam});
  rows.push_back({api, "flags 2", [] { return reserve_at(k2M, 0, nullptr, 2); }, kParam});
  rows.push_back({api, "flags ~0", [] { return reserve_at(k2M, 0, nullptr, ~0ull); }, kParam});
  rows.push_back({api, "alignment 4096", [] { return reserve_at(k2M, 4096, nullptr, 0); }, kRtParam});
  rows.push_back({api, "alignment SIZE_MAX", [] { return reserve_at(k2M, kMax, nullptr, 0); }, kRtParam});
  t.add_forged(rows, api, "expectPtr (not 2 MiB aligned)", kRtParam, [](void* v) { return reserve_at(k2M, 0, v, 0); });
  rows.push_back({api, "expectPtr not 2M aligned", [&w] { return reserve_at(k2M, 0, at(w.va2, 4096), 0); }, kRtParam});
  rows.push_back({api, "expectPtr occupied", [&w] { return reserve_at(k2M, 0, w.va2, 0); }, kDrv});
  rows.push_back({api, "expectPtr of a live aclrtMalloc", [&w] { return reserve_at(k2M, 0, w.dptr, 0); }, kDrv});
  // Spec silent on sizes that overflow when rounded: the library answers 107000 (size check in
  // the user-space driver), and 207001 for a size that does not fit the window.
  rows.push_back({api, "size SIZE_MAX", [] { return reserve_at(kMax, 0, nullptr, 0); }, kRtParam});
  rows.push_back({api, "size overflowing 2M rounding", [] { return reserve_at(kMax - kMiB, 0, nullptr, 0); }, kRtParam});
  rows.push_back({api, "size 1 PiB", [] { return reserve_at(size_t(1) << 50, 0, nullptr, 0); }, kNoMemory});

  // §2 NoUC on A2 (default SoC): ACL checks, then product gating → 207000 (products.md).
  api = "aclrtReserveMemAddressNoUCMemory";
  rows.push_back({api, "virPtr NULL", [] { return aclrtReserveMemAddressNoUCMemory(nullptr, kGiB, 0, nullptr, 0); }, kParam});
  rows.push_back({api, "size 0", [] { return reserve_at(0, 0, nullptr, 0, true); }, kParam});
  rows.push_back({api, "flags 2", [] { return reserve_at(kGiB, 0, nullptr, 2, true); }, kParam});
  rows.push_back({api, "not supported on A2", [] { return reserve_at(kGiB, 0, reinterpret_cast<void*>(0x200000000000ull), 0, true); }, kNotSupported});

  // §2 aclrtReleaseMemAddress: NULL → 100000; not the start of a live reservation → 107000;
  // mappings remain → 507899 (decisions table).
  api = "aclrtReleaseMemAddress";
  rows.push_back({api, "NULL", [] { return aclrtReleaseMemAddress(nullptr); }, kParam});
  t.add_forged(rows, api, "address", kRtParam, [](void* v) { return aclrtReleaseMemAddress(v); });
  rows.push_back({api, "released reservation", [&w] { return aclrtReleaseMemAddress(w.released_va); }, kRtParam});
  rows.push_back({api, "interior address", [&w] { return aclrtReleaseMemAddress(at(w.va2, k2M)); }, kRtParam});
  rows.push_back({api, "misaligned address", [&w] { return aclrtReleaseMemAddress(at(w.va2, 1)); }, kRtParam});
  rows.push_back({api, "aclrtMalloc pointer", [&w] { return aclrtReleaseMemAddress(w.dptr); }, kRtParam});
  rows.push_back({api, "freed aclrtMalloc pointer", [&w] { return aclrtReleaseMemAddress(w.freed_dptr); }, kRtParam});
  rows.push_back({api, "aclrtMallocHost pointer", [&w] { return aclrtReleaseMemAddress(w.hptr); }, kRtParam});
  rows.push_back({api, "still mapped", [&w] { return aclrtReleaseMemAddress(w.va); }, kDrv});

  // §3 aclrtMapMem / aclrtMemMapNoAccess: ACL → 100000; offset / handle sanity → 107000; VA and
  // geometry → 507899; larger than the handle → 207001.
  for (bool na : {false, true}) {
    api = na ? "aclrtMemMapNoAccess" : "aclrtMapMem";
    rows.push_back({api, "virPtr NULL", [&w, na] { return map_at(nullptr, k2M, 0, w.h_spare, 0, na); }, kParam});
    rows.push_back({api, "handle NULL", [&w, na] { return map_at(w.va2, k2M, 0, nullptr, 0, na); }, kParam});
    rows.push_back({api, "size 0", [&w, na] { return map_at(w.va2, 0, 0, w.h_spare, 0, na); }, kParam});
    rows.push_back({api, "flags 1", [&w, na] { return map_at(w.va2, k2M, 0, w.h_spare, 1, na); }, kParam});
    rows.push_back({api, "offset 4096", [&w, na] { return map_at(w.va2, k2M, 4096, w.h_spare, 0, na); }, kRtParam});
    t.add_forged(rows, api, "handle", kRtParam, [&w, na](void* v) { return map_at(w.va2, k2M, 0, v, 0, na); });
    rows.push_back({api, "freed handle", [&w, na] { return map_at(w.va2, k2M, 0, w.freed_h, 0, na); }, kRtParam});
    rows.push_back({api, "stream as handle", [&w, na] { return map_at(w.va2, k2M, 0, w.stream, 0, na); }, kRtParam});
    t.add_forged(rows, api, "virPtr", kDrv, [&w, na](void* v) { return map_at(v, k2M, 0, w.h_spare, 0, na); });
    rows.push_back({api, "released reservation", [&w, na] { return map_at(w.released_va, k2M, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "misaligned virPtr", [&w, na] { return map_at(at(w.va2, 4096), k2M, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "size 4096", [&w, na] { return map_at(w.va2, 4096, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "size SIZE_MAX", [&w, na] { return map_at(w.va2, kMax, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "size huge 2M multiple", [&w, na] { return map_at(w.va2, kMax & ~(k2M - 1), 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "past the reservation end", [&w, na] { return map_at(at(w.va2, k2M), 4 * kMiB, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "already mapped", [&w, na] { return map_at(w.va, k2M, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "other device in bound reservation", [&w, na] { return map_at(at(w.va, k2M), k2M, 0, w.h_dev1, 0, na); }, kDrv});
    rows.push_back({api, "aclrtMalloc pointer", [&w, na] { return map_at(w.dptr, k2M, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "freed aclrtMalloc pointer", [&w, na] { return map_at(w.freed_dptr, k2M, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "aclrtMallocHost pointer", [&w, na] { return map_at(w.hptr, k2M, 0, w.h_spare, 0, na); }, kDrv});
    rows.push_back({api, "larger than the handle", [&w, na] { return map_at(w.va2, 4 * kMiB, 0, w.h_spare, 0, na); }, kNoMemory});
  }

  // §3 aclrtUnmapMem: NULL → 100000; not the exact start of a mapping → 507899.
  api = "aclrtUnmapMem";
  rows.push_back({api, "NULL", [] { return aclrtUnmapMem(nullptr); }, kParam});
  t.add_forged(rows, api, "address", kDrv, [](void* v) { return aclrtUnmapMem(v); });
  rows.push_back({api, "released reservation", [&w] { return aclrtUnmapMem(w.released_va); }, kDrv});
  rows.push_back({api, "never mapped", [&w] { return aclrtUnmapMem(w.va2); }, kDrv});
  rows.push_back({api, "interior of a mapping", [&w] { return aclrtUnmapMem(at(w.va, 4096)); }, kDrv});
  rows.push_back({api, "misaligned", [&w] { return aclrtUnmapMem(at(w.va, 1)); }, kDrv});
  rows.push_back({api, "unmapped part of a reservation", [&w] { return aclrtUnmapMem(at(w.va, k2M)); }, kDrv});
  rows.push_back({api, "aclrtMalloc pointer", [&w] { return aclrtUnmapMem(w.dptr); }, kDrv});
  rows.push_back({api, "freed aclrtMalloc pointer", [&w] { return aclrtUnmapMem(w.freed_dptr); }, kDrv});

  // §5 aclrtMemGetAllocationGranularity.
  api = "aclrtMemGetAllocationGranularity";
  rows.push_back({api, "prop NULL", [] { size_t g; return aclrtMemGetAllocationGranularity(nullptr, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g); }, kParam});
  rows.push_back({api, "granularity NULL", [dev] { auto p = dev(); return aclrtMemGetAllocationGranularity(&p, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, nullptr); }, kParam});
  rows.push_back({api, "device + DDR attr", [dev] { return granularity(dev(0, ACL_DDR_MEM_NORMAL)); }, kParam});
  rows.push_back({api, "memAttr ACL_HBM_MEM_P2P_HUGE", [dev] { return granularity(dev(0, ACL_HBM_MEM_P2P_HUGE)); }, kParam});
  rows.push_back({api, "memAttr 18", [dev] { return granularity(dev(0, static_cast<aclrtMemAttr>(18))); }, kParam});
  rows.push_back({api, "device id 8", [dev] { return granularity(dev(8)); }, kBadDevice});
  rows.push_back({api, "option UNDEF", [dev] { return granularity(dev(), ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF); }, kNotSupported});
  rows.push_back({api, "option 2", [dev] { return granularity(dev(), 2); }, kNotSupported});
  rows.push_back({api, "reserve != 0", [=] { return granularity(prop_with([](auto& p) { p.reserve = 7; })); }, kRtParam});
  rows.push_back({api, "location MANAGED", [=] { return granularity(prop_with([](auto& p) { p.location.type = ACL_MEM_LOCATION_TYPE_MANAGED; })); }, kRtParam});
  rows.push_back({api, "host location id 64", [] { auto p = host_prop(); p.location.id = 64; return granularity(p); }, kRtParam});

  // §8 aclrtMemSetAccess: no ACL checks; NULLs / count 0 / bad desc → 107000; (va,size) not
  // exactly a mapping → 507899.
  api = "aclrtMemSetAccess";
  const aclrtMemAccessDesc rw0 = desc_of(ACL_RT_MEM_ACCESS_FLAGS_READWRITE, 0, ACL_MEM_LOCATION_TYPE_DEVICE);
  rows.push_back({api, "virPtr NULL", [rw0] { return set_access(nullptr, k2M, rw0); }, kRtParam});
  rows.push_back({api, "desc NULL", [&w] { return aclrtMemSetAccess(w.va, k2M, nullptr, 1); }, kRtParam});
  rows.push_back({api, "count 0", [&w, rw0] { return set_access(w.va, k2M, rw0, 0); }, kRtParam});
  rows.push_back({api, "flags 2", [&w] { return set_access(w.va, k2M, desc_of(2, 0, ACL_MEM_LOCATION_TYPE_DEVICE)); }, kRtParam});
  rows.push_back({api, "HOST id 1", [&w] { return set_access(w.va, k2M, desc_of(3, 1, ACL_MEM_LOCATION_TYPE_HOST)); }, kRtParam});
  rows.push_back({api, "DEVICE id 64", [&w] { return set_access(w.va, k2M, desc_of(3, 64, ACL_MEM_LOCATION_TYPE_DEVICE)); }, kRtParam});
  rows.push_back({api, "DEVICE id 0xffffffff", [&w] { return set_access(w.va, k2M, desc_of(3, 0xffffffffu, ACL_MEM_LOCATION_TYPE_DEVICE)); }, kRtParam});
  rows.push_back({api, "HOST_NUMA location", [&w] { return set_access(w.va, k2M, desc_of(3, 0, ACL_MEM_LOCATION_TYPE_HOST_NUMA)); }, kRtParam});
  rows.push_back({api, "location type 7", [&w] { return set_access(w.va, k2M, desc_of(3, 0, 7)); }, kRtParam});
  t.add_forged(rows, api, "virPtr", kDrv, [rw0](void* v) { return set_access(v, k2M, rw0); });
  rows.push_back({api, "released reservation", [&w, rw0] { return set_access(w.released_va, k2M, rw0); }, kDrv});
  rows.push_back({api, "never mapped", [&w, rw0] { return set_access(w.va2, k2M, rw0); }, kDrv});
  rows.push_back({api, "size larger than the mapping", [&w, rw0] { return set_access(w.va, 4 * kMiB, rw0); }, kDrv});
  rows.push_back({api, "size SIZE_MAX", [&w, rw0] { return set_access(w.va, kMax, rw0); }, kDrv});
  rows.push_back({api, "interior address", [&w, rw0] { return set_access(at(w.va, 4096), k2M - 4096, rw0); }, kDrv});
  rows.push_back({api, "aclrtMalloc pointer", [&w, rw0] { return set_access(w.dptr, 4096, rw0); }, kDrv});

  // §8 aclrtMemGetAccess: NULLs → 100000; location → 107000; VA not inside a mapping → 507899.
  api = "aclrtMemGetAccess";
  rows.push_back({api, "virPtr NULL", [] { return get_access(nullptr, 0, ACL_MEM_LOCATION_TYPE_DEVICE); }, kParam});
  rows.push_back({api, "location NULL", [&w] { uint64_t f; return aclrtMemGetAccess(w.va, nullptr, &f); }, kParam});
  rows.push_back({api, "flag NULL", [&w] { aclrtMemLocation l{0, ACL_MEM_LOCATION_TYPE_DEVICE}; return aclrtMemGetAccess(w.va, &l, nullptr); }, kParam});
  rows.push_back({api, "HOST id 1", [&w] { return get_access(w.va, 1, ACL_MEM_LOCATION_TYPE_HOST); }, kRtParam});
  rows.push_back({api, "DEVICE id 64", [&w] { return get_access(w.va, 64, ACL_MEM_LOCATION_TYPE_DEVICE); }, kRtParam});
  rows.push_back({api, "location MANAGED", [&w] { return get_access(w.va, 0, ACL_MEM_LOCATION_TYPE_MANAGED); }, kRtParam});
  t.add_forged(rows, api, "virPtr", kDrv, [](void* v) { return get_access(v, 0, ACL_MEM_LOCATION_TYPE_DEVICE); });
  rows.push_back({api, "released reservation", [&w] { return get_access(w.released_va, 0, ACL_MEM_LOCATION_TYPE_DEVICE); }, kDrv});
  rows.push_back({api, "never mapped", [&w] { return get_access(w.va2, 0, ACL_MEM_LOCATION_TYPE_DEVICE); }, kDrv});

  // §6 aclrtMemRetainAllocationHandle: NULLs → 100000; never-mapped reservation → 107017; unknown
  // VA or interior VA → 507899.
  api = "aclrtMemRetainAllocationHandle";
  rows.push_back({api, "virPtr NULL", [] { aclrtDrvMemHandle h; return aclrtMemRetainAllocationHandle(nullptr, &h); }, kParam});
  rows.push_back({api, "handle NULL", [&w] { return aclrtMemRetainAllocationHandle(w.va, nullptr); }, kParam});
  t.add_forged(rows, api, "virPtr", kDrv, [](void* v) { return retain(v); });
  rows.push_back({api, "never mapped reservation", [&w] { return retain(w.va2); }, kBadHandle});
  rows.push_back({api, "interior of a mapping", [&w] { return retain(at(w.va, 4096)); }, kDrv});
  rows.push_back({api, "released reservation", [&w] { return retain(w.released_va); }, kDrv});
  rows.push_back({api, "aclrtMalloc pointer", [&w] { return retain(w.dptr); }, kDrv});

  // §6 aclrtMemGetAllocationPropertiesFromHandle: NULLs → 100000; stale/forged → 107000.
  api = "aclrtMemGetAllocationPropertiesFromHandle";
  rows.push_back({api, "handle NULL", [] { return props(nullptr); }, kParam});
  rows.push_back({api, "prop NULL", [&w] { return aclrtMemGetAllocationPropertiesFromHandle(w.h, nullptr); }, kParam});
  t.add_forged(rows, api, "handle", kRtParam, [](void* v) { return props(v); });
  rows.push_back({api, "freed handle", [&w] { return props(w.freed_h); }, kRtParam});
  rows.push_back({api, "stream as handle", [&w] { return props(w.stream); }, kRtParam});

  // §9 aclrtMemGetAddressRange: ptr NULL → 100000; both outputs NULL → 107000; not inside an
  // allocation / mapping → 107000.
  api = "aclrtMemGetAddressRange";
  rows.push_back({api, "ptr NULL", [] { return range(nullptr); }, kParam});
  rows.push_back({api, "both outputs NULL", [&w] { return aclrtMemGetAddressRange(w.dptr, nullptr, nullptr); }, kRtParam});
  t.add_forged(rows, api, "ptr", kRtParam, [](void* v) { return range(v); });
  rows.push_back({api, "never mapped reservation", [&w] { return range(w.va2); }, kRtParam});
  rows.push_back({api, "released reservation", [&w] { return range(w.released_va); }, kRtParam});
  rows.push_back({api, "freed aclrtMalloc pointer", [&w] { return range(w.freed_dptr); }, kRtParam});

  // §9 aclrtPointerGetAttributes: NULLs → 100000; plain host memory → UNREGISTERED; unallocated
  // address inside the SVM/UVM windows → 507899; reserved, never mapped → 107017.
  api = "aclrtPointerGetAttributes";
  rows.push_back({api, "ptr NULL", [] { return attrs(nullptr); }, kParam});
  rows.push_back({api, "attributes NULL", [&w] { return aclrtPointerGetAttributes(w.dptr, nullptr); }, kParam});
  t.add_forged(rows, api, "host ptr reports UNREGISTERED", ACL_SUCCESS,
               [](void* v) { return attrs_are(v, ACL_MEM_LOCATION_TYPE_UNREGISTERED); });
  rows.push_back({api, "released reservation", [&w] { return attrs(w.released_va); }, kDrv});
  rows.push_back({api, "freed aclrtMalloc pointer", [&w] { return attrs(w.freed_dptr); }, kDrv});
  rows.push_back({api, "unallocated device window address", [&w] { return attrs(at(w.va2, 256 * kMiB)); }, kDrv});
  rows.push_back({api, "never mapped reservation", [&w] { return attrs(w.va2); }, kBadHandle});

  // §11 links on A2: ACL checks, then product gating → 207000 (forged handles: see the A3 test).
  api = "aclrtMemMapSelectedLink";
  rows.push_back({api, "dst NULL", [&w] { return aclrtMemMapSelectedLink(nullptr, k2M, w.va, 0); }, kParam});
  rows.push_back({api, "src NULL", [&w] { return aclrtMemMapSelectedLink(w.va2, k2M, nullptr, 0); }, kParam});
  rows.push_back({api, "size 0", [&w] { return aclrtMemMapSelectedLink(w.va2, 0, w.va, 0); }, kParam});
  rows.push_back({api, "linkIdx 2", [&w] { return aclrtMemMapSelectedLink(w.va2, k2M, w.va, 2); }, kParam});
  rows.push_back({api, "not supported on A2", [&w] { return aclrtMemMapSelectedLink(w.va2, k2M, w.va, 0); }, kNotSupported});
  api = "aclrtMemMapSetLink";
  rows.push_back({api, "handle NULL", [] { return aclrtMemMapSetLink(nullptr, ACL_RT_MEM_ACCESS_LINK_SIO); }, kParam});
  rows.push_back({api, "link 4", [&w] { return aclrtMemMapSetLink(w.h, static_cast<aclrtMemLinkType>(4)); }, kRtParam});
  rows.push_back({api, "not supported on A2", [&w] { return aclrtMemMapSetLink(w.h, ACL_RT_MEM_ACCESS_LINK_HCCS); }, kNotSupported});

  // §10 aclrtMemP2PMap: ACL → 100000; dstDevId → 107001. Spec silent on the code for a pointer
  // that is not device memory (driver failure): the library's 107000 is asserted.
  api = "aclrtMemP2PMap";
  rows.push_back({api, "devPtr NULL", [] { return aclrtMemP2PMap(nullptr, k2M, 1, 0); }, kParam});
  rows.push_back({api, "size 0", [&w] { return aclrtMemP2PMap(w.dptr, 0, 1, 0); }, kParam});
  rows.push_back({api, "flags 1", [&w] { return aclrtMemP2PMap(w.dptr, 4096, 1, 1); }, kParam});
  rows.push_back({api, "dstDevId 8", [&w] { return aclrtMemP2PMap(w.dptr, 4096, 8, 0); }, kBadDevice});
  rows.push_back({api, "dstDevId -1", [&w] { return aclrtMemP2PMap(w.dptr, 4096, -1, 0); }, kBadDevice});
  t.add_forged(rows, api, "devPtr", kRtParam, [](void* v) { return aclrtMemP2PMap(v, 4096, 1, 0); });
  rows.push_back({api, "released reservation", [&w] { return aclrtMemP2PMap(w.released_va, k2M, 1, 0); }, kRtParam});
  return rows;
}

namespace {

class RobustnessVmmTest : public RobustnessBase {};

TEST_F(RobustnessVmmTest, VmmCallsRejectBadInputWithoutSideEffects) {
  int on_stack = 0;
  stack_forged(&on_stack);
  const std::vector<Row> rows = vmm_rows(*this);
  EXPECT_GE(rows.size(), 200u);
  run_rows(rows);
  // The world is intact: the live mapping still works.
  EXPECT_EQ(aclrtMemset(w.va, k2M, 0x5a, 4096), ACL_SUCCESS);
  unsigned char b[16] = {};
  EXPECT_EQ(aclrtMemcpy(b, sizeof b, w.va, sizeof b, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(b[15], 0x5a);
}

// Enum fields of argument structs holding values outside the C++ enum's range (legal for a C
// caller: the ABI is C). The library must read such fields as raw ints, since reading them as the
// enum type is undefined behaviour in C++ that the UBSan build reports; the tests store them with
// store_raw (test_util.h) for the same reason.
TEST_F(RobustnessVmmTest, OutOfRangeEnumValuesInStructs) {
  std::vector<Row> rows;
  for (int attr : {99, -1, 1000, INT_MIN}) {
    const std::string n = "memAttr " + std::to_string(attr);
    rows.push_back({"aclrtMallocPhysical", n, [=] { return malloc_physical(k2M, with_attr(device_prop(), attr)); }, kParam});
    rows.push_back({"aclrtMemGetAllocationGranularity", n, [=] { return granularity(with_attr(device_prop(), attr)); }, kParam});
  }
  for (int type : {9, -1, 1000}) {
    const std::string n = "location type " + std::to_string(type);
    rows.push_back({"aclrtMallocPhysical", n, [=] { return malloc_physical(k2M, with_location(device_prop(), type)); }, kRtParam});
    rows.push_back({"aclrtMemSetAccess", n, [=] { return set_access(w.va, k2M, desc_of(3, 0, type)); }, kRtParam});
    rows.push_back({"aclrtMemGetAccess", n, [=] { return get_access(w.va, 0, type); }, kRtParam});
  }
  for (int flags : {int(0x80000000u), 4, -1}) {
    rows.push_back({"aclrtMemSetAccess", "flags " + std::to_string(flags), [=] { return set_access(w.va, k2M, desc_of(flags, 0, ACL_MEM_LOCATION_TYPE_DEVICE)); }, kRtParam});
  }
  run_rows(rows);
}

// Every exported function of symbols.txt, aclrtMallocAlign32 and the aclvmm extensions has rows.
TEST_F(RobustnessVmmTest, EveryExportedFunctionHasRows) {
  std::set<std::string> covered;
  for (const Row& r : vmm_rows(*this)) covered.insert(r.api);
  for (const Row& r : runtime_rows(*this)) covered.insert(r.api);
  std::string dir = __FILE__;
  dir = dir.substr(0, dir.rfind('/'));
  std::ifstream in(dir + "/../abi/symbols.txt");
  ASSERT_TRUE(in.good()) << dir;
  std::vector<std::string> wanted = {"aclrtMallocAlign32", "aclvmmStatsJson", "aclvmmInjectFault", "aclvmmFaultRemaining",
                                     "aclvmmLaunchKernel", "aclvmmKernelRead", "aclvmmKernelWrite",
                                     "aclvmmKernelDeviceId"};
  std::string name;
  int symbols = 0;
  while (in >> name) {
    wanted.push_back(name);
    ++symbols;
  }
  EXPECT_EQ(symbols, 67);
  for (const std::string& s : wanted) EXPECT_TRUE(covered.count(s)) << s << " has no robustness rows";
}

// A3 (Ascend910_9381) offers NoUC reservations and links: their driver checks, with forged and
// stale arguments, only run there.
class RobustnessA3Test : public AclTest {
 protected:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    soc_.set("Ascend910_9381");
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_STREQ(aclrtGetSocName(), "Ascend910_9381");
  }
  void TearDown() override {
    AclTest::TearDown();
    soc_.restore();
  }
  ScopedEnv soc_{"ACLVMM_SOC"};
};

TEST_F(RobustnessA3Test, NoUcAndLinkCallsRejectBadInput) {
  int on_stack = 0;
  aclrtDrvMemHandle h = make_handle(k2M), freed = make_handle(k2M);
  ASSERT_EQ(aclrtFreePhysical(freed), ACL_SUCCESS);
  void* va = reserve(4 * kMiB);
  void* va2 = reserve(4 * kMiB);
  void* gone = reserve(4 * kMiB);
  ASSERT_EQ(aclrtReleaseMemAddress(gone), ACL_SUCCESS);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), ACL_SUCCESS);
  void* const nouc = reinterpret_cast<void*>(0x200000000000ull);  // 1 GiB aligned, NoUC window
  const Forged forged[] = {{"0x1234", reinterpret_cast<void*>(0x1234)},
                           {"0xdeadbeef00", reinterpret_cast<void*>(0xdeadbeef00ull)},
                           {"~0", reinterpret_cast<void*>(~0ull)},
                           {"stack object", &on_stack}};
  std::vector<Row> rows;
  // §2 NoUC: expectPtr NULL → 207000; alignment, size not a 1 GiB multiple, expectPtr not 1 GiB
  // aligned → 107000; occupied → 507899; release of an unknown dynamic VA → 107000.
  std::string api = "aclrtReserveMemAddressNoUCMemory";
  rows.push_back({api, "expectPtr NULL", [] { return reserve_at(kGiB, 0, nullptr, 0, true); }, kNotSupported});
  rows.push_back({api, "alignment 4096", [=] { return reserve_at(kGiB, 4096, nouc, 0, true); }, kRtParam});
  rows.push_back({api, "size 2 MiB", [=] { return reserve_at(k2M, 0, nouc, 0, true); }, kRtParam});
  rows.push_back({api, "size SIZE_MAX", [=] { return reserve_at(kMax, 0, nouc, 0, true); }, kRtParam});
  rows.push_back({api, "expectPtr 2 MiB aligned only", [=] { return reserve_at(kGiB, 0, at(nouc, k2M), 0, true); }, kRtParam});
  for (const Forged& f : forged) {
    void* v = f.value;
    rows.push_back({api, std::string("expectPtr forged ") + f.label, [v] { return reserve_at(kGiB, 0, v, 0, true); }, kRtParam});
  }
  rows.push_back({api, "occupied", [=] {
    void* p = nullptr;
    if (aclrtReserveMemAddressNoUCMemory(&p, kGiB, 0, nouc, 0) != ACL_SUCCESS) return -1;
    aclError e = reserve_at(kGiB, 0, nouc, 0, true);
    return aclrtReleaseMemAddress(p) == ACL_SUCCESS ? e : -2;
  }, kDrv});
  rows.push_back({"aclrtReleaseMemAddress", "unknown dynamic-range VA", [=] { return aclrtReleaseMemAddress(nouc); }, kRtParam});
  // §11 aclrtMemMapSetLink: stale / forged handles → 107000; a link A3 lacks → 207021.
  api = "aclrtMemMapSetLink";
  for (const Forged& f : forged) {
    void* v = f.value;
    rows.push_back({api, std::string("handle forged ") + f.label, [v] { return aclrtMemMapSetLink(v, ACL_RT_MEM_ACCESS_LINK_HCCS); }, kRtParam});
  }
  rows.push_back({api, "freed handle", [=] { return aclrtMemMapSetLink(freed, ACL_RT_MEM_ACCESS_LINK_SIO); }, kRtParam});
  rows.push_back({api, "link 4", [=] { return aclrtMemMapSetLink(h, static_cast<aclrtMemLinkType>(4)); }, kRtParam});
  rows.push_back({api, "UB link on A3", [=] { return aclrtMemMapSetLink(h, ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH); }, kLinkNotSupported});
  // §11 aclrtMemMapSelectedLink: src not the start of a mapping → 107000; dst follows MapMem rules.
  api = "aclrtMemMapSelectedLink";
  for (const Forged& f : forged) {
    void* v = f.value;
    rows.push_back({api, std::string("src forged ") + f.label, [=] { return aclrtMemMapSelectedLink(va2, k2M, v, 0); }, kRtParam});
    rows.push_back({api, std::string("dst forged ") + f.label, [=] { return aclrtMemMapSelectedLink(v, k2M, va, 0); }, kDrv});
  }
  rows.push_back({api, "src never mapped", [=] { return aclrtMemMapSelectedLink(va2, k2M, at(va, k2M), 0); }, kRtParam});
  rows.push_back({api, "src interior", [=] { return aclrtMemMapSelectedLink(va2, k2M, at(va, 4096), 0); }, kRtParam});
  rows.push_back({api, "src released", [=] { return aclrtMemMapSelectedLink(va2, k2M, gone, 1); }, kRtParam});
  rows.push_back({api, "dst misaligned", [=] { return aclrtMemMapSelectedLink(at(va2, 4096), k2M, va, 0); }, kDrv});
  rows.push_back({api, "dst already mapped", [=] { return aclrtMemMapSelectedLink(va, k2M, va, 0); }, kDrv});
  RobustnessBase::run_rows(rows);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va2), ACL_SUCCESS);
}

}  // namespace
}  // namespace aclvmm_test
