#include "drivers/emu/stats_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "drivers/emu/share_transport.h"

namespace aclvmm::drv::emu {
namespace {

std::string own_comm() {
  char buf[64] = {0};
  int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r;
    do {
      r = ::read(fd, buf, sizeof(buf) - 1);
    } while (r < 0 && errno == EINTR);
    ::close(fd);
    if (r > 0) buf[strcspn(buf, "\n")] = '\0';
  }
  return buf;
}

// Parses a decimal number filling [p, end) completely; false on anything else or overflow.
bool parse_decimal(const char* p, const char* end, unsigned long long* v) {
  if (p == end) return false;
  *v = 0;
  for (; p != end; ++p) {
    if (*p < '0' || *p > '9') return false;
    if (*v > (~0ull - 9) / 10) return false;
    *v = *v * 10 + static_cast<unsigned>(*p - '0');
  }
  return true;
}

}  // namespace

uint64_t process_start_time(int pid) {
  // The transport keeps no state: its /proc parser is the one the sharing whitelist relies on.
  return UnixShareTransport().process_start_time(pid);
}

uint64_t own_pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int ShmStatsSegment::create(const std::string& dir, const std::string& prefix, size_t size,
                            std::shared_ptr<StatsSegment>* out) {
  if (size == 0 || out == nullptr) return -EINVAL;
  std::unique_ptr<ShmStatsSegment> seg(new (std::nothrow) ShmStatsSegment());
  if (!seg) return -ENOMEM;
  seg->owner_.pid = static_cast<int>(::getpid());
  seg->owner_.uid = static_cast<unsigned>(::getuid());
  seg->owner_.start_time = process_start_time(seg->owner_.pid);
  seg->owner_.name = own_comm();
  seg->owner_.pid_namespace = own_pid_namespace();
  seg->path_ = dir + "/" + prefix + "." + std::to_string(seg->owner_.uid) + "." +
               std::to_string(seg->owner_.pid);
  seg->tmp_path_ = seg->path_ + ".tmp";
  // O_TRUNC: a file left by a crash of this very process image (an earlier run under a reused
  // pid) is simply taken over. O_NOFOLLOW: /dev/shm is world-writable; a planted symlink must not
  // redirect the write.
  int fd = ::open(seg->tmp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return -errno;
  int rc = 0;
  // Readable by every user's monitor whatever the umask (npu-smi shows all processes too).
  if (::fchmod(fd, 0644) != 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) rc = -errno;
  void* p = MAP_FAILED;
  if (rc == 0) {
    p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) rc = -errno;
  }
  ::close(fd);
  if (rc != 0) {
    ::unlink(seg->tmp_path_.c_str());
    return rc;
  }
  seg->data_ = p;
  seg->size_ = size;
  *out = std::shared_ptr<StatsSegment>(seg.release());
  return 0;
}

ShmStatsSegment::~ShmStatsSegment() {
  if (!published_ && !tmp_path_.empty() && ::getpid() == owner_.pid) ::unlink(tmp_path_.c_str());
  if (data_ != nullptr) ::munmap(data_, size_);
}

int ShmStatsSegment::publish() {
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) return -errno;
  published_ = true;
  return 0;
}

void ShmStatsSegment::withdraw() {
  if (!published_ || ::getpid() != owner_.pid) return;
  ::unlink(path_.c_str());
  published_ = false;
  tmp_path_.clear();  // renamed away: nothing left to clean up under that name
}

int list_stats_segments(const std::string& dir, const std::string& prefix,
                        std::vector<StatsFile>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return -errno;
  const std::string lead = prefix + ".";
  while (dirent* e = ::readdir(d)) {
    const char* name = e->d_name;
    if (std::strncmp(name, lead.c_str(), lead.size()) != 0) continue;
    const char* uid_begin = name + lead.size();
    const char* dot = std::strchr(uid_begin, '.');
    if (dot == nullptr) continue;
    const char* pid_end = dot + 1 + std::strlen(dot + 1);
    unsigned long long uid = 0, pid = 0;
    if (!parse_decimal(uid_begin, dot, &uid) || !parse_decimal(dot + 1, pid_end, &pid)) continue;
    if (uid > 0xffffffffull || pid == 0 || pid > 0x7fffffffull) continue;
    StatsFile f;
    f.path = dir + "/" + name;
    f.uid = static_cast<unsigned>(uid);
    f.pid = static_cast<int>(pid);
    out->push_back(std::move(f));
  }
  ::closedir(d);
  return 0;
}

int StatsView::open(const std::string& path, std::unique_ptr<StatsView>* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -errno;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = -errno;
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return -EINVAL;
  }
  // Writers never shrink a published segment, so the mapping cannot fault past the end.
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  int e = p == MAP_FAILED ? -errno : 0;
  ::close(fd);
  if (e != 0) return e;
  out->reset(new StatsView());
  (*out)->data_ = p;
  (*out)->size_ = static_cast<size_t>(st.st_size);
  (*out)->path_ = path;
  (*out)->dev_ = static_cast<uint64_t>(st.st_dev);
  (*out)->ino_ = static_cast<uint64_t>(st.st_ino);
  return 0;
}

StatsView::~StatsView() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

int remove_stats_segment(const StatsView& view) {
  // Not atomic with the unlink, but it narrows the window in which a reused pid's fresh segment
  // could be taken for the stale one from the time of reading to a few instructions.
  struct stat st {};
  if (::lstat(view.path_.c_str(), &st) != 0) return -errno;
  if (static_cast<uint64_t>(st.st_dev) != view.dev_ || static_cast<uint64_t>(st.st_ino) != view.ino_) {
    return -ESTALE;
  }
  return ::unlink(view.path_.c_str()) == 0 ? 0 : -errno;
}

}  // namespace aclvmm::drv::emu
