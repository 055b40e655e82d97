#include "drivers/emu/fabric/libfabric.h"

#include <dlfcn.h>

#include <mutex>

namespace aclvmm::dev::emu::fabric {

namespace {

// The soname of libfabric 1.x (Debian's libfabric1): the headers this file was built with
// describe that ABI.
constexpr const char* kLibrary = "libfabric.so.1";

template <typename T>
bool resolve(void* lib, const char* name, T* out, std::string* missing) {
  *out = reinterpret_cast<T>(dlsym(lib, name));
  if (*out == nullptr) *missing = name;
  return *out != nullptr;
}

}  // namespace

const LibFabric* libfabric(std::string* why) {
  static std::once_flag once;
  static LibFabric table;
  static bool loaded = false;
  static std::string failure;
  std::call_once(once, [] {
    void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      failure = std::string(kLibrary) + " could not be loaded (" + (e ? e : "unknown") +
                "): install libfabric (Debian: libfabric1)";
      return;
    }
    std::string missing;
    loaded = resolve(lib, "fi_getinfo", &table.getinfo, &missing) &&
             resolve(lib, "fi_freeinfo", &table.freeinfo, &missing) &&
             resolve(lib, "fi_dupinfo", &table.dupinfo, &missing) &&
             resolve(lib, "fi_fabric", &table.open_fabric, &missing) &&
             resolve(lib, "fi_strerror", &table.strerror, &missing);
    if (!loaded) failure = std::string(kLibrary) + " has no " + missing;
    // Never closed: a provider may have started threads or installed handlers.
  });
  if (!loaded) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return &table;
}

}  // namespace aclvmm::dev::emu::fabric
