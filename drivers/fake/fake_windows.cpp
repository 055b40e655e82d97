#include "drivers/fake/fake_windows.h"

#include <cerrno>
#include <iterator>
#include <mutex>

namespace aclvmm::dev::fake {
namespace {

constexpr uint64_t kTiB = uint64_t{1} << 40;

// behavior.md §4: host pinned, managed (FakeConfig::managed_window), device (its general part
// from 0x12C000000000), no-UC.
constexpr VaRange kHostPinned{0x70000000000ull, 1 * kTiB};
constexpr VaRange kDevice{0x100000000000ull, 8 * kTiB};
constexpr VaRange kGeneral{0x12C000000000ull, kDevice.base + kDevice.size - 0x12C000000000ull};
constexpr VaRange kNoUc{0x180000000000ull, 0x800000000000ull - 0x180000000000ull};

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

FakeWindows::FakeWindows(FakeMachine& machine) : machine_(machine) {
  layout_.host_pinned = kHostPinned;
  layout_.managed = VaRange{machine.config().managed_window, machine.config().managed_window_size};
  layout_.device = kDevice;
  layout_.device_general = kGeneral;
  layout_.no_uc = kNoUc;
  general_.reset(kGeneral.base, kGeneral.base + kGeneral.size);
  host_.reset(kHostPinned.base, kHostPinned.base + kHostPinned.size);
}

Result FakeWindows::reserve(const ReserveRequest& request, uint64_t* address) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (address == nullptr) return machine_.violation("windows: no result pointer");
  if (request.size == 0 || request.size % (2 * kMiB) != 0) {
    return machine_.violation("windows: a size that is not a whole number of granules");
  }
  if (request.kind == ReserveKind::kNoUc) {
    const uint64_t at = request.fixed_address;
    if (at % kGiB != 0 || request.size % kGiB != 0 || !kNoUc.contains(at) ||
        request.size > kNoUc.base + kNoUc.size - at) {
      return machine_.violation("windows: a no-UC range outside the no-UC window or not in GiB");
    }
    // Taken when it overlaps another no-UC range.
    auto next = ranges_.lower_bound(at);
    if (next != ranges_.end() && next->first < at + request.size) return Result::from_errno(EBUSY);
    if (next != ranges_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second.size > at) return Result::from_errno(EBUSY);
    }
    ranges_[at] = Range{request.size, Kind::kNoUc};
    *address = at;
    return Result::success();
  }
  if (request.kind != ReserveKind::kDevice) return machine_.violation("windows: no such kind");
  if (request.alignment != 0 && (!power_of_two(request.alignment) || request.alignment < 2 * kMiB)) {
    return machine_.violation("windows: an alignment that is not a power of two of granules");
  }
  uint64_t base = request.fixed_address;
  if (base != 0) {
    if (!general_.allocate_at(base, request.size)) return Result::from_errno(EBUSY);
  } else if (!general_.allocate(request.size, request.alignment ? request.alignment : 2 * kMiB,
                                &base)) {
    return Result::from_errno(ENOMEM);
  }
  ranges_[base] = Range{request.size, Kind::kReservation};
  *address = base;
  return Result::success();
}

Result FakeWindows::release(uint64_t address, uint64_t size) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  auto it = ranges_.find(address);
  if (it == ranges_.end() || it->second.size != size ||
      (it->second.kind != Kind::kReservation && it->second.kind != Kind::kNoUc)) {
    return machine_.violation("windows: a release of no reservation exactly as reserved");
  }
  if (it->second.kind == Kind::kReservation) general_.free(address, size);
  ranges_.erase(it);
  return Result::success();
}

Result FakeWindows::place_block_locked(bool host, uint64_t span, uint64_t align,
                                       uint64_t* address) {
  if (!(host ? host_ : general_).allocate(span, align, address)) return Result::from_errno(ENOMEM);
  ranges_[*address] = Range{span, host ? Kind::kHostBlock : Kind::kDeviceBlock};
  return Result::success();
}

void FakeWindows::free_block_locked(uint64_t address) {
  auto it = ranges_.find(address);
  if (it == ranges_.end()) return;
  const bool host = it->second.kind == Kind::kHostBlock;
  if (!host && it->second.kind != Kind::kDeviceBlock) return;
  (host ? host_ : general_).free(address, it->second.size);
  ranges_.erase(it);
}

size_t FakeWindows::live_ranges() const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return ranges_.size();
}

}  // namespace aclvmm::dev::fake
