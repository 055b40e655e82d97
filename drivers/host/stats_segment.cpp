// The writer's side of statistics segments: exclusive creation in a shared directory, publication,
// withdrawal, and what a forked child does with its parent's segment (stats_segment.h).
#include "drivers/host/stats_segment.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

#include "drivers/host/process_facts.h"

namespace aclvmm::dev::host {

// The segments this process created and still maps shared, so that a fork child can make its
// copies private before it runs any code of its own. Held across fork() by the atfork handlers:
// the list is consistent in the child.
struct SegmentRegistry {
  static std::mutex mu;
  static ShmStatsSegment* head;

  static void add(ShmStatsSegment* s) {
    std::lock_guard<std::mutex> lock(mu);
    s->next_ = head;
    if (head) head->prev_ = s;
    head = s;
  }
  static void remove_locked(ShmStatsSegment* s) {
    if (s->prev_) s->prev_->next_ = s->next_;
    if (s->next_) s->next_->prev_ = s->prev_;
    if (head == s) head = s->next_;
    s->prev_ = s->next_ = nullptr;
  }
  static void remove(ShmStatsSegment* s) {
    std::lock_guard<std::mutex> lock(mu);
    remove_locked(s);
  }
  static void before_fork() { mu.lock(); }
  static void after_fork_parent() { mu.unlock(); }
  static void after_fork_child() {
    while (ShmStatsSegment* s = head) {
      s->detach_after_fork();
      remove_locked(s);  // private now: the child's own children need nothing done
    }
    mu.unlock();
  }
};
std::mutex SegmentRegistry::mu;
ShmStatsSegment* SegmentRegistry::head = nullptr;

namespace {

// Installed when the library is loaded, before anything can fork with a segment: child handlers
// run in the order of installation, so a later one (the runtime's own fork handling) finds the
// child's copies private already.
struct InstallForkHandlers {
  InstallForkHandlers() {
    pthread_atfork(&SegmentRegistry::before_fork, &SegmentRegistry::after_fork_parent,
                   &SegmentRegistry::after_fork_child);
  }
} install_fork_handlers;

}  // namespace

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

// A temporary name nobody can guess ahead: 64 random bits. The exclusive create is what makes it
// safe; unpredictability only keeps another user from occupying every name we would try.
std::string random_temp_name() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    r = (static_cast<uint64_t>(ts.tv_nsec) << 20) ^ static_cast<uint64_t>(ts.tv_sec) ^
        (static_cast<uint64_t>(::getpid()) << 40) ^ reinterpret_cast<uintptr_t>(&r);
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "tmp-%016llx", static_cast<unsigned long long>(r));
  return buf;
}

// A directory whose names nobody else can rearrange: sticky (like /dev/shm and /tmp: a name
// belongs to the file's owner), or owned by us or root and writable by no one else.
int check_directory(int dir_fd, struct stat* out) {
  struct stat& st = *out;
  if (::fstat(dir_fd, &st) != 0) return -errno;
  if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
  if (st.st_mode & S_ISVTX) return 0;
  const bool trusted_owner = st.st_uid == ::geteuid() || st.st_uid == 0;
  if (!trusted_owner || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return -EPERM;
  return 0;
}

constexpr int kTempNameAttempts = 32;

}  // namespace

int ShmStatsSegment::create(const std::string& dir, const std::string& prefix, size_t size,
                            std::shared_ptr<StatsSegment>* out) {
  return create_with_names(dir, prefix, size, random_temp_name, out);
}

int ShmStatsSegment::create_with_names(const std::string& dir, const std::string& prefix,
                                       size_t size,
                                       const std::function<std::string()>& next_temp_name,
                                       std::shared_ptr<StatsSegment>* out) {
  if (size == 0 || out == nullptr) return -EINVAL;
  std::unique_ptr<ShmStatsSegment> seg(new (std::nothrow) ShmStatsSegment());
  if (!seg) return -ENOMEM;
  seg->owner_.pid = static_cast<int>(::getpid());
  // The effective uid: the one the kernel makes the file's owner, which readers check.
  seg->owner_.uid = static_cast<unsigned>(::geteuid());
  seg->owner_.start_time = process_start_time(seg->owner_.pid);
  seg->owner_.name = own_comm();
  seg->owner_.pid_namespace = own_pid_namespace();
  seg->name_ = prefix + "." + std::to_string(seg->owner_.uid) + "." + std::to_string(seg->owner_.pid);
  seg->path_ = dir + "/" + seg->name_;

  seg->dir_ = dir;
  seg->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (seg->dir_fd_ < 0) return -errno;
  struct stat dst {};
  if (int rc = check_directory(seg->dir_fd_, &dst)) return rc;
  seg->dir_dev_ = static_cast<uint64_t>(dst.st_dev);
  seg->dir_ino_ = static_cast<uint64_t>(dst.st_ino);

  // Exclusive: a name someone planted (a file, a link, a fifo) is never opened, only skipped.
  int fd = -1;
  for (int attempt = 0; attempt < kTempNameAttempts && fd < 0; ++attempt) {
    seg->tmp_name_ = seg->name_ + "." + next_temp_name();
    fd = ::openat(seg->dir_fd_, seg->tmp_name_.c_str(),
                  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    const int rc = -errno;
    seg->tmp_name_.clear();  // not ours: never removed
    return rc;
  }
  int rc = 0;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    rc = -errno;
  } else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
    rc = -EPERM;  // not the new private file we asked for: not mapped
  }
  seg->dev_ = static_cast<uint64_t>(st.st_dev);
  seg->ino_ = static_cast<uint64_t>(st.st_ino);
  // Readable by every user's monitor whatever the umask (npu-smi shows all processes too).
  if (rc == 0 && (::fchmod(fd, 0644) != 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0)) {
    rc = -errno;
  }
  void* p = MAP_FAILED;
  if (rc == 0) {
    p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) rc = -errno;
  }
  ::close(fd);
  if (rc != 0) return rc;  // the destructor removes the temporary name
  seg->data_ = p;
  seg->size_ = size;
  SegmentRegistry::add(seg.get());
  *out = std::shared_ptr<StatsSegment>(seg.release());
  return 0;
}

ShmStatsSegment::~ShmStatsSegment() {
  SegmentRegistry::remove(this);
  close_directory();
  if (data_ != nullptr) ::munmap(data_, size_);
}

void ShmStatsSegment::close_directory() {
  if (dir_fd_ < 0) return;
  // Never published: the temporary name goes with it (only the creator's, never a child's).
  const bool creator = !inherited_ && ::getpid() == owner_.pid;
  if (creator && !tmp_name_.empty()) ::unlinkat(dir_fd_, tmp_name_.c_str(), 0);
  tmp_name_.clear();
  ::close(dir_fd_);
  dir_fd_ = -1;
}

void ShmStatsSegment::detach_after_fork() noexcept {
  inherited_ = true;
  if (data_ == nullptr) return;
  // The current bytes go along, so the child's own uncharges of inherited memory stay balanced.
  void* copy = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy != MAP_FAILED) {
    std::memcpy(copy, data_, size_);
    if (::mremap(copy, size_, size_, MREMAP_MAYMOVE | MREMAP_FIXED, data_) != MAP_FAILED) return;
    ::munmap(copy, size_);
  }
  // No memory for a copy: private zero pages at the same address (counters restart at 0 here).
  (void)::mmap(data_, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

int ShmStatsSegment::publish() {
  if (inherited_ || dir_fd_ < 0 || tmp_name_.empty()) return -EPERM;
  // The final name is taken only when it is free or holds a regular file of our own uid (a
  // segment left by a dead process that had our pid). Anything else there belongs to someone
  // else, and we go on without publishing rather than replace it: a sticky directory would
  // refuse that to anyone but root, and root must not either.
  int rc = ::renameat2(dir_fd_, tmp_name_.c_str(), dir_fd_, name_.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EEXIST || errno == EINVAL || errno == ENOSYS)) {
    struct stat st {};
    if (::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid())) {
      close_directory();
      return -EEXIST;
    }
    // Our own leftover (nobody else can replace it in a directory check_directory accepted), or
    // a file system without RENAME_NOREPLACE.
    rc = ::renameat(dir_fd_, tmp_name_.c_str(), dir_fd_, name_.c_str());
  }
  if (rc != 0) {
    rc = -errno;
    close_directory();
    return rc;
  }
  published_ = true;
  tmp_name_.clear();  // renamed away: nothing left to clean up under that name
  close_directory();
  return 0;
}

void ShmStatsSegment::withdraw() {
  if (!published_ || inherited_ || ::getpid() != owner_.pid) return;
  published_ = false;
  // Only in the directory that was checked, and only while the name is still our file.
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return;
  struct stat st {};
  if (::fstat(dir_fd, &st) == 0 && static_cast<uint64_t>(st.st_dev) == dir_dev_ &&
      static_cast<uint64_t>(st.st_ino) == dir_ino_ &&
      ::fstatat(dir_fd, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      static_cast<uint64_t>(st.st_dev) == dev_ && static_cast<uint64_t>(st.st_ino) == ino_) {
    ::unlinkat(dir_fd, name_.c_str(), 0);
  }
  ::close(dir_fd);
}

}  // namespace aclvmm::dev::host
