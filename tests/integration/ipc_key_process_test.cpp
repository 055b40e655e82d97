// IPC memory by key between real processes (runtime-extra.md §3, §11): the whitelist with its
// stamps, keys without a whitelist, what outlives a closed key, freed memory or an exporter that
// is gone, import counts per process and device, close order, reset and finalize, the exporter's
// denial count, concurrent importers. The other processes are aclvmm_ipc_peer
// (integration/ipc_peer/); the gtest process exports or imports through the API itself. Bytes are
// compared in full on the side that reads them (a peer's "check" answers "0 1" when they match).
#include <fstream>

#include "integration/ipc_peer/ipc_client.h"

namespace ipc_key_process {

using namespace ipc_key_test;
using IpcKeyProcess = AclTest;

long long own_stat(const std::string& dotted) { return stat_int(stats(), dotted); }

// A whitelisted process imports and shares the bytes both ways; a process that is not listed is
// refused, and the exporter counts each refusal.
TEST_F(IpcKeyProcess, WhitelistedImporterSharesBytesBothWays) {
  IpcLocalKey k = ipc_local_key(11);
  ASSERT_EQ(k.key.size(), 64u);
  char tgid[16];
  std::snprintf(tgid, sizeof tgid, "%08x", static_cast<unsigned>(getpid()));
  EXPECT_EQ(k.key.substr(0, 8), tgid) << "§3.1: the exporter's bare tgid leads the key";
  IpcPeer listed, stranger;
  const int32_t pid = listed.tgid();
  ASSERT_EQ(pid, listed.pid());  // no container here: the bare tgid is the pid
  const long long denied0 = own_stat("ipc.imports_denied");
  ASSERT_EQ(ipc_set_pids(k.key, {pid}), kOk);
  EXPECT_EQ(stranger.import_key(0, k.key), kDrv);
  uint64_t address = 0;
  ASSERT_EQ(listed.import_key(0, k.key, 0, &address), kOk);
  EXPECT_NE(address, 0u);
  EXPECT_EQ(listed.cmd("range 0"),
            (std::vector<std::string>{"0", hex(address), std::to_string(k2M)}));
  EXPECT_EQ(listed.check(0, 0, k2M, 11), ipc_same());
  // Importer → exporter.
  ASSERT_EQ(listed.write(0, 4096, 65536, 12), kOk);
  EXPECT_TRUE(ipc_holds(at(k.va, 4096), 65536, 12));
  EXPECT_TRUE(ipc_holds(k.va, 4096, 11)) << "the bytes before the write are unchanged";
  // Exporter → importer.
  h2d(at(k.va, k2M - 8192), share_peer::peer_pattern(8192, 13));
  EXPECT_EQ(listed.check(0, k2M - 8192, 8192, 13), ipc_same());
  EXPECT_EQ(stranger.import_key(0, k.key), kDrv) << "still refused";
  EXPECT_EQ(own_stat("ipc.imports_denied") - denied0, 2);
  EXPECT_EQ(stranger.stat("ipc.imports_denied"), 0) << "the refused importer counts nothing";
  EXPECT_EQ(listed.stat("live.ipc_imports"), 1);
  EXPECT_EQ(stranger.stat("live.ipc_imports"), 0);
  EXPECT_EQ(own_stat("live.ipc_keys"), 1);
  EXPECT_EQ(listed.close_key(k.key), kOk);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(own_stat("live.ipc_keys"), 0);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(listed.finish(), 0);
  EXPECT_EQ(stranger.finish(), 0);
}

// §3.4: "a process may import only if it started before its pid was (last) added". Process A is
// listed and exits; process B is made to get A's pid (ns_last_pid, root only) and is refused;
// listing the pid again, after B started, admits B.
TEST_F(IpcKeyProcess, PidListedBeforeTheImporterStartedIsRefused) {
  if (access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) {
    GTEST_SKIP() << "cannot write /proc/sys/kernel/ns_last_pid: pid reuse cannot be arranged";
  }
  IpcLocalKey k = ipc_local_key(14);
  pid_t victim = -1;
  {
    IpcPeer a;
    const int32_t pid = a.tgid();
    victim = a.pid();
    ASSERT_EQ(pid, victim);
    ASSERT_EQ(ipc_set_pids(k.key, {pid}), kOk);
    EXPECT_EQ(a.finish(), 0);
  }
  usleep(30 * 1000);  // more than one clock tick between the listing and B's start
  std::unique_ptr<IpcPeer> b;
  for (int attempt = 0; attempt < 200 && !b; ++attempt) {
    {
      std::ofstream f("/proc/sys/kernel/ns_last_pid");
      f << victim - 1;
      if (!f.flush()) break;
    }
    auto p = std::make_unique<IpcPeer>(std::vector<std::string>{}, false);
    if (p->pid() == victim) b = std::move(p);  // others forked in between: try again
  }
  if (!b) GTEST_SKIP() << "pid " << victim << " could not be reused (busy machine?)";
  ASSERT_EQ(b->rc("init"), kOk);
  ASSERT_EQ(b->rc("dev 0"), kOk);
  EXPECT_EQ(b->tgid(), victim);
  const long long denied0 = own_stat("ipc.imports_denied");
  EXPECT_EQ(b->import_key(0, k.key), kDrv);
  EXPECT_EQ(own_stat("ipc.imports_denied") - denied0, 1);
  // The pid listed again after B started: B may import.
  ASSERT_EQ(ipc_set_pids(k.key, {victim}), kOk);
  ASSERT_EQ(b->import_key(0, k.key), kOk);
  EXPECT_EQ(b->check(0, 0, k2M, 14), ipc_same());
  EXPECT_EQ(b->close_key(k.key), kOk);
  EXPECT_EQ(b->finish(), 0);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
}

// §3.4 codes that need a second process or a real whitelist: set-pid by a non-exporter, on a
// DISABLE_PID_VALIDATION key by anyone, more than 31 pids, nothing left once 0 and the exporter's
// own pid are skipped; and the exporter can never list itself.
TEST_F(IpcKeyProcess, SetImportPidCodes) {
  IpcLocalKey k = ipc_local_key(21);
  IpcLocalKey open = ipc_local_key(22, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  IpcPeer other;
  const int32_t opid = other.tgid();
  const int32_t self = getpid();
  EXPECT_EQ(other.set_pids(k.key, {opid}), kDrv) << "step 10: not the exporter";
  EXPECT_EQ(other.import_key(0, k.key), kDrv) << "the attempt listed nobody";
  EXPECT_EQ(ipc_set_pids(open.key, {opid}), 207006) << "step 8, the exporter";
  EXPECT_EQ(other.set_pids(open.key, {opid}), 207006) << "step 8 precedes step 10";
  std::vector<int32_t> many(32);
  for (size_t i = 0; i < many.size(); ++i) many[i] = 0x40000000 + static_cast<int32_t>(i);
  EXPECT_EQ(aclrtIpcMemSetImportPid(k.key.c_str(), many.data(), 32), kRtParam);
  EXPECT_EQ(aclrtIpcMemSetImportPid(k.key.c_str(), many.data(), 31), kOk);
  EXPECT_EQ(ipc_set_pids(k.key, {0, 0, 0}), kDrv) << "all zero";
  EXPECT_EQ(ipc_set_pids(k.key, {self}), kDrv) << "own pid only";
  EXPECT_EQ(ipc_set_pids(k.key, {0, self, self, 0}), kDrv) << "zeros and own pid";
  EXPECT_EQ(other.import_key(0, k.key), kDrv);
  EXPECT_EQ(ipc_set_pids(k.key, {0, self, opid}), kOk) << "the others are skipped";
  ASSERT_EQ(other.import_key(0, k.key), kOk);
  EXPECT_EQ(other.check(0, 0, k2M, 21), ipc_same());
  // The exporter is never on its own whitelist.
  void* p = nullptr;
  EXPECT_EQ(aclrtIpcMemImportByKey(&p, k.key.c_str(), 0), kDrv);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(other.close_key(k.key), kOk);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(aclrtFree(open.va), kOk);
  EXPECT_EQ(other.finish(), 0);
}

// §3.4 step 11: the whitelist holds 32768 pids. 1057 calls of 31 made-up pids (above any pid_max)
// list 32767; a call adding two more is refused whole, one more fills it, a new one is then
// refused, and pids already listed can still be refreshed.
TEST_F(IpcKeyProcess, WhitelistHolds32768Pids) {
  IpcLocalKey k = ipc_local_key(23);
  IpcPeer late;
  const int32_t lpid = late.tgid();
  std::vector<int32_t> batch(31);
  int32_t next = 0x40000000;
  for (int call = 0; call < 1057; ++call) {
    for (int32_t& p : batch) p = next++;
    ASSERT_EQ(aclrtIpcMemSetImportPid(k.key.c_str(), batch.data(), batch.size()), kOk)
        << "call " << call;
  }
  ASSERT_EQ(next - 0x40000000, 32767);
  EXPECT_EQ(ipc_set_pids(k.key, {lpid, next}), kDrv) << "32769 entries";
  EXPECT_EQ(late.import_key(0, k.key), kDrv) << "the refused call listed nobody";
  EXPECT_EQ(ipc_set_pids(k.key, {lpid}), kOk) << "the 32768th";
  EXPECT_EQ(ipc_set_pids(k.key, {next}), kDrv) << "full";
  EXPECT_EQ(ipc_set_pids(k.key, {0x40000000, lpid, next - 1}), kOk) << "refreshing listed pids";
  ASSERT_EQ(late.import_key(0, k.key), kOk);
  EXPECT_EQ(late.check(0, 0, k2M, 23), ipc_same());
  EXPECT_EQ(late.close_key(k.key), kOk);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(late.finish(), 0);
}

// Flags 1: any process imports, and the exporter itself gets a second address for the same bytes
// (its first close ends that import, the second the key). A whitelisted key of its own it cannot
// import, and the refusal is counted.
TEST_F(IpcKeyProcess, NoWhitelistKeyAnyProcessAndTheExporterItself) {
  IpcLocalKey k = ipc_local_key(31, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  IpcPeer a, b;
  for (IpcPeer* p : {&a, &b}) {
    ASSERT_EQ(p->import_key(0, k.key), kOk);
    EXPECT_EQ(p->check(0, 0, k2M, 31), ipc_same());
  }
  ASSERT_EQ(a.write(0, 0, 4096, 32), kOk);
  EXPECT_EQ(b.check(0, 0, 4096, 32), ipc_same());
  EXPECT_TRUE(ipc_holds(k.va, 4096, 32));

  void* second = nullptr;
  ASSERT_EQ(aclrtIpcMemImportByKey(&second, k.key.c_str(), 0), kOk);
  EXPECT_NE(second, nullptr);
  EXPECT_NE(second, k.va);
  EXPECT_TRUE(ipc_holds(second, 4096, 32));
  EXPECT_EQ(get(at(second, 4096), k2M - 4096), share_peer::peer_pattern(k2M, 31).substr(4096));
  h2d(at(second, 8192), share_peer::peer_pattern(4096, 33));
  EXPECT_TRUE(ipc_holds(at(k.va, 8192), 4096, 33));
  EXPECT_EQ(a.check(0, 8192, 4096, 33), ipc_same());
  EXPECT_EQ(aclrtFree(second), kRtParam) << "deliberate: close it instead";
  EXPECT_EQ(own_stat("live.ipc_imports"), 1);
  EXPECT_EQ(own_stat("live.ipc_keys"), 1);
  ASSERT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(own_stat("live.ipc_imports"), 0) << "the first close ended the import";
  EXPECT_EQ(own_stat("live.ipc_keys"), 1);
  ASSERT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(own_stat("live.ipc_keys"), 0) << "the second close ended the key";
  EXPECT_EQ(b.check(0, 0, 4096, 32), ipc_same()) << "importers keep the bytes";

  IpcLocalKey w = ipc_local_key(34);
  const long long denied0 = own_stat("ipc.imports_denied");
  void* p = nullptr;
  EXPECT_EQ(aclrtIpcMemImportByKey(&p, w.key.c_str(), 0), kDrv);
  EXPECT_EQ(own_stat("ipc.imports_denied") - denied0, 1);
  EXPECT_EQ(aclrtIpcMemClose(w.key.c_str()), kOk);
  EXPECT_EQ(a.close_key(k.key), kOk);
  EXPECT_EQ(b.close_key(k.key), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(aclrtFree(w.va), kOk);
  EXPECT_EQ(a.finish(), 0);
  EXPECT_EQ(b.finish(), 0);
}

// §3.6: after the exporter closes its key, the import keeps the bytes both ways; no new import,
// even by a listed process. A key closed after it served an import answers set-pid and close with
// 107017 (§3.4 step 9 comes before step 10, so for any caller), one closed before: 507899.
TEST_F(IpcKeyProcess, ImportsOutliveTheClosedKey) {
  IpcLocalKey k = ipc_local_key(41);
  IpcLocalKey unused = ipc_local_key(42);
  IpcPeer first, second;
  const int32_t p1 = first.tgid(), p2 = second.tgid();
  ASSERT_EQ(ipc_set_pids(k.key, {p1, p2}), kOk);
  ASSERT_EQ(ipc_set_pids(unused.key, {p1}), kOk);
  ASSERT_EQ(first.import_key(0, k.key), kOk);
  ASSERT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(own_stat("live.ipc_keys"), 1) << "only the unused key";
  EXPECT_EQ(first.check(0, 0, k2M, 41), ipc_same());
  ASSERT_EQ(first.write(0, 0, 4096, 43), kOk);
  EXPECT_TRUE(ipc_holds(k.va, 4096, 43));
  h2d(at(k.va, 4096), share_peer::peer_pattern(4096, 44));
  EXPECT_EQ(first.check(0, 4096, 4096, 44), ipc_same());
  EXPECT_EQ(second.import_key(0, k.key), kDrv) << "a listed process, after the close";
  EXPECT_EQ(ipc_set_pids(k.key, {p2}), kBadHandle) << "served, then closed";
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kBadHandle) << "served, then closed";
  // §3.4 puts step 9 (107017) before step 10, but only the exporter remembers a closed key: its
  // endpoint is gone, so another process learns nothing of it (docs/sharing.md §14).
  EXPECT_EQ(second.set_pids(k.key, {p2}), kDrv) << "not the exporter: the key is unknown to it";
  EXPECT_EQ(second.close_key(k.key), kDrv) << "§3.6: not the caller's key";
  ASSERT_EQ(aclrtIpcMemClose(unused.key.c_str()), kOk);
  EXPECT_EQ(ipc_set_pids(unused.key, {p1}), kDrv) << "closed before it served";
  EXPECT_EQ(aclrtIpcMemClose(unused.key.c_str()), kDrv) << "closed before it served";
  EXPECT_EQ(first.import_key(1, unused.key), kDrv);
  EXPECT_EQ(first.stat("live.ipc_imports"), 1);
  EXPECT_EQ(first.close_key(k.key), kOk) << "the importer closes last";
  EXPECT_EQ(first.stat("live.ipc_imports"), 0);
  EXPECT_EQ(first.import_key(0, k.key), kDrv);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(aclrtFree(unused.va), kOk);
  EXPECT_EQ(first.finish(), 0);
  EXPECT_EQ(second.finish(), 0);
}

// §3.6: after the exporter frees the memory (aclrtFree of a block; unmap, release and free of a
// VMM mapping in a peer exporter), the import keeps the bytes, new imports get 507899, and the
// exporter's close still returns 0.
TEST_F(IpcKeyProcess, ImportsOutliveFreedMemory) {
  {
    SCOPED_TRACE("aclrtFree in the gtest process");
    IpcLocalKey k = ipc_local_key(51);
    IpcPeer first, second;
    ASSERT_EQ(ipc_set_pids(k.key, {first.tgid(), second.tgid()}), kOk);
    ASSERT_EQ(first.import_key(0, k.key), kOk);
    ASSERT_EQ(aclrtFree(k.va), kOk);
    EXPECT_EQ(first.check(0, 0, k2M, 51), ipc_same());
    ASSERT_EQ(first.write(0, 0, 4096, 52), kOk);
    EXPECT_EQ(first.check(0, 0, 4096, 52), ipc_same());
    EXPECT_EQ(second.import_key(0, k.key), kDrv);
    EXPECT_EQ(own_stat("live.ipc_keys"), 1) << "the key lives until closed";
    EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
    EXPECT_EQ(own_stat("live.ipc_keys"), 0);
    EXPECT_EQ(first.check(0, 0, 4096, 52), ipc_same());
    EXPECT_EQ(first.close_key(k.key), kOk);
    EXPECT_EQ(first.finish(), 0);
    EXPECT_EQ(second.finish(), 0);
  }
  {
    SCOPED_TRACE("a VMM mapping unmapped and freed in a peer exporter");
    IpcPeer exporter, importer, late;
    ASSERT_EQ(exporter.rc(line("vmm", 0, 0, k2M)), kOk);
    ASSERT_EQ(exporter.write(0, 0, k2M, 53), kOk);
    const std::string key = exporter.export_key(0, k2M);
    ASSERT_EQ(exporter.set_pids(key, {importer.tgid(), late.tgid()}), kOk);
    ASSERT_EQ(importer.import_key(0, key), kOk);
    ASSERT_EQ(exporter.rc("vfree 0"), kOk);
    EXPECT_EQ(importer.check(0, 0, k2M, 53), ipc_same());
    ASSERT_EQ(importer.write(0, k2M - 4096, 4096, 54), kOk);
    EXPECT_EQ(importer.check(0, k2M - 4096, 4096, 54), ipc_same());
    EXPECT_EQ(late.import_key(0, key), kDrv);
    EXPECT_EQ(exporter.close_key(key), kOk);
    EXPECT_EQ(exporter.stat("live.ipc_keys"), 0);
    EXPECT_EQ(importer.close_key(key), kOk);
    EXPECT_EQ(importer.stat("live.ipc_imports"), 0);
    EXPECT_EQ(exporter.finish(), 0);
    EXPECT_EQ(importer.finish(), 0);
    EXPECT_EQ(late.finish(), 0);
  }
}

// The exporter process ends (normally, and by SIGKILL) while an importer holds its key: the
// importer keeps the bytes both ways; new imports get 507899 at once (every peer reply is awaited
// with a bound); the importer's own second import still finds its import (§3.5 step 7 comes before
// step 8) and two closes end it.
TEST_F(IpcKeyProcess, ImportsOutliveTheExporterProcess) {
  for (const bool killed : {false, true}) {
    SCOPED_TRACE(killed ? "exporter killed" : "exporter exited");
    IpcPeer importer, late;
    std::string key;
    uint64_t address = 0;
    {
      IpcPeer exporter;
      exporter.fill(0, 61);
      key = exporter.export_key(0, k2M);
      ASSERT_EQ(exporter.set_pids(key, {importer.tgid(), late.tgid()}), kOk);
      ASSERT_EQ(importer.import_key(0, key, 0, &address), kOk);
      if (killed) {
        EXPECT_EQ(exporter.kill_and_wait(), 128 + SIGKILL);
      } else {
        EXPECT_EQ(exporter.finish(), 0);
      }
    }
    EXPECT_EQ(importer.check(0, 0, k2M, 61), ipc_same());
    ASSERT_EQ(importer.write(0, 0, 4096, 62), kOk);
    EXPECT_EQ(importer.check(0, 0, 4096, 62), ipc_same());
    EXPECT_EQ(late.import_key(0, key), kDrv);
    EXPECT_EQ(late.import_key(0, key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), kDrv);
    uint64_t again = 0;
    EXPECT_EQ(importer.import_key(1, key, 0, &again), kOk);
    EXPECT_EQ(again, address);
    EXPECT_EQ(importer.stat("live.ipc_imports"), 1);
    EXPECT_EQ(importer.close_key(key), kOk);
    EXPECT_EQ(importer.check(0, 0, 4096, 62), ipc_same()) << "one import is still open";
    EXPECT_EQ(importer.close_key(key), kOk);
    EXPECT_EQ(importer.stat("live.ipc_imports"), 0);
    EXPECT_EQ(importer.import_key(0, key), kDrv);
    EXPECT_EQ(importer.close_key(key), kDrv) << "neither an import nor a key of its own";
    EXPECT_EQ(importer.finish(), 0);
    EXPECT_EQ(late.finish(), 0);
  }
}

// §3.5 steps 7 and 10: importing a key twice in one process gives the same address and needs two
// closes; while the key is held on one device, importing it onto another is refused (with or
// without ENABLE_PEER_ACCESS); once closed it may be imported there.
TEST_F(IpcKeyProcess, ImportCountsPerProcessAndDevice) {
  IpcLocalKey k = ipc_local_key(71);
  IpcPeer p;
  ASSERT_EQ(ipc_set_pids(k.key, {p.tgid()}), kOk);
  uint64_t a1 = 0, a2 = 0, a3 = 0;
  ASSERT_EQ(p.import_key(0, k.key, 0, &a1), kOk);
  ASSERT_EQ(p.import_key(1, k.key, 0, &a2), kOk);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(p.stat("live.ipc_imports"), 1) << "one import, counted once";
  ASSERT_EQ(p.rc("dev 1"), kOk);
  EXPECT_EQ(p.import_key(2, k.key), kDrv);
  EXPECT_EQ(p.import_key(2, k.key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), kDrv);
  ASSERT_EQ(p.rc("dev 0"), kOk);
  EXPECT_EQ(p.close_key(k.key), kOk);
  EXPECT_EQ(p.stat("live.ipc_imports"), 1);
  EXPECT_EQ(p.check(0, 0, k2M, 71), ipc_same()) << "still mapped after the first close";
  EXPECT_EQ(p.close_key(k.key), kOk);
  EXPECT_EQ(p.stat("live.ipc_imports"), 0);
  EXPECT_EQ(p.close_key(k.key), kDrv) << "a third close: not its key";
  ASSERT_EQ(p.rc("dev 1"), kOk);
  ASSERT_EQ(p.import_key(2, k.key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS, &a3), kOk);
  EXPECT_EQ(p.check(2, 0, k2M, 71), ipc_same());
  EXPECT_EQ(p.close_key(k.key), kOk);
  EXPECT_EQ(p.stat("live.ipc_imports"), 0);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(p.finish(), 0);
}

// Imports onto another device than the exporter's: with ENABLE_PEER_ACCESS, and (deliberately,
// see the table of differences) without it. Bytes flow between all three.
TEST_F(IpcKeyProcess, ImportOntoAnotherDevice) {
  IpcLocalKey k = ipc_local_key(81);
  IpcPeer one, two;
  ASSERT_EQ(ipc_set_pids(k.key, {one.tgid(), two.tgid()}), kOk);
  ASSERT_EQ(one.rc("dev 1"), kOk);
  uint64_t address = 0;
  ASSERT_EQ(one.import_key(0, k.key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS, &address), kOk);
  EXPECT_EQ(one.cmd("range 0"), (std::vector<std::string>{"0", hex(address), std::to_string(k2M)}));
  EXPECT_EQ(one.check(0, 0, k2M, 81), ipc_same());
  ASSERT_EQ(one.write(0, 0, 4096, 82), kOk);
  EXPECT_TRUE(ipc_holds(k.va, 4096, 82));
  ASSERT_EQ(two.rc("dev 2"), kOk);
  ASSERT_EQ(two.import_key(0, k.key, 0), kOk);
  EXPECT_EQ(two.check(0, 0, 4096, 82), ipc_same());
  h2d(at(k.va, 4096), share_peer::peer_pattern(4096, 83));
  EXPECT_EQ(one.check(0, 4096, 4096, 83), ipc_same());
  EXPECT_EQ(two.check(0, 4096, 4096, 83), ipc_same());
  ASSERT_EQ(two.write(0, 8192, 4096, 84), kOk);
  EXPECT_EQ(one.check(0, 8192, 4096, 84), ipc_same());
  EXPECT_EQ(one.close_key(k.key), kOk);
  EXPECT_EQ(two.close_key(k.key), kOk);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(one.finish(), 0);
  EXPECT_EQ(two.finish(), 0);
}

// §3.6: "aclvmm accepts any order": importer first then exporter, and exporter first then importer,
// all closes return 0 and nothing stays live.
TEST_F(IpcKeyProcess, CloseOrderDoesNotMatter) {
  IpcLocalKey a = ipc_local_key(91), b = ipc_local_key(92);
  IpcPeer p;
  const int32_t pid = p.tgid();
  ASSERT_EQ(ipc_set_pids(a.key, {pid}), kOk);
  ASSERT_EQ(ipc_set_pids(b.key, {pid}), kOk);
  ASSERT_EQ(p.import_key(0, a.key), kOk);
  ASSERT_EQ(p.import_key(1, b.key), kOk);
  EXPECT_EQ(p.stat("live.ipc_imports"), 2);
  EXPECT_EQ(p.close_key(a.key), kOk) << "importer first";
  EXPECT_EQ(aclrtIpcMemClose(a.key.c_str()), kOk) << "exporter last";
  EXPECT_EQ(aclrtIpcMemClose(b.key.c_str()), kOk) << "exporter first";
  EXPECT_EQ(p.check(1, 0, k2M, 92), ipc_same());
  EXPECT_EQ(p.close_key(b.key), kOk) << "importer last";
  EXPECT_EQ(p.stat("live.ipc_imports"), 0);
  EXPECT_EQ(own_stat("live.ipc_keys"), 0);
  EXPECT_EQ(aclrtFree(a.va), kOk);
  EXPECT_EQ(aclrtFree(b.va), kOk);
  EXPECT_EQ(p.finish(), 0);
}

// §3.6: aclrtResetDevice (the device's last reference) and aclFinalize close the importer's
// imports; an exporter's reset destroys its keys (new imports 507899, a later close 507899) while
// its importers keep the bytes.
TEST_F(IpcKeyProcess, ResetDeviceAndFinalizeEndImportsAndKeys) {
  IpcLocalKey k = ipc_local_key(101);
  IpcPeer r, f, g;
  ASSERT_EQ(ipc_set_pids(k.key, {r.tgid(), f.tgid()}), kOk);
  ASSERT_EQ(r.import_key(0, k.key), kOk);
  EXPECT_EQ(r.stat("live.ipc_imports"), 1);
  EXPECT_EQ(r.rc("reset 0"), kOk);
  EXPECT_EQ(r.stat("live.ipc_imports"), 0);
  ASSERT_EQ(r.rc("dev 0"), kOk);
  EXPECT_EQ(r.close_key(k.key), kDrv) << "its import is gone; the key is not its own";
  ASSERT_EQ(r.import_key(0, k.key), kOk) << "a new import";
  EXPECT_EQ(r.check(0, 0, k2M, 101), ipc_same());
  ASSERT_EQ(f.import_key(0, k.key), kOk);
  EXPECT_EQ(f.stat("live.ipc_imports"), 1);
  EXPECT_EQ(f.rc("fin"), kOk);
  EXPECT_EQ(f.stat("live.ipc_imports"), 0);
  EXPECT_EQ(r.close_key(k.key), kOk);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);

  // The exporter's side: two keys, one of them imported.
  IpcPeer e;
  e.fill(0, 102);
  const std::string served = e.export_key(0, k2M, 1);
  const std::string idle = e.export_key(0, k2M, 1);
  EXPECT_EQ(e.stat("live.ipc_keys"), 2);
  ASSERT_EQ(r.import_key(1, served), kOk);
  EXPECT_EQ(e.rc("reset 0"), kOk);
  EXPECT_EQ(e.stat("live.ipc_keys"), 0);
  EXPECT_EQ(g.import_key(0, served), kDrv);
  EXPECT_EQ(g.import_key(0, idle), kDrv);
  EXPECT_EQ(r.check(1, 0, k2M, 102), ipc_same()) << "the importer keeps the bytes";
  ASSERT_EQ(e.rc("dev 0"), kOk);
  EXPECT_EQ(e.close_key(idle), kDrv);
  EXPECT_EQ(e.close_key(served), kDrv) << "§3.6: a key destroyed by the reset is no key any more";
  EXPECT_EQ(r.close_key(served), kOk);
  EXPECT_EQ(r.finish(), 0);
  EXPECT_EQ(f.finish(), 0);
  EXPECT_EQ(g.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

// §11: the exporter's ipc.imports_denied counts every refusal it makes (strangers, and its own
// import of its whitelisted key); importers count nothing.
TEST_F(IpcKeyProcess, DeniedImportsAreCountedByTheExporter) {
  IpcPeer e, listed, stranger;
  e.fill(0, 111);
  const std::string key = e.export_key(0, k2M);
  ASSERT_EQ(e.set_pids(key, {listed.tgid()}), kOk);
  const long long d0 = e.stat("ipc.imports_denied");
  const long long own0 = own_stat("ipc.imports_denied");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(stranger.import_key(0, key), kDrv);
  ASSERT_EQ(listed.import_key(0, key), kOk);
  EXPECT_EQ(listed.check(0, 0, k2M, 111), ipc_same());
  EXPECT_EQ(e.import_key(1, key), kDrv) << "the exporter's own whitelisted key";
  void* p = nullptr;
  EXPECT_EQ(aclrtIpcMemImportByKey(&p, key.c_str(), 0), kDrv) << "the gtest process is not listed";
  EXPECT_EQ(e.stat("ipc.imports_denied") - d0, 5);
  EXPECT_EQ(own_stat("ipc.imports_denied"), own0);
  EXPECT_EQ(stranger.stat("ipc.imports_denied"), 0);
  EXPECT_EQ(listed.stat("ipc.imports_denied"), 0);
  EXPECT_EQ(listed.close_key(key), kOk);
  EXPECT_EQ(e.close_key(key), kOk);
  EXPECT_EQ(e.finish(), 0);
  EXPECT_EQ(listed.finish(), 0);
  EXPECT_EQ(stranger.finish(), 0);
}

// Several processes import the same keys (one whitelisted, one without whitelist) at once: every
// request is sent before any reply is read. All succeed and see the same bytes.
TEST_F(IpcKeyProcess, ConcurrentImportersAllSucceed) {
  constexpr int kPeers = 4;
  IpcLocalKey listed = ipc_local_key(121);
  IpcLocalKey open = ipc_local_key(122, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  std::vector<std::unique_ptr<IpcPeer>> peers;
  std::vector<int32_t> pids;
  for (int i = 0; i < kPeers; ++i) {
    peers.push_back(std::make_unique<IpcPeer>());
    pids.push_back(peers.back()->tgid());
  }
  ASSERT_EQ(ipc_set_pids(listed.key, pids), kOk);
  for (auto& p : peers) {
    p->send(line("import 0", listed.key, 0));
    p->send(line("import 1", open.key, 0));
  }
  for (auto& p : peers) {
    EXPECT_EQ(Peer::code_of(p->reply("import 0")), kOk);
    EXPECT_EQ(Peer::code_of(p->reply("import 1")), kOk);
  }
  for (auto& p : peers) {
    p->send(line("check 0 0", k2M, 121));
    p->send(line("check 1 0", k2M, 122));
  }
  for (auto& p : peers) {
    EXPECT_EQ(p->reply("check 0"), ipc_same());
    EXPECT_EQ(p->reply("check 1"), ipc_same());
  }
  for (int i = 0; i < kPeers; ++i) {
    ASSERT_EQ(peers[i]->write(0, static_cast<size_t>(i) * 4096, 4096, 130 + i), kOk);
  }
  for (int i = 0; i < kPeers; ++i) {
    EXPECT_TRUE(ipc_holds(at(listed.va, static_cast<size_t>(i) * 4096), 4096, 130 + i));
    EXPECT_EQ(peers[(i + 1) % kPeers]->check(0, static_cast<size_t>(i) * 4096, 4096, 130 + i),
              ipc_same());
  }
  for (auto& p : peers) {
    EXPECT_EQ(p->close_key(listed.key), kOk);
    EXPECT_EQ(p->close_key(open.key), kOk);
    EXPECT_EQ(p->finish(), 0);
  }
  EXPECT_EQ(aclrtIpcMemClose(listed.key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(listed.va), kOk);
  EXPECT_EQ(aclrtFree(open.va), kOk);
}

}  // namespace ipc_key_process
