#include "runtime/vendor_runtime.h"

#include <dlfcn.h>

#include <string>

namespace aclvmm {
namespace {

// True when `symbol` is defined by aclvmm itself: this library, or another copy of it (which
// exports aclvmmStatsJson, a name no vendor library has).
bool defined_by_aclvmm(void* symbol) {
  Dl_info found{};
  Dl_info self{};
  if (::dladdr(symbol, &found) == 0 || found.dli_fname == nullptr) return false;
  if (::dladdr(reinterpret_cast<void*>(&defined_by_aclvmm), &self) != 0 &&
      found.dli_fbase == self.dli_fbase) {
    return true;
  }
  void* object = ::dlopen(found.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (object == nullptr) return false;
  const bool ours = ::dlsym(object, "aclvmmStatsJson") != nullptr;
  ::dlclose(object);  // drops only the reference NOLOAD took
  return ours;
}

void* resolve(const char* name) {
  if (void* next = ::dlsym(RTLD_NEXT, name); next != nullptr && !defined_by_aclvmm(next)) {
    return next;
  }
  const std::string impl = std::string(name) + "Impl";
  if (void* body = ::dlsym(RTLD_DEFAULT, impl.c_str());
      body != nullptr && !defined_by_aclvmm(body)) {
    return body;
  }
  return nullptr;
}

}  // namespace

void* VendorFunction::address() {
  if (resolved_.load(std::memory_order_acquire)) return address_.load(std::memory_order_relaxed);
  void* found = resolve(name_);
  address_.store(found, std::memory_order_relaxed);
  resolved_.store(true, std::memory_order_release);
  return found;
}

}  // namespace aclvmm
