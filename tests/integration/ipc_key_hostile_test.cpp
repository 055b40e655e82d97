// IPC memory by key against hostile local parties (runtime-extra.md §3, docs/sharing.md "Trust
// model"): a squatter of another user that binds a key's endpoint name and answers with memory of
// its own, an importer of another user, and a client that sends garbage to a key's endpoint.
//
// The key endpoint and its messages are spoken here without the library (the layout of
// drivers/emu/sharing/wire.h KeyRequest / KeyReply, the endpoint name of transport.cpp), replicated
// on purpose as raw_endpoint.h does for tokens. Each replica has a control case proving it right:
// binding the name of a live key fails (the name is the library's), and a well-formed request gets
// the exporter's refusal or probe answer (the layout is the library's).
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>

#include "api/hostile_util.h"
#include "integration/ipc_peer/ipc_client.h"
#include "integration/share_peer/hostile_child.h"
#include "integration/share_peer/raw_endpoint.h"

namespace ipc_key_hostile {

using namespace ipc_key_test;
using IpcKeyHostile = AclTest;

constexpr uint32_t kKeyOpen = 3, kKeyProbe = 4;
constexpr unsigned kSquatSeed = 97;

struct KeyRequestReplica {
  uint32_t magic, kind;
  int32_t device, pad;
  char key[72];
};
struct KeyReplyReplica {
  WireReply base;
  uint64_t offset, range_size;
  uint32_t page_size, pad;
};
static_assert(sizeof(KeyRequestReplica) == 88 && sizeof(KeyReplyReplica) == 56, "the key messages");

socklen_t key_endpoint(const std::string& key, sockaddr_un* a) {
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  const int n =
      std::snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "aclvmm-ipc-%.64s", key.c_str());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// Binds a key's endpoint name as anyone may for a name nobody holds (-1 when taken).
int bind_key(const std::string& key) {
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a;
  const socklen_t len = key_endpoint(key, &a);
  if (s >= 0 && (bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 64) != 0)) {
    const int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

// A connection to a key's endpoint (-1 when nobody listens).
int connect_key(const std::string& key) {
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a;
  const socklen_t len = key_endpoint(key, &a);
  if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    close(s);
    return -1;
  }
  return s;
}

std::string key_request(const std::string& key, uint32_t kind = kKeyOpen,
                        uint32_t magic = kWireMagic) {
  KeyRequestReplica r{};
  r.magic = magic;
  r.kind = kind;
  r.device = 0;
  std::memcpy(r.key, key.data(), std::min(key.size(), sizeof r.key));
  return std::string(reinterpret_cast<const char*>(&r), sizeof r);
}

// What came back on a key connection within timeout_ms.
struct KeyAnswer {
  enum { kReply, kHangUp, kSilence } kind = kSilence;
  KeyReplyReplica reply{};
  int fd = -1;
  ~KeyAnswer() {
    if (fd >= 0) close(fd);
  }
};
void await_key(int s, int timeout_ms, KeyAnswer* a) {
  pollfd p{s, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) return;
  char control[CMSG_SPACE(sizeof(int) * 4)];
  iovec iov{&a->reply, sizeof a->reply};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && errno == ECONNRESET) n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); n >= 0 && c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_type == SCM_RIGHTS) std::memcpy(&a->fd, CMSG_DATA(c), sizeof(int));
  }
  a->kind = n == static_cast<ssize_t>(sizeof a->reply) ? KeyAnswer::kReply : KeyAnswer::kHangUp;
}

// A child of another user that binds the endpoint names of `keys` and answers every request as a
// willing exporter would: code 0 and a sealed memfd of its own bytes, the whole range. It reports
// 'r' once it holds the names, and when stopped: connections accepted, requests received.
int squat_keys(const std::vector<std::string>& keys, int stop, int report) {
  std::vector<pollfd> fds{{stop, POLLIN, 0}};
  for (const std::string& k : keys) {
    const int s = bind_key(k);
    if (s < 0) return 91;
    fds.push_back({s, POLLIN, 0});
  }
  const int mem = sealed_memfd(share_peer::peer_pattern(k2M, kSquatSeed));
  if (mem < 0) return 92;
  if (write(report, "r", 1) != 1) return 93;
  long counts[2] = {0, 0};
  for (bool stopping = false; !stopping;) {
    if (poll(fds.data(), fds.size(), 20000) <= 0) return 94;
    if (fds[0].revents) {
      stopping = true;
      if (poll(fds.data() + 1, fds.size() - 1, 0) <= 0) break;
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const int c = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++counts[0];
      pollfd p{c, POLLIN, 0};
      KeyRequestReplica req{};
      if (poll(&p, 1, 500) == 1 && recv(c, &req, sizeof req, 0) == sizeof req) {
        ++counts[1];
        KeyReplyReplica rep{};
        rep.base = WireReply{kWireMagic, 0, k2M, 0, 0, 1, 0};
        rep.offset = 0;
        rep.range_size = k2M;
        rep.page_size = static_cast<uint32_t>(k2M);
        send_with_fds(c, std::string(reinterpret_cast<const char*>(&rep), sizeof rep), {mem});
      }
      close(c);
      if (stopping) stopping = poll(fds.data() + 1, fds.size() - 1, 0) <= 0;
    }
  }
  return write(report, counts, sizeof counts) == sizeof counts ? 0 : 95;
}

long long own_impostors() { return stat_int(stats(), "ipc.impostors_refused"); }

// A pid no process has now.
int32_t free_pid() {
  for (int32_t pid = 30000; pid > 1000; --pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return pid;
  }
  return 0;
}

// A squatter binds the endpoint names of a key whose exporter has exited and of made-up keys
// naming a pid nobody has and a live process that exports nothing. The importer sees that the
// listener is not the process the key names and refuses without asking anything: 507899 for
// import (also with ENABLE_PEER_ACCESS), set-pid and close, each counted in ipc.impostors_refused.
TEST_F(IpcKeyHostile, SquattedKeyEndpointsAreRefused) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  // Control: the name of a live key is the library's, and the kernel refuses to bind it again.
  IpcLocalKey live = ipc_local_key(98, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  errno = 0;
  EXPECT_EQ(bind_key(live.key), -1);
  EXPECT_EQ(errno, EADDRINUSE) << "the replica names the library's endpoint";

  std::string stale;
  {
    IpcPeer e;
    e.fill(0, 96);
    stale = e.export_key(0, k2M, 1);
    EXPECT_EQ(e.finish(), 0);
  }
  IpcPeer bystander;  // a live process that exports nothing
  struct Case {
    const char* what;
    std::string key;
    bool bystander_imports;  // a key naming the bystander is its own: it asks nobody
  };
  const Case cases[] = {
      {"the key of an exporter that has exited", stale, true},
      {"a made-up key naming no process", ipc_made_up_key(static_cast<uint32_t>(free_pid()), 7),
       true},
      {"a made-up key naming a live process",
       ipc_made_up_key(static_cast<uint32_t>(bystander.pid()), 1), false},
  };
  std::vector<std::string> keys;
  for (const Case& c : cases) keys.push_back(c.key);
  HostileChild squatter([&keys](int stop, int report) { return squat_keys(keys, stop, report); });
  ASSERT_EQ(squatter.next_report(10000), 'r') << "the squatter could not bind the names";

  const LiveCounts live0 = live_counts();
  const long long refused0 = own_impostors();
  const long long bystander0 = bystander.stat("ipc.impostors_refused");
  long calls = 0, bystander_calls = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    for (uint64_t flags :
         {ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS}) {
      void* p = nullptr;
      EXPECT_EQ(aclrtIpcMemImportByKey(&p, c.key.c_str(), flags), kDrv);
      EXPECT_EQ(p, nullptr);
      ++calls;
    }
    int32_t pid = bystander.pid();
    EXPECT_EQ(aclrtIpcMemSetImportPid(c.key.c_str(), &pid, 1), kDrv);
    EXPECT_EQ(aclrtIpcMemClose(c.key.c_str()), kDrv);
    calls += 2;
    if (c.bystander_imports) {
      EXPECT_EQ(bystander.import_key(0, c.key), kDrv);
      ++bystander_calls;
    }
  }
  EXPECT_EQ(live_counts(), live0) << "nothing was created from the squatter's answers";
  EXPECT_EQ(own_impostors() - refused0, calls);
  EXPECT_EQ(bystander.stat("ipc.impostors_refused") - bystander0, bystander_calls);
  EXPECT_EQ(bystander.stat("live.ipc_imports"), 0);
  long seen[2] = {-1, -1};
  EXPECT_TRUE(squatter.stop(seen, sizeof seen)) << "the squatter failed";
  EXPECT_EQ(seen[0], calls + bystander_calls) << "every call reached the squatter";
  EXPECT_EQ(seen[1], 0) << "nothing was asked of the squatter";
  EXPECT_EQ(bystander.finish(), 0);
  EXPECT_EQ(aclrtIpcMemClose(live.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(live.va), kOk);
}

// An importer of another user (nobody) gets nothing for being a process of the machine: refused
// while not listed (and counted by the exporter), admitted once its pid is listed; a key without
// whitelist it may import, as any process.
TEST_F(IpcKeyHostile, ImporterOfAnotherUserNeedsTheWhitelist) {
  SKIP_UNLESS_CAN_CHANGE_UID();
  IpcLocalKey k = ipc_local_key(141);
  IpcLocalKey open = ipc_local_key(142, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
  IpcPeer n(std::vector<std::string>{}, false);
  ASSERT_EQ(n.rc("user"), 0) << "the peer could not become nobody";
  ASSERT_EQ(n.rc("init"), kOk);
  ASSERT_EQ(n.rc("dev 0"), kOk);
  const long long denied0 = stat_int(stats(), "ipc.imports_denied");
  EXPECT_EQ(n.import_key(0, k.key), kDrv);
  EXPECT_EQ(n.set_pids(k.key, {n.tgid()}), kDrv) << "it cannot list itself";
  EXPECT_EQ(n.import_key(0, k.key), kDrv);
  EXPECT_EQ(stat_int(stats(), "ipc.imports_denied") - denied0, 2);
  ASSERT_EQ(ipc_set_pids(k.key, {n.tgid()}), kOk);
  ASSERT_EQ(n.import_key(0, k.key), kOk);
  EXPECT_EQ(n.check(0, 0, k2M, 141), ipc_same());
  ASSERT_EQ(n.write(0, 0, 4096, 143), kOk);
  EXPECT_TRUE(ipc_holds(k.va, 4096, 143));
  ASSERT_EQ(n.import_key(1, open.key), kOk);
  EXPECT_EQ(n.check(1, 0, k2M, 142), ipc_same());
  EXPECT_EQ(n.close_key(k.key), kOk);
  EXPECT_EQ(n.close_key(open.key), kOk);
  EXPECT_EQ(n.finish(), 0);
  EXPECT_EQ(aclrtIpcMemClose(k.key.c_str()), kOk);
  EXPECT_EQ(aclrtIpcMemClose(open.key.c_str()), kOk);
  EXPECT_EQ(aclrtFree(k.va), kOk);
  EXPECT_EQ(aclrtFree(open.va), kOk);
}

// A client sends garbage, partial and oversized requests to a key's endpoint, and connects without
// sending. The exporter drops each such connection unanswered (ipc.connections_dropped counts
// every one), answers the well-formed ones, keeps no descriptor of them, and serves a listed
// importer while silent connections are still held.
TEST_F(IpcKeyHostile, GarbageOnAKeyEndpointDoesNotStallTheExporter) {
  IpcPeer e, legit;
  e.fill(0, 151);
  const std::string key = e.export_key(0, k2M);
  ASSERT_EQ(e.set_pids(key, {legit.tgid()}), kOk);
  // A failed call opens the exporter's log file now, so that it is not counted as a leak later.
  EXPECT_EQ(e.close_key("x"), kDrv);
  const auto fds_of = [&e] {
    const auto r = e.cmd("counts");
    return r.size() == 3 ? std::atoi(r[1].c_str()) : -1;
  };
  const int fds0 = fds_of();
  const long long dropped0 = e.stat("ipc.connections_dropped");
  const long long denied0 = e.stat("ipc.imports_denied");

  // Controls: well-formed requests of this process (not listed) get the exporter's answers.
  {
    const int s = connect_key(key);
    ASSERT_GE(s, 0);
    ASSERT_TRUE(send_message(s, key_request(key, kKeyOpen)));
    KeyAnswer a;
    await_key(s, 10000, &a);
    ASSERT_EQ(a.kind, KeyAnswer::kReply);
    EXPECT_EQ(a.reply.base.magic, kWireMagic);
    EXPECT_EQ(a.reply.base.code, kDrv) << "refused: not listed";
    EXPECT_EQ(a.fd, -1);
    close(s);
  }
  {
    const int s = connect_key(key);
    ASSERT_GE(s, 0);
    ASSERT_TRUE(send_message(s, key_request(key, kKeyProbe)));
    KeyAnswer a;
    await_key(s, 10000, &a);
    ASSERT_EQ(a.kind, KeyAnswer::kReply);
    EXPECT_EQ(a.reply.base.code, 0) << "a live key with its whitelist on";
    EXPECT_EQ(a.fd, -1);
    close(s);
  }

  const std::string good = key_request(key, kKeyOpen);
  const std::string zkey(72, 'z');
  // Answered (not dropped): well-formed in size, magic and kind.
  struct Answered {
    const char* what;
    std::string bytes;
    int fds;
    int32_t code;
  };
  const Answered answered[] = {
      {"a key text that is no key, no NUL", key_request(zkey, kKeyOpen), 0, kBadHandle},
      {"a token request of 24 bytes", request(0x1234567ull), 0, kBadHandle},
      {"an unknown key with three descriptors attached", key_request(ipc_made_up_key(1, 1)), 3,
       kBadHandle},
  };
  for (const Answered& c : answered) {
    SCOPED_TRACE(c.what);
    const int s = connect_key(key);
    ASSERT_GE(s, 0);
    ASSERT_TRUE(send_message(s, c.bytes, c.fds));
    if (c.bytes.size() == sizeof(WireRequest)) {
      Answer a;  // a token reply (raw_endpoint.h)
      await(s, 10000, &a);
      ASSERT_EQ(a.kind, Answer::kReply);
      EXPECT_EQ(a.reply.code, c.code);
    } else {
      KeyAnswer a;
      await_key(s, 10000, &a);
      ASSERT_EQ(a.kind, KeyAnswer::kReply);
      EXPECT_EQ(a.reply.base.code, c.code);
      EXPECT_EQ(a.fd, -1);
    }
    close(s);
  }

  // Dropped unanswered: each is a fresh connection whose first message is no request.
  std::string bad_magic = key_request(key, kKeyOpen, 0x12345678);
  std::string bad_kind = key_request(key, 9);
  std::string token_kind = key_request(key, 1);
  std::string oversized = good + std::string(112, '\xab');
  struct Dropped {
    const char* what;
    std::vector<std::string> messages;  // sent in order; none when empty (connect, hang up)
    int fds;
  };
  const Dropped dropped[] = {
      {"a wrong magic", {bad_magic}, 0},
      {"an unknown kind", {bad_kind}, 0},
      {"a token kind in a key-sized message", {token_kind}, 0},
      {"the first 40 bytes of a request", {good.substr(0, 40)}, 0},
      {"a request split in two messages", {good.substr(0, 40), good.substr(40)}, 0},
      {"a request with 112 more bytes", {oversized}, 0},
      {"an empty message", {std::string()}, 0},
      {"200 bytes of garbage", {std::string(200, '\xab')}, 0},
      {"a request with twelve descriptors attached", {good}, 12},
      {"a connection closed without a word", {}, 0},
  };
  long expected_drops = 0;
  for (const Dropped& c : dropped) {
    SCOPED_TRACE(c.what);
    const int s = connect_key(key);
    ASSERT_GE(s, 0);
    for (const std::string& m : c.messages) (void)send_message(s, m, c.fds);
    if (!c.messages.empty()) {
      KeyAnswer a;
      await_key(s, 10000, &a);
      EXPECT_EQ(a.kind, KeyAnswer::kHangUp) << "dropped without an answer";
    }
    close(s);
    ++expected_drops;
  }

  // Silent connections (more than the exporter holds for one unlisted uid), and while two more are
  // still held, the listed importer is served with the right bytes.
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(connect_key(key));
  ASSERT_EQ(legit.import_key(0, key), kOk);
  EXPECT_EQ(legit.check(0, 0, k2M, 151), ipc_same());
  for (int i = 0; i < 2; ++i) silent.push_back(connect_key(key));
  ASSERT_EQ(legit.close_key(key), kOk);
  ASSERT_EQ(legit.import_key(1, key), kOk) << "served again while silent connections are held";
  EXPECT_EQ(legit.check(1, 0, k2M, 151), ipc_same());
  for (int s : silent) {
    ASSERT_GE(s, 0);
    KeyAnswer a;
    await_key(s, 10000, &a);
    EXPECT_EQ(a.kind, KeyAnswer::kHangUp) << "a silent connection is dropped in the end";
    close(s);
    ++expected_drops;
  }
  // The counter follows the hang-ups (the listener counts right after it closes).
  long long drops = e.stat("ipc.connections_dropped") - dropped0;
  for (int i = 0; i < 100 && drops < expected_drops; ++i) {
    usleep(50 * 1000);
    drops = e.stat("ipc.connections_dropped") - dropped0;
  }
  EXPECT_EQ(drops, expected_drops);
  EXPECT_EQ(e.stat("ipc.imports_denied") - denied0, 1) << "the control request";
  int fds = fds_of();
  for (int i = 0; i < 100 && fds != fds0; ++i) {
    usleep(50 * 1000);
    fds = fds_of();
  }
  EXPECT_EQ(fds, fds0) << "the exporter keeps no descriptor of the hostile connections";
  EXPECT_EQ(legit.close_key(key), kOk);
  EXPECT_EQ(e.close_key(key), kOk);
  EXPECT_EQ(legit.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

}  // namespace ipc_key_hostile
