// VendorFunction: a function of the vendor's runtime library beside aclvmm in one process
// (hal.md §6; docs/hal.md "Beside the vendor runtime").
//
// When the hal backend finds the vendor runtime loaded (Capabilities::beside_vendor_runtime),
// aclvmm serves the virtual-memory calls and the vendor keeps devices, contexts, streams and
// kernels: the facade forwards those calls to the vendor's definition of the same function
// (api/api_forward.h), and the core asks the vendor for the calling thread's current device.
//
// Where the vendor's definition is found, in this order:
//  1. the next object after aclvmm's library in the lookup order (dlsym(RTLD_NEXT, name)): the
//     vendor's libascendcl.so / libacl_rt.so when aclvmm comes first by link order or by
//     LD_PRELOAD under another file name;
//  2. the vendor's implementation `<name>Impl` anywhere in the process (dlsym(RTLD_DEFAULT)):
//     when aclvmm is LD_PRELOADed as libacl_rt.so or libascendcl.so, the loader satisfies the
//     vendor's thin forwarding library by its SONAME with aclvmm, and only the library holding
//     the bodies (libruntime.so, abi.md "Linkage") is loaded.
// A definition that belongs to an aclvmm library (another copy, found by its aclvmmStatsJson
// export) is never taken: forwarding to it would be aclvmm calling itself.
//
// Threading: any thread. Each name is resolved once; racing first calls resolve it twice and
// store the same answer. Fork: addresses stay valid in the child (same mappings).
#pragma once

#include <atomic>

namespace aclvmm {

class VendorFunction {
 public:
  explicit constexpr VendorFunction(const char* name) : name_(name) {}
  VendorFunction(const VendorFunction&) = delete;
  VendorFunction& operator=(const VendorFunction&) = delete;

  // The vendor's definition, or nullptr when the process has none.
  void* address();
  // Typed: `vendor.as<decltype(&aclrtSetDevice)>()`.
  template <typename Fn>
  Fn as() {
    return reinterpret_cast<Fn>(address());
  }
  const char* name() const { return name_; }

 private:
  const char* const name_;
  std::atomic<void*> address_{nullptr};
  std::atomic<bool> resolved_{false};
};

}  // namespace aclvmm
