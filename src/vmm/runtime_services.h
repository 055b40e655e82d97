// RuntimeServices: what vmm's operations (vmm.h, memory_ops.h) ask the runtime at each call,
// beyond the devices of DeviceDirectory: the product rules of the current configuration, whether
// a device was opened, the calling thread's current device and context, host memory's capacity
// and the OS-level backend. The operations get it at construction (vmm::Vmm, memops::MemoryOps,
// both owned by the Runtime) instead of reaching for the process-wide Runtime (issue 14); the
// runtime implements it, a unit test can give a stand-in.
//
// Threading: every method from any thread, under any vmm lock (as DeviceDirectory's).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "vmm/device_directory.h"
#include "vmm/physical.h"

namespace aclvmm {

// The configuration's rules vmm applies, answered from one configuration snapshot (so one call
// sees one configuration, as it did reading `rt.config()` once).
struct ProductRules {
  // The SoC's name for messages; snapshots are never freed, so it outlives the call.
  const std::string* soc = nullptr;
  bool no_uc_reserve = false;        // aclrtReserveMemAddressNoUCMemory exists
  bool expect_ptr = false;           // a reservation may ask for its address
  bool no_access_mappings = true;    // aclrtMemMapNoAccess on this interconnect (products.md)
  bool huge_1g_pages = false;        // 1 GiB pages (aclrtMallocPhysical, aclrtMalloc policies)
  bool quirks = false;               // ACLVMM_QUIRKS=vendor: the vendor's extra checks
  bool host_register = false;        // aclrtHostRegister[V2] and friends (runtime-extra.md §5)
  bool align32_pads = false;         // aclrtMallocAlign32 pads as aclrtMalloc does (950, §6)
  bool ipc_memory = false;           // IPC memory by key (runtime-extra.md §3)
  bool ipc_memory_a3 = false;        // its SetAttr and ImportPidInterServer
};

class RuntimeServices : public DeviceDirectory {
 public:
  virtual ProductRules rules() const = 0;
  // True once any device has been opened (the driver's per-process SVM state exists). A flag
  // of this object, not a virtual call: pointer queries ask it on every call.
  bool svm_ready() const { return svm_ready_.load(std::memory_order_acquire); }
  // The calling thread's current context and its physical device; 107002 when there is none.
  virtual StatusOr<uint64_t> current_context() const = 0;
  virtual StatusOr<int> current_device() const = 0;
  // Host memory handed out as physical or pinned memory; nullptr while stopped.
  virtual std::shared_ptr<MemoryPool> host_pool() const = 0;

 protected:
  ~RuntimeServices() = default;
  void set_svm_ready(bool ready) { svm_ready_.store(ready, std::memory_order_release); }

 private:
  std::atomic<bool> svm_ready_{false};
};

}  // namespace aclvmm
