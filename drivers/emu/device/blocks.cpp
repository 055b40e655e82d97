#include "drivers/emu/device/blocks.h"

#include <cerrno>

#include "drivers/emu/device/device_mmu.h"
#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/physical_object.h"

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kHostPage = 4096;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// What pointer queries report for a block of this page type.
uint32_t page_size_of(PageType type) {
  switch (type) {
    case PageType::kNormal: return static_cast<uint32_t>(kHostPage);
    case PageType::kGiant: return static_cast<uint32_t>(kGiB);
    default: return static_cast<uint32_t>(2 * kMiB);
  }
}

}  // namespace

Result EmuBlocks::allocate(const BlockRequest& request, Block* out) {
  const bool device = request.kind == BlockKind::kDevice;
  if (out == nullptr || (!device && request.kind != BlockKind::kHostPinned) ||
      (device && (request.device < 0 || request.device >= device_count_)) || request.size == 0 ||
      request.size > UINT64_MAX - kGiB) {
    return Result::from_errno(EINVAL);
  }
  const uint64_t bytes = round_up(request.size, kHostPage);
  const uint64_t align = device && bytes >= kGiB ? kGiB : 2 * kMiB;  // block_allocator.h
  if (request.address == 0 || request.address % align != 0) return Result::from_errno(EINVAL);
  PhysicalSpec spec;
  spec.location = device ? Location::device(request.device) : Location::host();
  spec.page_type = request.page_type;
  spec.mem_type = request.mem_type;
  spec.size = bytes;
  EmuPhysical* object = nullptr;
  if (Result r = physical_.make(spec, &object); !r.ok()) return r;
  const uint32_t page_size = device ? page_size_of(request.page_type)
                                    : static_cast<uint32_t>(kHostPage);
  const Result mapped =
      mmu_.map_block(request.address, bytes, object,
                     device ? AddressInfo::Kind::kDeviceBlock : AddressInfo::Kind::kHostBlock,
                     page_size);
  if (!mapped.ok()) {
    object->drop();  // the charge and the memfd go with it
    return mapped;
  }
  out->address = request.address;
  out->size = request.size;
  out->span = round_up(bytes, align);
  out->page_size = page_size;
  out->memory = object->id();
  return Result::success();
}

Result EmuBlocks::free(uint64_t address) { return mmu_.unmap_block(address); }

}  // namespace aclvmm::dev::emu
