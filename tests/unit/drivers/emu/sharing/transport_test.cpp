// Tests of the emu backend's share transport against the real kernel: abstract unix sockets,
// peer credentials, descriptor passing, timeouts, and the process clock used by whitelists.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "drivers/emu/sharing/transport.h"

namespace aclvmm::dev::emu::share {
namespace {

class ShareTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t_ = &transport_;
  }

  // Test processes may run in parallel and all share the abstract namespace: pick a free random id.
  uint32_t listen_fresh(int* fd) {
    for (int i = 0; i < 100; ++i) {
      uint32_t id = t_->random_u32();
      int rc = t_->listen(id, fd);
      if (rc == 0) return id;
      EXPECT_EQ(rc, -EADDRINUSE);
    }
    ADD_FAILURE() << "no free share id";
    return 0;
  }

  // An id nobody listens on right now.
  uint32_t unused_id() {
    int fd = -1;
    uint32_t id = listen_fresh(&fd);
    t_->close(fd);
    return id;
  }

  // A connected pair: *client from connect, *server from accept.
  void connect_pair(int* client, int* server, PeerInfo* peer = nullptr) {
    int lfd = -1;
    uint32_t id = listen_fresh(&lfd);
    ASSERT_EQ(t_->connect(id, 1000, client, &server_), 0);
    PeerInfo local;
    ASSERT_EQ(t_->accept(lfd, server, peer != nullptr ? peer : &local), 0);
    t_->close(lfd);
  }

  UnixShareTransport transport_;
  ShareTransport* t_ = nullptr;
  PeerInfo server_;  // who the last connect reached
};

int open_fd_count() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether the kernel reports peers as pidfds (SO_PEERPIDFD, Linux 6.5; 77 on these architectures).
bool kernel_has_peer_pidfd(int sock) {
  int pidfd = -1;
  socklen_t len = sizeof(pidfd);
  if (getsockopt(sock, SOL_SOCKET, 77, &pidfd, &len) != 0) return false;
  close(pidfd);
  return true;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(ShareTransportTest, ListenTwiceOnOneIdIsAddrInUse) {
  int a = -1, b = -1;
  uint32_t id = listen_fresh(&a);
  ASSERT_GE(a, 0);
  EXPECT_EQ(t_->listen(id, &b), -EADDRINUSE);
  EXPECT_EQ(b, -1);
  t_->close(a);
}

TEST_F(ShareTransportTest, ListeningFdIsNonBlockingAndCloseOnExec) {
  int a = -1;
  listen_fresh(&a);
  ASSERT_GE(a, 0);
  EXPECT_TRUE(fcntl(a, F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(fcntl(a, F_GETFD) & FD_CLOEXEC);
  int conn = -1;
  PeerInfo peer;
  EXPECT_EQ(t_->accept(a, &conn, &peer), -EAGAIN);
  EXPECT_EQ(conn, -1);
  t_->close(a);
}

TEST_F(ShareTransportTest, ConnectToUnusedIdIsRefused) {
  int fd = -1;
  EXPECT_EQ(t_->connect(unused_id(), 500, &fd, &server_), -ECONNREFUSED);
  EXPECT_EQ(fd, -1);
}

TEST_F(ShareTransportTest, ClosedEndpointIsRefusedAndItsIdIsFreeAgain) {
  int lfd = -1;
  uint32_t id = listen_fresh(&lfd);
  int c = -1;
  ASSERT_EQ(t_->connect(id, 500, &c, &server_), 0);
  t_->close(c);
  t_->close(lfd);
  EXPECT_EQ(t_->connect(id, 500, &c, &server_), -ECONNREFUSED);
  // Abstract names need no cleanup: the id can be served again at once.
  ASSERT_EQ(t_->listen(id, &lfd), 0);
  t_->close(lfd);
}

TEST_F(ShareTransportTest, RoundTripInOneProcessReportsOurCredentials) {
  int client = -1, server = -1;
  PeerInfo peer;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&client, &server, &peer));
  EXPECT_EQ(peer.pid, getpid());
  EXPECT_EQ(peer.uid, getuid());
  EXPECT_GT(peer.start_time, 0u);
  EXPECT_EQ(peer.start_time, t_->process_start_time(getpid()));
  EXPECT_TRUE(fcntl(server, F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(fcntl(client, F_GETFD) & FD_CLOEXEC);

  const char request[] = "import 0123456789";
  ASSERT_EQ(t_->send(client, request, sizeof(request), -1), 0);
  char buf[64] = {};
  int got_fd = 123;
  ASSERT_EQ(t_->recv(server, buf, sizeof(buf), &got_fd, 1000), static_cast<int>(sizeof(request)));
  EXPECT_EQ(got_fd, -1);
  EXPECT_EQ(std::memcmp(buf, request, sizeof(request)), 0);

  // Message boundaries survive: two sends are two receives.
  uint32_t a = 0xa5a5a5a5, b = 0x5a5a5a5a, r = 0;
  ASSERT_EQ(t_->send(server, &a, sizeof(a), -1), 0);
  ASSERT_EQ(t_->send(server, &b, sizeof(b), -1), 0);
  ASSERT_EQ(t_->recv(client, &r, sizeof(r) * 2, &got_fd, 1000), 4);
  EXPECT_EQ(r, a);
  ASSERT_EQ(t_->recv(client, &r, sizeof(r) * 2, &got_fd, 1000), 4);
  EXPECT_EQ(r, b);

  // A hang-up reads as 0, and a send to it fails without SIGPIPE.
  t_->close(server);
  EXPECT_EQ(t_->recv(client, buf, sizeof(buf), &got_fd, 1000), 0);
  EXPECT_EQ(t_->send(client, &a, sizeof(a), -1), -EPIPE);
  t_->close(client);
}

// The importer's side of the credentials: on a connecting socket the kernel reports the process
// that listens (as it was at listen()), whoever connects.
TEST_F(ShareTransportTest, ConnectReportsTheListenersCredentials) {
  int client = -1, server = -1;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&client, &server));
  EXPECT_EQ(server_.pid, getpid());
  EXPECT_EQ(server_.uid, getuid());
  const bool pidfds = kernel_has_peer_pidfd(client);
  EXPECT_EQ(t_->peer_pid_in_own_namespace(client), pidfds ? getpid() : 0);
  t_->close(client);
  t_->close(server);

  // A listener in a child: the parent sees the child, not itself.
  int lfd = -1;
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  uint32_t id = unused_id();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    close(gate[1]);
    if (t_->listen(id, &lfd) != 0) _exit(2);
    if (write(ready[1], "r", 1) != 1) _exit(3);
    char c;
    (void)read(gate[0], &c, 1);
    _exit(0);
  }
  close(gate[0]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  int fd = -1;
  PeerInfo seen;
  ASSERT_EQ(t_->connect(id, 1000, &fd, &seen), 0);
  EXPECT_EQ(seen.pid, child);
  EXPECT_EQ(t_->peer_pid_in_own_namespace(fd), pidfds ? child : 0);
  t_->close(fd);
  close(gate[1]);
  EXPECT_EQ(wait_exit_code(child), 0);
  close(ready[0]);
  close(ready[1]);
}

// A listener in a child pid namespace: SO_PEERCRED gives its pid as this namespace numbers it, and
// the pidfd's NSpid chain ends with the pid it has in its own namespace (1: it is that
// namespace's first process).
TEST_F(ShareTransportTest, ListenerInAChildPidNamespaceReportsItsOwnPidToo) {
  int ready[2], gate[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(gate), 0);
  const uint32_t id = unused_id();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    close(gate[1]);
    if (unshare(CLONE_NEWPID) != 0) _exit(77);  // not permitted here: skipped below
    pid_t inner = fork();
    if (inner < 0) _exit(2);
    if (inner == 0) {
      int lfd = -1;
      if (getpid() != 1 || t_->listen(id, &lfd) != 0) _exit(3);
      if (write(ready[1], "r", 1) != 1) _exit(4);
      char c;
      (void)read(gate[0], &c, 1);
      _exit(0);
    }
    _exit(wait_exit_code(inner));
  }
  close(gate[0]);
  close(ready[1]);
  char c;
  const bool listening = read(ready[0], &c, 1) == 1;
  int fd = -1;
  PeerInfo seen;
  if (listening) {
    ASSERT_EQ(t_->connect(id, 1000, &fd, &seen), 0);
    EXPECT_GT(seen.pid, 1);
    EXPECT_NE(seen.pid, child);  // the grandchild, as this namespace numbers it
    // Kernels before 6.5 have no SO_PEERPIDFD: the chain cannot be read there.
    EXPECT_EQ(t_->peer_pid_in_own_namespace(fd), kernel_has_peer_pidfd(fd) ? 1 : 0);
    t_->close(fd);
  }
  close(gate[1]);
  const int code = wait_exit_code(child);
  close(ready[0]);
  if (code == 77) GTEST_SKIP() << "no permission to create a pid namespace";
  EXPECT_TRUE(listening);
  EXPECT_EQ(code, 0);
}

// The listener's wake object: readable from wake() until drained, whatever the count.
TEST_F(ShareTransportTest, WakeObjectIsReadableUntilDrained) {
  int w = -1;
  ASSERT_EQ(t_->open_wake(&w), 0);
  ASSERT_GE(w, 0);
  EXPECT_TRUE(fcntl(w, F_GETFD) & FD_CLOEXEC);
  bool ready = true;
  EXPECT_EQ(t_->poll(&w, &ready, 1, 0), 0);
  EXPECT_FALSE(ready);
  t_->wake(w);
  t_->wake(w);
  EXPECT_EQ(t_->poll(&w, &ready, 1, 1000), 1);
  EXPECT_TRUE(ready);
  t_->drain_wake(w);
  EXPECT_EQ(t_->poll(&w, &ready, 1, 0), 0);
  EXPECT_FALSE(ready);
  t_->drain_wake(w);  // draining an idle object does not block
  t_->close(w);
}

TEST_F(ShareTransportTest, PassedMemfdShowsTheSameBytes) {
  int client = -1, server = -1;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&client, &server));
  int mem = memfd_create("share-test", MFD_CLOEXEC);
  ASSERT_GE(mem, 0);
  ASSERT_EQ(ftruncate(mem, 4096), 0);
  const char pattern[] = "bytes behind the descriptor";
  ASSERT_EQ(pwrite(mem, pattern, sizeof(pattern), 100), static_cast<ssize_t>(sizeof(pattern)));

  uint64_t reply = 42;
  ASSERT_EQ(t_->send(server, &reply, sizeof(reply), mem), 0);
  uint64_t got = 0;
  int got_fd = -1;
  ASSERT_EQ(t_->recv(client, &got, sizeof(got), &got_fd, 1000), static_cast<int>(sizeof(got)));
  EXPECT_EQ(got, 42u);
  ASSERT_GE(got_fd, 0);
  EXPECT_NE(got_fd, mem);
  EXPECT_TRUE(fcntl(got_fd, F_GETFD) & FD_CLOEXEC);

  char back[sizeof(pattern)] = {};
  ASSERT_EQ(pread(got_fd, back, sizeof(back), 100), static_cast<ssize_t>(sizeof(back)));
  EXPECT_EQ(std::memcmp(back, pattern, sizeof(pattern)), 0);
  // And the other way round: one object, not a copy.
  const char other[] = "written through the copy";
  ASSERT_EQ(pwrite(got_fd, other, sizeof(other), 2000), static_cast<ssize_t>(sizeof(other)));
  char back2[sizeof(other)] = {};
  ASSERT_EQ(pread(mem, back2, sizeof(back2), 2000), static_cast<ssize_t>(sizeof(back2)));
  EXPECT_EQ(std::memcmp(back2, other, sizeof(other)), 0);

  close(got_fd);
  close(mem);
  t_->close(client);
  t_->close(server);
}

// Sends one byte with `count` descriptors attached, bypassing the transport (which sends one).
int send_many_fds(int sock, int count) {
  std::vector<int> fds(count);
  for (int i = 0; i < count; ++i) fds[i] = dup(STDERR_FILENO);
  char byte = 'x';
  iovec iov{&byte, 1};
  std::vector<unsigned char> control(CMSG_SPACE(sizeof(int) * count));
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.data();
  mh.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * count);
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * count);
  ssize_t r = sendmsg(sock, &mh, MSG_NOSIGNAL);
  for (int fd : fds) close(fd);
  return r == 1 ? 0 : -errno;
}

TEST_F(ShareTransportTest, ExtraDescriptorsAreClosedAndAFloodIsAProtocolError) {
  int client = -1, server = -1;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&client, &server));
  const int before = open_fd_count();

  ASSERT_EQ(send_many_fds(server, 3), 0);
  char byte = 0;
  int got_fd = -1;
  ASSERT_EQ(t_->recv(client, &byte, 1, &got_fd, 1000), 1);
  ASSERT_GE(got_fd, 0);
  EXPECT_EQ(open_fd_count(), before + 1);  // only the first one stays
  close(got_fd);

  ASSERT_EQ(send_many_fds(server, 40), 0);
  EXPECT_EQ(t_->recv(client, &byte, 1, &got_fd, 1000), -EPROTO);
  EXPECT_EQ(got_fd, -1);
  EXPECT_EQ(open_fd_count(), before);

  t_->close(client);
  t_->close(server);
}

TEST_F(ShareTransportTest, OversizedMessageIsRejectedAndZeroLengthIsNotSent) {
  int client = -1, server = -1;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&client, &server));
  const int before = open_fd_count();
  int mem = memfd_create("share-test", MFD_CLOEXEC);
  ASSERT_GE(mem, 0);
  char big[16] = {1, 2, 3};
  ASSERT_EQ(t_->send(server, big, sizeof(big), mem), 0);
  close(mem);
  char small[8];
  int got_fd = -1;
  EXPECT_EQ(t_->recv(client, small, sizeof(small), &got_fd, 1000), -EMSGSIZE);
  EXPECT_EQ(got_fd, -1);
  EXPECT_EQ(open_fd_count(), before);
  EXPECT_EQ(t_->send(server, big, 0, -1), -EINVAL);
  t_->close(client);
  t_->close(server);
}

TEST_F(ShareTransportTest, RecvTimesOutWithinRoughlyTheTimeout) {
  int client = -1, server = -1;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&client, &server));
  char buf[8];
  int got_fd = 7;
  int64_t t0 = now_ms();
  EXPECT_EQ(t_->recv(client, buf, sizeof(buf), &got_fd, 150), -ETIMEDOUT);
  int64_t elapsed = now_ms() - t0;
  EXPECT_GE(elapsed, 140);
  EXPECT_LT(elapsed, 1000);
  EXPECT_EQ(got_fd, -1);
  t0 = now_ms();
  EXPECT_EQ(t_->recv(client, buf, sizeof(buf), &got_fd, 0), -ETIMEDOUT);
  EXPECT_LT(now_ms() - t0, 100);
  t_->close(client);
  t_->close(server);
}

TEST_F(ShareTransportTest, ConnectToAStuckListenerTimesOut) {
  // Nobody accepts: once the backlog is full, a connect must give up after its timeout.
  int lfd = -1;
  uint32_t id = listen_fresh(&lfd);
  std::vector<int> conns;
  int rc = 0;
  int64_t t0 = 0;
  for (int i = 0; i < 200 && rc == 0; ++i) {
    int fd = -1;
    t0 = now_ms();
    rc = t_->connect(id, 100, &fd, &server_);
    if (rc == 0) conns.push_back(fd);
  }
  EXPECT_EQ(rc, -ETIMEDOUT);
  int64_t elapsed = now_ms() - t0;
  EXPECT_GE(elapsed, 90);
  EXPECT_LT(elapsed, 1000);
  EXPECT_GE(conns.size(), 64u);
  for (int fd : conns) t_->close(fd);
  t_->close(lfd);
}

TEST_F(ShareTransportTest, PollReportsReadiness) {
  int lfd = -1;
  uint32_t id = listen_fresh(&lfd);
  int idle = -1;
  uint32_t idle_id = listen_fresh(&idle);
  (void)idle_id;
  int fds[2] = {lfd, idle};
  bool ready[2] = {true, true};
  EXPECT_EQ(t_->poll(fds, ready, 2, 0), 0);
  EXPECT_FALSE(ready[0]);
  EXPECT_FALSE(ready[1]);

  int client = -1;
  ASSERT_EQ(t_->connect(id, 1000, &client, &server_), 0);
  EXPECT_EQ(t_->poll(fds, ready, 2, 1000), 1);
  EXPECT_TRUE(ready[0]);
  EXPECT_FALSE(ready[1]);

  int server = -1;
  PeerInfo peer;
  ASSERT_EQ(t_->accept(lfd, &server, &peer), 0);
  EXPECT_EQ(t_->poll(fds, ready, 2, 0), 0);
  EXPECT_FALSE(ready[0]);

  // A connection is readable once a message waits, and again when the peer hangs up.
  int conn_fds[1] = {server};
  bool conn_ready[1] = {true};
  int64_t t0 = now_ms();
  EXPECT_EQ(t_->poll(conn_fds, conn_ready, 1, 100), 0);
  EXPECT_GE(now_ms() - t0, 90);
  EXPECT_FALSE(conn_ready[0]);
  uint8_t b = 1;
  ASSERT_EQ(t_->send(client, &b, 1, -1), 0);
  EXPECT_EQ(t_->poll(conn_fds, conn_ready, 1, 1000), 1);
  EXPECT_TRUE(conn_ready[0]);
  int got_fd = -1;
  ASSERT_EQ(t_->recv(server, &b, 1, &got_fd, 0), 1);
  t_->close(client);
  EXPECT_EQ(t_->poll(conn_fds, conn_ready, 1, 1000), 1);
  EXPECT_TRUE(conn_ready[0]);
  EXPECT_EQ(t_->recv(server, &b, 1, &got_fd, 0), 0);

  t_->close(server);
  t_->close(idle);
  t_->close(lfd);
}

TEST_F(ShareTransportTest, ForkedChildIsSeenWithItsOwnPid) {
  int lfd = -1;
  uint32_t id = listen_fresh(&lfd);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    int fd = -1;
    if (t_->connect(id, 2000, &fd, &server_) != 0) _exit(2);
    uint32_t hello = 0x11223344;
    if (t_->send(fd, &hello, sizeof(hello), -1) != 0) _exit(3);
    uint32_t reply = 0;
    int got = -1;
    if (t_->recv(fd, &reply, sizeof(reply), &got, 2000) != 4 || reply != ~hello) _exit(4);
    _exit(0);
  }
  bool ready = false;
  ASSERT_EQ(t_->poll(&lfd, &ready, 1, 2000), 1);
  int conn = -1;
  PeerInfo peer;
  ASSERT_EQ(t_->accept(lfd, &conn, &peer), 0);
  EXPECT_EQ(peer.pid, child);
  EXPECT_EQ(peer.uid, getuid());
  EXPECT_GT(peer.start_time, 0u);
  EXPECT_EQ(peer.start_time, t_->process_start_time(child));
  EXPECT_GE(peer.start_time, t_->process_start_time(getpid()));
  uint32_t hello = 0;
  int got = -1;
  ASSERT_EQ(t_->recv(conn, &hello, sizeof(hello), &got, 2000), 4);
  uint32_t reply = ~hello;
  ASSERT_EQ(t_->send(conn, &reply, sizeof(reply), -1), 0);
  EXPECT_EQ(wait_exit_code(child), 0);
  t_->close(conn);
  t_->close(lfd);
}

TEST_F(ShareTransportTest, PeerThatExitedBeforeAcceptHasNoStartTime) {
  // Its pid may already belong to someone else; a start time would vouch for that stranger.
  int lfd = -1;
  uint32_t id = listen_fresh(&lfd);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = -1;
    _exit(t_->connect(id, 2000, &fd, &server_) == 0 ? 0 : 2);
  }
  EXPECT_EQ(wait_exit_code(child), 0);
  int conn = -1;
  PeerInfo peer;
  ASSERT_EQ(t_->accept(lfd, &conn, &peer), 0);
  EXPECT_EQ(peer.pid, child);
  EXPECT_EQ(peer.start_time, 0u);
  char b;
  int got_fd = -1;
  EXPECT_EQ(t_->recv(conn, &b, 1, &got_fd, 1000), 0);
  t_->close(conn);
  t_->close(lfd);
}

TEST_F(ShareTransportTest, StartTimeOfAMissingProcessIsZero) {
  EXPECT_EQ(t_->process_start_time(0x3fffffff), 0u);
  EXPECT_EQ(t_->process_start_time(0), 0u);
  EXPECT_EQ(t_->process_start_time(-1), 0u);
}

TEST_F(ShareTransportTest, StartTimeParsingSurvivesParenthesesInTheName) {
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);  // a broken handshake must fail the test, not hang it
    close(to_child[1]);  // or the read for end-of-file below would wait on ourselves
    close(to_parent[0]);
    char c;
    if (read(to_child[0], &c, 1) != 1) _exit(2);
    prctl(PR_SET_NAME, "a) 1 2 (b) x", 0, 0, 0);
    if (write(to_parent[1], "r", 1) != 1) _exit(3);
    if (read(to_child[0], &c, 1) != 0) _exit(4);
    _exit(0);
  }
  uint64_t before = t_->process_start_time(child);
  EXPECT_GT(before, 0u);
  char c = 'g';
  ASSERT_EQ(write(to_child[1], &c, 1), 1);
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  EXPECT_EQ(t_->process_start_time(child), before);
  close(to_child[1]);
  EXPECT_EQ(wait_exit_code(child), 0);
  close(to_child[0]);
  close(to_parent[0]);
  close(to_parent[1]);
}

TEST_F(ShareTransportTest, ShareClockIsNotBehindOurStartTime) {
  EXPECT_GE(t_->share_clock(), t_->process_start_time(getpid()));
}

TEST_F(ShareTransportTest, ProcessStartedAfterAStampIsLaterThanIt) {
  uint64_t stamp = t_->share_clock();
  ASSERT_GT(stamp, 0u);
  usleep(20000);
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    char c;
    close(gate[1]);
    (void)read(gate[0], &c, 1);
    _exit(0);
  }
  uint64_t start = t_->process_start_time(child);
  close(gate[1]);
  EXPECT_EQ(wait_exit_code(child), 0);
  close(gate[0]);
  EXPECT_GE(start, stamp);
  // 20 ms is at least one whole tick at the usual 100 Hz, so a whitelist (which refuses only a
  // start time strictly after its stamp) refuses this process.
  if (sysconf(_SC_CLK_TCK) <= 100) {
    EXPECT_GT(start, stamp);
  }
}

TEST_F(ShareTransportTest, RandomIdsAreNonZeroAndDistinct) {
  std::set<uint32_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint32_t v = t_->random_u32();
    EXPECT_NE(v, 0u);
    seen.insert(v);
  }
  // A duplicate among 1000 fair 32-bit draws has probability about 1e-4.
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace aclvmm::dev::emu::share
