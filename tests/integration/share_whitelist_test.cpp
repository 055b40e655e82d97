// The pid whitelist of shareable handles, enforced by the exporting process with the credentials
// the kernel reports for the importer (behavior.md section 7 "Whitelist" and "V1 import",
// emulation.md section 5). The importers are real processes (aclvmm_share_peer); their pids come
// from aclrtDeviceGetBareTgid in the importer, passed to the exporter through the peer's stdout.
#include <fstream>

#include "integration/share_peer/peer_client.h"

namespace {

using namespace share_test;
using ShareWhitelist = AclTest;

long long denied() { return stat_int(stats(), "ipc.imports_denied"); }

// A whitelisted importer succeeds and reads the exporter's bytes; a process that is not listed is
// refused with 507899 in the same run, and the exporter counts the refusal.
TEST_F(ShareWhitelist, ListedImporterSucceedsOthersAreRefused) {
  LocalExport e = export_local(41);
  Peer listed, stranger;
  int32_t pid = listed.tgid();
  EXPECT_EQ(pid, listed.pid());  // no container here: the bare tgid is the pid
  const long long denied_before = denied();
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), kOk);
  EXPECT_EQ(Peer::code_of(stranger.cmd(line("import 0", hex(e.token), 0))), kDrv);  // §7: not listed
  ASSERT_EQ(Peer::code_of(listed.cmd(line("import 0", hex(e.token), 0))), kOk);
  ASSERT_EQ(listed.rc("map 0 2097152"), kOk);
  EXPECT_EQ(listed.cmd("check 0 0 2097152 41"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(Peer::code_of(stranger.cmd(line("import 0", hex(e.token), 0))), kDrv);  // still refused
  EXPECT_EQ(denied() - denied_before, 2);
  EXPECT_EQ(listed.finish(), 0);
  EXPECT_EQ(stranger.finish(), 0);
  e.release();
}

// §7 / emulation.md §5: "pid listed before the importing process started → 507899" (pid reuse).
// A process A is whitelisted and exits; a new process B is made to get A's pid (ns_last_pid, root
// only) and is refused; re-listing B's pid (now, after B started) admits it.
TEST_F(ShareWhitelist, PidListedBeforeTheImporterStartedIsRefused) {
  if (access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) {
    GTEST_SKIP() << "cannot write /proc/sys/kernel/ns_last_pid: pid reuse cannot be arranged";
  }
  LocalExport e = export_local(43);
  pid_t victim = -1;
  {
    Peer a;
    int32_t pid = a.tgid();
    victim = a.pid();
    ASSERT_EQ(pid, victim);
    ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), kOk);
    EXPECT_EQ(a.finish(), 0);
  }
  usleep(30 * 1000);  // more than one clock tick between the listing and B's start
  std::unique_ptr<Peer> b;
  for (int attempt = 0; attempt < 200 && !b; ++attempt) {
    {
      std::ofstream f("/proc/sys/kernel/ns_last_pid");
      f << victim - 1;
      if (!f.flush()) break;
    }
    auto p = std::make_unique<Peer>(std::vector<std::string>{}, false);
    if (p->pid() == victim) b = std::move(p);  // others forked in between: try again
  }
  if (!b) GTEST_SKIP() << "pid " << victim << " could not be reused (busy machine?)";
  ASSERT_EQ(b->rc("init"), kOk);
  ASSERT_EQ(b->rc("dev 0"), kOk);
  EXPECT_EQ(b->tgid(), victim);
  const long long denied_before = denied();
  EXPECT_EQ(Peer::code_of(b->cmd(line("import 0", hex(e.token), 0))), kDrv);
  EXPECT_EQ(denied() - denied_before, 1);
  // The same pid listed again after B started: B may import.
  int32_t pid = victim;
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), kOk);
  ASSERT_EQ(Peer::code_of(b->cmd(line("import 0", hex(e.token), 0))), kOk);
  ASSERT_EQ(b->rc("map 0 2097152"), kOk);
  EXPECT_EQ(b->cmd("check 0 0 2097152 43"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(b->finish(), 0);
  e.release();
}

// The rule is about process start, not program image: a whitelisted process that execs another
// program (same pid, same start time) may still import.
TEST_F(ShareWhitelist, ListedProcessMayImportAfterExec) {
  LocalExport e = export_local(44);
  Peer p;
  int32_t pid = p.tgid();
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), kOk);
  usleep(30 * 1000);  // the exec happens clock ticks after the listing
  ASSERT_EQ(p.rc("reexec"), 0);
  auto r = p.cmd("pid");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(std::atoi(r[1].c_str()), pid);
  ASSERT_EQ(p.rc("init"), kOk);
  ASSERT_EQ(p.rc("dev 0"), kOk);
  ASSERT_EQ(Peer::code_of(p.cmd(line("import 0", hex(e.token), 0))), kOk);
  ASSERT_EQ(p.rc("map 0 2097152"), kOk);
  EXPECT_EQ(p.cmd("check 0 0 2097152 44"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(p.finish(), 0);
  e.release();
}

// behavior.md top: SetPid accumulates (later calls add pids) and repeats are harmless.
TEST_F(ShareWhitelist, SetPidAccumulatesAndToleratesRepeats) {
  LocalExport e = export_local(45);
  Peer one, two;
  int32_t p1 = one.tgid(), p2 = two.tgid();
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &p1, 1), kOk);
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(e.token, &p2, 1), kOk);
  EXPECT_EQ(aclrtMemSetPidToShareableHandle(e.token, &p1, 1), kOk);  // repeat
  int32_t both_twice[] = {p1, p2, p1, p2};
  EXPECT_EQ(aclrtMemSetPidToShareableHandle(e.token, both_twice, 4), kOk);
  for (Peer* p : {&one, &two}) {
    ASSERT_EQ(Peer::code_of(p->cmd(line("import 0", hex(e.token), 0))), kOk);
    ASSERT_EQ(p->rc("map 0 2097152"), kOk);
    EXPECT_EQ(p->cmd("check 0 0 2097152 45"), (std::vector<std::string>{"0", "1"}));
  }
  EXPECT_EQ(live_count("exports"), 1);
  EXPECT_EQ(one.finish(), 0);
  EXPECT_EQ(two.finish(), 0);
  e.release();
}

// §7: only the exporting process may set the whitelist (EACCES → 507899), with either form.
TEST_F(ShareWhitelist, OnlyTheExporterMaySetPids) {
  LocalExport e = export_local(47);
  Peer other;
  const int32_t opid = other.tgid();
  EXPECT_EQ(other.rc(line("setpid", hex(e.token), opid)), kDrv);
  EXPECT_EQ(other.rc(line("setpid2 1", hex_of(&e.token, 8), opid)), kDrv);
  // The attempt did not list it.
  EXPECT_EQ(Peer::code_of(other.cmd(line("import 0", hex(e.token), 0))), kDrv);
  EXPECT_EQ(other.finish(), 0);
  e.release();
}

// §7: an export with DISABLE_PID_VALIDATION (flags 1) can be imported by any process, and setting
// its pids is EPERM → 207006.
TEST_F(ShareWhitelist, DisablePidValidationLetsAnyProcessImport) {
  LocalExport e = export_local(49, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  Peer p;
  int32_t pid = p.tgid();
  EXPECT_EQ(aclrtMemSetPidToShareableHandle(e.token, &pid, 1), 207006);
  ASSERT_EQ(Peer::code_of(p.cmd(line("import 0", hex(e.token), 0))), kOk);
  ASSERT_EQ(p.rc("map 0 2097152"), kOk);
  EXPECT_EQ(p.cmd("check 0 0 2097152 49"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(p.finish(), 0);
  e.release();
}

// §7 "Whitelist": codes of aclrtMemSetPidToShareableHandle in the exporter.
TEST_F(ShareWhitelist, SetPidCodes) {
  LocalExport e = export_local(51);
  aclrtDrvMemHandle spare = make_handle();
  uint64_t released = 0;
  ASSERT_EQ(aclrtMemExportToShareableHandle(spare, ACL_MEM_HANDLE_TYPE_NONE, 0, &released), kOk);
  ASSERT_EQ(aclrtFreePhysical(spare), kOk);
  usleep(200 * 1000);  // the steady state; right after the release: ShareCodes.TokenIsUnknownRightAfterRelease
  int32_t self = getpid();
  int32_t zeros[3] = {0, 0, 0};
  std::vector<int32_t> many(65536, self);
  const uint64_t unknown = (e.token & 0xff00000000ull) | (share_id_of(e.token) ^ 0x5a5a5a5au);
  struct Case {
    const char* name;
    uint64_t token;
    int32_t* pids;
    size_t n;
    aclError expected;
  };
  const Case cases[] = {
      {"pid NULL", e.token, nullptr, 1, kParam},                    // ACL layer
      {"pidNum 0", e.token, &self, 0, kParam},                      // ACL layer
      {"pidNum 65536", e.token, many.data(), 65536, kRtParam},      // driver: n > 65535
      {"unknown token", unknown, &self, 1, kBadHandle},             // kernel EFAULT
      {"released token", released, &self, 1, kBadHandle},           // kernel EFAULT
      {"device field 200", (uint64_t{200} << 32) | share_id_of(e.token), &self, 1, kBadHandle},
      {"all-zero pid list", e.token, zeros, 3, kDrv},               // kernel: nothing to add
      {"zeros skipped", e.token, nullptr, 0, kOk},                  // filled below
  };
  int32_t mixed[] = {0, self, 0};
  for (Case c : cases) {
    SCOPED_TRACE(c.name);
    if (std::string(c.name) == "zeros skipped") {
      c.pids = mixed;
      c.n = 3;
    }
    EXPECT_EQ(aclrtMemSetPidToShareableHandle(c.token, c.pids, c.n), c.expected);
  }
  e.release();
}

}  // namespace
