#include "drivers/host/table_memory.h"

#include <sys/mman.h>

namespace aclvmm::dev::host {

void* map_table(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  // Best effort: with transparent huge pages set to "never" the table works on small pages.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

}  // namespace aclvmm::dev::host
