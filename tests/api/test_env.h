// What tests change around the runtime: environment variables and configuration files. The
// runtime reads its configuration (ACLVMM_*, ASCEND_*) at aclInit, so a test that needs another
// configuration sets the variable and restarts the runtime; both must be undone afterwards so that
// the next test sees the default again.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "api/test_util.h"

namespace aclvmm_test {

// Saves one variable at construction and restores it (value or absence) at restore() or
// destruction, whichever comes first; set() changes it in between.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
  }
  // Saves, then sets `value` (nullptr: unsets the variable).
  ScopedEnv(const char* name, const char* value) : ScopedEnv(name) { set(value); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { restore(); }

  // setenv / unsetenv's result.
  int set(const char* value) {
    restored_ = false;
    return value ? setenv(name_.c_str(), value, 1) : unsetenv(name_.c_str());
  }
  void restore() {
    if (restored_) return;
    restored_ = true;
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
  bool restored_ = false;
};

// Inside an AclTest: restarts the fixture's runtime with one variable set, and on destruction
// restarts it again with the previous environment (device 0 current both times).
class ScopedEnvRuntime {
 public:
  ScopedEnvRuntime(const char* name, const char* value) : env_(name) {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
    env_.set(value);
    init_rc_ = aclInit(nullptr);
    device_rc_ = aclrtSetDevice(0);
  }
  ~ScopedEnvRuntime() {
    aclrtResetDeviceForce(0);
    EXPECT_EQ(aclFinalize(), kOk);
    env_.restore();
    EXPECT_EQ(aclInit(nullptr), kOk);
    EXPECT_EQ(aclrtSetDevice(0), kOk);
  }
  bool ok() const { return init_rc_ == kOk && device_rc_ == kOk; }

 private:
  ScopedEnv env_;
  aclError init_rc_ = -1, device_rc_ = -1;
};

// Writes `content` to a fresh temporary file; returns its path (the caller removes it).
inline std::string temp_file(const std::string& content) {
  char path[] = "/tmp/aclvmm_cfg_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  if (fd >= 0) {
    EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    close(fd);
  }
  return path;
}

}  // namespace aclvmm_test
