#include "drivers/emu/os/process_pages.h"

#include <sys/mman.h>

#include <cerrno>

#include "drivers/emu/os/util.h"

namespace aclvmm::dev::emu::os {

int probe_mapped(uint64_t addr, uint64_t size) {
  if (!valid_page_range(addr, size)) return -EINVAL;
  // msync with MS_ASYNC touches no page and writes nothing back for private memory; it fails
  // with ENOMEM exactly when part of the range is not mapped (mincore would need a vector).
  if (::msync(reinterpret_cast<void*>(addr), size, MS_ASYNC) != 0) return -errno;
  return 0;
}

int pin(uint64_t addr, uint64_t size) {
  if (::mlock(reinterpret_cast<const void*>(addr), size) != 0) return -errno;
  return 0;
}

int unpin(uint64_t addr, uint64_t size) {
  if (::munlock(reinterpret_cast<const void*>(addr), size) != 0) return -errno;
  return 0;
}

}  // namespace aclvmm::dev::emu::os
