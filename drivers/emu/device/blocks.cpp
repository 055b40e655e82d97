#include "drivers/emu/device/blocks.h"

#include <cerrno>

#include "drivers/emu/device/device_mmu.h"
#include "drivers/emu/device/physical_allocator.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/device/windows.h"

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
      (device && (request.device < 0 || request.device >= device_count_)) || request.size == 0) {
    return Result::from_errno(EINVAL);
  }
  // No window holds it (block_allocator.h); rounding it up would wrap.
  if (request.size > UINT64_MAX - kGiB) return Result::from_errno(ENOMEM);
  const uint64_t bytes = round_up(request.size, kHostPage);
  const uint64_t align = device && bytes >= kGiB ? kGiB : 2 * kMiB;  // block_allocator.h
  const uint64_t span = round_up(bytes, align);
  uint64_t address = 0;
  if (Result r = windows_.place_block(!device, span, align, &address); !r.ok()) return r;
  PhysicalSpec spec;
  spec.location = device ? Location::device(request.device) : Location::host();
  spec.page_type = request.page_type;
  spec.mem_type = request.mem_type;
  spec.size = bytes;
  EmuPhysical* object = nullptr;
  if (Result r = physical_.make(spec, &object); !r.ok()) {
    windows_.free_block(!device, address, span);
    return r;
  }
  const uint32_t page_size = device ? page_size_of(request.page_type)
                                    : static_cast<uint32_t>(kHostPage);
  const Result mapped =
      mmu_.map_block(address, bytes, object,
                     device ? AddressInfo::Kind::kDeviceBlock : AddressInfo::Kind::kHostBlock,
                     page_size);
  if (!mapped.ok()) {
    object->drop();  // the charge and the memfd go with it
    windows_.free_block(!device, address, span);
    return mapped;
  }
  out->address = address;
  out->size = request.size;
  out->span = span;
  out->page_size = page_size;
  out->memory = object->id();
  return Result::success();
}

EmuBlocks::~EmuBlocks() {
  // The page table's entries are the only record of the blocks; mappings are the MMU's to drop.
  const EmuPageTable& table = mmu_.page_table();
  for (const MmuEntry* e = table.first_from(0); e != nullptr;) {
    const uint64_t va = e->va, next = e->words_end();
    if (e->kind == AddressInfo::Kind::kDeviceBlock || e->kind == AddressInfo::Kind::kHostBlock) {
      (void)free(va);
    }
    e = next < EmuPageTable::kLimit ? table.first_from(next) : nullptr;
  }
}

Result EmuBlocks::free(uint64_t address) {
  AddressInfo::Kind kind = AddressInfo::Kind::kDeviceBlock;
  uint64_t bytes = 0;
  if (Result r = mmu_.unmap_block(address, &kind, &bytes); !r.ok()) return r;
  const bool host = kind == AddressInfo::Kind::kHostBlock;
  windows_.free_block(host, address, round_up(bytes, !host && bytes >= kGiB ? kGiB : 2 * kMiB));
  return Result::success();
}

}  // namespace aclvmm::dev::emu
