#include <new>

#include "drivers/driver.h"
#include "drivers/emu/emu_backend.h"

namespace aclvmm::drv {

std::unique_ptr<Backend> create_backend(const std::string& name) {
  if (name == "emu") return std::unique_ptr<Backend>(new (std::nothrow) emu::EmuBackend());
  return nullptr;
}

}  // namespace aclvmm::drv
