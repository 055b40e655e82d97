// HalWindows: the driver's fixed windows (behavior.md §4) and halMemAddressReserve /
// halMemAddressFree (hal.md §3.2).
#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {
namespace {

// The SVM v2 windows. host_pinned covers both placements of the host-pin heap (0x70000000000,
// or 0x80000000000 when host and device are linked by HCCS): the core only classifies addresses
// with it, and nothing else lives between the two.
WindowLayout vendor_layout() {
  WindowLayout w;
  w.host_pinned = VaRange{0x70000000000ull, 0x20000000000ull};
  w.managed = VaRange{0x90000000000ull, 0x30000000000ull};
  w.device = VaRange{0x100000000000ull, 0x80000000000ull};
  w.device_general = VaRange{0x12C000000000ull, 0x180000000000ull - 0x12C000000000ull};
  w.no_uc = VaRange{0x180000000000ull, 0x1000000000000ull - 0x180000000000ull};
  return w;
}

bool same(VaRange a, VaRange b) { return a.base == b.base && a.size == b.size; }

}  // namespace

HalWindows::HalWindows(const HalContext& ctx, FakeLayoutFn fake_layout)
    : ctx_(ctx), layout_(vendor_layout()) {
  // A fake driver built on the emulator places its windows where the process lets it (elsewhere
  // under the sanitizers) and says where.
  uint64_t w[10] = {};
  if (fake_layout != nullptr && fake_layout(w) == 0) {
    const WindowLayout vendor = layout_;
    layout_.host_pinned = VaRange{w[0], w[1]};
    layout_.managed = VaRange{w[2], w[3]};
    layout_.device = VaRange{w[4], w[5]};
    layout_.device_general = VaRange{w[6], w[7]};
    layout_.no_uc = VaRange{w[8], w[9]};
    layout_.moved =
        !same(vendor.host_pinned, layout_.host_pinned) || !same(vendor.managed, layout_.managed) ||
        !same(vendor.device, layout_.device) ||
        !same(vendor.device_general, layout_.device_general) || !same(vendor.no_uc, layout_.no_uc);
  }
}

Result HalWindows::reserve(const ReserveRequest& request, uint64_t* address) {
  const HalFunctions& fn = *ctx_.fn;
  if (fn.halMemAddressReserve == nullptr) return missing();
  // Alignment 0: the driver's own rule yields the base the core's rule implies
  // (address_windows.h); the page type is the flags' low byte, 0x200 asks for the dynamic
  // (no-UC) window at the fixed address.
  uint64_t flags = request.page_type == PageType::kNormal ? 0 : 1;
  if (request.kind == ReserveKind::kNoUc) flags |= MEM_RSV_TYPE_REMOTE_MAP;
  void* va = nullptr;
  const Result r = driver_result(
      fn.halMemAddressReserve(&va, request.size, 0, va_ptr(request.fixed_address), flags));
  if (!r.ok()) return r;
  *address = reinterpret_cast<uintptr_t>(va);
  return Result::success();
}

Result HalWindows::release(uint64_t address, uint64_t size) {
  (void)size;
  if (ctx_.fn->halMemAddressFree == nullptr) return missing();
  return driver_result(ctx_.fn->halMemAddressFree(va_ptr(address)));
}

}  // namespace aclvmm::dev::hal
