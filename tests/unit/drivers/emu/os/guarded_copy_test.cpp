// The guarded copy (drivers/emu/os/guarded_copy.h) behind host_copy: a bad address on either side is
// -EFAULT, never a crash, and the guard is ready again for the next copy; a fault outside any
// copy still gets the process's own disposition (default: death by the signal; an application
// handler installed before the first copy: that handler), and a handler installed after the
// first copy takes over, with copies falling back to the kernel-checked path.
//
// Every test runs its body in a fresh process (a "threadsafe" death test re-executes this binary
// for the one test): the guard installs process-wide signal handlers once, on the first copy, and
// these tests need to control what was installed before it. The child reports the first failed
// check on stderr (gtest prints it) and exits with code 1.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "drivers/emu/os/guarded_copy.h"
#include "drivers/emu/os/host_copy.h"

namespace aclvmm::dev::emu::os {
namespace {

// The guard is compiled out under sanitizers (guarded_copy.cpp): the same test.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGuardCompiledOut = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kGuardCompiledOut = true;
#else
constexpr bool kGuardCompiledOut = false;
#endif
#else
constexpr bool kGuardCompiledOut = false;
#endif

#define SKIP_WITHOUT_GUARD() \
  if (kGuardCompiledOut) GTEST_SKIP() << "the guarded copy is disabled under sanitizers"

// In the child: report the failed check and exit 1.
#define CHILD_CHECK(cond)                                                          \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "child check failed at line %d: %s\n", __LINE__, #cond); \
      _exit(1);                                                                    \
    }                                                                              \
  } while (0)

// The child's side: no core file for the crashes it expects, then body; it exits 0 when body
// returns.
[[noreturn]] void child_main(const std::function<void()>& body) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  body();
  _exit(0);
}

// Runs body in a fresh process, which must exit with `code` / die of `sig`.
void expect_child_exits(const std::function<void()>& body, int code) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(child_main(body), ::testing::ExitedWithCode(code), "");
}
void expect_child_killed(const std::function<void()>& body, int sig) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(child_main(body), ::testing::KilledBySignal(sig), "");
}

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// A fixed address the compiler cannot see through (so it neither warns about nor folds the access).
uint8_t* opaque(uintptr_t a) {
  volatile uintptr_t v = a;
  return reinterpret_cast<uint8_t*>(v);
}
uint8_t* const kLow = opaque(0x10);

// Pages with the protections the cases need: [0] read-write, [1] PROT_NONE, [2] read-only,
// [3] unmapped (a hole left by munmap).
struct Pages {
  uint8_t* rw;
  uint8_t* none;
  uint8_t* ro;
  uint8_t* hole;
};
Pages make_pages() {
  auto* p = static_cast<uint8_t*>(
      mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  CHILD_CHECK(p != MAP_FAILED);
  std::memset(p, 0x77, 4 * kPage);
  CHILD_CHECK(mprotect(p + kPage, kPage, PROT_NONE) == 0);
  CHILD_CHECK(mprotect(p + 2 * kPage, kPage, PROT_READ) == 0);
  CHILD_CHECK(munmap(p + 3 * kPage, kPage) == 0);
  return Pages{p, p + kPage, p + 2 * kPage, p + 3 * kPage};
}

// Two read-write pages of a shared memfd mapping whose file is then cut to `keep_pages` pages:
// an access past the file's end raises SIGBUS.
uint8_t* mapping_past_file_end(size_t keep_pages) {
  const int fd = memfd_create("guard-test", MFD_CLOEXEC);
  CHILD_CHECK(fd >= 0 && ftruncate(fd, 2 * kPage) == 0);
  void* m = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHILD_CHECK(m != MAP_FAILED && ftruncate(fd, keep_pages * kPage) == 0);
  return static_cast<uint8_t*>(m);
}

// A good copy of one page works byte for byte.
void check_good_copy() {
  std::vector<uint8_t> src(kPage), dst(kPage, 0);
  for (size_t i = 0; i < kPage; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  CHILD_CHECK(host_copy(dst.data(), src.data(), kPage) == 0);
  CHILD_CHECK(std::memcmp(dst.data(), src.data(), kPage) == 0);
}

// Every bad source and destination: -EFAULT, no crash, and the next copy works.
void check_bad_copies(const Pages& pg) {
  std::vector<uint8_t> buf(2 * kPage, 0x11);
  struct Case {
    void* dst;
    const void* src;
    size_t n;
  } cases[] = {
      {buf.data(), pg.none, 16},                // source PROT_NONE
      {pg.none, buf.data(), 16},                // destination PROT_NONE
      {buf.data(), pg.hole, 16},                // source unmapped
      {pg.hole, buf.data(), 16},                // destination unmapped
      {buf.data(), kLow, 16},                   // source 0x10
      {kLow, buf.data(), 16},                   // destination 0x10
      {pg.ro, buf.data(), 16},                  // destination read-only
      {buf.data(), pg.none - 100, 200},         // runs from a good page into PROT_NONE
      {pg.none - 100, buf.data(), 200},
      {buf.data(), kLow, SIZE_MAX},             // wraps around the address space
      {buf.data(), nullptr, 16},
  };
  for (const Case& c : cases) {
    CHILD_CHECK(host_copy(c.dst, c.src, c.n) == -EFAULT);
    check_good_copy();
  }
  // The read-only page kept its bytes; the good source was never changed.
  for (size_t i = 0; i < kPage; ++i) CHILD_CHECK(pg.ro[i] == 0x77);
}

TEST(GuardedCopy, BadAddressesAreEfaultAndTheGuardRearms) {
  SKIP_WITHOUT_GUARD();
  expect_child_exits(
      [] {
        CHILD_CHECK(guard_available());
        const Pages pg = make_pages();
        for (int round = 0; round < 200; ++round) check_bad_copies(pg);
        CHILD_CHECK(guard_available());  // still ours after 2200 caught faults
      },
      0);
}

// A SIGBUS inside the copy (a shared mapping past the end of its file) is caught the same way.
TEST(GuardedCopy, SigbusInsideACopyIsEfault) {
  SKIP_WITHOUT_GUARD();
  expect_child_exits(
      [] {
        CHILD_CHECK(guard_available());
        uint8_t* m = mapping_past_file_end(1);  // its second page raises SIGBUS
        std::vector<uint8_t> buf(kPage);
        for (int i = 0; i < 50; ++i) {
          CHILD_CHECK(host_copy(buf.data(), m + kPage, 64) == -EFAULT);
          CHILD_CHECK(host_copy(m + kPage + 8, buf.data(), 64) == -EFAULT);
          CHILD_CHECK(host_copy(buf.data(), m, 64) == 0);
          check_good_copy();
        }
      },
      0);
}

TEST(GuardedCopy, LargeCopyIsByteExact) {
  SKIP_WITHOUT_GUARD();
  expect_child_exits(
      [] {
        CHILD_CHECK(guard_available());
        const size_t n = 8 << 20;
        std::vector<uint8_t> src(n + 64), dst(n + 64, 0);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>((i * 131) ^ (i >> 13));
        CHILD_CHECK(host_copy(dst.data(), src.data(), n) == 0);
        CHILD_CHECK(std::memcmp(dst.data(), src.data(), n) == 0);
        CHILD_CHECK(dst[n] == 0);
        // Unaligned on both sides.
        std::fill(dst.begin(), dst.end(), 0);
        CHILD_CHECK(host_copy(dst.data() + 5, src.data() + 3, n - 11) == 0);
        CHILD_CHECK(std::memcmp(dst.data() + 5, src.data() + 3, n - 11) == 0);
        CHILD_CHECK(dst[4] == 0 && dst[5 + n - 11] == 0);
      },
      0);
}

// Copies on several threads fault at the same time; each thread's guard catches its own fault.
TEST(GuardedCopy, ThreadsCatchTheirOwnFaults) {
  SKIP_WITHOUT_GUARD();
  expect_child_exits(
      [] {
        CHILD_CHECK(guard_available());
        const Pages pg = make_pages();
        std::atomic<int> wrong{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
          threads.emplace_back([&, t] {
            std::vector<uint8_t> src(4096, static_cast<uint8_t>(t + 1)), dst(4096);
            for (int i = 0; i < 2000; ++i) {
              if (host_copy(dst.data(), (i + t) % 2 ? pg.none : pg.hole, 64) != -EFAULT) ++wrong;
              if (host_copy(dst.data(), src.data(), src.size()) != 0 || dst != src) ++wrong;
            }
          });
        }
        for (auto& th : threads) th.join();
        CHILD_CHECK(wrong.load() == 0);
      },
      0);
}

// A fault outside any copy is not ours: with no handler of the application, the process dies of
// the signal as it would without this library, also after the guard caught faults.
TEST(GuardedCopy, ForeignSigsegvStillKills) {
  SKIP_WITHOUT_GUARD();
  expect_child_killed(
      [] {
        CHILD_CHECK(guard_available());
        std::vector<uint8_t> buf(64);
        CHILD_CHECK(host_copy(buf.data(), kLow, 16) == -EFAULT);
        *static_cast<volatile uint8_t*>(opaque(0x10)) = 1;
      },
      SIGSEGV);
}

TEST(GuardedCopy, ForeignSigbusStillKills) {
  SKIP_WITHOUT_GUARD();
  expect_child_killed(
      [] {
        CHILD_CHECK(guard_available());
        uint8_t* m = mapping_past_file_end(0);  // every page raises SIGBUS
        std::vector<uint8_t> buf(64);
        CHILD_CHECK(host_copy(buf.data(), m, 16) == -EFAULT);
        (void)*reinterpret_cast<volatile uint8_t*>(m);
      },
      SIGBUS);
}

// The application's handler, installed before or after the guard. Only the foreign fault may
// reach it (exit 42); a fault of a copy that leaked to it exits 43.
volatile sig_atomic_t g_foreign_fault_next = 0;
constexpr uintptr_t kForeignAddr = 0x18;
void app_siginfo_handler(int, siginfo_t* info, void*) {
  _exit(g_foreign_fault_next && reinterpret_cast<uintptr_t>(info->si_addr) == kForeignAddr ? 42 : 43);
}
void app_plain_handler(int) { _exit(g_foreign_fault_next ? 42 : 43); }

void install_app_handler(bool siginfo) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  if (siginfo) {
    sa.sa_sigaction = app_siginfo_handler;
    sa.sa_flags = SA_SIGINFO;
  } else {
    sa.sa_handler = app_plain_handler;
  }
  CHILD_CHECK(sigaction(SIGSEGV, &sa, nullptr) == 0);
}

// Copies fault many times without the application's handler ever running; then a foreign fault
// reaches it (chained by the guard, or directly).
void copies_then_foreign_fault() {
  const Pages pg = make_pages();
  for (int round = 0; round < 20; ++round) check_bad_copies(pg);
  g_foreign_fault_next = 1;
  *static_cast<volatile uint8_t*>(opaque(kForeignAddr)) = 1;
  std::fprintf(stderr, "the foreign fault returned\n");
  _exit(2);
}

TEST(GuardedCopy, HandlerInstalledBeforeTheFirstCopyGetsForeignFaults) {
  SKIP_WITHOUT_GUARD();
  for (bool siginfo : {true, false}) {
    SCOPED_TRACE(siginfo ? "SA_SIGINFO handler" : "plain handler");
    expect_child_exits(
        [siginfo] {
          install_app_handler(siginfo);
          CHILD_CHECK(guard_available());  // installs the guard over the application's handler
          copies_then_foreign_fault();
        },
        42);
  }
}

// A handler installed after the guard takes precedence: the guard stands aside (copies use
// the kernel-checked path and still report -EFAULT) and foreign faults go straight to it.
TEST(GuardedCopy, HandlerInstalledAfterTheGuardTakesOver) {
  expect_child_exits(
      [] {
        if (!kGuardCompiledOut) CHILD_CHECK(guard_available());
        std::vector<uint8_t> buf(64);
        CHILD_CHECK(host_copy(buf.data(), kLow, 16) == -EFAULT);
        install_app_handler(true);
        CHILD_CHECK(!guard_available());
        copies_then_foreign_fault();
      },
      42);
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
