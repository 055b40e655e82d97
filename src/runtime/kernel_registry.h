// KernelRegistry: the process's emulated kernels by name (runtime-extra.md §9.8).
//
// On hardware a kernel is device code inside the binary aclrtBinaryLoadFromFile loads. The
// emulator cannot run device code, so a kernel is a CPU function registered under the kernel's
// name (aclvmmRegisterKernel, or the constructor of a library named by ACLVMM_KERNEL_LIBS), and
// aclrtBinaryGetFunction / aclrtLaunchKernelWithConfig find it by that name. The registry belongs
// to the process, not to a runtime start: registration works before aclInit (library
// constructors run before main) and survives aclFinalize.
//
// A launch looks the name up when the stream reaches the kernel (find), so the function that
// runs is the one registered at that moment; the entry is copied out, and the function is called
// with no lock held (it may register or unregister kernels itself).
//
// Threading: every method from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "aclvmm/aclvmm.h"
#include "base/lock_rank.h"
#include "base/status.h"

namespace aclvmm {

struct NamedKernel {
  aclvmmNamedKernelFunc func = nullptr;
  void* user_data = nullptr;
};

class KernelRegistry {
 public:
  static KernelRegistry& get();

  // 100031 when the name is taken (the existing entry stays).
  Status add(const std::string& name, aclvmmNamedKernelFunc func, void* user_data);
  // 100029 when the name is not registered.
  Status remove(const std::string& name);
  std::optional<NamedKernel> find(const std::string& name) const;
  size_t size() const;

  // Loads every library of ACLVMM_KERNEL_LIBS (`paths`, already split) that this process has not
  // loaded yet, with dlopen(RTLD_NOW | RTLD_LOCAL); their constructors register kernels. They
  // stay loaded until exit. 100000 naming the variable, the path and dlerror() for one that
  // cannot be loaded (those before it stay loaded).
  Status load_libraries(const std::vector<std::string>& paths);

 private:
  KernelRegistry() = default;

  mutable RankedMutex<LockRank::kKernelRegistry> mu_;
  std::map<std::string, NamedKernel> kernels_;
  std::vector<std::string> loaded_;  // libraries this process loaded, by the path it was given
};

}  // namespace aclvmm
