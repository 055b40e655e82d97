// NetnsPod: 2-4 "hosts" of a super-pod on this machine, as network namespaces on one bridge
// (docs/fabric.md; issue 17's test fixture).
//
// Host i is the namespace av<pid>h<i> with one veth, eth0, at 10.77.0.<i+1>/24; the veths' other
// ends sit on a bridge in the namespace av<pid>sw. Every name is created exclusively (`ip netns
// add` and `ip link add` refuse an existing name) and holds this process's pid, so concurrent
// tests never share one; the addresses exist only inside these namespaces. The destructor
// deletes the namespaces, and with them every veth and the bridge.
//
// Needs root (CI runs the suite as root; without it the fabric test binaries re-run themselves in
// a user namespace of their own, netns_main.cpp) and iproute2's `ip`: available() says why not.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace aclvmm_test {

class NetnsPod {
 public:
  static bool available(std::string* why) {
    if (::geteuid() != 0) {
      *why = "needs root to create network namespaces (CI runs the suite as root)";
      return false;
    }
    if (std::system("ip -V > /dev/null 2>&1") != 0) {
      *why = "needs iproute2's ip (scripts/setup.sh installs it)";
      return false;
    }
    // Root in a container may still lack CAP_SYS_ADMIN: try one namespace.
    const std::string probe = "av" + std::to_string(::getpid()) + "probe";
    if (std::system(("ip netns add " + probe + " 2>/dev/null").c_str()) != 0) {
      *why = "this machine does not let the test create a network namespace";
      return false;
    }
    (void)std::system(("ip netns del " + probe).c_str());
    return true;
  }

  explicit NetnsPod(int hosts) : prefix_("av" + std::to_string(::getpid())) {
    ok_ = run("ip netns add " + switch_ns()) &&
          run("ip -n " + switch_ns() + " link add br0 type bridge") &&
          run("ip -n " + switch_ns() + " link set br0 up");
    for (int i = 0; ok_ && i < hosts; ++i) {
      const std::string h = host_ns(i), e = prefix_ + "e" + std::to_string(i),
                        s = prefix_ + "s" + std::to_string(i);
      ok_ = run("ip netns add " + h) && run("ip link add " + e + " type veth peer name " + s) &&
            run("ip link set " + e + " netns " + h) &&
            run("ip link set " + s + " netns " + switch_ns()) &&
            run("ip -n " + h + " link set " + e + " name eth0") &&
            run("ip -n " + h + " addr add " + address(i) + "/24 dev eth0") &&
            run("ip -n " + h + " link set eth0 up") && run("ip -n " + h + " link set lo up") &&
            run("ip -n " + switch_ns() + " link set " + s + " master br0 up");
      if (ok_) ++hosts_;
    }
  }
  ~NetnsPod() {
    for (int i = 0; i < hosts_ + 1; ++i) (void)run("ip netns del " + host_ns(i) + " 2>/dev/null");
    (void)run("ip netns del " + switch_ns() + " 2>/dev/null");
  }
  NetnsPod(const NetnsPod&) = delete;
  NetnsPod& operator=(const NetnsPod&) = delete;

  bool ok() const { return ok_; }
  std::string host_ns(int i) const { return prefix_ + "h" + std::to_string(i); }
  static std::string address(int i) { return "10.77.0." + std::to_string(i + 1); }
  // Deletes host i's link: its traffic stops at once.
  bool cut(int i) { return run("ip -n " + host_ns(i) + " link del eth0"); }

  // Forks a process that enters host i's namespace and exits with fn's result (126: it could
  // not enter).
  pid_t start_in(int i, const std::function<int()>& fn) const {
    std::fflush(nullptr);
    const std::string path = "/run/netns/" + host_ns(i);
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(126);
    ::close(fd);
    ::_exit(fn());
  }

 private:
  static bool run(const std::string& command) { return std::system(command.c_str()) == 0; }
  std::string switch_ns() const { return prefix_ + "sw"; }

  const std::string prefix_;
  int hosts_ = 0;
  bool ok_ = false;
};

// Waits for `pid` for at most `seconds`; a child still running then is killed. The exit status,
// or -1 when it was killed or died of a signal.
inline int wait_for(pid_t pid, int seconds) {
  for (int waited = 0; waited < seconds * 100; ++waited) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    ::usleep(10 * 1000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

}  // namespace aclvmm_test
