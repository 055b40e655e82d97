// 1 GiB pages on the families that have them (behavior.md §1, §3, §5; products.md): sizes round
// up to whole GiBs, the granularity is 1 GiB, mappings and their reservations follow 1 GiB
// alignment, and the backing stays sparse. products_test.cpp covers which attribute each family
// accepts; this file covers what a 1 GiB handle then does.
#include <dirent.h>
#include <sys/stat.h>

#include <cstring>
#include <vector>

#include "api/test_env.h"
#include "integration/int_util.h"

namespace {

using namespace aclvmm_itest;

struct Soc {
  const char* soc;
  const char* family;
  bool expect_ptr;  // products.md: expectPtr must be NULL on 950
};
const Soc kSocs[] = {{"Ascend910B1", "A2", true}, {"Ascend910_9391", "A3", true},
                     {"Ascend950PR_9599", "950", false}};
void PrintTo(const Soc& s, std::ostream* os) { *os << s.soc; }

// Bytes the kernel has allocated for each of this process's physical-memory files of exactly
// `size` bytes (emulation.md §2: one memfd per allocation). Resident-set figures cannot show
// this for device memory, which has no CPU mapping.
std::vector<uint64_t> allocated_bytes_of_memfds(uint64_t size) {
  std::vector<uint64_t> out;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    const std::string fd_path = std::string("/proc/self/fd/") + e->d_name;
    char target[256] = {};
    if (readlink(fd_path.c_str(), target, sizeof target - 1) <= 0) continue;
    if (std::strncmp(target, "/memfd:aclvmm-phys", 18) != 0) continue;
    struct stat st {};
    if (stat(fd_path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == size) {
      out.push_back(static_cast<uint64_t>(st.st_blocks) * 512);
    }
  }
  closedir(dir);
  return out;
}

class Huge1G : public ::testing::TestWithParam<Soc> {
 protected:
  void SetUp() override {
    ASSERT_EQ(soc_.set(GetParam().soc), 0);
    ASSERT_EQ(aclInit(nullptr), kOk);
    ASSERT_EQ(aclrtSetDevice(0), kOk);
  }
  void TearDown() override {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
    soc_.restore();
  }
  // ACL_HBM_MEM_HUGE1G: the 1 GiB attribute all three families accept on a device.
  static aclrtDrvMemHandle giant(size_t size = kGiB) { return make_handle(size, 0, ACL_HBM_MEM_HUGE1G); }

 private:
  ScopedEnv soc_{"ACLVMM_SOC"};
};

// §1 driver: "for 1G pages rounded up to 1 GiB", charged whole; the handle reports its attribute.
TEST_P(Huge1G, SizesRoundUpToWholeGiBs) {
  const struct {
    size_t size;
    size_t charged;
  } cases[] = {{1, kGiB}, {3 * kMiB, kGiB}, {kGiB - 1, kGiB}, {kGiB, kGiB}, {kGiB + 1, 2 * kGiB}};
  const size_t free0 = hbm_free();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.size);
    aclrtDrvMemHandle h = giant(c.size);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(free0 - hbm_free(), c.charged);
    aclrtPhysicalMemProp prop{};
    ASSERT_EQ(aclrtMemGetAllocationPropertiesFromHandle(h, &prop), kOk);
    EXPECT_EQ(prop.memAttr, ACL_HBM_MEM_HUGE1G);
    // The whole rounded size can be mapped: the last page of the last GiB exists.
    void* va = reserve(c.charged);
    ASSERT_EQ(aclrtMapMem(va, c.charged, 0, h, 0), kOk);
    const std::string tail = pattern(4096, 21);
    h2d(at(va, c.charged - 4096), tail);
    EXPECT_EQ(get(at(va, c.charged - 4096), 4096), tail);
    EXPECT_EQ(aclrtUnmapMem(va), kOk);
    EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
    EXPECT_EQ(aclrtFreePhysical(h), kOk);
    EXPECT_EQ(hbm_free(), free0);
  }
}

// §5: 1 GiB for every *_HUGE1G attribute and both options, without a support check; 2 MiB else.
TEST_P(Huge1G, GranularityIsOneGiB) {
  struct Case {
    const char* name;
    aclrtPhysicalMemProp prop;
    size_t expected;
  } cases[] = {
      {"device ACL_HBM_MEM_HUGE1G", device_prop(0, ACL_HBM_MEM_HUGE1G), kGiB},
      {"device ACL_MEM_HUGE1G", device_prop(0, ACL_MEM_HUGE1G), kGiB},
      {"device ACL_MEM_P2P_HUGE1G", device_prop(0, ACL_MEM_P2P_HUGE1G), kGiB},
      {"host ACL_MEM_P2P_HUGE1G", host_prop(ACL_MEM_P2P_HUGE1G), kGiB},
      {"device ACL_HBM_MEM_HUGE", device_prop(0, ACL_HBM_MEM_HUGE), k2M},
      {"host ACL_DDR_MEM_HUGE", host_prop(ACL_DDR_MEM_HUGE), k2M},
  };
  for (Case& c : cases) {
    for (aclrtMemGranularityOptions opt :
         {ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED}) {
      SCOPED_TRACE(std::string(c.name) + " option " + std::to_string(opt));
      size_t g = 0;
      ASSERT_EQ(aclrtMemGetAllocationGranularity(&c.prop, opt, &g), kOk);
      EXPECT_EQ(g, c.expected);
    }
  }
}

// §2: reservations larger than 512 MiB take whole, 1 GiB-aligned heaps; a fixed address for one
// must be 1 GiB-aligned (107000), where the family takes fixed addresses at all.
TEST_P(Huge1G, ReservationsTakeWholeGiBs) {
  void* a = reserve(512 * kMiB + k2M);
  void* b = reserve(512 * kMiB + k2M);
  void* c = reserve(3 * kGiB);
  for (void* va : {a, b, c}) EXPECT_EQ(u64(va) % kGiB, 0u) << va;
  // Neither 513 MiB reservation shares its GiB with the other.
  EXPECT_TRUE(u64(a) + kGiB <= u64(b) || u64(b) + kGiB <= u64(a)) << a << " " << b;
  // The heap is a whole GiB, but only the 514 MiB asked for may be mapped: no 1 GiB page fits.
  aclrtDrvMemHandle h = giant();
  EXPECT_EQ(aclrtMapMem(a, kGiB, 0, h, 0), kDrv);
  ASSERT_EQ(aclrtMapMem(c, kGiB, 0, h, 0), kOk);
  EXPECT_EQ(aclrtUnmapMem(c), kOk);
  for (void* va : {a, b, c}) EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);

  void* fixed = nullptr;
  const aclError misaligned = GetParam().expect_ptr ? kRtParam : kNotSupported;
  EXPECT_EQ(aclrtReserveMemAddress(&fixed, kGiB, 0, at(c, k2M), 0), misaligned);
  EXPECT_EQ(fixed, nullptr);
  if (GetParam().expect_ptr) {
    ASSERT_EQ(aclrtReserveMemAddress(&fixed, kGiB, 0, c, 0), kOk);
    EXPECT_EQ(fixed, c);
    EXPECT_EQ(aclrtReleaseMemAddress(fixed), kOk);
  }
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

// §3 with 1 GiB pages: address and size in whole pages (507899 otherwise, as for 2 MiB), a size
// above the handle → 207001, a smaller one maps the first pages. Failures keep no reference.
TEST_P(Huge1G, MappingsNeedGiBAlignment) {
  aclrtDrvMemHandle one = giant(kGiB);
  aclrtDrvMemHandle two = giant(kGiB + 1);  // two pages
  void* va = reserve(4 * kGiB);
  ASSERT_EQ(u64(va) % kGiB, 0u);
  const LiveCounts live = live_counts();
  struct Case {
    const char* name;
    size_t offset, size;
    aclrtDrvMemHandle h;
    aclError expected;
  } cases[] = {
      {"address 2 MiB into a GiB", k2M, kGiB, one, kDrv},
      {"address 512 MiB into a GiB", 512 * kMiB, kGiB, one, kDrv},
      {"size 2 MiB", 0, k2M, one, kDrv},
      {"size 1 GiB + 2 MiB", 0, kGiB + k2M, two, kDrv},
      {"size 2 GiB of a 1 GiB handle", 0, 2 * kGiB, one, kNoMemory},
      {"size 3 GiB of a 2 GiB handle", 0, 3 * kGiB, two, kNoMemory},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(aclrtMapMem(at(va, c.offset), c.size, 0, c.h, 0), c.expected);
    EXPECT_EQ(aclrtMemMapNoAccess(at(va, c.offset), c.size, 0, c.h, 0), c.expected);
    EXPECT_EQ(live_counts(), live);
  }
  // The first page of the two-page handle at an inner GiB, the one-page handle after it, and a
  // 2 MiB handle at 2 MiB granularity in the first GiB of the same reservation.
  ASSERT_EQ(aclrtMapMem(at(va, kGiB), kGiB, 0, two, 0), kOk);
  ASSERT_EQ(aclrtMapMem(at(va, 2 * kGiB), kGiB, 0, one, 0), kOk);
  aclrtDrvMemHandle small = make_handle(k2M);
  ASSERT_EQ(aclrtMapMem(at(va, 4 * kMiB), k2M, 0, small, 0), kOk);
  void* base = nullptr;
  size_t size = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(at(va, kGiB + 12345), &base, &size), kOk);
  EXPECT_EQ(base, at(va, kGiB));
  EXPECT_EQ(size, kGiB);
  // One copy across the boundary of the two 1 GiB mappings.
  const std::string bytes = pattern(8192, 22);
  h2d(at(va, 2 * kGiB - 4096), bytes);
  EXPECT_EQ(get(at(va, 2 * kGiB - 4096), bytes.size()), bytes);
  aclrtPtrAttributes attr{};
  ASSERT_EQ(aclrtPointerGetAttributes(at(va, kGiB), &attr), kOk);
  EXPECT_EQ(attr.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
  for (size_t off : {kGiB, 2 * kGiB, 4 * kMiB}) EXPECT_EQ(aclrtUnmapMem(at(va, off)), kOk);
  for (aclrtDrvMemHandle h : {one, two, small}) EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(live_count("physical_handles"), 0);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
}

// emulation.md §2: backing is lazy. A 1 GiB handle is charged 1 GiB of capacity but costs
// resident memory only for the pages written, on the device and on the host (CPU-mapped) side.
TEST_P(Huge1G, UntouchedPagesCostNoResidentMemory) {
  constexpr size_t kSlack = 64 * kMiB;  // far below the 1 GiB a dense backing would cost
  const size_t rss0 = rss_status();
  ASSERT_GT(rss0, 0u);
  const long long used0 = device_used(stats(), 0);
  aclrtDrvMemHandle d = giant();
  void* dva = reserve(kGiB);
  ASSERT_EQ(aclrtMapMem(dva, kGiB, 0, d, 0), kOk);
  EXPECT_EQ(device_used(stats(), 0) - used0, static_cast<long long>(kGiB));
  const std::string bytes = pattern(4096, 23);
  h2d(at(dva, kGiB / 2), bytes);
  EXPECT_EQ(get(at(dva, kGiB / 2), 4096), bytes);

  aclrtPhysicalMemProp hp = host_prop(ACL_MEM_P2P_HUGE1G);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, kGiB, &hp, 0), kOk);
  void* hva = reserve(kGiB);
  ASSERT_EQ(aclrtMapMem(hva, kGiB, 0, h, 0), kOk);
  char* cpu = static_cast<char*>(hva);
  cpu[kGiB - 1] = 0x5a;  // the CPU writes one byte of the last page
  EXPECT_EQ(get(at(hva, kGiB - 1), 1), std::string(1, '\x5a'));
  EXPECT_EQ(cpu[0], 0);  // fresh memory reads as zeros
  EXPECT_LT(rss_status(), rss0 + kSlack) << "RSS grew from " << rss0 << " to " << rss_status();
  const std::vector<uint64_t> backing = allocated_bytes_of_memfds(kGiB);
  EXPECT_EQ(backing.size(), 2u) << "one memory file per 1 GiB handle";
  for (uint64_t bytes : backing) EXPECT_LT(bytes, kSlack) << "allocated bytes of a 1 GiB handle";

  EXPECT_EQ(aclrtUnmapMem(hva), kOk);
  EXPECT_EQ(aclrtUnmapMem(dva), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtFreePhysical(d), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(hva), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(dva), kOk);
  EXPECT_EQ(device_used(stats(), 0), used0);
}

INSTANTIATE_TEST_SUITE_P(Families, Huge1G, ::testing::ValuesIn(kSocs),
                         [](const ::testing::TestParamInfo<Soc>& info) {
                           return std::string(info.param.family) == "950" ? std::string("F950")
                                                                          : std::string(info.param.family);
                         });

}  // namespace
