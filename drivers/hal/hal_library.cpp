#include "drivers/hal/hal_library.h"

#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace aclvmm::dev::hal {
namespace {

constexpr const char* kSoname = "libascend_hal.so";
constexpr const char* kDefaultDrvroot = "/usr/local/Ascend";

std::string dl_error() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// Driver_Install_Path_Param= of /etc/ascend_install.info (hal.md §1.1), or "".
std::string drvroot_from_install_info() {
  std::ifstream in("/etc/ascend_install.info");
  std::string line;
  const std::string key = "Driver_Install_Path_Param=";
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0) return line.substr(key.size());
  }
  return "";
}

// The keys of <drvroot>/driver/version.info the log line names (hal.md §1.2).
std::string release_of(const std::string& drvroot) {
  if (drvroot.empty()) return "";
  std::ifstream in(drvroot + "/driver/version.info");
  std::string line, out;
  for (const char* key : {"Version=", "package_version=", "Innerversion="}) {
    in.clear();
    in.seekg(0);
    const size_t n = std::strlen(key);
    while (std::getline(in, line)) {
      if (line.compare(0, n, key) == 0) {
        out += (out.empty() ? "" : " ") + line;
        break;
      }
    }
  }
  return out;
}

std::set<std::string> names_in(const std::string& list) {
  std::set<std::string> names;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    const size_t b = name.find_first_not_of(" \t");
    const size_t e = name.find_last_not_of(" \t");
    if (b != std::string::npos) names.insert(name.substr(b, e - b + 1));
  }
  return names;
}

}  // namespace

Result HalLibrary::load(const HalOptions& options, std::string* why) {
  if (Result r = open_library(options, why); !r.ok()) return r;
  resolve(options.hide);
  if (Result r = check(why); !r.ok()) {
    // A library we loaded ourselves is not used: leave no half-set-up driver behind. One that
    // was already in the process is not ours to close.
    if (!preloaded_) ::dlclose(handle_);
    handle_ = nullptr;
    fn_ = HalFunctions{};
    return r;
  }
  release_ = release_of(drvroot_);
  return Result::success();
}

Result HalLibrary::open_library(const HalOptions& options, std::string* why) {
  (void)::dlerror();
  if (!options.library.empty()) {
    handle_ = ::dlopen(options.library.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle_ == nullptr) {
      *why = "ACLVMM_HAL_LIBRARY=" + options.library + " could not be loaded: " + dl_error();
      return Result::from_errno(EOPNOTSUPP);
    }
    path_ = options.library;
    return Result::success();
  }
  handle_ = ::dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD);
  if (handle_ != nullptr) {
    preloaded_ = true;
    path_ = kSoname;
    return Result::success();
  }
  handle_ = ::dlopen(kSoname, RTLD_NOW | RTLD_GLOBAL);
  if (handle_ != nullptr) {
    path_ = kSoname;
    return Result::success();
  }
  std::string tried = std::string(kSoname) + " (" + dl_error() + ")";
  for (const std::string& root : {drvroot_from_install_info(), std::string(kDefaultDrvroot)}) {
    if (root.empty()) continue;
    // The driver library carries no RUNPATH: its dependency must be loaded first, by path.
    const std::string sec = root + "/driver/lib64/common/libc_sec.so";
    (void)::dlopen(sec.c_str(), RTLD_NOW | RTLD_GLOBAL);
    const std::string lib = root + "/driver/lib64/driver/" + kSoname;
    handle_ = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle_ != nullptr) {
      path_ = lib;
      drvroot_ = root;
      return Result::success();
    }
    tried += ", " + lib + " (" + dl_error() + ")";
  }
  *why = "no driver library: tried " + tried;
  return Result::from_errno(EOPNOTSUPP);
}

void HalLibrary::resolve(const std::string& hide) {
  const std::set<std::string> hidden = names_in(hide);
  auto find = [&](const char* name) -> void* {
    if (hidden.count(name) != 0) return nullptr;
    // Whether the function exists is the library's answer alone: an interposer that defines
    // every name (tools/hal-recorder) must not make a missing function look present.
    void* own = ::dlsym(handle_, name);
    if (own == nullptr) return nullptr;
    // What to call is the global scope's, as for a program linked against the library: an
    // LD_PRELOADed recorder comes first there and sees this backend's calls too.
    void* global = ::dlsym(RTLD_DEFAULT, name);
    return global != nullptr ? global : own;
  };
#define ACLVMM_HAL_RESOLVE(name, required) \
  fn_.name = reinterpret_cast<decltype(&::name)>(find(#name));
  ACLVMM_HAL_FUNCTIONS(ACLVMM_HAL_RESOLVE)
#undef ACLVMM_HAL_RESOLVE
  fake_layout_ = reinterpret_cast<FakeLayoutFn>(::dlsym(handle_, "aclvmmFakeHalLayout"));
  fake_statistics_ =
      reinterpret_cast<FakeStatisticsFn>(::dlsym(handle_, "aclvmmFakeHalStatistics"));
}

Result HalLibrary::check(std::string* why) {
  std::string missing;
#define ACLVMM_HAL_REQUIRE(name, required) \
  if ((required) && fn_.name == nullptr)   \
    missing += std::string(missing.empty() ? "" : ", ") + #name;
  ACLVMM_HAL_FUNCTIONS(ACLVMM_HAL_REQUIRE)
#undef ACLVMM_HAL_REQUIRE
  if (!missing.empty()) {
    *why = path_ + " lacks required functions: " + missing;
    return Result::from_errno(EOPNOTSUPP);
  }
  // The toolkit's stub has the same name and returns 0 from everything without writing
  // (hal.md §1.1): it must never be taken for a driver.
  Dl_info info{};
  void* own = ::dlsym(handle_, "halGetAPIVersion");
  if (own != nullptr && ::dladdr(own, &info) != 0 && info.dli_fname != nullptr) {
    const std::string file = info.dli_fname;
    if (path_ == kSoname) path_ = file;
    if (file.find("/devlib/") != std::string::npos || file.find("/stub/") != std::string::npos) {
      *why = file + " is the toolkit's stub library, not a driver";
      return Result::from_errno(EOPNOTSUPP);
    }
  }
  int version = -1;
  uint32_t count = 0xFFFFFFFFu;
  const drvError_t v = fn_.halGetAPIVersion(&version);
  const drvError_t n = fn_.drvGetDevNum(&count);
  if (version == -1 || count == 0xFFFFFFFFu) {
    *why = path_ + " did not report its version and device count: the toolkit's stub library";
    return Result::from_errno(EOPNOTSUPP);
  }
  if (v != DRV_ERROR_NONE || n != DRV_ERROR_NONE) {
    *why = path_ + " refused the version or device-count query (" +
           driver_error_name(v != DRV_ERROR_NONE ? v : n) + ")";
    return Result::from_errno(EOPNOTSUPP);
  }
  if (count == 0) {
    *why = path_ + " reports no device";
    return Result::from_errno(EOPNOTSUPP);
  }
  if (count > static_cast<uint32_t>(kMaxDevices)) count = kMaxDevices;
  device_count_ = count;
  api_version_ = version;
  return Result::success();
}

std::string driver_error_name(uint32_t value) {
  switch (value) {
#define ACLVMM_HAL_ERROR_NAME(name) \
  case name: return #name;
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NONE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_DEVICE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_INVALID_DEVICE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_INVALID_VALUE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_INVALID_HANDLE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_INVALID_MALLOC_TYPE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_OUT_OF_MEMORY)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_INNER_ERR)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_PARA_ERROR)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_UNINIT)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_REPEATED_INIT)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NOT_EXIST)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_REPEATED_USERD)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_BUSY)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_RESOURCES)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_WAIT_TIMEOUT)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_IOCRL_FAIL)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_CLIENT_BUSY)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_SOCKET_CLOSE)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_SEND_MESG)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_BUS_DOWN)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_OVER_LIMIT)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_FILE_OPS)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_MALLOC_FAIL)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_PROCESS_EXIT)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_DEV_PROCESS_HANG)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_OPER_NOT_PERMITTED)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_EVENT_RESOURCES)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_STREAM_RESOURCES)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_NOTIFY_RESOURCES)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_MODEL_RESOURCES)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_TRY_AGAIN)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_MEMORY_OPT_FAIL)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_COPY_USER_FAIL)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_QUEUE_EMPTY)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_QUEUE_FULL)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_BAD_ADDRESS)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_CDQ_ABNORMAL)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_CDQ_NOT_EXIST)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NO_CDQ_RESOURCES)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_RESUME)
    ACLVMM_HAL_ERROR_NAME(DRV_ERROR_NOT_SUPPORT)
#undef ACLVMM_HAL_ERROR_NAME
    default: return "DRV_ERROR_" + std::to_string(value);
  }
}

}  // namespace aclvmm::dev::hal
