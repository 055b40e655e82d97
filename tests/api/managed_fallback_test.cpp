// Managed memory on a machine that cannot track CPU faults (emulation.md §6): container seccomp
// profiles commonly forbid userfaultfd. Each test runs in a child that installs such a filter
// (the system call and the /dev/userfaultfd ioctl fail with EPERM) before the runtime starts.
// Memory must stay correct and host-resident, and the statistics must say fault tracking is off.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>

#include "api/managed_util.h"

namespace aclvmm_test {
namespace {

// EPERM for userfaultfd(2) and for ioctl(USERFAULTFD_IOC_NEW); everything else is allowed.
// The architecture check keeps the syscall numbers meaningful.
bool forbid_userfaultfd() {
#if defined(__x86_64__)
  constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(USERFAULTFD_IOC_NEW), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return false;
  // The filter works: the call the runtime tries first fails.
  return syscall(SYS_userfaultfd, 0) < 0 && errno == EPERM;
}

// Runs `body` in a child without userfaultfd; each failed check is one exit code.
ChildResult run_without_userfaultfd(const std::function<int()>& body,
                                    const char* device_memory = nullptr) {
  return run_in_child([&] {
    if (!forbid_userfaultfd()) return 99;
    if (device_memory) setenv("ACLVMM_DEVICE_MEMORY", device_memory, 1);
    if (aclInit(nullptr) != kOk || aclrtSetDevice(0) != kOk) return 98;
    const int rc = body();
    aclrtResetDeviceForce(0);
    if (aclFinalize() != kOk) return 97;
    return rc;
  });
}

TEST(ManagedFallback, StatisticsSayTrackingIsOff) {
  EXPECT_CHILD_OK(run_without_userfaultfd([] {
    void* p = nullptr;
    CHILD_CHECK(aclrtMemAllocManaged(&p, k2M, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 1);
    CHILD_CHECK(!fault_tracking(), 2);
    CHILD_CHECK(!cpu_write_tracking(), 3);
    CHILD_CHECK(aclrtFree(p) == kOk, 4);
    return 0;
  }), "1 alloc, 2 tracking on, 3 write tracking on, 4 free");
}

// Device operations, prefetches and CPU accesses interleave; every byte is where it should be
// and no page ever migrates (nothing could catch the CPU's next access).
TEST(ManagedFallback, DeviceAndCpuAccessStayCorrectAndHostResident) {
  EXPECT_CHILD_OK(run_without_userfaultfd([] {
    void* v = nullptr;
    CHILD_CHECK(aclrtMemAllocManaged(&v, 8 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 1);
    char* p = static_cast<char*>(v);
    const std::string pat = pattern(8 * kMiB, 4);
    std::memcpy(p, pat.data(), pat.size());
    const ManagedCounters before = managed_counters();
    CHILD_CHECK(get(p, 8 * kMiB) == pat, 2);
    CHILD_CHECK(aclrtMemManagedPrefetchAsync(p, 8 * kMiB, kDev0, 0, nullptr) == kOk, 3);
    CHILD_CHECK(aclrtSynchronizeStream(nullptr) == kOk, 3);
    CHILD_CHECK(put(p + 100, "device bytes") == kOk, 4);
    CHILD_CHECK(std::memcmp(p + 100, "device bytes", 12) == 0, 5);
    p[k2M] = 'c';
    CHILD_CHECK(get(p + k2M, 1) == "c", 6);
    CHILD_CHECK(aclrtMemset(p + 3 * k2M, k2M, 0x7e, k2M) == kOk, 7);
    CHILD_CHECK(static_cast<unsigned char>(p[3 * k2M + 17]) == 0x7e, 8);
    CHILD_CHECK(aclrtMemManagedAdvise(p, k2M, ACL_MEM_ADVISE_SET_READ_MOSTLY, kDev0) == kOk, 9);
    CHILD_CHECK(get(p, 4) == pat.substr(0, 4), 10);
    p[1] = 'w';
    CHILD_CHECK(get(p + 1, 1) == "w", 11);
    const ManagedCounters after = managed_counters();
    CHILD_CHECK(after.host_faults == before.host_faults, 12);
    CHILD_CHECK(after.device_faults == before.device_faults, 13);
    CHILD_CHECK(after.to_device == before.to_device && after.to_host == before.to_host, 14);
    CHILD_CHECK(after.prefetch == before.prefetch && after.evictions == before.evictions, 15);
    // Nothing is charged to the device: the pages never left the host.
    CHILD_CHECK(device_used(stats(), 0) == 0, 16);
    // The last prefetch is still recorded for the attributes.
    int32_t loc = -5;
    CHILD_CHECK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, p, k2M, &loc,
                                         sizeof loc) == kOk && loc == 0, 17);
    CHILD_CHECK(aclrtFree(p) == kOk, 18);
    return 0;
  }), "see the numbered checks");
}

// Oversubscription cannot happen: the 64 MiB device is never charged for 128 MiB of managed
// memory the device reaches in place.
TEST(ManagedFallback, NoEvictionsBecauseNothingIsCharged) {
  EXPECT_CHILD_OK(run_without_userfaultfd([] {
    void* v = nullptr;
    CHILD_CHECK(aclrtMemAllocManaged(&v, 128 * kMiB, ACL_RT_MEM_ATTACH_GLOBAL) == kOk, 1);
    char* p = static_cast<char*>(v);
    CHILD_CHECK(aclrtMemset(p, 128 * kMiB, 0x3c, 128 * kMiB) == kOk, 2);
    for (size_t off = 0; off < 128 * kMiB; off += k2M) {
      CHILD_CHECK(static_cast<unsigned char>(p[off + 9]) == 0x3c, 3);
    }
    CHILD_CHECK(managed_counters().evictions == 0, 4);
    CHILD_CHECK(device_used(stats(), 0) == 0, 5);
    CHILD_CHECK(aclrtFree(p) == kOk, 6);
    return 0;
  }, "64M"), "see the numbered checks");
}

}  // namespace
}  // namespace aclvmm_test
