// Who may touch which bytes from the host CPU (emulation.md §4; behavior.md §8 and the decisions
// table; clients.md A3, A8). Every dereference that may fault runs in a forked child; the parent
// only makes API calls and checks bytes through aclrtMemcpy.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/test_env.h"
#include "api/test_util.h"

namespace {

using namespace aclvmm_test;

constexpr size_t kN = 64 * 1024;

aclError set_host(void* va, size_t size, int flags) { return set1(va, size, flags, host()); }

// The CPU reads `want.size()` bytes at p in a child: exit 0 when they equal `want`, 1 otherwise.
ChildResult cpu_read(const void* p, const std::string& want) {
  return run_cpu_access([&] { return std::memcmp(p, want.data(), want.size()) == 0 ? 0 : 1; });
}
// The CPU writes `data` at p in a child (MAP_SHARED memory: the parent sees the bytes).
ChildResult cpu_write(void* p, const std::string& data) {
  return run_cpu_access([&] {
    volatile char* v = static_cast<volatile char*>(p);
    for (size_t i = 0; i < data.size(); ++i) v[i] = data[i];
    return 0;
  });
}

// The 2 MiB device-0 mapping of MappedTest; its first kN bytes hold `bytes_` (written by H2D).
class AccessCpuTest : public MappedTest {
 protected:
  void SetUp() override {
    MappedTest::SetUp();
    if (HasFatalFailure()) return;
    bytes_ = pattern(kN, 11);
    ASSERT_EQ(put(va_, bytes_), kOk);
  }
  std::string bytes_;
};

using AccessCpuOpenTest = AclTest;
using AccessCpuHostMemoryTest = AclTest;

// emulation.md §4: device memory is not CPU-accessible; reads and writes anywhere in a plain
// mapping fault, and a faulting write changes nothing.
TEST_F(AccessCpuTest, PlainDeviceMappingFaults) {
  struct Row {
    const char* name;
    size_t offset;
    bool write;
  };
  const Row rows[] = {
      {"read at the base", 0, false},          {"read of the last byte", k2M - 1, false},
      {"read in the middle", kMiB + 5, false}, {"write at the base", 0, true},
      {"write of the last byte", k2M - 1, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    void* p = at(va_, r.offset);
    EXPECT_CHILD_FAULT(r.write ? cpu_write(p, "x") : cpu_read(p, "x"));
  }
  EXPECT_EQ(get(va_, kN), bytes_);
  // Device 0 still owns it (the fault is the CPU's, not a change of rights).
  uint64_t flags = 0;
  aclrtMemLocation l = host();
  EXPECT_EQ(aclrtMemGetAccess(va_, &l, &flags), kOk);
  EXPECT_EQ(flags, 0u);
}

// §8 / decisions table: HOST READWRITE makes the mapping CPU read/write (coherent with device
// copies both ways); HOST READ allows reads and faults writes; NONE revokes; a later grant opens
// it again.
TEST_F(AccessCpuTest, HostGrantsDecideCpuAccess) {
  struct Step {
    const char* name;
    int flags;
    bool read_ok, write_ok;
  };
  const Step steps[] = {
      {"HOST READWRITE", kRW, true, true},
      {"downgrade to HOST READ", kRead, true, false},
      {"revoke HOST", kNone, false, false},
      {"HOST READ after revoke", kRead, true, false},
      {"HOST READWRITE again", kRW, true, true},
  };
  unsigned seed = 30;
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    ASSERT_EQ(set_host(va_, k2M, s.flags), kOk);
    // What device 0 wrote is what the CPU reads.
    if (s.read_ok) {
      EXPECT_CHILD_OK(cpu_read(va_, bytes_));
      EXPECT_CHILD_OK(cpu_read(at(va_, k2M - 1), std::string(1, '\0')));
    } else {
      EXPECT_CHILD_FAULT(cpu_read(va_, bytes_));
    }
    // What the CPU writes is what device 0 reads back.
    const std::string next = pattern(kN, ++seed);
    if (s.write_ok) {
      EXPECT_CHILD_OK(cpu_write(va_, next));
      bytes_ = next;
    } else {
      EXPECT_CHILD_FAULT(cpu_write(va_, next));
    }
    EXPECT_EQ(get(va_, kN), bytes_);
    // And device writes stay visible to the CPU.
    const std::string dev_bytes = pattern(kN, ++seed);
    ASSERT_EQ(put(va_, dev_bytes), kOk);
    bytes_ = dev_bytes;
    if (s.read_ok) EXPECT_CHILD_OK(cpu_read(va_, bytes_));
  }
}

// The HOST grant may come in a multi-descriptor call (24-byte stride) together with a device.
TEST_F(AccessCpuTest, HostGrantInsideSeveralDescriptors) {
  aclrtMemAccessDesc d[2] = {desc(kRW, dev(1)), desc(kRead, host())};
  ASSERT_EQ(aclrtMemSetAccess(va_, k2M, d, 2), kOk);
  EXPECT_CHILD_OK(cpu_read(va_, bytes_));
  EXPECT_CHILD_FAULT(cpu_write(va_, "y"));
}

// A HOST grant belongs to its mapping: after unmap the VA faults, and a new mapping at the same
// VA is device-only again.
TEST_F(AccessCpuTest, UnmapEndsCpuAccess) {
  ASSERT_EQ(set_host(va_, k2M, kRW), kOk);
  EXPECT_CHILD_OK(cpu_read(va_, bytes_));
  ASSERT_EQ(aclrtUnmapMem(va_), kOk);
  EXPECT_CHILD_FAULT(cpu_read(va_, bytes_));
  ASSERT_EQ(aclrtMapMem(va_, k2M, 0, h_, 0), kOk);
  EXPECT_CHILD_FAULT(cpu_read(va_, bytes_));
  EXPECT_EQ(get(va_, kN), bytes_);  // same physical memory, same bytes
}

// emulation.md §4: aclrtMalloc memory is device memory too.
TEST_F(AccessCpuTest, MallocMemoryFaults) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, kN, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  ASSERT_EQ(put(p, bytes_), kOk);
  EXPECT_CHILD_FAULT(cpu_read(p, bytes_));
  EXPECT_CHILD_FAULT(cpu_write(p, "z"));
  EXPECT_EQ(get(p, kN), bytes_);
  EXPECT_EQ(aclrtFree(p), kOk);
}

// emulation.md §4: aclrtMallocHost memory is CPU-accessible and the same bytes copies see.
TEST_F(AccessCpuHostMemoryTest, MallocHostIsCpuAccessible) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMallocHost(&p, kN), kOk);
  const std::string in = pattern(kN, 12);
  EXPECT_CHILD_OK(cpu_write(p, in));
  EXPECT_EQ(get(p, kN), in);
  const std::string next = pattern(kN, 13);
  ASSERT_EQ(put(p, next), kOk);
  EXPECT_CHILD_OK(cpu_read(p, next));
  EXPECT_EQ(aclrtFreeHost(p), kOk);
}

// A3: host physical memory mapped into a reservation is CPU-accessible right after MapMem, with
// the memAttrs clients use (torch_npu passes ACL_HBM_MEM_HUGE for host memory).
TEST_F(AccessCpuHostMemoryTest, HostPhysicalMemoryIsCpuAccessibleAfterMap) {
  const aclrtMemAttr attrs[] = {ACL_HBM_MEM_HUGE, ACL_MEM_HUGE, ACL_DDR_MEM_HUGE, ACL_MEM_NORMAL};
  unsigned seed = 40;
  for (aclrtMemAttr attr : attrs) {
    SCOPED_TRACE("memAttr " + std::to_string(static_cast<int>(attr)));
    aclrtPhysicalMemProp prop = host_prop(attr);
    aclrtDrvMemHandle h = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h, k2M, &prop, 0), kOk);
    void* va = reserve(k2M);
    ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
    EXPECT_CHILD_OK(cpu_read(va, std::string(kN, '\0')));  // fresh memory reads as zeros
    const std::string in = pattern(kN, ++seed);
    EXPECT_CHILD_OK(cpu_write(at(va, k2M - kN), in));
    EXPECT_EQ(get(at(va, k2M - kN), kN), in);
    const std::string next = pattern(kN, ++seed);
    ASSERT_EQ(put(va, next), kOk);
    EXPECT_CHILD_OK(cpu_read(va, next));
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  }
}

// emulation.md §4 / §7: ACLVMM_HOST_ACCESS=open (read at aclInit) makes every device mapping
// CPU-accessible — VMM mappings and aclrtMalloc memory alike, coherent with device copies.
TEST_F(AccessCpuOpenTest, HostAccessOpenMakesDeviceMemoryCpuAccessible) {
  ScopedEnvRuntime env("ACLVMM_HOST_ACCESS", "open");
  ASSERT_TRUE(env.ok());
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, kN, ACL_MEM_MALLOC_HUGE_FIRST), kOk);
  unsigned seed = 50;
  for (void* mem : {va, p}) {
    SCOPED_TRACE(mem == va ? "VMM mapping" : "aclrtMalloc");
    const std::string in = pattern(kN, ++seed);
    ASSERT_EQ(put(mem, in), kOk);
    EXPECT_CHILD_OK(cpu_read(mem, in));
    const std::string next = pattern(kN, ++seed);
    EXPECT_CHILD_OK(cpu_write(mem, next));
    EXPECT_EQ(get(mem, kN), next);
  }
  EXPECT_EQ(aclrtFree(p), kOk);
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// The default (strict) is back once the variable is gone: the runtime re-reads it at aclInit.
TEST_F(AccessCpuOpenTest, StrictIsTheDefaultAgainAfterRestart) {
  { ScopedEnvRuntime env("ACLVMM_HOST_ACCESS", "open"); ASSERT_TRUE(env.ok()); }
  void* va = reserve(k2M);
  aclrtDrvMemHandle h = make_handle();
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_CHILD_FAULT(cpu_read(va, std::string(1, '\0')));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

}  // namespace
