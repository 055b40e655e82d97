// Physical memory is size-sealed (drivers/emu/os/memfd_memory.h): whoever holds its descriptor can
// read, write and zero the bytes, and nothing more; and a received descriptor is adopted only if
// it is sealed the same way and holds exactly the announced size (issue 13, items 1 and 2).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/emu/os/memfd_memory.h"
#include "unit/testing/emu_os_fixture.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

namespace aclvmm::dev::emu::os {
namespace {

constexpr uint64_t k2M = 2ull << 20;

using fixture::make_memfd;

bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(MemfdSeal, TheDescriptorCanChangeBytesButNotTheSize) {
  auto mem = make_memfd(k2M);
  ASSERT_NE(mem, nullptr);
  const int fd = mem->fd();
  const int seals = fcntl(fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_EQ(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE), 0);
  const std::string bytes(k2M, '\x5c');
  ASSERT_EQ(mem->write(0, bytes.data(), bytes.size()), 0);

  // What a process holding a copy of the descriptor might try (each fails with EPERM).
  struct Attempt {
    const char* what;
    std::function<int()> call;
  };
  const Attempt attempts[] = {
      {"ftruncate to 0", [&] { return ftruncate(fd, 0); }},
      {"ftruncate to one page less", [&] { return ftruncate(fd, k2M - 4096); }},
      {"ftruncate larger", [&] { return ftruncate(fd, 2 * k2M); }},
      {"fallocate past the end", [&] { return fallocate(fd, 0, k2M, 4096); }},
      {"F_ADD_SEALS F_SEAL_WRITE", [&] { return fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE); }},
      {"F_ADD_SEALS F_SEAL_FUTURE_WRITE", [&] { return fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE); }},
  };
  for (const Attempt& a : attempts) {
    SCOPED_TRACE(a.what);
    errno = 0;
    EXPECT_EQ(a.call(), -1);
    EXPECT_EQ(errno, EPERM);
  }
  struct stat st{};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), k2M);
  std::string back(k2M, '\0');
  ASSERT_EQ(mem->read(0, &back[0], back.size()), 0);
  EXPECT_TRUE(back == bytes);

  // Punching a hole is zeroing, which the API allows anyone who can write: it reads back as zeros.
  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096), 0);
  ASSERT_EQ(mem->read(0, &back[0], back.size()), 0);
  EXPECT_EQ(back.substr(0, 4096), bytes.substr(0, 4096));
  EXPECT_EQ(back.substr(4096, 4096), std::string(4096, '\0'));
  EXPECT_EQ(back.substr(8192), bytes.substr(8192));
  // The library's own zero fill and page population still work on sealed memory.
  EXPECT_EQ(mem->fill(0, 0, k2M), 0);
  EXPECT_EQ(mem->populate(0, k2M), 0);
}

// A descriptor made as create() makes it, with `seals` instead of the usual ones.
int memfd_with(uint64_t size, int seals, unsigned extra_flags = 0) {
  const int fd = memfd_create("aclvmm-seal-test", MFD_CLOEXEC | MFD_ALLOW_SEALING | extra_flags);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 || (seals && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(MemfdSeal, AdoptRefusesWhatCouldHurtThisProcessLater) {
  constexpr int kGood = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  auto mine = make_memfd(k2M);
  ASSERT_NE(mine, nullptr);
  struct Case {
    const char* what;
    std::function<int()> make;  // the descriptor to offer, or -1 when this machine cannot make it
    uint64_t size;
    int expected;
  };
  std::string shm_name = "/aclvmm-seal-test-" + std::to_string(getpid());
  const Case cases[] = {
      {"memory of this backend (control)", [&] { return dup(mine->fd()); }, k2M, 0},
      {"sealed like it (control)", [&] { return memfd_with(k2M, kGood); }, k2M, 0},
      {"a larger size announced", [&] { return dup(mine->fd()); }, 2 * k2M, -EINVAL},
      {"a smaller size announced", [&] { return dup(mine->fd()); }, k2M / 2, -EINVAL},
      {"no seals", [&] { return memfd_with(k2M, 0); }, k2M, -EPERM},
      {"no F_SEAL_SHRINK", [&] { return memfd_with(k2M, F_SEAL_GROW | F_SEAL_SEAL); }, k2M, -EPERM},
      {"no F_SEAL_GROW", [&] { return memfd_with(k2M, F_SEAL_SHRINK | F_SEAL_SEAL); }, k2M, -EPERM},
      {"no F_SEAL_SEAL (writes could be sealed off later)",
       [&] { return memfd_with(k2M, F_SEAL_SHRINK | F_SEAL_GROW); }, k2M, -EPERM},
      {"F_SEAL_WRITE", [&] { return memfd_with(k2M, kGood | F_SEAL_WRITE); }, k2M, -EPERM},
      {"F_SEAL_FUTURE_WRITE", [&] { return memfd_with(k2M, kGood | F_SEAL_FUTURE_WRITE); }, k2M, -EPERM},
      {"read-only", [&] {
         const int fd = memfd_with(k2M, kGood);
         const int ro = open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
         close(fd);
         return ro;
       }, k2M, -EACCES},
      {"a pipe", [&] {
         int p[2];
         if (pipe2(p, O_CLOEXEC) != 0) return -1;
         close(p[1]);
         return p[0];
       }, k2M, -EMEDIUMTYPE},
      {"a shared-memory file that is no memfd", [&] {
         const int fd = shm_open(shm_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
         shm_unlink(shm_name.c_str());
         if (fd >= 0 && ftruncate(fd, k2M) != 0) return close(fd), -1;
         return fd;
       }, k2M, -EPERM},
      {"a hugetlbfs memfd", [&] { return memfd_with(k2M, kGood, MFD_HUGETLB); }, k2M, -EMEDIUMTYPE},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const int fd = c.make();
    if (fd < 0) {
      std::printf("[ skipped  ] %s: cannot be made here\n", c.what);
      continue;
    }
    std::shared_ptr<PhysicalMemory> got;
    EXPECT_EQ(MemfdMemory::adopt(fd, c.size, &got), c.expected);
    EXPECT_EQ(got != nullptr, c.expected == 0);
    if (c.expected != 0) {
      EXPECT_FALSE(is_open(fd)) << "a refused descriptor is closed";
    }
  }
}

}  // namespace
}  // namespace aclvmm::dev::emu::os
