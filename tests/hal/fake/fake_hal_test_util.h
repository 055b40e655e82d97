// Helpers of the fake driver library's tests (aclvmm_fake_hal_tests): the tests call the
// library's C functions directly (it is linked), open and close devices around each case, and
// run a second process (this binary again, fork + exec, a "child role" of children.cpp) where a
// case needs another process or another configuration: the library reads its environment once
// per process.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "drivers/hal/fake/fake_hal_ext.h"
#include "drivers/hal/hal_decls.h"

namespace fakehal_test {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr int kDevices = 8;  // the default configuration (main() clears the environment)

inline drvError_t open_device(uint32_t d) {
  halDevOpenIn in{};
  halDevOpenOut out{};
  return halDeviceOpen(d, &in, &out);
}

inline drvError_t close_device(uint32_t d) {
  halDevCloseIn in{};
  return halDeviceClose(d, &in);
}

// Opens devices for one case and closes them at its end, so that every case starts with no
// device opened (the "before open" cases rely on it).
class OpenDevices {
 public:
  explicit OpenDevices(std::vector<uint32_t> devices) : devices_(std::move(devices)) {
    for (uint32_t d : devices_) ok_ = ok_ && open_device(d) == DRV_ERROR_NONE;
  }
  ~OpenDevices() {
    for (uint32_t d : devices_) (void)close_device(d);
  }
  bool ok() const { return ok_; }

 private:
  std::vector<uint32_t> devices_;
  bool ok_ = true;
};

inline drv_mem_prop device_prop(uint32_t device, uint32_t pg = MEM_HUGE_PAGE_TYPE,
                                uint32_t mem = MEM_HBM_TYPE) {
  drv_mem_prop p{};
  p.side = MEM_DEV_SIDE;
  p.devid = device;
  p.module_id = APP_MODULE_ID;
  p.pg_type = pg;
  p.mem_type = mem;
  return p;
}

inline drv_mem_prop host_prop(uint32_t pg = MEM_HUGE_PAGE_TYPE, uint32_t mem = MEM_DDR_TYPE) {
  drv_mem_prop p{};
  p.side = MEM_HOST_SIDE;
  p.devid = 0;
  p.module_id = APP_MODULE_ID;
  p.pg_type = pg;
  p.mem_type = mem;
  return p;
}

struct Window {
  uint64_t base = 0, size = 0;
  bool contains(uint64_t va, uint64_t n = 1) const {
    return va >= base && n <= size && va - base <= size - n;
  }
};

struct Layout {
  Window host_pinned, managed, device, device_general, no_uc;
};

inline Layout layout() {
  uint64_t v[10] = {};
  Layout l;
  if (aclvmmFakeHalLayout(v) != 0) return l;
  l.host_pinned = {v[0], v[1]};
  l.managed = {v[2], v[3]};
  l.device = {v[4], v[5]};
  l.device_general = {v[6], v[7]};
  l.no_uc = {v[8], v[9]};
  return l;
}

inline uint64_t round_up_bytes(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline uint8_t pattern_byte(uint64_t i, uint32_t seed) {
  return static_cast<uint8_t>((i * 131u + seed * 7u + 13u) & 0xFF);
}

inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern_byte(i, seed);
  return v;
}

inline DVdeviceptr ptr(const void* p) { return reinterpret_cast<DVdeviceptr>(p); }

// A running child: this binary with `args` (the first one a --fake-hal-child=<role>), the
// environment changed by `env` ("NAME=value" sets, "NAME=" unsets).
struct Child {
  pid_t pid = -1;
};

inline Child spawn(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  Child c;
  c.pid = fork();
  if (c.pid != 0) return c;
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    const std::string name = e.substr(0, eq), value = e.substr(eq + 1);
    if (value.empty()) {
      unsetenv(name.c_str());
    } else {
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  std::vector<char*> argv;
  static char self[] = "aclvmm_fake_hal_tests";
  argv.push_back(self);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  _exit(127);
}

// The child's exit status (128 + signal when killed), after at most `seconds`.
inline int wait_child(Child c, int seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) break;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline int run_child(const std::vector<std::string>& args,
                     const std::vector<std::string>& env = {}) {
  return wait_child(spawn(args, env));
}

// One line over a pipe (children.cpp speaks the same).
inline bool write_line(int fd, const std::string& line) {
  const std::string s = line + "\n";
  return write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
}

inline bool read_line(int fd, std::string* line, int timeout_ms = 30000) {
  line->clear();
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char c = 0;
    if (read(fd, &c, 1) != 1) return false;
    if (c == '\n') return true;
    line->push_back(c);
  }
}

}  // namespace fakehal_test
