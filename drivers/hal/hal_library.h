// HalLibrary: the vendor driver library (libascend_hal.so) found, loaded and checked as hal.md §1
// says, with one typed pointer per function it offers.
//
// Contract
// - load() resolves the library in the order of hal.md §1.1 and stops at the first success:
//   1. `options.library` (ACLVMM_HAL_LIBRARY) when set: dlopen of that path, and a failure is
//      final (tests select the fake this way);
//   2. the instance already in the process (RTLD_NOLOAD: the vendor runtime's, which must be the
//      one used, hal.md §6.1);
//   3. "libascend_hal.so" through the loader's search path;
//   4. <drvroot>/driver/lib64/driver/libascend_hal.so after <drvroot>/driver/lib64/common/
//      libc_sec.so, for the drvroot of /etc/ascend_install.info and then /usr/local/Ascend.
//   Then the stub test (halGetAPIVersion and drvGetDevNum must write their outputs; a library
//   under a `/devlib/` or `/stub/` directory is the toolkit's stub), the required functions
//   (hal.md §1.3: those the vendor runtime links strongly, plus halGetAPIVersion) and a device
//   count above 0. Any failure: kNotSupported with the reason in *why (the backend is then
//   unavailable and says so once); the library is closed again unless it was already loaded.
// - Every function is looked up on its own. A function named in `options.hide`
//   (ACLVMM_HAL_HIDE, comma-separated) is treated as missing, so one fake library can exercise
//   every "missing" path. A missing optional function leaves its pointer null: the operation
//   that needs it answers kNotSupported (207000), as the vendor runtime does.
// - A function exists when the library defines it. It is then called through the process's
//   global scope, as a caller linked against the library (the vendor runtime) calls it: an
//   LD_PRELOADed interposer such as tools/hal-recorder comes first there and sees this backend's
//   calls too, without making a function the library lacks look present. The path test looks at
//   the library's own definitions.
//
// Threading: load() once, before the pointers are shared; afterwards read-only.
// Lifetime: the library stays loaded for the process's life (dlclose of a driver whose threads
// may still run is never safe); the object only drops its handle.
#pragma once

#include <cstdint>
#include <string>

#include "drivers/device_backend.h"
#include "drivers/device_result.h"
#include "drivers/hal/hal_decls.h"

namespace aclvmm::dev::hal {

// Every function of hal_decls.h: X(name, required).
#define ACLVMM_HAL_FUNCTIONS(X)                \
  X(halGetAPIVersion, true)                    \
  X(drvGetDevNum, true)                        \
  X(drvDeviceGetPhyIdByIndex, true)            \
  X(drvDeviceGetIndexByPhyId, true)            \
  X(halGetHostID, false)                       \
  X(halDeviceOpen, false)                      \
  X(halDeviceClose, false)                     \
  X(drvDeviceOpen, false)                      \
  X(drvDeviceClose, false)                     \
  X(drvMemDeviceOpen, false)                   \
  X(drvMemDeviceClose, false)                  \
  X(halMemAgentOpen, false)                    \
  X(halMemAgentClose, false)                   \
  X(drvMemSmmuQuery, true)                     \
  X(halSupportFeature, false)                  \
  X(halGetDeviceInfo, true)                    \
  X(halGetSocVersion, false)                   \
  X(halMemCtl, false)                          \
  X(halDeviceEnableP2P, true)                  \
  X(halDeviceDisableP2P, true)                 \
  X(halDeviceCanAccessPeer, true)              \
  X(halMapErrorCode, false)                    \
  X(halMemAddressReserve, false)               \
  X(halMemAddressFree, false)                  \
  X(halMemCreate, false)                       \
  X(halMemRelease, false)                      \
  X(halMemMap, false)                          \
  X(halMemUnmap, false)                        \
  X(halMemSetAccess, false)                    \
  X(halMemGetAccess, false)                    \
  X(halMemGetAllocationGranularity, false)     \
  X(halMemRetainAllocationHandle, false)       \
  X(halMemGetAllocationPropertiesFromHandle, false) \
  X(halMemGetAddressRange, false)              \
  X(halMemHandleSetAttribute, false)           \
  X(halMemHandleGetAttribute, false)           \
  X(halMemExportToShareableHandle, false)      \
  X(halMemExportToShareableHandleV2, false)    \
  X(halMemImportFromShareableHandle, false)    \
  X(halMemImportFromShareableHandleV2, false)  \
  X(halMemSetPidToShareableHandle, false)      \
  X(halMemTransShareableHandle, false)         \
  X(halMemShareHandleSetAttribute, false)      \
  X(halMemShareHandleGetAttribute, false)      \
  X(halMemShareHandleInfoGet, false)           \
  X(drvDeviceGetBareTgid, true)                \
  X(halMemAlloc, true)                         \
  X(halMemFree, true)                          \
  X(halMemAdvise, false)                       \
  X(halMemManagedAdvise, false)                \
  X(halMemManagedRangeGetAttributes, false)    \
  X(halMemManagedPrefetch, false)              \
  X(halMemManagedPrefetchBatch, false)         \
  X(halGetCurrentThreadNumaNode, false)        \
  X(drvMemPrefetchToDevice, true)              \
  X(drvMemGetAttribute, true)                  \
  X(halMemGetInfo, true)                       \
  X(drvMemcpy, true)                           \
  X(drvMemsetD8, true)                         \
  X(halMemcpy, false)                          \
  X(halSdmaCopy, false)                        \
  X(halMemMapNoAccess, false)

// One pointer per function, null when the library lacks it (or ACLVMM_HAL_HIDE hides it).
struct HalFunctions {
#define ACLVMM_HAL_POINTER(name, required) decltype(&::name) name = nullptr;
  ACLVMM_HAL_FUNCTIONS(ACLVMM_HAL_POINTER)
#undef ACLVMM_HAL_POINTER
};

// The window layout a fake driver library reports (drivers/hal/fake/fake_hal_ext.h): emu places
// its windows elsewhere under sanitizers, so the vendor's fixed addresses would be wrong there.
using FakeLayoutFn = int (*)(uint64_t out[10]);
// The emulator's counters a fake driver library reports (managed-memory migrations, refused
// imports): `visit` is called once per counter or flag (is_flag: value 0 or 1).
using FakeCounterVisit = void (*)(void* context, const char* group, const char* name,
                                  uint64_t value, int is_flag);
using FakeStatisticsFn = int (*)(FakeCounterVisit visit, void* context);

class HalLibrary {
 public:
  HalLibrary() = default;
  HalLibrary(const HalLibrary&) = delete;
  HalLibrary& operator=(const HalLibrary&) = delete;

  Result load(const HalOptions& options, std::string* why);

  const HalFunctions& fn() const { return fn_; }
  uint32_t device_count() const { return device_count_; }
  int api_version() const { return api_version_; }
  const std::string& path() const { return path_; }
  // The library was in the process before this backend looked (the vendor runtime's).
  bool preloaded() const { return preloaded_; }
  // "Version=… package_version=… Innerversion=…" of <drvroot>/driver/version.info, or "".
  const std::string& release() const { return release_; }
  FakeLayoutFn fake_layout() const { return fake_layout_; }
  FakeStatisticsFn fake_statistics() const { return fake_statistics_; }

 private:
  Result open_library(const HalOptions& options, std::string* why);
  Result check(std::string* why);
  void resolve(const std::string& hide);

  void* handle_ = nullptr;
  HalFunctions fn_;
  uint32_t device_count_ = 0;
  int api_version_ = 0;
  bool preloaded_ = false;
  std::string path_;
  std::string drvroot_;
  std::string release_;
  FakeLayoutFn fake_layout_ = nullptr;
  FakeStatisticsFn fake_statistics_ = nullptr;
};

// "DRV_ERROR_INVALID_VALUE" for 3; "DRV_ERROR_<n>" for values the table lacks.
std::string driver_error_name(uint32_t value);

}  // namespace aclvmm::dev::hal
