#include "drivers/fake/fake_blocks.h"

#include <mutex>

namespace aclvmm::dev::fake {
namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Result FakeBlocks::allocate(const BlockRequest& request, Block* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  const bool device = request.kind == BlockKind::kDevice;
  if (out == nullptr) return machine_.violation("block: no result pointer");
  if (!device && request.kind != BlockKind::kHostPinned) {
    return machine_.violation("block: no such kind");
  }
  if (device && !machine_.valid_device(request.device)) {
    return machine_.violation("block: no such device");
  }
  const uint64_t page = machine_.config().page_size;
  if (request.size == 0) return machine_.violation("block: no size");
  // No window holds it (block_allocator.h): an answer, not a violation.
  if (request.size > UINT64_MAX - kGiB) return Result::from_errno(ENOMEM);
  const uint64_t bytes = round_up(request.size, page);
  const uint64_t align = device && bytes >= kGiB ? kGiB : 2 * kMiB;  // block_allocator.h
  const uint64_t span = round_up(bytes, align);
  uint64_t address = 0;
  if (Result r = windows_.place_block_locked(!device, span, align, &address); !r.ok()) return r;
  PhysicalSpec spec;
  spec.location = device ? Location::device(request.device) : Location::host();
  spec.page_type = request.page_type;
  spec.mem_type = request.mem_type;
  spec.size = bytes;
  PhysicalId memory;
  if (Result r = physical_.create_locked(spec, page, &memory); !r.ok()) {
    windows_.free_block_locked(address);
    return r;
  }
  const uint32_t page_size =
      !device ? static_cast<uint32_t>(page)
      : request.page_type == PageType::kNormal ? static_cast<uint32_t>(page)
      : request.page_type == PageType::kGiant  ? static_cast<uint32_t>(kGiB)
                                               : static_cast<uint32_t>(2 * kMiB);
  const Result mapped = mmu_.map_block_locked(
      address, bytes, span, memory,
      device ? AddressInfo::Kind::kDeviceBlock : AddressInfo::Kind::kHostBlock, page_size);
  if (!mapped.ok()) {
    (void)physical_.release_locked(memory);
    windows_.free_block_locked(address);
    return mapped;
  }
  out->address = address;
  out->size = request.size;
  out->span = span;
  out->page_size = page_size;
  out->memory = memory;
  return Result::success();
}

Result FakeBlocks::free(uint64_t address) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  PhysicalId memory;
  if (Result r = mmu_.unmap_block_locked(address, &memory); !r.ok()) return r;
  windows_.free_block_locked(address);
  return physical_.release_locked(memory);
}

}  // namespace aclvmm::dev::fake
