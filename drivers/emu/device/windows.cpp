#include "drivers/emu/device/windows.h"

#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "drivers/emu/os/placeholders.h"
#include "drivers/emu/sanitizers.h"
#include "drivers/injection_steps.h"
#include "drivers/ranges/va_allocator.h"

namespace aclvmm::dev::emu {
namespace {

constexpr uint64_t kTiB = uint64_t{1} << 40;
#if defined(ACLVMM_TSAN)
constexpr uint64_t kWindowDivisor = 64;
#else
constexpr uint64_t kWindowDivisor = 1;
#endif
constexpr uint64_t kHostWindow = 0x70000000000ull, kHostWindowSize = 1 * kTiB / kWindowDivisor;
constexpr uint64_t kUvmWindow = 0x90000000000ull, kUvmWindowSize = 3 * kTiB / kWindowDivisor;
constexpr uint64_t kSvmWindow = 0x100000000000ull, kSvmWindowSize = 8 * kTiB / kWindowDivisor;
constexpr uint64_t kSvmGeneralOffset = 0x12C000000000ull - kSvmWindow;
constexpr uint64_t kNoUcStart = 0x180000000000ull, kNoUcEnd = 0x800000000000ull;
constexpr uint64_t kPage = 4096;

// What every backend of the process shares (see windows.h). Never destroyed: backends may be
// released from late destructors.
struct ProcessWindows {
  std::mutex mu;
  bool claimed = false;
  WindowLayout layout;
  VaRange inherited[3];  // a forked child: where the parent's windows were (host, managed, device)
  bool forked = false;   // a forked child whose claimed windows are still the parent's
  VaAllocator host, managed, general;
  std::map<uint64_t, uint64_t> no_uc;  // base -> size of each no-UC placeholder
};

ProcessWindows& process() {
  static ProcessWindows* windows = new ProcessWindows;
  return *windows;
}

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void reset_free_lists(ProcessWindows& p) {
  const WindowLayout& l = p.layout;
  p.host.reset(l.host_pinned.base, l.host_pinned.base + l.host_pinned.size);
  p.managed.reset(l.managed.base, l.managed.base + l.managed.size);
  p.general.reset(l.device_general.base, l.device_general.base + l.device_general.size);
}

// Claims the three windows (p.mu held). On failure gives back what it claimed.
Result claim(ProcessWindows& p, BackendListener& listener, const InjectionGate& gate) {
  struct Want {
    uint64_t vendor, size;
    VaRange* out;
    const char* name;
  };
  WindowLayout l;
  Want wants[] = {{kHostWindow, kHostWindowSize, &l.host_pinned, "host pinned"},
                  {kUvmWindow, kUvmWindowSize, &l.managed, "managed"},
                  {kSvmWindow, kSvmWindowSize, &l.device, "device"}};
  for (size_t i = 0; i < 3; ++i) {
    Want& w = wants[i];
    // Under TSan even asking for the vendor's address aborts the process: the kernel chooses (an
    // inherited place is one the kernel chose under the same sanitizer, so it may be asked for).
    const uint64_t inherited = p.inherited[i].base;
    const uint64_t preferred = inherited ? inherited : kWindowDivisor == 1 ? w.vendor : 0;
    uint64_t size = inherited ? p.inherited[i].size : w.size;
    uint64_t base = 0;
    auto attempt = [&] {
      Result r = gate.check(steps::kEmuWindowClaim);
      return r.ok() ? Result::from_raw(os::claim_window(preferred, size, kGiB, &base)) : r;
    };
    Result r = attempt();
    // The windows shrink rather than fail: the concurrency tests need no terabyte reservations.
    while (r.raw() == -ENOMEM && size > 64 * kGiB) {
      size /= 2;
      r = attempt();
    }
    if (!r.ok()) {
      // Rollback: a later open claims them afresh at their preferred addresses instead of
      // finding them taken by our own leftovers.
      for (size_t j = 0; j < i; ++j) {
        (void)os::release_window(wants[j].out->base, wants[j].out->size);
      }
      listener.log(Severity::kError, "DRV",
                   (std::string("cannot claim the ") + w.name + " address window: errno " +
                    std::to_string(-r.raw()))
                       .c_str());
      return r;
    }
    if (base != w.vendor || size != w.size) {
      l.moved = true;
      listener.log(Severity::kWarning, "DRV",
                   (std::string("the ") + w.name + " window could not be placed at " +
                    hex(w.vendor) + " with " + std::to_string(w.size) +
                    " bytes (taken, e.g. by a sanitizer); it is at " + hex(base) + " with " +
                    std::to_string(size) + " bytes instead")
                       .c_str());
    }
    *w.out = VaRange{base, size};
  }
  // The general part starts at the vendor's offset unless the window had to shrink.
  const uint64_t general = (kWindowDivisor == 1 && l.device.size == kSvmWindowSize)
                               ? kSvmGeneralOffset
                               : l.device.size / 4;
  l.device_general = VaRange{l.device.base + general, l.device.size - general};
  l.no_uc = VaRange{kNoUcStart, kNoUcEnd - kNoUcStart};
  p.layout = l;
  reset_free_lists(p);
  for (VaRange& v : p.inherited) v = VaRange{};
  p.claimed = true;
  return Result::success();
}

// Gives the parent's windows back in a forked child (p.mu held) and remembers where they were.
void release_inherited_locked(ProcessWindows& p) {
  p.forked = false;
  if (!p.claimed) return;  // never claimed, or already given back by another abandoned backend
  for (const auto& [base, size] : p.no_uc) (void)os::release_window(base, size);
  p.no_uc.clear();
  const VaRange windows[] = {p.layout.host_pinned, p.layout.managed, p.layout.device};
  for (size_t i = 0; i < 3; ++i) {
    (void)os::release_window(windows[i].base, windows[i].size);
    p.inherited[i] = windows[i];
  }
  p.layout = WindowLayout{};
  reset_free_lists(p);
  p.claimed = false;
}

}  // namespace

Result EmuWindows::open() {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  // The first open in a forked child that had no backend to call release_inherited on.
  if (p.forked) release_inherited_locked(p);
  if (!p.claimed) {
    if (Result r = claim(p, listener_, gate_); !r.ok()) return r;
  }
  layout_ = p.layout;
  return Result::success();
}

Result EmuWindows::reserve(const ReserveRequest& request, uint64_t* address) {
  if (address == nullptr || request.size == 0) return Result::from_errno(EINVAL);
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  try {
    if (request.kind == ReserveKind::kNoUc) {
      const uint64_t at = request.fixed_address;
      if (!layout_.no_uc.contains(at) || request.size > layout_.no_uc.base + layout_.no_uc.size - at) {
        return Result::from_errno(EINVAL);
      }
      Result r = gate_.check(steps::kEmuWindowClaimFixed);
      if (r.ok()) r = Result::from_raw(os::claim_fixed(at, request.size));
      if (!r.ok()) return r.raw() == -EEXIST ? Result::from_errno(EBUSY) : r;
      try {
        p.no_uc.emplace(at, request.size);
      } catch (const std::bad_alloc&) {
        (void)os::release_window(at, request.size);  // the claim goes with its record
        return Result::from_errno(ENOMEM);
      }
      *address = at;
      return Result::success();
    }
    if (request.kind != ReserveKind::kDevice) return Result::from_errno(EINVAL);
    if (request.fixed_address != 0) {
      // Taken, or outside the part reservations come from: the range is not to be had (507899).
      if (!p.general.allocate_at(request.fixed_address, request.size)) {
        return Result::from_errno(EBUSY);
      }
      *address = request.fixed_address;
      return Result::success();
    }
    const uint64_t align = request.alignment ? request.alignment : 2 * kMiB;
    if (!p.general.allocate(request.size, align, address)) return Result::from_errno(ENOMEM);
    return Result::success();
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);  // VaAllocator's split of a free range
  }
}

Result EmuWindows::release(uint64_t address, uint64_t size) {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  auto it = p.no_uc.find(address);
  if (it != p.no_uc.end()) {
    if (it->second != size) return Result::from_errno(EINVAL);
    // A range that cannot be given back stays reserved: forgetting it would leak the placeholder.
    Result r = gate_.check(steps::kEmuWindowRelease);
    if (r.ok()) r = Result::from_raw(os::release_window(address, size));
    if (!r.ok()) return r;
    p.no_uc.erase(it);
    return Result::success();
  }
  if (!layout_.device_general.contains(address)) return Result::from_errno(EINVAL);
  try {
    p.general.free(address, size);
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);  // kept: a later release may succeed
  }
  return Result::success();
}

Result EmuWindows::place_block(bool host, uint64_t span, uint64_t align, uint64_t* address) {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  try {
    return (host ? p.host : p.general).allocate(span, align, address) ? Result::success()
                                                                        : Result::from_errno(ENOMEM);
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);
  }
}

void EmuWindows::free_block(bool host, uint64_t address, uint64_t span) {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  try {
    (host ? p.host : p.general).free(address, span);
  } catch (const std::bad_alloc&) {
    // The range stays taken: lost address space, never a range handed out twice.
  }
}

Result EmuWindows::place_managed(uint64_t size, uint64_t* address) {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  try {
    return p.managed.allocate(size, kPage, address) ? Result::success() : Result::from_errno(ENOMEM);
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);
  }
}

void EmuWindows::free_managed(uint64_t address, uint64_t size) {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  try {
    p.managed.free(address, size);
  } catch (const std::bad_alloc&) {
    // As free_block.
  }
}

void EmuWindows::prepare_fork() { process().mu.lock(); }
void EmuWindows::after_fork_parent() { process().mu.unlock(); }
void EmuWindows::after_fork_child() {
  ProcessWindows& p = process();
  p.forked = p.claimed;
  p.mu.unlock();
}

void EmuWindows::release_inherited() {
  ProcessWindows& p = process();
  std::lock_guard lock(p.mu);
  release_inherited_locked(p);
}

}  // namespace aclvmm::dev::emu
