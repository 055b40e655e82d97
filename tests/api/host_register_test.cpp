// Host memory registration (runtime-extra.md §5): aclrtHostRegister[V2],
// aclrtHostGetDevicePointer, aclrtHostUnregister. The checks in order, what a registration gives
// (the registering device's kernels reach the pages; others and unregistered memory do not;
// pointer attributes say HOST), overlaps, and every way a registration ends.
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/stats_json_util.h"
#include "api/test_util.h"

namespace aclvmm_test {
namespace {

constexpr aclError kHostAlreadyRegistered = 507910;  // ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED
constexpr aclError kHostNotRegistered = 507911;      // ACL_ERROR_HOST_MEMORY_NOT_REGISTERED
constexpr size_t kHostRegPage = 4096;

// 64 KiB of page-aligned process memory (mmap), unmapped at the end.
class HostRegisterTest : public AclTest {
 protected:
  void SetUp() override {
    AclTest::SetUp();
    if (HasFatalFailure()) return;
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    host_ = static_cast<char*>(p);
    std::memset(host_, 0, kBytes);
  }
  void TearDown() override {
    if (host_) munmap(host_, kBytes);
    AclTest::TearDown();
  }
  static constexpr size_t kBytes = 64 * 1024;
  char* host_ = nullptr;
};

// What a kernel of the current device's default stream does with `bytes` at a host address:
// write them there, then read them back; the stream's code.
struct HostRegKernelArgs {
  char* at;
  char bytes[16];
  char back[16];
};
aclError host_reg_kernel_round_trip(aclrtStream stream, HostRegKernelArgs* args) {
  if (aclvmmLaunchKernel(
          stream,
          [](aclvmmKernelContext* ctx, void* raw) {
            auto* a = static_cast<HostRegKernelArgs*>(raw);
            if (aclvmmKernelWrite(ctx, a->at, a->bytes, sizeof a->bytes) != ACL_SUCCESS) return;
            (void)aclvmmKernelRead(ctx, a->back, a->at, sizeof a->back);
          },
          args) != kOk) {
    return -1;
  }
  return aclrtSynchronizeStream(stream);
}

aclrtPtrAttributes host_reg_attributes(const void* p) {
  aclrtPtrAttributes a{};
  EXPECT_EQ(aclrtPointerGetAttributes(p, &a), kOk);
  return a;
}

TEST_F(HostRegisterTest, RegisterGivesTheSameAddressAndTheDevicesKernelsReachThePages) {
  // Before: a kernel cannot reach process memory (a device sees device memory).
  HostRegKernelArgs args{host_ + 128, "registered", {}};
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kDrv);
  EXPECT_NE(recent_msg().find("not registered for that device"), std::string::npos);
  EXPECT_EQ(load_raw(host_reg_attributes(host_).location.type), ACL_MEM_LOCATION_TYPE_UNREGISTERED);

  void* device_address = nullptr;
  ASSERT_EQ(aclrtHostRegister(host_, kBytes, ACL_HOST_REGISTER_MAPPED, &device_address), kOk);
  EXPECT_EQ(device_address, host_);
  EXPECT_EQ(load_raw(host_reg_attributes(host_ + 100).location.type), ACL_MEM_LOCATION_TYPE_HOST);
  void* dp = nullptr;
  ASSERT_EQ(aclrtHostGetDevicePointer(host_ + 100, &dp, 0), kOk);
  EXPECT_EQ(dp, host_ + 100);

  // The kernel's write lands in the host pages and its read sees them.
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kOk);
  EXPECT_EQ(std::string(host_ + 128), "registered");
  EXPECT_EQ(std::string(args.back), "registered");
  // The CPU writes, the kernel reads.
  std::strcpy(host_ + 1024, "from the CPU");
  args.at = host_ + 1024;
  std::strcpy(args.bytes, "from the CPU");
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kOk);

  // Past the registration's end the kernel fails again.
  ASSERT_EQ(aclrtHostUnregister(host_), kOk);
  args.at = host_ + 128;
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kDrv);
  EXPECT_EQ(load_raw(host_reg_attributes(host_).location.type), ACL_MEM_LOCATION_TYPE_UNREGISTERED);
}

// A registration belongs to the current device: another device's kernels do not reach it, and
// the other device may register the same pages itself.
TEST_F(HostRegisterTest, RegistrationsArePerDevice) {
  void* dp = nullptr;
  ASSERT_EQ(aclrtHostRegister(host_, kBytes, ACL_HOST_REGISTER_MAPPED, &dp), kOk);
  ASSERT_EQ(aclrtSetDevice(1), kOk);
  HostRegKernelArgs args{host_, "device one", {}};
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kDrv);
  EXPECT_EQ(aclrtHostGetDevicePointer(host_, &dp, 0), kRtParam);
  EXPECT_EQ(aclrtHostUnregister(host_), kHostNotRegistered) << "device 0's, not device 1's";
  ASSERT_EQ(aclrtHostRegisterV2(host_, kBytes, ACL_HOST_REG_MAPPED), kOk);
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kOk);
  EXPECT_EQ(aclrtHostUnregister(host_), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtHostUnregister(host_), kOk);
  EXPECT_EQ(aclrtResetDevice(1), kOk);
}

// The range is whole 4 KiB pages: a size inside the last page registers all of it; a
// registration overlapping another of the same device is 507910, adjacent ones are fine and a
// kernel may span both.
TEST_F(HostRegisterTest, OverlapsAreRefusedAdjacentRegistrationsAreNot) {
  void* dp = nullptr;
  ASSERT_EQ(aclrtHostRegister(host_, 3 * kHostRegPage + 1, ACL_HOST_REGISTER_MAPPED, &dp), kOk);
  EXPECT_EQ(aclrtHostRegister(host_ + 3 * kHostRegPage, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp),
            kHostAlreadyRegistered)
      << "the first registration covers its fourth page whole";
  EXPECT_EQ(aclrtHostRegisterV2(host_ + kHostRegPage, kHostRegPage, ACL_HOST_REG_MAPPED),
            kHostAlreadyRegistered);
  ASSERT_EQ(aclrtHostRegisterV2(host_ + 4 * kHostRegPage, kHostRegPage, ACL_HOST_REG_MAPPED), kOk);
  HostRegKernelArgs args{host_ + 4 * kHostRegPage - 8, "spans two", {}};
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kOk);
  EXPECT_EQ(aclrtHostUnregister(host_ + kHostRegPage), kHostNotRegistered) << "an interior address";
  EXPECT_EQ(aclrtHostUnregister(host_), kOk);
  EXPECT_EQ(aclrtHostUnregister(host_), kHostNotRegistered) << "twice";
  EXPECT_EQ(aclrtHostUnregister(host_ + 4 * kHostRegPage), kOk);
}

// PINNED without MAPPED gives the device no address; MAPPED | PINNED both.
TEST_F(HostRegisterTest, PinnedOnlyRegistrationsHaveNoDeviceAddress) {
  ASSERT_EQ(aclrtHostRegisterV2(host_, kBytes, ACL_HOST_REG_PINNED), kOk);
  void* dp = nullptr;
  EXPECT_EQ(aclrtHostGetDevicePointer(host_, &dp, 0), kRtParam);
  HostRegKernelArgs args{host_, "pinned", {}};
  EXPECT_EQ(host_reg_kernel_round_trip(nullptr, &args), kDrv);
  EXPECT_EQ(aclrtHostUnregister(host_), kOk);
  ASSERT_EQ(aclrtHostRegisterV2(host_, kBytes, ACL_HOST_REG_MAPPED | ACL_HOST_REG_PINNED), kOk);
  EXPECT_EQ(aclrtHostGetDevicePointer(host_ + 8, &dp, 0), kOk);
  EXPECT_EQ(dp, host_ + 8);
  EXPECT_EQ(aclrtHostUnregister(host_), kOk);
}

// The vendor's zero-copy sample registers aclrtMallocHost memory (MAPPED); PINNED there is an
// error (it is pinned already). aclrtFreeHost drops the registrations inside the block.
TEST_F(HostRegisterTest, MallocHostMemoryRegistersAndItsFreeDropsTheRegistration) {
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, 2 * kMiB), kOk);
  EXPECT_EQ(aclrtHostRegisterV2(pinned, kHostRegPage, ACL_HOST_REG_PINNED), kRtParam);
  ASSERT_EQ(aclrtHostRegisterV2(pinned, kHostRegPage, ACL_HOST_REG_MAPPED), kOk);
  void* dp = nullptr;
  EXPECT_EQ(aclrtHostGetDevicePointer(pinned, &dp, 0), kOk);
  EXPECT_EQ(live_count("host_registrations"), 1);
  EXPECT_EQ(aclrtFreeHost(pinned), kOk);
  EXPECT_EQ(live_count("host_registrations"), 0);
  EXPECT_EQ(aclrtHostUnregister(pinned), kHostNotRegistered);
}

// Counted in the statistics; the device's last reset and aclFinalize end them.
TEST_F(HostRegisterTest, ResetAndFinalizeEndRegistrations) {
  void* dp = nullptr;
  ASSERT_EQ(aclrtHostRegister(host_, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp), kOk);
  ASSERT_EQ(aclrtHostRegisterV2(host_ + kHostRegPage, kHostRegPage, ACL_HOST_REG_PINNED), kOk);
  EXPECT_EQ(live_count("host_registrations"), 2);
  ASSERT_EQ(aclrtSetDevice(0), kOk);  // a second reference
  ASSERT_EQ(aclrtResetDevice(0), kOk);
  EXPECT_EQ(live_count("host_registrations"), 2) << "the device is still referenced";
  ASSERT_EQ(aclrtResetDevice(0), kOk);
  EXPECT_EQ(live_count("host_registrations"), 0);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(aclrtHostUnregister(host_), kHostNotRegistered);
  ASSERT_EQ(aclrtHostRegister(host_, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp), kOk);
  aclrtResetDeviceForce(0);
  ASSERT_EQ(aclFinalize(), kOk);  // reported and released
  ASSERT_EQ(aclInit(nullptr), kOk);
  ASSERT_EQ(aclrtSetDevice(0), kOk);
  EXPECT_EQ(live_count("host_registrations"), 0);
  EXPECT_EQ(aclrtHostRegister(host_, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp), kOk)
      << "the old registration is gone, so the pages register again";
  EXPECT_EQ(aclrtHostUnregister(host_), kOk);
}

// runtime-extra.md §5's checks in order, one row each, every earlier check passing.
struct HostRegMisuse {
  const char* name;
  aclError (*call)(char* host, char* window, char* unmapped);
  aclError expected;
};
const HostRegMisuse kHostRegMisuses[] = {
    {"V1: NULL ptr", [](char*, char*, char*) {
       void* dp;
       return aclrtHostRegister(nullptr, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp);
     }, kParam},
    {"V1: NULL devPtr", [](char* h, char*, char*) {
       return aclrtHostRegister(h, kHostRegPage, ACL_HOST_REGISTER_MAPPED, nullptr);
     }, kParam},
    {"V1: size 0", [](char* h, char*, char*) {
       void* dp;
       return aclrtHostRegister(h, 0, ACL_HOST_REGISTER_MAPPED, &dp);
     }, kParam},
    {"V1: type 1", [](char* h, char*, char*) {
       aclrtHostRegisterType t;
       store_raw(t, 1);
       void* dp;
       return aclrtHostRegister(h, kHostRegPage, t, &dp);
     }, kNotSupported},
    {"V1: IOMEMORY", [](char* h, char*, char*) {
       void* dp;
       return aclrtHostRegister(h, kHostRegPage, ACL_HOST_REGISTER_IOMEMORY, &dp);
     }, kNotSupported},
    {"V1: READONLY", [](char* h, char*, char*) {
       void* dp;
       return aclrtHostRegister(h, kHostRegPage, ACL_HOST_REGISTER_READONLY, &dp);
     }, kNotSupported},
    {"V1: not 4 KiB aligned", [](char* h, char*, char*) {
       void* dp;
       return aclrtHostRegister(h + 8, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp);
     }, kDrv},
    {"V1: a page not mapped", [](char*, char*, char* u) {
       void* dp;
       return aclrtHostRegister(u, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp);
     }, kDrv},
    {"V1: device memory", [](char*, char* w, char*) {
       void* dp;
       return aclrtHostRegister(w, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp);
     }, kDrv},
    {"V2: NULL ptr", [](char*, char*, char*) {
       return aclrtHostRegisterV2(nullptr, kHostRegPage, ACL_HOST_REG_MAPPED);
     }, kParam},
    {"V2: size 0", [](char* h, char*, char*) { return aclrtHostRegisterV2(h, 0, ACL_HOST_REG_MAPPED); },
     kParam},
    {"V2: flag 0", [](char* h, char*, char*) { return aclrtHostRegisterV2(h, kHostRegPage, 0); },
     kRtParam},
    {"V2: an unknown bit", [](char* h, char*, char*) {
       return aclrtHostRegisterV2(h, kHostRegPage, ACL_HOST_REG_MAPPED | 0x1);
     }, kRtParam},
    {"V2: IOMEMORY", [](char* h, char*, char*) {
       return aclrtHostRegisterV2(h, kHostRegPage, ACL_HOST_REG_MAPPED | ACL_HOST_REG_IOMEMORY);
     }, kNotSupported},
    {"V2: READONLY", [](char* h, char*, char*) {
       return aclrtHostRegisterV2(h, kHostRegPage, ACL_HOST_REG_READONLY);
     }, kNotSupported},
    {"V2: a page not mapped", [](char*, char*, char* u) {
       return aclrtHostRegisterV2(u - kHostRegPage, 2 * kHostRegPage, ACL_HOST_REG_MAPPED);
     }, kDrv},
    {"V2: device memory", [](char*, char* w, char*) {
       return aclrtHostRegisterV2(w, kHostRegPage, ACL_HOST_REG_PINNED);
     }, kDrv},
    {"GetDevicePointer: NULL pHost", [](char*, char*, char*) {
       void* dp;
       return aclrtHostGetDevicePointer(nullptr, &dp, 0);
     }, kParam},
    {"GetDevicePointer: NULL pDevice", [](char* h, char*, char*) {
       return aclrtHostGetDevicePointer(h, nullptr, 0);
     }, kParam},
    {"GetDevicePointer: flag 1", [](char* h, char*, char*) {
       void* dp;
       return aclrtHostGetDevicePointer(h, &dp, 1);
     }, kParam},
    {"GetDevicePointer: not registered", [](char* h, char*, char*) {
       void* dp;
       return aclrtHostGetDevicePointer(h, &dp, 0);
     }, kRtParam},
    {"Unregister: NULL", [](char*, char*, char*) { return aclrtHostUnregister(nullptr); }, kParam},
    {"Unregister: not registered", [](char* h, char*, char*) { return aclrtHostUnregister(h); },
     kHostNotRegistered},
};

TEST_F(HostRegisterTest, MisuseInCheckOrder) {
  // `unmapped`: a page of our own mapping given back, so a range over it is partly unmapped.
  char* unmapped = host_ + kBytes - kHostRegPage;
  ASSERT_EQ(munmap(unmapped, kHostRegPage), 0);
  void* window = nullptr;
  ASSERT_EQ(aclrtMalloc(&window, kHostRegPage, ACL_MEM_MALLOC_NORMAL_ONLY), kOk);
  for (const HostRegMisuse& m : kHostRegMisuses) {
    SCOPED_TRACE(m.name);
    EXPECT_EQ(m.call(host_, static_cast<char*>(window), unmapped), m.expected);
  }
  EXPECT_EQ(live_count("host_registrations"), 0) << "a refused call left a registration";
  EXPECT_EQ(aclrtFree(window), kOk);
  // Our mapping now ends one page earlier.
  ASSERT_EQ(munmap(host_, kBytes - kHostRegPage), 0);
  host_ = nullptr;
}

// No current context: 107002 after the ACL layer's checks.
TEST_F(HostRegisterTest, NoContextIs107002) {
  std::thread([&] {
    void* dp = nullptr;
    EXPECT_EQ(aclrtHostRegister(host_, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp), kNoContext);
    EXPECT_EQ(aclrtHostRegisterV2(host_, kHostRegPage, ACL_HOST_REG_MAPPED), kNoContext);
    EXPECT_EQ(aclrtHostGetDevicePointer(host_, &dp, 0), kNoContext);
    EXPECT_EQ(aclrtHostUnregister(host_), kNoContext);
  }).join();
}

// EDGE, INF and TRAIN lack the calls (runtime-extra.md §10): 207000 after the context check.
TEST(HostRegisterProducts, OnlyThe950A3AndA2Families) {
  for (const char* soc : {"Ascend310B1", "Ascend310P3", "Ascend910A"}) {
    SCOPED_TRACE(soc);
    EXPECT_CHILD_OK(run_in_child([&] {
      setenv("ACLVMM_SOC", soc, 1);
      if (aclrtSetDevice(0) != kOk) return 10;
      std::vector<char> buffer(3 * kHostRegPage);
      char* page = reinterpret_cast<char*>(round_up(u64(buffer.data()), kHostRegPage));
      void* dp = nullptr;
      if (aclrtHostRegister(page, kHostRegPage, ACL_HOST_REGISTER_MAPPED, &dp) != kNotSupported) {
        return 11;
      }
      if (aclrtHostRegisterV2(page, kHostRegPage, ACL_HOST_REG_MAPPED) != kNotSupported) return 12;
      if (aclrtHostGetDevicePointer(page, &dp, 0) != kNotSupported) return 13;
      if (aclrtHostUnregister(page) != kNotSupported) return 14;
      return 0;
    }));
  }
}

}  // namespace
}  // namespace aclvmm_test
