#include "runtime/kernel_registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "observability/log.h"

namespace aclvmm {

KernelRegistry& KernelRegistry::get() {
  // Never destroyed: a library's destructor or a late thread may still unregister at exit.
  static KernelRegistry* registry = new KernelRegistry();
  return *registry;
}

Status KernelRegistry::add(const std::string& name, aclvmmNamedKernelFunc func, void* user_data) {
  std::lock_guard lock(mu_);
  if (!kernels_.emplace(name, NamedKernel{func, user_data}).second) {
    return Error(kAclKernelAlreadyRegistered,
                 "an emulated kernel is already registered under the name \"" + name +
                     "\"; unregister it first");
  }
  return Status::Ok();
}

Status KernelRegistry::remove(const std::string& name) {
  std::lock_guard lock(mu_);
  if (kernels_.erase(name) == 0) {
    return Error(kAclKernelNotFound,
                 "no emulated kernel is registered under the name \"" + name + "\"");
  }
  return Status::Ok();
}

std::optional<NamedKernel> KernelRegistry::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = kernels_.find(name);
  if (it == kernels_.end()) return std::nullopt;
  return it->second;
}

size_t KernelRegistry::size() const {
  std::lock_guard lock(mu_);
  return kernels_.size();
}

Status KernelRegistry::load_libraries(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    {
      std::lock_guard lock(mu_);
      if (std::find(loaded_.begin(), loaded_.end(), path) != loaded_.end()) continue;
    }
    // Without the lock: the library's constructors register their kernels through add().
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      return Error(kAclInvalidParam, "ACLVMM_KERNEL_LIBS: cannot load \"" + path +
                                         "\": " + (why ? why : "unknown error"));
    }
    // The handle is never closed: kernels registered by the library point into it.
    std::lock_guard lock(mu_);
    loaded_.push_back(path);
    ACLVMM_LOG_INFO("RUNTIME", "loaded the kernel library {} ({} kernel(s) registered)", path,
                    kernels_.size());
  }
  return Status::Ok();
}

}  // namespace aclvmm
