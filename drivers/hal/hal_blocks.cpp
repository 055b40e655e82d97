// HalBlocks: aclrtMalloc / aclrtMallocHost blocks through halMemAlloc with the flag words of
// hal.md §3.12 (910B / 910_93; the 950 words are not known, §7), halMemFree.
#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {
namespace {

constexpr unsigned long long kAppModule = static_cast<unsigned long long>(APP_MODULE_ID)
                                          << MEM_MODULE_ID_BIT;

// The flag word the vendor runtime passes for this request. The core has already turned the
// malloc policy into a page and memory type and makes the huge-then-normal retry itself.
unsigned long long flags_of(const BlockRequest& r) {
  if (r.kind == BlockKind::kHostPinned) return MEM_SET_ALIGN_SIZE(9) | MEM_HOST | kAppModule;
  const auto d = static_cast<unsigned long long>(r.device) & MEM_DEVID_MASK;
  const bool p2p = r.mem_type == MemType::kP2pHbm || r.mem_type == MemType::kP2pDdr;
  if (r.page_type == PageType::kGiant) {
    return MEM_DEV | MEM_PAGE_GIANT | MEM_TYPE_HBM | (p2p ? MEM_ADVISE_P2P : 0) | d | kAppModule;
  }
  // P2P memory is DDR with normal pages on this chip, whatever the policy asked for.
  if (p2p) return MEM_DEV | MEM_TYPE_DDR | MEM_ADVISE_P2P | MEM_SET_ALIGN_SIZE(9) | d | kAppModule;
  return MEM_DEV | MEM_TYPE_HBM | (r.page_type == PageType::kHuge ? MEM_PAGE_HUGE : 0) |
         MEM_SET_ALIGN_SIZE(9) | d | kAppModule;
}

uint32_t page_size_of(const BlockRequest& r) {
  if (r.kind == BlockKind::kHostPinned) return 4096;
  switch (r.page_type) {
    case PageType::kGiant: return static_cast<uint32_t>(kGiB);
    case PageType::kHuge: return static_cast<uint32_t>(2 * kMiB);
    default: return 4096;
  }
}

}  // namespace

Result HalBlocks::allocate(const BlockRequest& request, Block* out) {
  if (request.size == 0) return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  if (request.kind == BlockKind::kDevice &&
      (request.device < 0 || request.device >= ctx_.device_count)) {
    return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  }
  void* p = nullptr;
  const Result r = driver_result(ctx_.fn->halMemAlloc(&p, request.size, flags_of(request)));
  if (!r.ok()) return r;
  const uint32_t page = page_size_of(request);
  Block b;
  b.address = reinterpret_cast<uintptr_t>(p);
  b.size = request.size;
  // What the block occupies as far as the core's region tree is concerned: whole pages of its
  // kind. The driver does not report it; a first hardware run checks (docs/hal.md).
  b.span = (request.size + page - 1) / page * page;
  b.page_size = page;
  b.memory = PhysicalId{};  // the driver keeps a block as one record, without a handle
  // Booked as requested: what the driver charges is the size it was asked for.
  book_.add(b.address, request.kind == BlockKind::kDevice ? request.device : kNoDevice,
            request.size);
  *out = b;
  return Result::success();
}

Result HalBlocks::free(uint64_t address) {
  const Result r = driver_result(ctx_.fn->halMemFree(va_ptr(address)));
  if (r.ok()) book_.remove(address);
  return r;
}

void HalBlocks::free_all() {
  for (uint64_t address : book_.keys()) (void)free(address);
}

}  // namespace aclvmm::dev::hal
