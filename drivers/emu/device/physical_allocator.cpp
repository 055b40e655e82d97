#include "drivers/emu/device/physical_allocator.h"

#include <cerrno>
#include <memory>
#include <new>
#include <utility>

#include "drivers/emu/device/capacity.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/emu/os/memfd_memory.h"
#include "drivers/emu/os/memory_recycler.h"
#include "drivers/emu/sharing/emu_sharing.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::emu {
namespace {

Result invalid() { return Result::from_errno(EINVAL); }

}  // namespace

EmuPhysicalAllocator::EmuPhysicalAllocator(CapacityLedger& ledger, BackendListener& listener,
                                           int32_t device_count, int32_t numa_nodes, bool giant)
    : ledger_(ledger),
      gate_(listener),
      device_count_(device_count),
      numa_nodes_(numa_nodes),
      giant_(giant) {}

EmuPhysicalAllocator::~EmuPhysicalAllocator() {
  for (EmuPhysical* object = held_head_; object != nullptr;) {
    EmuPhysical* next = object->held_next_;
    object->drop();
    object = next;
  }
  // The backend goes (aclFinalize): freed device memory is not kept for allocations that may
  // never come.
  os::recycler::drain();
}

void EmuPhysicalAllocator::hold(EmuPhysical* object) {
  std::lock_guard lock(held_mu_);
  object->held_prev_ = nullptr;
  object->held_next_ = held_head_;
  if (held_head_ != nullptr) held_head_->held_prev_ = object;
  held_head_ = object;
  object->held_ = true;
}

Result EmuPhysicalAllocator::check(const PhysicalSpec& spec) const {
  switch (spec.location.kind) {
    case Location::Kind::kDevice:
      if (spec.location.id < 0 || spec.location.id >= device_count_) return invalid();
      break;
    case Location::Kind::kHost:
      if (spec.location.id != 0) return invalid();
      break;
    case Location::Kind::kHostNuma:
      if (numa_nodes_ == 0) return Result::from_errno(EOPNOTSUPP);
      if (spec.location.id < 0 || spec.location.id >= numa_nodes_) return invalid();
      break;
    default:
      return invalid();
  }
  if (spec.page_type > PageType::kGiant || spec.mem_type > MemType::kP2pDdr) return invalid();
  if (spec.page_type == PageType::kGiant && !giant_) return Result::from_errno(EOPNOTSUPP);
  return Result::success();
}

Result EmuPhysicalAllocator::create(const PhysicalSpec& spec, PhysicalId* out) {
  if (out == nullptr) return invalid();
  const uint64_t granule = page_granule(spec.page_type);
  if (spec.size == 0 || spec.size % granule != 0) return invalid();
  EmuPhysical* object = nullptr;
  if (Result r = make(spec, &object); !r.ok()) return r;
  hold(object);
  *out = object->id();
  return Result::success();
}

Result EmuPhysicalAllocator::make(const PhysicalSpec& spec, EmuPhysical** out) {
  if (Result r = check(spec); !r.ok()) return r;
  if (spec.size == 0) return invalid();
  if (Result r = ledger_.charge(spec.location, spec.size); !r.ok()) return r;
  std::shared_ptr<os::PhysicalMemory> memory;
  Result made = gate_.check(steps::kEmuMemfdCreate);
  // Device memory comes from, and goes back to, the recycler (os/memory_recycler.h).
  const bool device = spec.location.kind == Location::Kind::kDevice;
  if (made.ok()) made = Result::from_raw(os::MemfdMemory::create(spec.size, &memory, device));
  EmuPhysical* object = nullptr;
  if (made.ok()) {
    PhysicalProperties props;
    props.location = spec.location;
    props.page_type = spec.page_type;
    props.mem_type = spec.mem_type;
    props.size = spec.size;
    object = new (std::nothrow) EmuPhysical(props, std::move(memory), &ledger_);
    if (object == nullptr) made = Result::from_errno(ENOMEM);  // the memfd closes with `memory`
  }
  if (!made.ok()) {
    ledger_.uncharge(spec.location, spec.size);
    return made;
  }
  *out = object;
  return Result::success();
}

Result EmuPhysicalAllocator::release(PhysicalId memory) {
  if (!memory) return invalid();
  if (sharing_ != nullptr) sharing_->memory_released(memory);
  EmuPhysical* object = EmuPhysical::from_id(memory);
  {
    std::lock_guard lock(held_mu_);
    // An import made without a holder (EmuSharing without an allocator) is not on the list.
    if (object->held_) {
      if (object->held_prev_ != nullptr) object->held_prev_->held_next_ = object->held_next_;
      else held_head_ = object->held_next_;
      if (object->held_next_ != nullptr) object->held_next_->held_prev_ = object->held_prev_;
      object->held_ = false;
    }
  }
  object->drop();
  return Result::success();
}

Result EmuPhysicalAllocator::properties(PhysicalId memory, PhysicalProperties* out) const {
  if (!memory || out == nullptr) return invalid();
  *out = EmuPhysical::from_id(memory)->properties();
  return Result::success();
}

Result EmuPhysicalAllocator::granularity(const PhysicalSpec& spec, Granularity option,
                                         uint64_t* out) const {
  if (out == nullptr || option > Granularity::kRecommended) return invalid();
  if (spec.page_type > PageType::kGiant) return invalid();
  if (spec.page_type == PageType::kGiant && !giant_) return Result::from_errno(EOPNOTSUPP);
  *out = page_granule(spec.page_type);
  return Result::success();
}

Result EmuPhysicalAllocator::set_map_route(PhysicalId memory, uint32_t route) {
  if (!memory) return invalid();
  if (route >= kMapRouteCount) return Result::from_errno(ENOENT);
  EmuPhysical::from_id(memory)->set_route(route);
  return Result::success();
}

Result EmuPhysicalAllocator::map_route(PhysicalId memory, uint32_t* route) const {
  if (!memory || route == nullptr) return invalid();
  *route = EmuPhysical::from_id(memory)->route();
  return Result::success();
}

}  // namespace aclvmm::dev::emu
