// Client patterns A1-A10 of clients.md: what real applications do with the VMM API, reproduced
// call for call, with the bytes and codes they rely on.
#include <csignal>
#include <set>

#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;
using Clients = AclTest;

size_t granularity(aclrtMemAttr attr, aclrtMemGranularityOptions opt,
                   aclrtMemLocationType type = ACL_MEM_LOCATION_TYPE_DEVICE) {
  aclrtPhysicalMemProp p = device_prop(0, attr);
  p.location.type = type;
  size_t g = 0;
  EXPECT_EQ(aclrtMemGetAllocationGranularity(&p, opt, &g), ACL_SUCCESS);
  return g;
}

TEST_F(Clients, A1_GranularityExactly2MiBAnd1GiB) {
  for (auto opt : {ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED}) {
    SCOPED_TRACE(static_cast<int>(opt));
    EXPECT_EQ(granularity(ACL_HBM_MEM_HUGE, opt), 2 * kMiB);     // Famem: == 2 MiB
    EXPECT_EQ(granularity(ACL_HBM_MEM_HUGE1G, opt), kGiB);       // torch_npu page_size:1g
    EXPECT_EQ(granularity(ACL_HBM_MEM_NORMAL, opt), 2 * kMiB);   // vendor samples
    EXPECT_EQ(granularity(ACL_MEM_HUGE, opt), 2 * kMiB);
  }
  // fork camem: a 1-byte request becomes 2 MiB -- and costs exactly 2 MiB of device memory.
  const size_t g = granularity(ACL_HBM_MEM_HUGE, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM);
  EXPECT_EQ(round_up(1, g), 2 * kMiB);

  // Vendor sample: NORMAL attribute, handle of align(4096, granularity), map `granularity` bytes.
  const size_t gn = granularity(ACL_HBM_MEM_NORMAL, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM);
  ASSERT_GE(gn, 4096u);
  const size_t hsize = round_up(4096, gn);
  EXPECT_EQ(hsize, 2 * kMiB);
  const MemInfo before = mem_info();
  aclrtPhysicalMemProp prop = device_prop(0, ACL_HBM_MEM_NORMAL);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, hsize, &prop, 0), ACL_SUCCESS);
  EXPECT_EQ(before.free - mem_info().free, hsize);
  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, gn, 0, nullptr, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMapMem(va, gn, 0, h, 0), ACL_SUCCESS);
  const std::string bytes = pattern(gn, 1);
  h2d(va, bytes);
  EXPECT_EQ(get(va, gn), bytes);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  EXPECT_EQ(mem_info().free, before.free);
}

TEST_F(Clients, A2_UnalignedSizesRoundedAndTorchNpuProbe) {
  // torch_memory_saver: the caller's size goes straight to Reserve / MallocPhysical / MapMem.
  const size_t size = 3 * kMiB + 123;
  const MemInfo before = mem_info();
  void* va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, size, 0, nullptr, 0), ACL_SUCCESS);
  aclrtPhysicalMemProp prop = device_prop();
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, size, &prop, 0), ACL_SUCCESS);  // rounded up (behavior.md §1)
  EXPECT_EQ(before.free - mem_info().free, 4 * kMiB);
  EXPECT_EQ(aclrtMapMem(va, size, 0, h, 0), kDrv);  // map sizes must be aligned (§3)
  EXPECT_EQ(live_count("mappings"), 0);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), ACL_SUCCESS);  // the rounded sizes fit exactly
  const std::string bytes = pattern(size, 2);
  h2d(va, bytes);
  EXPECT_EQ(get(va, size), bytes);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);

  // torch_npu feature probe: 512 bytes with flags=1 must succeed (it throws otherwise); it
  // reserves one 2 MiB granule.
  void* probe = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&probe, 512, 0, nullptr, 1), ACL_SUCCESS);
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(u64(probe) % (2 * kMiB), 0u);
  aclrtDrvMemHandle h2 = make_handle(4 * kMiB);
  EXPECT_EQ(aclrtMapMem(probe, 4 * kMiB, 0, h2, 0), kDrv);  // only 2 MiB were reserved
  EXPECT_EQ(aclrtMapMem(probe, 2 * kMiB, 0, h2, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtUnmapMem(probe), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h2), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(probe), ACL_SUCCESS);

  // torch_npu large pool: 20 MiB handles mapped back to back in an expandable segment; a tensor
  // may straddle two handles.
  const size_t seg = 20 * kMiB;
  void* pool = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&pool, 10 * seg, 0, nullptr, 1), ACL_SUCCESS);
  std::vector<aclrtDrvMemHandle> hs(3);
  for (size_t i = 0; i < hs.size(); ++i) {
    hs[i] = make_handle(seg);
    ASSERT_EQ(aclrtMapMem(at(pool, i * seg), seg, 0, hs[i], 0), ACL_SUCCESS);
  }
  EXPECT_EQ(before.free - mem_info().free, 3 * seg);
  const std::string tensor = pattern(seg + 4 * kMiB, 3);  // crosses handle 0 -> 1
  h2d(at(pool, seg - 2 * kMiB), tensor);
  EXPECT_EQ(get(at(pool, seg - 2 * kMiB), tensor.size()), tensor);
  void* base = nullptr;
  size_t rsize = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(at(pool, seg + 5), &base, &rsize), ACL_SUCCESS);
  EXPECT_EQ(base, at(pool, seg));
  EXPECT_EQ(rsize, seg);
  for (size_t i = 0; i < hs.size(); ++i) {
    EXPECT_EQ(aclrtUnmapMem(at(pool, i * seg)), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(hs[i]), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtReleaseMemAddress(pool), ACL_SUCCESS);
  EXPECT_EQ(mem_info().free, before.free);
}

TEST_F(Clients, A3_HostPhysicalMemoryDereferencedByCpu) {
  struct Case {
    const char* name;
    aclrtMemLocationType type;
    aclrtMemAttr attr;
  } cases[] = {
      {"torch_npu pinned: HOST + ACL_HBM_MEM_HUGE", ACL_MEM_LOCATION_TYPE_HOST, ACL_HBM_MEM_HUGE},
      {"acltest: HOST_NUMA node 0 + ACL_DDR_MEM_HUGE", ACL_MEM_LOCATION_TYPE_HOST_NUMA, ACL_DDR_MEM_HUGE},
  };
  const size_t size = 4 * kMiB;  // the suite assumes 2 MiB granularity without asking
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtPhysicalMemProp prop = host_prop(c.attr);
    prop.location.type = c.type;
    prop.location.id = 0;
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h, size, &prop, 0), ACL_SUCCESS);
    void* va = reserve(size);
    ASSERT_EQ(aclrtMapMem(va, size, 0, h, 0), ACL_SUCCESS);
    // The CPU uses the mapping directly; fresh memory reads zeros.
    volatile unsigned char* p = static_cast<unsigned char*>(va);
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[size - 1], 0);
    const std::string bytes = pattern(size, 4);
    std::memcpy(va, bytes.data(), size);
    EXPECT_EQ(std::memcmp(va, bytes.data(), size), 0);
    // Runtime copies see the same bytes.
    EXPECT_EQ(get(va, size), bytes);
    aclrtPtrAttributes attr{};
    ASSERT_EQ(aclrtPointerGetAttributes(at(va, 12345), &attr), ACL_SUCCESS);
    EXPECT_EQ(attr.location.type, ACL_MEM_LOCATION_TYPE_HOST);  // behavior.md §9
    EXPECT_EQ(attr.location.id, 0u);
    EXPECT_EQ(attr.pageSize, static_cast<uint32_t>(sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  }
  // HOST_NUMA needs a current context (behavior.md §1: 107002).
  ASSERT_EQ(aclrtResetDeviceForce(0), ACL_SUCCESS);
  aclrtPhysicalMemProp numa = host_prop(ACL_DDR_MEM_HUGE);
  numa.location.type = ACL_MEM_LOCATION_TYPE_HOST_NUMA;
  aclrtDrvMemHandle h = nullptr;
  EXPECT_EQ(aclrtMallocPhysical(&h, size, &numa, 0), ACL_ERROR_RT_CONTEXT_NULL);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
}

TEST_F(Clients, A4_ReserveWithFlagsOne) {
  // behavior.md §2: flags 0 and 1 accepted, anything else 100000; alignment is always 0.
  struct Case {
    const char* name;
    size_t size;
    uint64_t flags;
    aclError expected;
  } cases[] = {
      {"ggml 512 MiB flags=1", 512 * kMiB, 1, ACL_SUCCESS},
      {"Famem 2 GiB flags=1", 2 * kGiB, 1, ACL_SUCCESS},
      {"Mooncake 2 MiB flags=1", 2 * kMiB, 1, ACL_SUCCESS},
      {"docs flags=0", 64 * kMiB, 0, ACL_SUCCESS},
      {"flags=2", 64 * kMiB, 2, ACL_ERROR_INVALID_PARAM},
      {"flags=3", 64 * kMiB, 3, ACL_ERROR_INVALID_PARAM},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    void* va = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&va, c.size, 0, nullptr, c.flags), c.expected);
    if (c.expected != ACL_SUCCESS) {
      EXPECT_EQ(va, nullptr);
      continue;
    }
    aclrtDrvMemHandle h = make_handle(2 * kMiB);
    void* last = at(va, c.size - 2 * kMiB);
    ASSERT_EQ(aclrtMapMem(last, 2 * kMiB, 0, h, 0), ACL_SUCCESS);
    const std::string bytes = pattern(4096, 5);
    h2d(last, bytes);
    EXPECT_EQ(get(last, bytes.size()), bytes);
    EXPECT_EQ(aclrtUnmapMem(last), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  }
  EXPECT_EQ(live_count("reservations"), 0);
}

TEST_F(Clients, A5_VeryLargeReservationsAreCheap) {
  const MemInfo before = mem_info();
  ASSERT_EQ(before.total, 64 * kGiB);
  const size_t rss0 = rss_statm();
  ASSERT_GT(rss0, 0u);
  // torch_npu: 1.125 x total HBM per expandable segment, several per process; ggml: all free HBM.
  std::vector<void*> vas;
  const size_t seg = before.total / 8 * 9;
  for (int i = 0; i < 4; ++i) {
    void* va = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&va, seg, 0, nullptr, 1), ACL_SUCCESS) << i;
    vas.push_back(va);
  }
  void* all_free = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&all_free, before.free, 0, nullptr, 1), ACL_SUCCESS);
  vas.push_back(all_free);
  const size_t rss1 = rss_statm();
  EXPECT_LT(rss1 - std::min(rss1, rss0), 4 * kMiB) << "reservations must not be backed";
  EXPECT_EQ(mem_info().free, before.free);
  EXPECT_EQ(live_count("reservations"), 5);
  std::set<uint64_t> bases;
  for (void* va : vas) bases.insert(u64(va));
  EXPECT_EQ(bases.size(), vas.size());
  // The far end of a huge reservation is usable.
  aclrtDrvMemHandle h = make_handle();
  void* end = at(vas[3], seg - 2 * kMiB);
  ASSERT_EQ(aclrtMapMem(end, 2 * kMiB, 0, h, 0), ACL_SUCCESS);
  const std::string bytes = pattern(8192, 6);
  h2d(end, bytes);
  EXPECT_EQ(get(end, bytes.size()), bytes);
  EXPECT_EQ(aclrtUnmapMem(end), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  for (void* va : vas) EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  EXPECT_EQ(live_count("reservations"), 0);
}

TEST_F(Clients, A6_ExpectPtrHonouredAndContiguous) {
  // shmem: reserve ranks x heap to find room, release, then re-reserve each PE's heap at
  // prev_end with expectPtr and expect contiguous reservations.
  const size_t heap = 2 * kGiB;
  const int ranks = 4;
  void* probe = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&probe, ranks * heap, 0, nullptr, 1), ACL_SUCCESS);
  ASSERT_EQ(aclrtReleaseMemAddress(probe), ACL_SUCCESS);
  std::vector<void*> pes;
  void* prev_end = probe;
  for (int pe = 0; pe < ranks; ++pe) {
    SCOPED_TRACE(pe);
    void* va = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&va, heap, 0, prev_end, 1), ACL_SUCCESS);
    EXPECT_EQ(va, prev_end);
    pes.push_back(va);
    prev_end = at(va, heap);
  }
  // Taken addresses cannot be reserved again (behavior.md §2: occupied → 507899).
  void* dup = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&dup, heap, 0, pes[1], 1), kDrv);
  // A release then a re-reserve at the same address gives it back.
  ASSERT_EQ(aclrtReleaseMemAddress(pes[2]), ACL_SUCCESS);
  void* again = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&again, heap, 0, pes[2], 1), ACL_SUCCESS);
  EXPECT_EQ(again, pes[2]);
  // The contiguous heaps act as one symmetric window: map one handle per PE and copy across.
  std::vector<aclrtDrvMemHandle> hs;
  for (void* va : pes) {
    hs.push_back(make_handle());
    ASSERT_EQ(aclrtMapMem(at(va, heap - 2 * kMiB), 2 * kMiB, 0, hs.back(), 0), ACL_SUCCESS);
  }
  const std::string bytes = pattern(2 * kMiB, 7);
  h2d(at(pes[0], heap - 2 * kMiB), bytes);
  ASSERT_EQ(aclrtMemcpy(at(pes[3], heap - 2 * kMiB), 2 * kMiB, at(pes[0], heap - 2 * kMiB), 2 * kMiB,
                        ACL_MEMCPY_DEVICE_TO_DEVICE),
            ACL_SUCCESS);
  EXPECT_EQ(get(at(pes[3], heap - 2 * kMiB), 2 * kMiB), bytes);
  for (size_t i = 0; i < pes.size(); ++i) {
    EXPECT_EQ(aclrtUnmapMem(at(pes[i], heap - 2 * kMiB)), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(hs[i]), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(pes[i]), ACL_SUCCESS);
  }
  // Mooncake/HIXL probe the no-UC reservation at 78 TB: on the default A2 product the feature is
  // off (products.md: A3 only) → 207000, which they treat as "absent".
  void* nouc = nullptr;
  EXPECT_EQ(aclrtReserveMemAddressNoUCMemory(&nouc, kGiB, 0, reinterpret_cast<void*>(78ull << 40), 0),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
}

TEST_F(Clients, A7_BackToBackHandlesAtInnerOffsets) {
  const size_t total = 4 * kGiB;
  void* rsv = reserve(total);
  ASSERT_NE(rsv, nullptr);
  // Famem: a 1 GiB handle at a 1 GiB-aligned inner address, not the reservation start.
  aclrtPhysicalMemProp p1g = device_prop(0, ACL_HBM_MEM_HUGE1G);
  aclrtDrvMemHandle big = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&big, kGiB, &p1g, 0), ACL_SUCCESS);
  void* famem = at(rsv, kGiB);
  ASSERT_EQ(u64(famem) % kGiB, 0u);
  ASSERT_EQ(aclrtMapMem(famem, kGiB, 0, big, 0), ACL_SUCCESS);
  // xLLM: one 2 MiB handle per page right after it; ggml: a 6 MiB chunk after those.
  struct Piece {
    void* va;
    size_t size;
    aclrtDrvMemHandle h;
  };
  std::vector<Piece> pieces;
  size_t off = 2 * kGiB;
  for (int i = 0; i < 8; ++i, off += 2 * kMiB) pieces.push_back({at(rsv, off), 2 * kMiB, make_handle()});
  pieces.push_back({at(rsv, off), 6 * kMiB, make_handle(6 * kMiB)});
  for (const Piece& pc : pieces) ASSERT_EQ(aclrtMapMem(pc.va, pc.size, 0, pc.h, 0), ACL_SUCCESS);
  EXPECT_EQ(live_count("mappings"), 10);

  // One copy across all the back-to-back mappings (the tail of the 1 GiB one included); one that
  // runs past the last mapping into unmapped space fails (507899, behavior.md "deliberately
  // differs": range not fully mapped).
  const size_t span = 2 * kMiB + 22 * kMiB;
  void* start = at(famem, kGiB - 2 * kMiB);
  const std::string bytes = pattern(span, 8);
  h2d(start, bytes);
  EXPECT_EQ(get(start, span), bytes);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(get(pieces[i].va, 64), bytes.substr(2 * kMiB + i * 2 * kMiB, 64));
  }
  void* end = at(pieces.back().va, pieces.back().size);
  const std::string tail = pattern(4 * kMiB, 9);
  EXPECT_EQ(aclrtMemcpy(static_cast<char*>(end) - 2 * kMiB, tail.size(), tail.data(), tail.size(),
                        ACL_MEMCPY_HOST_TO_DEVICE),
            kDrv);

  // Releasing while mapped fails (507899); so does unmapping an interior address.
  EXPECT_EQ(aclrtReleaseMemAddress(rsv), kDrv);
  EXPECT_EQ(aclrtUnmapMem(at(famem, 2 * kMiB)), kDrv);
  // Unmap each at its own start, in an order that is not the mapping order.
  for (size_t i = pieces.size(); i-- > 0;) {
    EXPECT_EQ(aclrtUnmapMem(pieces[i].va), ACL_SUCCESS) << i;
    EXPECT_EQ(aclrtFreePhysical(pieces[i].h), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtUnmapMem(famem), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(big), ACL_SUCCESS);
  EXPECT_EQ(live_count("mappings"), 0);
  EXPECT_EQ(aclrtReleaseMemAddress(rsv), ACL_SUCCESS);  // with its original base
  EXPECT_EQ(live_count("reservations"), 0);
  EXPECT_EQ(live_count("physical_handles"), 0);
}

TEST_F(Clients, A7b_ReservationBaseAlignment) {
  // behavior.md "Also required": bases aligned to >= 2 MiB; reservations >= 1 GiB to 1 GiB.
  const size_t sizes[] = {512, 2 * kMiB, 3 * kMiB, 100 * kMiB, 512 * kMiB, 512 * kMiB + 2 * kMiB,
                          kGiB, 5 * kGiB + 1, 6 * kMiB};
  std::vector<void*> vas;
  for (int round = 0; round < 3; ++round) {
    for (size_t s : sizes) {
      SCOPED_TRACE(s);
      void* va = nullptr;
      ASSERT_EQ(aclrtReserveMemAddress(&va, s, 0, nullptr, round & 1), ACL_SUCCESS);
      EXPECT_EQ(u64(va) % (2 * kMiB), 0u);
      if (s >= kGiB) {
        EXPECT_EQ(u64(va) % kGiB, 0u);
      }
      vas.push_back(va);
    }
  }
  // ggml / camem map at base + k*segment straight away.
  void* va = vas[3];  // 100 MiB
  std::vector<aclrtDrvMemHandle> hs;
  for (int k = 0; k < 5; ++k) {
    hs.push_back(make_handle(20 * kMiB));
    ASSERT_EQ(aclrtMapMem(at(va, k * 20 * kMiB), 20 * kMiB, 0, hs.back(), 0), ACL_SUCCESS) << k;
  }
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(aclrtUnmapMem(at(va, k * 20 * kMiB)), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(hs[k]), ACL_SUCCESS);
  }
  for (void* v : vas) EXPECT_EQ(aclrtReleaseMemAddress(v), ACL_SUCCESS);
}

TEST_F(Clients, A8_DeviceMemoryUsableRightAfterMapWithoutSetAccess) {
  aclrtDrvMemHandle h = make_handle(4 * kMiB);
  void* va = reserve(4 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 4 * kMiB, 0, h, 0), ACL_SUCCESS);
  // No aclrtMemSetAccess: the owning device has READWRITE (behavior.md §3, §8).
  aclrtMemLocation loc{0, ACL_MEM_LOCATION_TYPE_DEVICE};
  uint64_t flags = 99;
  ASSERT_EQ(aclrtMemGetAccess(va, &loc, &flags), ACL_SUCCESS);
  EXPECT_EQ(flags, static_cast<uint64_t>(ACL_RT_MEM_ACCESS_FLAGS_READWRITE));
  const std::string bytes = pattern(4 * kMiB, 10);
  h2d(va, bytes);
  EXPECT_EQ(get(va, bytes.size()), bytes);
  ASSERT_EQ(aclrtMemset(at(va, kMiB), kMiB, 0x3c, kMiB), ACL_SUCCESS);
  EXPECT_TRUE(all_bytes(get(at(va, kMiB), kMiB), 0x3c));
  EXPECT_EQ(get(va, kMiB), bytes.substr(0, kMiB));
  // The host was granted nothing: a CPU dereference faults (emulation.md §4).
  EXPECT_CHILD_FAULT(run_cpu_access([&] {
    volatile unsigned char c = *static_cast<volatile unsigned char*>(va);
    return static_cast<int>(c) + 100;
  }));
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

TEST_F(Clients, A9_AllTeardownOrdersWork) {
  enum Order { kUnmapFreeRelease, kUnmapReleaseFree, kRetainUnmapFreeRelease };
  struct Case {
    const char* name;
    Order order;
  } cases[] = {
      {"camem/tms/torch_npu: unmap, free, release", kUnmapFreeRelease},
      {"Mooncake/dvm/vendor: unmap, release, free", kUnmapReleaseFree},
      {"HCCL sample: retain, unmap, free, release", kRetainUnmapFreeRelease},
  };
  const MemInfo before = mem_info();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    aclrtDrvMemHandle h = make_handle(8 * kMiB);
    void* va = reserve(8 * kMiB);
    ASSERT_EQ(aclrtMapMem(va, 8 * kMiB, 0, h, 0), ACL_SUCCESS);
    const std::string bytes = pattern(8 * kMiB, 11);
    h2d(va, bytes);
    switch (c.order) {
      case kUnmapFreeRelease:
        EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
        EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
        EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
        break;
      case kUnmapReleaseFree:
        EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
        EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
        EXPECT_EQ(mem_info().free, before.free - 8 * kMiB);  // the handle still holds it
        EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
        break;
      case kRetainUnmapFreeRelease: {
        aclrtDrvMemHandle r = nullptr;
        ASSERT_EQ(aclrtMemRetainAllocationHandle(va, &r), ACL_SUCCESS);
        EXPECT_EQ(r, h);  // behavior.md §6: the same handle value
        EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
        EXPECT_EQ(aclrtFreePhysical(r), ACL_SUCCESS);
        EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
        // Documented refcount (A15): the retain's free leaves the allocation's own reference.
        EXPECT_EQ(live_count("physical_handles"), 1);
        EXPECT_EQ(mem_info().free, before.free - 8 * kMiB);
        EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
        break;
      }
    }
    EXPECT_EQ(mem_info().free, before.free);
    EXPECT_EQ(live_count("physical_handles"), 0);
    EXPECT_EQ(live_count("mappings"), 0);
    EXPECT_EQ(live_count("reservations"), 0);
  }
  // Docs: FreePhysical on a still-mapped handle defers the release until the unmap; the bytes stay.
  aclrtDrvMemHandle h = make_handle(2 * kMiB);
  void* va = reserve(2 * kMiB);
  ASSERT_EQ(aclrtMapMem(va, 2 * kMiB, 0, h, 0), ACL_SUCCESS);
  const std::string bytes = pattern(2 * kMiB, 12);
  h2d(va, bytes);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(get(va, bytes.size()), bytes);
  EXPECT_EQ(mem_info().free, before.free - 2 * kMiB);
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(mem_info().free, before.free);
  EXPECT_EQ(live_count("physical_handles"), 0);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

TEST_F(Clients, A10_SleepModeNewHandleAtSameVaReadsZeros) {
  const size_t size = 64 * kMiB;
  void* va = reserve(size);
  const MemInfo before = mem_info();
  aclrtDrvMemHandle h = make_handle(size);
  ASSERT_EQ(aclrtMapMem(va, size, 0, h, 0), ACL_SUCCESS);
  for (int cycle = 0; cycle < 3; ++cycle) {
    SCOPED_TRACE(cycle);
    const std::string bytes = pattern(size, 20 + cycle);
    h2d(va, bytes);
    ASSERT_EQ(get(va, size), bytes);
    // Pause: physical freed, VA kept.
    ASSERT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    EXPECT_EQ(mem_info().free, before.free);  // tms asserts the drop after pause
    EXPECT_EQ(live_count("reservations"), 1);
    // Resume: a new handle at the same VA must not show the old bytes.
    h = make_handle(size);
    ASSERT_EQ(aclrtMapMem(va, size, 0, h, 0), ACL_SUCCESS);
    EXPECT_TRUE(all_bytes(get(va, size), '\0'));
  }
  EXPECT_EQ(aclrtUnmapMem(va), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

}  // namespace
