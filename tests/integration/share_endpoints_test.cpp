// Exports share listening endpoints (issue 19; docs/sharing.md §2): one per group of 256 share
// ids, so a process with hundreds of live exports holds a handful of listening sockets, every
// token of a group is served on the group's endpoint, and a group whose name another process
// holds is skipped whole (the kernel's refusal of a second bind keeps each group to one process).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "api/hostile_util.h"
#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareEndpoints = AclTest;

constexpr uint32_t kGroups = 64;  // share id bits 26-31
// An export that finds no share id free (docs/sharing.md §3: as with 16384 live exports).
constexpr aclError kShareIdsExhausted = 507899;

uint32_t my_pid_bits() { return static_cast<uint32_t>(getpid()) & 0x3ffff; }

// This process's live endpoints (their ids), as the kernel lists them.
std::set<uint32_t> my_endpoints() {
  std::set<uint32_t> mine;
  for (uint32_t id : live_endpoint_ids()) {
    if ((id & 0x3ffff) == my_pid_bits()) mine.insert(id);
  }
  return mine;
}

// Waits up to 2 s until this process holds exactly `want` endpoints.
bool endpoints_become(size_t want) {
  for (int i = 0; i < 200; ++i) {
    if (my_endpoints().size() == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

size_t open_descriptors() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

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

}  // namespace
