// Tests of the emu driver backend against the real kernel: bytes, return codes, faults.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "drivers/driver.h"

namespace aclvmm::drv {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
void* const kBadPtr = reinterpret_cast<void*>(0x10);

uint64_t page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }
uint8_t* ptr(uint64_t v) { return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(v)); }

// Sanitizers install their own SIGSEGV handler and turn a fault into an exit code; the raw system
// call bypasses their sigaction interceptor so the child really dies of the signal.
void default_signal(int sig) {
  struct {
    void* handler;
    unsigned long flags;
    void* restorer;
    uint64_t mask;
  } ksa = {};
  syscall(SYS_rt_sigaction, sig, &ksa, nullptr, sizeof(uint64_t));
}

// Runs fn in a forked child; returns the signal that killed it, or 0 when it exited.
int child_signal(const std::function<void()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    default_signal(SIGSEGV);
    default_signal(SIGBUS);
    fn();
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

// A free, `align`-aligned address range of `size` bytes (free at the time of the call).
uint64_t free_range(uint64_t size, uint64_t align) {
  void* p = mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return 0;
  munmap(p, size + align);
  uint64_t v = reinterpret_cast<uintptr_t>(p);
  return (v + align - 1) & ~(align - 1);
}

class EmuDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    be_ = create_backend("emu");
    ASSERT_NE(be_, nullptr);
  }
  std::shared_ptr<PhysicalMemory> alloc(uint64_t size) {
    PhysicalRequest req;
    req.size = size;
    std::shared_ptr<PhysicalMemory> mem;
    EXPECT_EQ(be_->create_physical(req, &mem), 0);
    return mem;
  }
  // A claimed window, released when the test ends.
  uint64_t window(uint64_t size) {
    uint64_t base = 0;
    EXPECT_EQ(be_->claim_window(0, size, 2 * kMiB, &base), 0);
    windows_.push_back({base, size});
    return base;
  }
  void TearDown() override {
    for (auto& w : windows_) EXPECT_EQ(be_->release_window(w.first, w.second), 0);
  }
  std::unique_ptr<Backend> be_;
  std::vector<std::pair<uint64_t, uint64_t>> windows_;
};

TEST(EmuRegistry, CreatesEmuOnly) {
  auto be = create_backend("emu");
  ASSERT_NE(be, nullptr);
  EXPECT_STREQ(be->name(), "emu");
  EXPECT_EQ(create_backend("nope"), nullptr);
  EXPECT_EQ(create_backend(""), nullptr);
}

TEST_F(EmuDriver, FreshMemoryReadsZero) {
  const uint64_t size = 3 * kMiB + 123;
  auto mem = alloc(size);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->size(), size);
  EXPECT_GE(mem->fd(), 0);
  std::vector<uint8_t> buf(size, 0xEE);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  EXPECT_EQ(std::count(buf.begin(), buf.end(), 0), static_cast<long>(size));
  struct stat st;
  ASSERT_EQ(fstat(mem->fd(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), size);
  EXPECT_EQ(st.st_blocks, 0) << "fresh memory must be sparse";
}

TEST_F(EmuDriver, CreateRejectsZeroAndAcceptsNumaNode) {
  PhysicalRequest req;
  std::shared_ptr<PhysicalMemory> mem;
  EXPECT_EQ(be_->create_physical(req, &mem), -EINVAL);
  EXPECT_EQ(mem, nullptr);
  req.size = kMiB;
  req.numa_node = 0;
  req.huge_1g = true;
  EXPECT_EQ(be_->create_physical(req, &mem), 0);
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->size(), kMiB);
}

TEST_F(EmuDriver, WriteReadRoundTripAtOffset) {
  auto mem = alloc(kMiB);
  std::vector<uint8_t> src(10000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_EQ(mem->write(12345, src.data(), src.size()), 0);
  std::vector<uint8_t> dst(src.size() + 2, 0xEE);
  ASSERT_EQ(mem->read(12344, dst.data(), dst.size()), 0);
  EXPECT_EQ(dst.front(), 0);
  EXPECT_EQ(dst.back(), 0);
  EXPECT_EQ(std::memcmp(dst.data() + 1, src.data(), src.size()), 0);
  // The last byte is reachable; zero-length transfers at the end are no-ops.
  uint8_t b = 0x5A;
  EXPECT_EQ(mem->write(kMiB - 1, &b, 1), 0);
  b = 0;
  EXPECT_EQ(mem->read(kMiB - 1, &b, 1), 0);
  EXPECT_EQ(b, 0x5A);
  EXPECT_EQ(mem->read(kMiB, &b, 0), 0);
}

TEST_F(EmuDriver, FillUnalignedEdges) {
  const uint64_t p = page();
  const uint64_t size = 8 * p;
  auto mem = alloc(size);
  std::vector<uint8_t> buf(size, 0x11);
  ASSERT_EQ(mem->write(0, buf.data(), size), 0);

  ASSERT_EQ(mem->fill(100, 0xAB, 3 * p), 0);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  for (uint64_t i = 0; i < size; ++i) {
    uint8_t want = (i >= 100 && i < 100 + 3 * p) ? 0xAB : 0x11;
    ASSERT_EQ(buf[i], want) << "byte " << i;
  }

  // Zero fill spanning whole pages (punched) with unaligned head and tail (written).
  const uint64_t off = p - 7, len = 4 * p + 20;
  ASSERT_EQ(mem->fill(off, 0, len), 0);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  for (uint64_t i = 0; i < size; ++i) {
    uint8_t want = (i >= off && i < off + len) ? 0 : (i >= 100 && i < 100 + 3 * p) ? 0xAB : 0x11;
    ASSERT_EQ(buf[i], want) << "byte " << i;
  }

  // Inside one page: no whole page to punch.
  ASSERT_EQ(mem->fill(7 * p + 3, 0, 5), 0);
  ASSERT_EQ(mem->read(7 * p, buf.data(), 16), 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(buf[i], (i >= 3 && i < 8) ? 0 : 0x11) << i;
}

TEST_F(EmuDriver, ZeroFillFreesPages) {
  const uint64_t size = 4 * kMiB;
  auto mem = alloc(size);
  ASSERT_EQ(mem->fill(0, 0x11, size), 0);
  struct stat st;
  ASSERT_EQ(fstat(mem->fd(), &st), 0);
  const auto before = st.st_blocks;
  EXPECT_GE(static_cast<uint64_t>(before) * 512, size);
  ASSERT_EQ(mem->fill(1, 0, size - 2), 0);
  ASSERT_EQ(fstat(mem->fd(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 2 * page()) << "only the edge pages stay";
  uint8_t edges[2] = {};
  ASSERT_EQ(mem->read(0, &edges[0], 1), 0);
  ASSERT_EQ(mem->read(size - 1, &edges[1], 1), 0);
  EXPECT_EQ(edges[0], 0x11);
  EXPECT_EQ(edges[1], 0x11);
}

TEST_F(EmuDriver, LargePatternFill) {
  const uint64_t size = 3 * kMiB + 5;
  auto mem = alloc(size);
  ASSERT_EQ(mem->fill(1, 0xCD, size - 1), 0);
  std::vector<uint8_t> buf(size);
  ASSERT_EQ(mem->read(0, buf.data(), size), 0);
  EXPECT_EQ(buf[0], 0);
  EXPECT_EQ(std::count(buf.begin() + 1, buf.end(), 0xCD), static_cast<long>(size - 1));
}

TEST_F(EmuDriver, BadHostPointerIsEfault) {
  auto mem = alloc(kMiB);
  EXPECT_EQ(mem->read(0, kBadPtr, 64), -EFAULT);
  EXPECT_EQ(mem->write(0, kBadPtr, 64), -EFAULT);
  EXPECT_EQ(mem->read(0, nullptr, 1), -EFAULT);
  EXPECT_EQ(mem->write(0, nullptr, 1), -EFAULT);
  // A placeholder window is address space without access.
  uint64_t w = window(2 * kMiB);
  EXPECT_EQ(mem->read(0, ptr(w), 4096), -EFAULT);
  EXPECT_EQ(mem->write(0, ptr(w), 4096), -EFAULT);
  // The memory is untouched.
  uint8_t b = 0xEE;
  ASSERT_EQ(mem->read(0, &b, 1), 0);
  EXPECT_EQ(b, 0);
}

TEST_F(EmuDriver, OutOfRangeIsEinval) {
  auto mem = alloc(kMiB);
  uint8_t buf[16] = {};
  EXPECT_EQ(mem->read(kMiB, buf, 1), -EINVAL);
  EXPECT_EQ(mem->read(kMiB - 1, buf, 2), -EINVAL);
  EXPECT_EQ(mem->read(kMiB + 1, buf, 0), -EINVAL);
  EXPECT_EQ(mem->read(UINT64_MAX, buf, 2), -EINVAL);
  EXPECT_EQ(mem->write(kMiB - 8, buf, 16), -EINVAL);
  EXPECT_EQ(mem->write(UINT64_MAX - 1, buf, 4), -EINVAL);
  EXPECT_EQ(mem->fill(kMiB - 8, 0, 16), -EINVAL);
  EXPECT_EQ(mem->fill(0, 0xAB, kMiB + 1), -EINVAL);
  EXPECT_EQ(mem->fill(2 * kMiB, 0, 0), -EINVAL);
}

TEST_F(EmuDriver, AdoptSharesBytesAndChecksSize) {
  auto mem = alloc(kMiB);
  const char msg[] = "shared";
  ASSERT_EQ(mem->write(4096, msg, sizeof msg), 0);
  std::shared_ptr<PhysicalMemory> other;
  ASSERT_EQ(be_->adopt_physical(dup(mem->fd()), kMiB, &other), 0);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->size(), kMiB);
  char got[sizeof msg] = {};
  ASSERT_EQ(other->read(4096, got, sizeof got), 0);
  EXPECT_STREQ(got, msg);
  ASSERT_EQ(other->fill(4096, 'x', 1), 0);
  ASSERT_EQ(mem->read(4096, got, 1), 0);
  EXPECT_EQ(got[0], 'x');

  // Exactly the announced size: a sender must not pass off a larger file either (issue 13).
  std::shared_ptr<PhysicalMemory> small;
  EXPECT_EQ(be_->adopt_physical(dup(mem->fd()), kMiB / 2, &small), -EINVAL);
  std::shared_ptr<PhysicalMemory> big;
  int fd = dup(mem->fd());
  EXPECT_EQ(be_->adopt_physical(fd, kMiB + 1, &big), -EINVAL);
  EXPECT_EQ(big, nullptr);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "adopt owns the descriptor even on failure";
  EXPECT_EQ(be_->adopt_physical(-1, kMiB, &big), -EBADF);
}

TEST_F(EmuDriver, ClaimWindowAtFreeAddress) {
  const uint64_t size = 256 * kMiB;
  const uint64_t want = free_range(size, 2 * kMiB);
  ASSERT_NE(want, 0u);
  uint64_t base = 0;
  ASSERT_EQ(be_->claim_window(want, size, 2 * kMiB, &base), 0);
  EXPECT_EQ(base, want);
  EXPECT_EQ(be_->claim_fixed(base, size), -EEXIST) << "the window is reserved";
  EXPECT_EQ(be_->release_window(base, size), 0);
  EXPECT_EQ(be_->claim_fixed(base, size), 0) << "released address space is free again";
  EXPECT_EQ(be_->release_window(base, size), 0);
}

TEST_F(EmuDriver, ClaimWindowOnOccupiedAddressRelocatesAligned) {
  const uint64_t size = 64 * kMiB;
  const uint64_t first = window(size);
  for (uint64_t align : {page(), 2 * kMiB, kGiB}) {
    uint64_t base = 0;
    ASSERT_EQ(be_->claim_window(first, size, align, &base), 0) << align;
    EXPECT_NE(base, first);
    EXPECT_EQ(base % align, 0u) << align;
    EXPECT_TRUE(base + size <= first || base >= first + size) << "no overlap";
    EXPECT_EQ(be_->claim_fixed(base, size), -EEXIST);
    // Trimmed to exactly `size`: the page on either side was given back (or belongs to another
    // mapping); the window's own edges stay reserved.
    EXPECT_EQ(be_->claim_fixed(base + size - page(), page()), -EEXIST);
    EXPECT_EQ(be_->release_window(base, size), 0);
  }
  uint64_t base = 0;
  EXPECT_EQ(be_->claim_window(0, 0, 0, &base), -EINVAL);
  EXPECT_EQ(be_->claim_window(0, size, 3 * page(), &base), -EINVAL);
  EXPECT_EQ(be_->claim_window(0, size + 1, 0, &base), -EINVAL);
}

// The vendor windows (emulation.md section 3): claimed in place on a plain process, moved (aligned,
// still reserved) where a sanitizer's shadow memory lives.
TEST_F(EmuDriver, ClaimVendorWindows) {
  const struct {
    uint64_t addr, size;
  } vendor[] = {{0x70000000000ull, 1ull << 40}, {0x100000000000ull, 8ull << 40}};
  for (const auto& v : vendor) {
    uint64_t base = 0;
    int rc = be_->claim_window(v.addr, v.size, kGiB, &base);
#if defined(__SANITIZE_THREAD__)
    // TSan confines the application to a few TiB of its own ranges: no room for 8 TiB.
    if (rc == -ENOMEM && v.size > (1ull << 40)) continue;
#endif
    ASSERT_EQ(rc, 0) << std::hex << v.addr;
    EXPECT_EQ(base % kGiB, 0u);
    EXPECT_EQ(be_->claim_fixed(base, page()), -EEXIST);
    EXPECT_EQ(be_->claim_fixed(base + v.size - page(), page()), -EEXIST);
    EXPECT_EQ(be_->release_window(base, v.size), 0);
  }
}

TEST_F(EmuDriver, ClaimFixedOnOccupiedIsEexist) {
  const uint64_t size = 16 * kMiB;
  const uint64_t w = window(size);
  EXPECT_EQ(be_->claim_fixed(w, size), -EEXIST);
  EXPECT_EQ(be_->claim_fixed(w + size - page(), 2 * page()), -EEXIST) << "partial overlap";
  EXPECT_EQ(be_->claim_fixed(w + 1, page()), -EINVAL);
  // Ordinary process memory counts as occupied too.
  std::vector<uint8_t> heap(4 * page());
  uint64_t inside = (reinterpret_cast<uintptr_t>(heap.data()) + page() - 1) & ~(page() - 1);
  EXPECT_EQ(be_->claim_fixed(inside, page()), -EEXIST);
}

TEST_F(EmuDriver, MapCpuReadWriteSharesBothWays) {
  const uint64_t size = 2 * kMiB;
  auto mem = alloc(size);
  const uint64_t w = window(size);
  ASSERT_EQ(be_->map_cpu(w, size, *mem, 0, CpuAccess::kReadWrite), 0);
  const char msg[] = "written by write()";
  ASSERT_EQ(mem->write(page() + 3, msg, sizeof msg), 0);
  EXPECT_STREQ(reinterpret_cast<char*>(ptr(w + page() + 3)), msg);
  std::memcpy(ptr(w + size - 4), "cpu", 4);
  char got[4] = {};
  ASSERT_EQ(mem->read(size - 4, got, 4), 0);
  EXPECT_STREQ(got, "cpu");
  // Punched pages disappear from the mapping too.
  ASSERT_EQ(mem->fill(0, 0, size), 0);
  EXPECT_EQ(ptr(w + page() + 3)[0], 0);
  EXPECT_EQ(ptr(w + size - 4)[0], 0);
  EXPECT_EQ(be_->unmap_cpu(w, size), 0);
}

TEST_F(EmuDriver, MapCpuAtOffsetAndValidation) {
  auto mem = alloc(4 * page() + 10);  // the partial last page is mappable
  const uint64_t w = window(2 * kMiB);
  ASSERT_EQ(mem->fill(2 * page(), 0x42, 2 * page() + 10), 0);
  ASSERT_EQ(be_->map_cpu(w, 3 * page(), *mem, 2 * page(), CpuAccess::kRead), 0);
  EXPECT_EQ(ptr(w)[0], 0x42);
  EXPECT_EQ(ptr(w + 2 * page())[9], 0x42);
  EXPECT_EQ(ptr(w + 2 * page())[10], 0);
  EXPECT_EQ(be_->map_cpu(w + 1, page(), *mem, 0, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(be_->map_cpu(w, page() + 1, *mem, 0, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(be_->map_cpu(w, page(), *mem, 1, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(be_->map_cpu(w, 6 * page(), *mem, 0, CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(be_->map_cpu(w, page(), *mem, 5 * page(), CpuAccess::kRead), -EINVAL);
  EXPECT_EQ(be_->map_cpu(w, page(), *mem, 0, static_cast<CpuAccess>(2)), -EINVAL);
  EXPECT_EQ(be_->unmap_cpu(w, 0), -EINVAL);
  EXPECT_EQ(be_->unmap_cpu(w + 1, page()), -EINVAL);
}

TEST_F(EmuDriver, MapCpuReadOnlyWriteFaults) {
  auto mem = alloc(kMiB);
  ASSERT_EQ(mem->fill(0, 0x77, kMiB), 0);
  const uint64_t w = window(kMiB);
  ASSERT_EQ(be_->map_cpu(w, kMiB, *mem, 0, CpuAccess::kRead), 0);
  EXPECT_EQ(ptr(w)[kMiB - 1], 0x77);
  EXPECT_EQ(child_signal([&] { *reinterpret_cast<volatile uint8_t*>(ptr(w)) = 1; }), SIGSEGV);
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), 0);
  EXPECT_EQ(be_->host_fill(ptr(w), 1, 16), -EFAULT);
  uint8_t b = 0;
  ASSERT_EQ(mem->read(0, &b, 1), 0);
  EXPECT_EQ(b, 0x77);
}

TEST_F(EmuDriver, UnmapCpuRestoresPlaceholder) {
  auto mem = alloc(kMiB);
  const uint64_t w = window(2 * kMiB);
  ASSERT_EQ(be_->map_cpu(w, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ptr(w)[0] = 9;
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), 0);
  ASSERT_EQ(be_->unmap_cpu(w, kMiB), 0);
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), SIGSEGV);
  EXPECT_EQ(be_->claim_fixed(w, kMiB), -EEXIST) << "still reserved";
  uint8_t b = 0;
  ASSERT_EQ(mem->read(0, &b, 1), 0);
  EXPECT_EQ(b, 9) << "unmapping keeps the physical bytes";

  // kNone behaves like unmap_cpu.
  ASSERT_EQ(be_->map_cpu(w, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ASSERT_EQ(be_->map_cpu(w, kMiB, *mem, 0, CpuAccess::kNone), 0);
  EXPECT_EQ(child_signal([&] { (void)*reinterpret_cast<volatile uint8_t*>(ptr(w)); }), SIGSEGV);
  EXPECT_EQ(be_->claim_fixed(w, kMiB), -EEXIST);
}

TEST_F(EmuDriver, TwoMappingsShareBytes) {
  auto mem = alloc(kMiB);
  const uint64_t a = window(2 * kMiB);
  const uint64_t b = window(2 * kMiB);
  ASSERT_EQ(be_->map_cpu(a, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ASSERT_EQ(be_->map_cpu(b + kMiB, kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  ptr(a)[100] = 0x31;
  EXPECT_EQ(ptr(b + kMiB)[100], 0x31);
  ptr(b + kMiB)[kMiB - 1] = 0x32;
  EXPECT_EQ(ptr(a)[kMiB - 1], 0x32);
  // The mappings keep the memory alive after the handle goes away.
  mem.reset();
  EXPECT_EQ(ptr(a)[100], 0x31);
  EXPECT_EQ(be_->unmap_cpu(a, kMiB), 0);
  EXPECT_EQ(be_->unmap_cpu(b + kMiB, kMiB), 0);
}

TEST_F(EmuDriver, HostCopyAndFill) {
  std::vector<uint8_t> src(3 * kMiB + 17), dst(src.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i ^ (i >> 8));
  ASSERT_EQ(be_->host_copy(dst.data(), src.data(), src.size()), 0);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(be_->host_copy(dst.data(), src.data(), 0), 0);
  EXPECT_EQ(be_->host_copy(kBadPtr, kBadPtr, 0), 0);

  EXPECT_EQ(be_->host_copy(dst.data(), kBadPtr, 64), -EFAULT);
  EXPECT_EQ(be_->host_copy(kBadPtr, src.data(), 64), -EFAULT);
  EXPECT_EQ(be_->host_copy(nullptr, src.data(), 1), -EFAULT);
  const uint64_t w = window(2 * kMiB);
  EXPECT_EQ(be_->host_copy(ptr(w), src.data(), 64), -EFAULT);
  EXPECT_EQ(be_->host_copy(dst.data(), ptr(w), 64), -EFAULT);

  ASSERT_EQ(be_->host_fill(dst.data() + 1, 0xAB, dst.size() - 2), 0);
  EXPECT_EQ(dst.front(), src.front());
  EXPECT_EQ(dst.back(), src.back());
  EXPECT_EQ(std::count(dst.begin() + 1, dst.end() - 1, 0xAB), static_cast<long>(dst.size() - 2));
  ASSERT_EQ(be_->host_fill(dst.data(), 0, 10), 0);
  EXPECT_EQ(std::count(dst.begin(), dst.begin() + 10, 0), 10);
  EXPECT_EQ(dst[10], 0xAB);
  EXPECT_EQ(be_->host_fill(kBadPtr, 1, 64), -EFAULT);
  EXPECT_EQ(be_->host_fill(nullptr, 1, 64), -EFAULT);
  EXPECT_EQ(be_->host_fill(ptr(w), 1, 64), -EFAULT);
  EXPECT_EQ(be_->host_fill(kBadPtr, 1, 0), 0);
}

TEST_F(EmuDriver, ManySmallPhysicalObjects) {
  constexpr int kCount = 2000;
  std::vector<std::shared_ptr<PhysicalMemory>> mems;
  std::set<int> fds;
  for (int i = 0; i < kCount; ++i) {
    auto m = alloc(4096);
    ASSERT_NE(m, nullptr) << "allocation " << i;
    ASSERT_EQ(m->write(8, &i, sizeof i), 0);
    fds.insert(m->fd());
    mems.push_back(std::move(m));
  }
  EXPECT_EQ(fds.size(), static_cast<size_t>(kCount));
  for (int i = 0; i < kCount; ++i) {
    int got = -1;
    ASSERT_EQ(mems[i]->read(8, &got, sizeof got), 0);
    ASSERT_EQ(got, i);
  }
  struct rlimit rl;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  EXPECT_TRUE(rl.rlim_cur == rl.rlim_max || rl.rlim_max == RLIM_INFINITY);
}

TEST_F(EmuDriver, HostFacts) {
  const uint64_t total = be_->host_memory_total();
  const uint64_t avail = be_->host_memory_free();
  EXPECT_GT(total, 0u);
  EXPECT_GT(avail, 0u);
  EXPECT_LE(avail, total);
  EXPECT_EQ(be_->host_page_size(), static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_GE(be_->numa_node_count(), 0);
}

TEST_F(EmuDriver, BindNuma) {
  auto mem = alloc(2 * kMiB);
  const uint64_t w = window(2 * kMiB);
  ASSERT_EQ(be_->map_cpu(w, 2 * kMiB, *mem, 0, CpuAccess::kReadWrite), 0);
  if (be_->numa_node_count() == 0) {
    EXPECT_EQ(be_->bind_numa(w, 2 * kMiB, 0), -EOPNOTSUPP);
    return;
  }
  EXPECT_EQ(be_->bind_numa(w, 2 * kMiB, 0), 0);
  ptr(w)[0] = 1;  // faults a page in under the policy
  int mode = -1;
  ASSERT_EQ(get_mempolicy(&mode, nullptr, 0, ptr(w), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_BIND);
  int node = -1;
  ASSERT_EQ(get_mempolicy(&node, nullptr, 0, ptr(w), MPOL_F_NODE | MPOL_F_ADDR), 0);
  EXPECT_EQ(node, 0);
  EXPECT_EQ(be_->bind_numa(w, 2 * kMiB, 100000), -EINVAL);
  EXPECT_EQ(be_->bind_numa(w, 2 * kMiB, -2), -EINVAL);
  EXPECT_EQ(be_->bind_numa(w + 1, page(), 0), -EINVAL);
  // -1 restores the default policy.
  EXPECT_EQ(be_->bind_numa(w, 2 * kMiB, -1), 0);
  ASSERT_EQ(get_mempolicy(&mode, nullptr, 0, ptr(w), MPOL_F_ADDR), 0);
  EXPECT_EQ(mode, MPOL_DEFAULT);
  EXPECT_EQ(ptr(w)[0], 1);
}

}  // namespace
}  // namespace aclvmm::drv
