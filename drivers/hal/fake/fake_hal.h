// The fake driver library's internals (drivers/hal/fake/README.md): the vendor's user-space HAL
// and its kernel module, played over the emulated NPU (drivers/emu/).
//
// Who does what: the emu backend supplies the bytes (memfds), the address windows, the device
// page table and the CPU views, the copy engine, sharing between real processes and the managed
// memory model. This library keeps what the HAL and the kernel module keep per process: the
// opened devices, the handle objects with their ref/map_ref counts, the reservations and the
// mapping records keyed by start address with their access tables, the halMemAlloc blocks, the
// import and export records, and it makes every check hal.md §2, §3 and §5 list, in their order,
// with their codes. emu is only asked once a call has passed them, so emu's own checks never
// decide a code the HAL would decide.
//
// Structure: one Process object per process (process.cpp), created at the first call that needs
// it and abandoned (never destroyed) in a forked child; the emu backend inside it, created once,
// lazily; one mutex (Process::mu) over every table. Copies and imports run without it (they may
// wait for a peer process or move gigabytes). The C entry points are in the file of their
// subject (devices.cpp, handles.cpp, vmm.cpp, access.cpp, blocks.cpp, managed.cpp, copies.cpp,
// sharing.cpp, attributes.cpp), each behind entry() (injection, exceptions).
//
// Threading: every entry point from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>

#include "drivers/device_backend.h"
#include "drivers/hal/hal_decls.h"

// Exported with default visibility (the library is built with hidden visibility; the version
// script then lists these names only).
#define FAKE_HAL_API extern "C" __attribute__((visibility("default")))

// Every exported driver function that can fail on demand (aclvmmFakeHalInject); halMapErrorCode
// and the extensions are not in it. The order is the injection table's index.
#define FAKE_HAL_INJECTABLE(X)                                                                    \
  X(halGetAPIVersion) X(drvGetDevNum) X(drvDeviceGetPhyIdByIndex) X(drvDeviceGetIndexByPhyId)     \
  X(halGetHostID) X(halDeviceOpen) X(halDeviceClose) X(drvDeviceOpen) X(drvDeviceClose)           \
  X(drvMemDeviceOpen) X(drvMemDeviceClose) X(halMemAgentOpen) X(halMemAgentClose)                 \
  X(drvMemSmmuQuery) X(halSupportFeature) X(halGetDeviceInfo) X(halGetSocVersion) X(halMemCtl)    \
  X(halDeviceEnableP2P) X(halDeviceDisableP2P) X(halDeviceCanAccessPeer) X(halMemAddressReserve)  \
  X(halMemAddressFree) X(halMemCreate) X(halMemRelease) X(halMemMap) X(halMemUnmap)               \
  X(halMemSetAccess) X(halMemGetAccess) X(halMemGetAllocationGranularity)                         \
  X(halMemRetainAllocationHandle) X(halMemGetAllocationPropertiesFromHandle)                      \
  X(halMemGetAddressRange) X(halMemHandleSetAttribute) X(halMemHandleGetAttribute)                \
  X(halMemExportToShareableHandle) X(halMemExportToShareableHandleV2)                             \
  X(halMemImportFromShareableHandle) X(halMemImportFromShareableHandleV2)                         \
  X(halMemSetPidToShareableHandle) X(halMemTransShareableHandle)                                  \
  X(halMemShareHandleSetAttribute) X(halMemShareHandleGetAttribute) X(halMemShareHandleInfoGet)   \
  X(drvDeviceGetBareTgid) X(halMemAlloc) X(halMemFree) X(halMemAdvise) X(halMemManagedAdvise)     \
  X(halMemManagedRangeGetAttributes) X(halMemManagedPrefetch) X(halMemManagedPrefetchBatch)       \
  X(halGetCurrentThreadNumaNode) X(drvMemPrefetchToDevice) X(drvMemGetAttribute) X(halMemGetInfo) \
  X(drvMemcpy) X(drvMemsetD8) X(halMemcpy) X(halSdmaCopy)

// The handle object: what a drv_mem_handle_t* points to. Its address is the handle value the
// caller holds; it is dereferenced only after the registry (Process::live / dead) knows it.
struct drv_mem_handle {
  uint64_t serial = 0;
  // The handle's own fields (hal.md §3.1): side 0 host (also HOST_NUMA memory) or 1 device;
  // devid 65 for host memory, the device otherwise (an import: the importing device); the page
  // type actually used (promoted), the memory type, the module.
  uint32_t side = 0, devid = 0, pg_type = 0, mem_type = 0, module_id = 0;
  drv_mem_prop prop{};  // as created (an import: the exporter's), for GetAllocationProperties
  uint64_t size = 0;    // bytes of physical memory (rounded as the kernel rounds)
  uint64_t ref = 0, map_ref = 0;
  aclvmm::dev::PhysicalId memory;  // emu's object
  uint32_t route = 0;              // HANDLE_ATTR_MEM_MAP_ROUTE
  bool imported = false;
  uint64_t import_token = 0;  // (token, device) of the import record, HAL layout
  int32_t import_device = -1;
  uint64_t export_token = 0;  // this handle's export, HAL layout; 0: none
};

namespace aclvmm::fakehal {

inline constexpr uint32_t kHostId = 65;          // halGetHostID
inline constexpr uint32_t kMaxDeviceIds = 64;     // logical ids 0..63 are devices
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kHuge = 2 * kMiB;

// ---- configuration (config.cpp) ---------------------------------------------------------------
enum class Family : uint8_t { kA2, kA3, k950, kInf, kEdge, kTrain };

struct Config {
  bool valid = true;         // false: a malformed variable; the library then has no devices
  std::string soc = "Ascend910B1";
  Family family = Family::kA2;
  int32_t device_count = 8;  // 0 when !valid
  uint64_t device_memory = 64 * kGiB;
  bool host_access_open = false;
  bool host_numa = true;
  int32_t server_id = 0;     // ACLVMM_SERVER_ID (super-pod parts only)
  // ACLVMM_HAL_FAKE_PHYSICAL_BASE: physical id = logical id + this (a container's chips).
  uint32_t physical_base = 0;
  bool verbose = false;      // ACLVMM_HAL_FAKE_VERBOSE=1
};

// The environment, read once per process (a forked child keeps its parent's reading).
const Config& config();
bool giant_pages(Family f);  // 1 GiB pages (the chip feature of behavior.md §1)
bool super_pod(Family f);    // FABRIC, server id (A3)
bool managed_offered(Family f);  // the UVM functions (SVM v2 builds: not 950)
bool route_offered(Family f, uint32_t route);

// ---- failure injection (injection.cpp) ---------------------------------------------------------
enum class Fn : uint16_t {
#define FAKE_HAL_ENUM(name) name,
  FAKE_HAL_INJECTABLE(FAKE_HAL_ENUM)
#undef FAKE_HAL_ENUM
  kCount
};
// The armed code for this call of `fn` (counted), or 0.
uint32_t injected(Fn fn) noexcept;
// ACLVMM_HAL_FAULTS's grammar (README.md). false: malformed (the rules are then not armed).
bool arm_from_text(const std::string& text, std::string* error);
void injection_prepare_fork();
void injection_after_fork();

// ---- the emu backend's listener (process.cpp) --------------------------------------------------
class Listener final : public dev::BackendListener {
 public:
  void log(dev::Severity severity, const char* module, const char* message) noexcept override;
  void residency_event(const dev::ResidencyEvent&) noexcept override {}
  void usage_changed(dev::DeviceIndex, int64_t) noexcept override {}
  const std::atomic<bool>& injection_armed() const noexcept override { return armed_; }
  int injected(const char*) noexcept override { return 0; }

 private:
  const std::atomic<bool> armed_{false};  // emu's own steps are never injected by the fake
};

// ---- per-process tables ------------------------------------------------------------------------
struct Reservation {
  uint64_t base = 0, size = 0;
  bool no_uc = false;
  bool owned = false;  // fixed by the first map (hal.md §3.3)
  uint32_t owner_side = 0, owner_devid = 0;
  uint32_t mappings = 0;
};

// What halMemSetAccess recorded for one location of one mapping.
struct AccessSet {
  uint32_t type = 0;
  uint64_t size = 0;
};

struct Mapping {
  uint64_t va = 0, size = 0;
  drv_mem_handle* handle = nullptr;
  uint64_t reservation = 0;
  std::map<uint32_t, AccessSet> access;  // key: device id, or kHostKey for the HOST location
};
inline constexpr uint32_t kHostKey = 1000;

struct BlockRecord {
  uint64_t base = 0, size = 0, span = 0;
  uint32_t page_size = 0;
  bool host = false;
  int32_t device = -1;
};

class Process {
 public:
  // This process's state, created at the first call (never null, may throw bad_alloc).
  static Process& get();
  // The state if some call made it, else nullptr (a fork child starts without).
  static Process* peek();

  // The emu backend, created at the first call that needs it; nullptr when it cannot be
  // (malformed configuration, emu refused: logged once per failure).
  dev::DeviceBackend* backend();
  // The backend's windows; only once backend() succeeded.
  const dev::WindowLayout& layout() const { return layout_; }
  // The emu backend if some call made it, without making one (the statistics extension).
  dev::DeviceBackend* existing_backend() const {
    return backend_.load(std::memory_order_acquire);
  }

  // True while some device's memory agent is open (the SVM state exists, hal.md §2).
  bool svm_open() const { return open_count.load(std::memory_order_acquire) > 0; }

  std::mutex mu;  // every table below
  std::array<bool, kMaxDeviceIds> mem_open{}, dev_open{};
  std::atomic<int> open_count{0};
  std::atomic<bool> user_malloc_attr{false};  // FEATURE_SVM_GET_USER_MALLOC_ATTR was asked
  std::unordered_set<drv_mem_handle*> live, dead;
  std::deque<drv_mem_handle*> quarantine;  // dead handles, freed oldest first
  uint64_t next_serial = 1;
  std::map<uint64_t, Reservation> reservations;
  std::map<uint64_t, Mapping> mappings;
  std::map<uint64_t, BlockRecord> blocks;
  std::map<uint64_t, uint64_t> managed;  // base -> size
  std::map<std::pair<uint64_t, int32_t>, drv_mem_handle*> imports;
  std::map<uint64_t, drv_mem_handle*> exports;  // own tokens (HAL layout)
  std::set<uint64_t> no_wlist;                   // own tokens whose whitelist is off

  // Fork (process.cpp's pthread_atfork handlers).
  static void prepare_fork();
  static void after_fork_parent();
  static void after_fork_child();

 private:
  Process() = default;
  std::mutex backend_mu_;  // after mu in the lock order
  std::atomic<dev::DeviceBackend*> backend_{nullptr};  // never destroyed (see process.cpp)
  dev::WindowLayout layout_;
  Listener listener_;
};

// ---- shared helpers (handles.cpp unless noted) --------------------------------------------------
// errno -> drvError_t as the HAL translates kernel errnos (hal.md §3.0).
drvError_t from_errno(int errno_value);
// A backend Result as the HAL would return it (0 -> NONE).
drvError_t from_result(dev::Result r);

// The registry's verdict on a handle value (p.mu held): NONE and the object for a live one;
// INVALID_VALUE for NULL, a forged value or a live handle with bad fields; `dead_code` for one
// this library released (its memory is in quarantine: the vendor would read ref 0 there).
drvError_t check_handle(Process& p, drv_mem_handle* h, drvError_t dead_code);
// Drops one reference (p.mu held): the last one releases the memory in emu and retires the
// object (and its import/export records).
void drop_reference(Process& p, drv_mem_handle* h);
// A new handle object in the registry (p.mu held); ref 1.
drv_mem_handle* new_handle(Process& p);

// Where an address is (attributes.cpp; p.mu held, backend present).
enum class Place : uint8_t {
  kPlain,             // process memory outside every window
  kUnallocated,       // inside a window, nothing there
  kReservedUnmapped,  // inside a reservation, not mapped
  kMapping,
  kBlock,
  kManaged,
};
struct Where {
  Place place = Place::kPlain;
  const Mapping* mapping = nullptr;
  const BlockRecord* block = nullptr;
  uint64_t base = 0, size = 0;  // the allocation (mapping, block extent, managed range)
};
Where locate(const Process& p, uint64_t va);

// Tears down what the memory agent of `device` held (blocks.cpp; p.mu held): its halMemAlloc
// blocks and its mappings (each drops its handle reference as an unmap does).
void recycle_device(Process& p, int32_t device);

// Entry guard: the injection rule first, then the body; no exception leaves.
template <typename Body>
drvError_t entry(Fn fn, Body&& body) noexcept {
  if (const uint32_t code = injected(fn)) return static_cast<drvError_t>(code);
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return DRV_ERROR_MALLOC_FAIL;  // the library's own heap, not device memory
  } catch (...) {
    return DRV_ERROR_INNER_ERR;
  }
}

// The bits of an enum-typed argument or field. The caller is C: it may pass any 32-bit value
// (the runtime passes ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, 65535, as a granularity option), which
// C++ may not load as the enum type; so such inputs are read as their bytes.
template <typename E>
uint32_t raw(const E& e) {
  static_assert(sizeof(E) == sizeof(uint32_t), "a 4-byte enum (hal.md §1.4)");
  uint32_t v = 0;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
inline bool valid_device(int64_t d) { return d >= 0 && d < config().device_count; }
// The physical id of logical device `d` (valid), and the logical id of physical id `phy` (false:
// no device has it). The host id 65 is its own in both directions.
inline uint32_t physical_of(uint32_t d) { return d == kHostId ? d : d + config().physical_base; }
inline bool logical_of(uint32_t phy, uint32_t* d) {
  if (phy == kHostId) {
    *d = phy;
    return true;
  }
  if (phy < config().physical_base || !valid_device(int64_t{phy} - config().physical_base)) {
    return false;
  }
  *d = phy - config().physical_base;
  return true;
}

}  // namespace aclvmm::fakehal
