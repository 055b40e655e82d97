#include "drivers/host/process_facts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace aclvmm::dev::host {

bool read_small_file(const char* path, char* buf, size_t cap, size_t* len) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < cap) {
    ssize_t r = ::read(fd, buf + got, cap - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  *len = got;
  return got > 0;
}

uint64_t process_start_time(int pid) {
  if (pid <= 0) return 0;
  char path[32];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  char buf[1024];
  // One read: procfs hands a file of less than a page over whole (the sharing listener asks this
  // for every importer, so the read to end-of-file is a system call saved).
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t r;
  do {
    r = ::read(fd, buf, sizeof(buf) - 1);
  } while (r < 0 && errno == EINTR);
  ::close(fd);
  if (r <= 0) return 0;
  const size_t len = static_cast<size_t>(r);
  buf[len] = '\0';
  // comm (field 2) is whatever the process named itself, spaces and parentheses included; only
  // the last ')' reliably ends it.
  const char* p = static_cast<const char*>(::memrchr(buf, ')', len));
  if (p == nullptr) return 0;
  ++p;
  // Fields 3..21 precede starttime (field 22).
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
    if (*p == '\0') return 0;
  }
  char* end = nullptr;
  unsigned long long ticks = std::strtoull(p, &end, 10);
  if (end == p) return 0;
  return static_cast<uint64_t>(ticks);
}

uint64_t own_pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int32_t bare_tgid() {
  const int32_t self = static_cast<int32_t>(::getpid());
  char buf[4096];
  size_t len = 0;
  if (!read_small_file("/proc/self/status", buf, sizeof(buf) - 1, &len)) return self;
  buf[len] = '\0';
  // "NSpid:" lists the pid from the namespace of this /proc down to the process's own.
  const char* line = std::strstr(buf, "\nNSpid:");
  if (line == nullptr) return self;
  const long v = std::strtol(line + 7, nullptr, 10);
  return v > 0 ? static_cast<int32_t>(v) : self;
}

}  // namespace aclvmm::dev::host
