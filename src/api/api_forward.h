// Forwarding to the vendor runtime beside aclvmm (hal.md §6.2; docs/hal.md "Beside the vendor
// runtime").
//
// With the hal backend and the vendor runtime loaded in the same process, the vendor owns
// devices, contexts, streams, kernels, host registrations and IPC keys; aclvmm serves the
// virtual-memory calls. A function the vendor owns opens as every exported function does
// (ACLVMM_API_ENTER: the start decides the mode, injected failures apply) and then hands its
// arguments unchanged to the vendor's definition of the same name (runtime/vendor_runtime.h):
//
//   aclError aclrtCreateStream(aclrtStream* stream) {
//     ACLVMM_API_ENTER("aclrtCreateStream");
//     ACLVMM_FORWARD(aclrtCreateStream, stream);  // returns the vendor's code when beside it
//     ...                                         // aclvmm's own implementation otherwise
//   }
//
// A failure the vendor returns keeps its code; its message (the vendor's aclGetRecentErrMsg)
// becomes the message aclvmm's aclGetRecentErrMsg gives for the call. Without a vendor
// definition of the name the call answers 207000 and says which function is missing.
#pragma once

#include <utility>

#include "api/api_common.h"
#include "runtime/runtime.h"
#include "runtime/vendor_runtime.h"

namespace aclvmm::api {

// The code a forwarded call returned, with the vendor's message recorded for a failure.
aclError forwarded(const char* api, aclError code);
// 207000: the vendor runtime beside aclvmm does not define `vendor`.
aclError vendor_lacks(const char* api, const VendorFunction& vendor);

// Calls the vendor's definition of `vendor` (of type Fn) with `args`.
template <typename Fn, typename... Args>
aclError call_vendor(const char* api, VendorFunction& vendor, Args&&... args) {
  const Fn next = vendor.as<Fn>();
  if (next == nullptr) return vendor_lacks(api, vendor);
  return forwarded(api, next(std::forward<Args>(args)...));
}

}  // namespace aclvmm::api

// Defines `aclvmm_vendor_`, the vendor's `fn` (resolved at the first forwarded call).
#define ACLVMM_VENDOR_FUNCTION(fn) \
  static ::aclvmm::VendorFunction aclvmm_vendor_ { #fn }

// Inside an open barrier, after ACLVMM_ENTRY: beside the vendor runtime, returns what the
// vendor's `fn` returns for the same arguments.
#define ACLVMM_FORWARD(fn, ...)                                                             \
  do {                                                                                      \
    if (::aclvmm::Runtime::get().beside_vendor()) {                                         \
      ACLVMM_VENDOR_FUNCTION(fn);                                                           \
      return ::aclvmm::api::call_vendor<decltype(&fn)>(api, aclvmm_vendor_, ##__VA_ARGS__); \
    }                                                                                       \
  } while (0)
