// Pid namespaces (docs/sharing.md §5 step 4, §12): a token names its exporter by the pid it has
// in its own pid namespace. An importer in an ancestor namespace sees the exporter under another
// pid and recognises it by the last entry of its NSpid chain; an importer in a descendant
// namespace cannot see the exporter at all and refuses to take memory from a listener it cannot
// identify (107017).
#include <sched.h>
#include <sys/wait.h>

#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using SharePidNamespaces = AclTest;

const std::vector<std::string> kInNewPidNamespace = {"/usr/bin/unshare", "--pid", "--fork", "--kill-child"};

// Whether this process may create pid namespaces (root in CI) and has unshare(1) to do it with.
bool can_make_pid_namespaces() {
  if (access(kInNewPidNamespace[0].c_str(), X_OK) != 0) return false;
  const pid_t child = fork();
  if (child == 0) _exit(unshare(CLONE_NEWPID) == 0 ? 0 : 1);
  int status = 0;
  return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(SharePidNamespaces, ImporterInAnAncestorNamespaceIsServed) {
  if (!can_make_pid_namespaces()) GTEST_SKIP() << "cannot create pid namespaces here";
  Peer e({}, true, kInNewPidNamespace);
  const auto own = e.cmd("pid");
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own[1], "1") << "the exporter is its namespace's first process";
  fill_slot(e, 0, 91);
  // The importer is invisible from inside, so only an open export can admit it.
  const uint64_t token = e.export_token(0, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  EXPECT_EQ(token & 0x3ffff, 1u) << "the token names the exporter's pid in its own namespace";
  const long long refused0 = stat_int(stats(), "ipc.impostors_refused");
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(token, 0, &h), kOk);
  void* va = reserve(k2M);
  ASSERT_EQ(aclrtMapMem(va, k2M, 0, h, 0), kOk);
  EXPECT_TRUE(get(va, k2M) == share_peer::peer_pattern(k2M, 91));
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(stat_int(stats(), "ipc.impostors_refused"), refused0);
  EXPECT_EQ(e.finish(), 0);
}

TEST_F(SharePidNamespaces, ImporterInADescendantNamespaceCannotIdentifyTheExporter) {
  if (!can_make_pid_namespaces()) GTEST_SKIP() << "cannot create pid namespaces here";
  LocalExport e = export_local(92, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  Peer im({}, true, kInNewPidNamespace);
  EXPECT_EQ(Peer::code_of(im.cmd(line("import 0", hex(e.token), 0))), kBadHandle);
  EXPECT_EQ(stat_int(im.stats(), "ipc.impostors_refused"), 1);
  EXPECT_EQ(im.finish(), 0);
  e.release();
}

}  // namespace
