// The reader's side of statistics segments (stats_segment.h): listing, copying and removing the
// files of all processes, each of which may be hostile.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "drivers/host/stats_segment.h"

namespace aclvmm::dev::host {
namespace {

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

constexpr std::align_val_t kViewAlignment{64};

// pread until `size` bytes or the end of the file; the count read, or -errno.
ssize_t read_fully(int fd, void* buf, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, size - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -errno;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

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

int StatsView::open(const std::string& path, size_t size, std::unique_ptr<StatsView>* out) {
  if (size == 0) return -EINVAL;
  // Only a regular file is opened: a fifo would block the open, a device may do anything.
  struct stat before {};
  if (::lstat(path.c_str(), &before) != 0) return -errno;
  if (!S_ISREG(before.st_mode)) return -EINVAL;
  // O_NONBLOCK: should the name become a fifo after the lstat, the open does not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -errno;
  struct stat st {};
  int rc = 0;
  if (::fstat(fd, &st) != 0) {
    rc = -errno;
  } else if (!S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(size)) {
    rc = -EINVAL;
  }
  void* buf = nullptr;
  if (rc == 0) {
    buf = ::operator new(size, kViewAlignment, std::nothrow);
    if (buf == nullptr) rc = -ENOMEM;
  }
  if (rc == 0) {
    // A file that shrank since the fstat reads short: not a segment (any more).
    const ssize_t got = read_fully(fd, buf, size);
    if (got < 0) rc = static_cast<int>(got);
    else if (static_cast<size_t>(got) != size) rc = -EINVAL;
  }
  ::close(fd);
  if (rc != 0) {
    if (buf) ::operator delete(buf, kViewAlignment);
    return rc;
  }
  std::unique_ptr<StatsView> view(new (std::nothrow) StatsView());
  if (!view) {
    ::operator delete(buf, kViewAlignment);
    return -ENOMEM;
  }
  view->data_ = buf;
  view->size_ = size;
  view->path_ = path;
  view->uid_ = static_cast<unsigned>(st.st_uid);
  view->dev_ = static_cast<uint64_t>(st.st_dev);
  view->ino_ = static_cast<uint64_t>(st.st_ino);
  *out = std::move(view);
  return 0;
}

StatsView::~StatsView() {
  if (data_ != nullptr) ::operator delete(data_, kViewAlignment);
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

}  // namespace aclvmm::dev::host
