// The statistics segment file among hostile users and forks (drivers/host/stats_segment.h): the
// writer creates exclusively (a planted temporary name is skipped, never opened), refuses a
// directory others can rearrange, never takes a final name that is another's, and a forked child
// stops writing into the parent's mapping; the reader copies with pread and never blocks.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/host/stats_segment.h"

namespace aclvmm::dev::host {
namespace {

constexpr size_t kSize = 4224;

uid_t nobody_uid() {
  const passwd* pw = getpwnam("nobody");
  return pw ? pw->pw_uid : 65534;
}

// A fresh directory; `mode` and `owner` are applied to it.
class SegmentDir {
 public:
  explicit SegmentDir(mode_t mode = 0700, uid_t owner = geteuid()) {
    char tmpl[] = "/tmp/aclvmm-stats-segment.XXXXXX";
    path_ = mkdtemp(tmpl);
    chmod(path_.c_str(), 0755);
    dir_ = path_ + "/d";
    mkdir(dir_.c_str(), 0700);
    if (owner != geteuid()) {
      EXPECT_EQ(chown(dir_.c_str(), owner, static_cast<gid_t>(-1)), 0);
    }
    EXPECT_EQ(chmod(dir_.c_str(), mode), 0);
  }
  ~SegmentDir() { EXPECT_EQ(system(("rm -rf '" + path_ + "'").c_str()), 0); }
  const std::string& dir() const { return dir_; }
  std::string at(const std::string& name) const { return dir_ + "/" + name; }
  std::string base() const {
    return "aclvmm." + std::to_string(geteuid()) + "." + std::to_string(getpid());
  }

 private:
  std::string path_, dir_;
};

ino_t inode(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::string contents(const std::string& path) {
  std::string out;
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "<" + std::string(strerror(errno)) + ">";
  char buf[256];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
}

// Temporary names from a list, then "fresh-<n>".
std::function<std::string()> names(std::vector<std::string> list) {
  auto state = std::make_shared<std::pair<std::vector<std::string>, size_t>>(std::move(list), 0);
  return [state] {
    const size_t i = state->second++;
    return i < state->first.size() ? state->first[i] : "fresh-" + std::to_string(i);
  };
}

// Whatever sits under a temporary name that will be tried is skipped: the next name is used, and
// the planted entry and what it points at are untouched.
TEST(StatsSegmentTest, PlantedTemporaryNamesAreSkippedNeverOpened) {
  SegmentDir d(01777);
  const std::string base = d.base();
  const std::string bait = d.at("bait");
  write_file(bait, "bait");
  write_file(d.at(base + ".file"), "planted");
  ASSERT_EQ(symlink(bait.c_str(), d.at(base + ".symlink").c_str()), 0);
  ASSERT_EQ(link(bait.c_str(), d.at(base + ".hardlink").c_str()), 0);
  ASSERT_EQ(mkfifo(d.at(base + ".fifo").c_str(), 0666), 0);
  ASSERT_EQ(mkdir(d.at(base + ".dir").c_str(), 0777), 0);
  const std::vector<std::string> planted = {"file", "symlink", "hardlink", "fifo", "dir"};
  std::vector<ino_t> before;
  for (const std::string& p : planted) before.push_back(inode(d.at(base + "." + p)));

  std::shared_ptr<StatsSegment> seg;
  ASSERT_EQ(ShmStatsSegment::create_with_names(d.dir(), "aclvmm", kSize, names(planted), &seg), 0);
  ASSERT_EQ(seg->publish(), 0);
  static_cast<char*>(seg->data())[0] = 'S';
  for (size_t i = 0; i < planted.size(); ++i) {
    EXPECT_EQ(inode(d.at(base + "." + planted[i])), before[i]) << planted[i];
  }
  EXPECT_EQ(contents(bait), "bait");
  EXPECT_EQ(contents(d.at(base + ".file")), "planted");
  struct stat st {};
  ASSERT_EQ(lstat(seg->path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(st.st_size, static_cast<off_t>(kSize));
  EXPECT_EQ(contents(seg->path())[0], 'S');
  seg->withdraw();
  EXPECT_EQ(inode(seg->path()), 0u);
}

// When every name tried is taken, there is no segment (and nothing planted is removed).
TEST(StatsSegmentTest, AllTemporaryNamesTakenMeansNoSegment) {
  SegmentDir d(01777);
  write_file(d.at(d.base() + ".taken"), "planted");
  std::shared_ptr<StatsSegment> seg;
  EXPECT_EQ(ShmStatsSegment::create_with_names(d.dir(), "aclvmm", kSize, [] { return std::string("taken"); },
                                               &seg),
            -EEXIST);
  EXPECT_EQ(seg, nullptr);
  EXPECT_EQ(contents(d.at(d.base() + ".taken")), "planted");
}

// The final name is taken only when free or ours; anything else stays, and publish fails.
TEST(StatsSegmentTest, FinalNameOfAnotherKindOrOwnerIsNotReplaced) {
  struct Row {
    const char* what;
    std::function<void(const std::string& path)> plant;
    int want;
  };
  const bool root = geteuid() == 0;
  const Row rows[] = {
      {"nothing", [](const std::string&) {}, 0},
      {"our own stale file", [](const std::string& p) { write_file(p, "stale"); }, 0},
      {"a symlink", [](const std::string& p) { ASSERT_EQ(symlink("/etc/hostname", p.c_str()), 0); }, -EEXIST},
      {"a fifo", [](const std::string& p) { ASSERT_EQ(mkfifo(p.c_str(), 0666), 0); }, -EEXIST},
      {"a directory", [](const std::string& p) { ASSERT_EQ(mkdir(p.c_str(), 0777), 0); }, -EEXIST},
      {"another user's file",
       [root](const std::string& p) {
         write_file(p, "theirs");
         if (root) {
           ASSERT_EQ(chown(p.c_str(), nobody_uid(), static_cast<gid_t>(-1)), 0);
         }
       },
       root ? -EEXIST : 0},  // without root there is no other user to plant it
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    SegmentDir d(01777);
    const std::string final_path = d.at(d.base());
    r.plant(final_path);
    const ino_t before = inode(final_path);
    std::shared_ptr<StatsSegment> seg;
    ASSERT_EQ(ShmStatsSegment::create(d.dir(), "aclvmm", kSize, &seg), 0);
    EXPECT_EQ(seg->publish(), r.want);
    if (r.want == 0) {
      EXPECT_NE(inode(final_path), before);
      EXPECT_EQ(contents(final_path).size(), kSize);
    } else {
      EXPECT_EQ(inode(final_path), before);
    }
    seg.reset();  // an unpublished segment takes its temporary name with it
    int entries = 0;
    if (DIR* dir = opendir(d.dir().c_str())) {
      while (dirent* e = readdir(dir)) entries += e->d_name[0] != '.';
      closedir(dir);
    }
    EXPECT_EQ(entries, 1) << "the final name only, no temporary file";
  }
}

// Directories whose names someone else can rearrange are refused (-EPERM); sticky ones, and
// ours or root's that only the owner writes, are used.
TEST(StatsSegmentTest, DirectoryTrustTable) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make directories of another owner";
  const uid_t other = nobody_uid();
  struct Row {
    const char* what;
    mode_t mode;
    uid_t owner;
    int want;
  } rows[] = {
      {"ours, 0700", 0700, 0, 0},
      {"ours, 0755", 0755, 0, 0},
      {"ours, sticky 1777", 01777, 0, 0},
      {"another's, sticky 1777", 01777, other, 0},
      {"ours, 0777 without sticky", 0777, 0, -EPERM},
      {"ours, 0775 without sticky", 0775, 0, -EPERM},
      {"ours, 0757 without sticky", 0757, 0, -EPERM},
      {"another's, 0755", 0755, other, -EPERM},
      {"another's, 0777", 0777, other, -EPERM},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    SegmentDir d(r.mode, r.owner);
    std::shared_ptr<StatsSegment> seg;
    EXPECT_EQ(ShmStatsSegment::create(d.dir(), "aclvmm", kSize, &seg), r.want);
    if (seg) {
      EXPECT_EQ(seg->publish(), 0);
    }
  }
}

// A forked child's writes go to a private copy: the parent's file keeps the parent's bytes, and
// the child neither publishes nor removes the parent's file.
TEST(StatsSegmentTest, ForkedChildWritesStayInTheChild) {
  SegmentDir d(01777);
  std::shared_ptr<StatsSegment> seg;
  ASSERT_EQ(ShmStatsSegment::create(d.dir(), "aclvmm", kSize, &seg), 0);
  ASSERT_EQ(seg->publish(), 0);
  auto* counter = static_cast<std::atomic<uint64_t>*>(seg->data());
  counter->store(5);
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 0;
    if (counter->load() != 5) rc |= 1;  // the parent's value came along
    counter->fetch_add(100);           // a charge in the child
    if (seg->publish() == 0) rc |= 2;
    seg->withdraw();
    seg.reset();
    _exit(rc);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(counter->load(), 5u);
  std::unique_ptr<StatsView> view;
  ASSERT_EQ(StatsView::open(seg->path(), kSize, &view), 0);
  uint64_t on_file = 0;
  std::memcpy(&on_file, view->data(), sizeof on_file);
  EXPECT_EQ(on_file, 5u);
  seg->withdraw();
  EXPECT_EQ(inode(seg->path()), 0u);
}

// The reader: exactly `size` bytes of a regular file, whatever else the name is.
TEST(StatsSegmentTest, ViewReadsOnlyRegularFilesLargeEnough) {
  SegmentDir d(0700);
  const std::string full(kSize, 'A');
  write_file(d.at("full"), full);
  write_file(d.at("page"), std::string(4096, 'A'));
  write_file(d.at("empty"), "");
  write_file(d.at("huge"), full);
  ASSERT_EQ(truncate(d.at("huge").c_str(), off_t(1) << 40), 0);  // sparse
  ASSERT_EQ(mkfifo(d.at("fifo").c_str(), 0666), 0);
  ASSERT_EQ(symlink(d.at("full").c_str(), d.at("symlink").c_str()), 0);
  ASSERT_EQ(mkdir(d.at("dir").c_str(), 0700), 0);
  struct Row {
    const char* name;
    int want;
  } rows[] = {{"full", 0}, {"huge", 0}, {"page", -EINVAL}, {"empty", -EINVAL}, {"fifo", -EINVAL},
              {"symlink", -EINVAL}, {"dir", -EINVAL}, {"missing", -ENOENT}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    std::unique_ptr<StatsView> view;
    EXPECT_EQ(StatsView::open(d.at(r.name), kSize, &view), r.want);
    if (r.want == 0) {
      ASSERT_NE(view, nullptr);
      EXPECT_EQ(view->size(), kSize);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(view->data()) % 64, 0u);
      EXPECT_EQ(std::string(static_cast<const char*>(view->data()), kSize), full);
      EXPECT_EQ(view->file_uid(), geteuid());
    }
  }
}

}  // namespace
}  // namespace aclvmm::dev::host
