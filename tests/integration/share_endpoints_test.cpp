// Exports share listening endpoints (issue 19; docs/sharing.md §2): one per group of 256 share
// ids, so a process with hundreds of live exports holds a handful of listening sockets, every
// token of a group is served on the group's endpoint, and a group whose name another process
// holds is skipped whole (the kernel's refusal of a second bind keeps each group to one process).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "api/hostile_util.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"
#include "unit/testing/descriptors.h"

namespace {

using namespace share_test;
using ShareEndpoints = AclTest;

constexpr uint32_t kGroups = 64;  // share id bits 26-31
// An export that finds no share id free (docs/sharing.md §3: as with 16384 live exports).
constexpr aclError kShareIdsExhausted = 507899;

uint32_t my_pid_bits() { return static_cast<uint32_t>(getpid()) & 0x3ffff; }
std::set<uint32_t> my_endpoints() { return endpoints_of(getpid()); }
bool endpoints_become(size_t want) { return share_test::endpoints_become(getpid(), want); }
using aclvmm::testing::open_descriptors;

uint32_t group_endpoint(uint32_t group) { return share_id_for(my_pid_bits(), group << 8); }

// 600 live exports are served by the endpoints of the groups their ids fall in (three, or four
// when the random first serial sits near a group's end); each export's own descriptor is its
// memory's. A peer imports a token of the first and of the last group, and once every export
// has ended the endpoints go.
TEST_F(ShareEndpoints, ManyExportsShareTheirGroupsEndpoints) {
  ASSERT_TRUE(endpoints_become(0));
  const size_t fds0 = open_descriptors();
  constexpr size_t kExports = 600;
  std::vector<aclrtDrvMemHandle> handles;
  std::vector<uint64_t> tokens;
  std::set<uint32_t> groups;
  for (size_t i = 0; i < kExports; ++i) {
    handles.push_back(make_handle(k2M));
    uint64_t token = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(handles.back(), ACL_MEM_HANDLE_TYPE_NONE,
                                              ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token),
              kOk);
    tokens.push_back(token);
    groups.insert(endpoint_id_of(static_cast<uint32_t>(token)));
  }
  EXPECT_GE(groups.size(), 3u);
  EXPECT_LE(groups.size(), 4u);
  EXPECT_EQ(my_endpoints(), groups) << "one endpoint per group of the live exports";
  // A handle's memory and nothing more per export, plus the groups' endpoints and the listener's
  // wake object.
  EXPECT_LE(open_descriptors() - fds0, kExports + groups.size() + 1);

  Peer im;
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 0", hex(tokens.front()), 0))), kOk);
  ASSERT_EQ(Peer::code_of(im.cmd(line("import 1", hex(tokens.back()), 0))), kOk);
  EXPECT_EQ(im.finish(), 0);

  for (aclrtDrvMemHandle h : handles) ASSERT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_TRUE(endpoints_become(0)) << my_endpoints().size() << " endpoints left";
}

// Every group name but one held by somebody else: the export lands in the free group. All of
// them held: the export fails and leaves nothing (the handle exports once a name is free).
TEST_F(ShareEndpoints, GroupsHeldElsewhereAreSkipped) {
  ASSERT_TRUE(endpoints_become(0));
  const uint32_t free_group = static_cast<uint32_t>(getpid()) % kGroups;
  std::vector<int> held;
  for (uint32_t g = 0; g < kGroups; ++g) {
    if (g == free_group) continue;
    const int s = bind_endpoint_id(group_endpoint(g));
    ASSERT_GE(s, 0) << "group " << g;
    held.push_back(s);
  }
  aclrtDrvMemHandle h = make_handle(k2M);
  uint64_t token = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token), kOk);
  EXPECT_EQ(endpoint_id_of(static_cast<uint32_t>(token)), group_endpoint(free_group));
  ASSERT_EQ(aclrtFreePhysical(h), kOk);
  // The listener ends and closes the group's endpoint (the names held here have our pid bits).
  ASSERT_TRUE(endpoints_become(held.size()));

  const int last = bind_endpoint_id(group_endpoint(free_group));
  ASSERT_GE(last, 0);
  held.push_back(last);
  h = make_handle(k2M);
  token = 0;
  const aclError rc = aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token);
  EXPECT_EQ(rc, kShareIdsExhausted) << "no group left";
  EXPECT_EQ(token, 0u);
  EXPECT_EQ(my_endpoints().size(), held.size()) << "the failed export bound nothing";

  close(held.back());
  held.pop_back();
  EXPECT_EQ(aclrtMemExportToShareableHandle(h, ACL_MEM_HANDLE_TYPE_NONE, 0, &token), kOk);
  EXPECT_EQ(endpoint_id_of(static_cast<uint32_t>(token)), group_endpoint(free_group));
  ASSERT_EQ(aclrtFreePhysical(h), kOk);
  for (int s : held) close(s);
}

// Issue 19: 10 000 live exports fit in the common soft limit of 1 024 descriptors beside the
// application's own files. Their memory files and endpoints are held above the soft limit
// (drivers/emu/os/descriptor_room.h: all but a budget of 32), which is 1 024 again after every
// call; the application then opens 960 files of its own, all below it.
TEST_F(ShareEndpoints, TenThousandExportsLeaveTheApplicationsRangeFree) {
  constexpr rlim_t kSoft = 1024;
  constexpr size_t kExports = 10000;
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < kSoft + kExports + 256) {
    GTEST_SKIP() << "the hard RLIMIT_NOFILE (" << saved.rlim_max << ") cannot hold " << kExports
                 << " exports above a soft limit of " << kSoft;
  }
  rlimit low = saved;
  low.rlim_cur = kSoft;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<aclrtDrvMemHandle> handles;
  std::vector<int> own;
  size_t low_before = 0, low_after = 0;
  auto count_low = [&] {
    size_t n = 0;
    for (int fd = 0; fd < static_cast<int>(kSoft); ++fd) n += fcntl(fd, F_GETFD) >= 0;
    return n;
  };
  low_before = count_low();
  for (size_t i = 0; i < kExports && !HasFailure(); ++i) {
    handles.push_back(make_handle(k2M));
    uint64_t token = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(handles.back(), ACL_MEM_HANDLE_TYPE_NONE, 0, &token),
              kOk)
        << "export " << i;
  }
  low_after = count_low();
  rlimit now{};
  EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, kSoft) << "the soft limit is the application's";
  // The budget, and the listener's wake object.
  constexpr size_t kLowBudget = 32;  // drivers/emu/os/descriptor_room.h
  EXPECT_LE(low_after, low_before + kLowBudget + 1)
      << "descriptors the exports left in the application's range";
  for (size_t i = 0; i < 960; ++i) {
    const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << "the application's file " << i << ": " << std::strerror(errno);
    EXPECT_LT(fd, static_cast<int>(kSoft));
    own.push_back(fd);
  }
  for (int fd : own) close(fd);
  for (aclrtDrvMemHandle h : handles) EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

}  // namespace
