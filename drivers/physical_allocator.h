// PhysicalAllocator: physical memory objects (halMemCreate / halMemRelease,
// halMemGetAllocationPropertiesFromHandle, halMemGetAllocationGranularity,
// halMemHandleSet/GetAttribute). What the core's aclrtDrvMemHandle stands for underneath.
//
// Physical memory is an opaque object named by a PhysicalId, never a file descriptor: how its
// bytes are kept (a memfd for emu, device HBM on hardware, a byte store for fake) and how they
// reach another process are the backend's business. Bytes move only through the copy engine
// (copy_engine.h), CPU views only through the device MMU (device_mmu.h).
//
// Contract
// - create(): `size` already rounded by the core (a multiple of the page type's granule) and
//   every rule of behavior.md §1 checked (location ids, page/memory type combinations, product
//   gating). The new memory reads as zeros. Capacity is the backend's: kOutOfMemory when the
//   location is full (the core's 207001), the charge reported through
//   BackendListener::usage_changed. kNotSupported for a combination the driver does not offer
//   (e.g. kHostNuma without Capabilities::host_numa, kGiant without Capabilities::giant_page).
//   A location that names no device or NUMA node is kInvalidArgument on every backend (each
//   indexes its capacity by it, so none may trust it blindly). *out is written only on success.
// - release(): ends the object as far as this process's handle goes. The bytes live on while a
//   mapping (the core unmaps first) or another process (an import) holds them; the object's
//   exports end here (no new import succeeds: sharing.h). The core calls it exactly once, when its
//   last reference (ref and map_ref, behavior.md §6) goes; the id is dead afterwards. The charge
//   is returned when the bytes go, i.e. when the last holder lets go (emu: a copy still running
//   on the object, from migration step 3), with its usage_changed.
// - properties(): the properties the driver stores for the object (for an import: the
//   exporter's). The core keeps its own copy and asks only with
//   Capabilities::authoritative_queries.
// - granularity(): the minimum or recommended granularity for such a request (hal.md §3.6); works
//   before any device is opened.
// - set_map_route / map_route: the route later mappings of the object take (aclrtMemMapSetLink;
//   kNotFound when the driver knows no such route: the core's 207021).
//
// Threading: every method may be called from any thread, concurrently, also for one id (the
// core serializes release against everything else on that id: release runs when nothing else
// can name it). No method blocks beyond the allocation itself.
// Lifetime: ids live from create (or Sharing::import_*) until release.
#pragma once

#include <cstdint>

#include "drivers/device_result.h"
#include "drivers/device_types.h"

namespace aclvmm::dev {

struct PhysicalSpec {
  Location location;                    // kDevice, kHost (id 0) or kHostNuma (a node)
  PageType page_type = PageType::kHuge;
  MemType mem_type = MemType::kHbm;
  uint64_t size = 0;
};

struct PhysicalProperties {
  Location location;                    // an import: the exporter's location
  PageType page_type = PageType::kHuge;
  MemType mem_type = MemType::kHbm;
  uint64_t size = 0;
  bool imported = false;
};

enum class Granularity : uint8_t { kMinimum = 0, kRecommended = 1 };

// The granule of a page type: sizes of physical memory and of mappings are multiples of it
// (behavior.md §1: 2 MiB, also for PageType::kNormal; 1 GiB for kGiant). Minimum and
// recommended granularity are both this on every backend so far.
constexpr uint64_t page_granule(PageType type) {
  return type == PageType::kGiant ? kGiB : 2 * kMiB;
}

// Map routes (aclrtMemLinkType 0..3): which of them a product offers is the core's product rule;
// a backend answers kNotFound for a route it does not know (the core's 207021).
inline constexpr uint32_t kMapRouteCount = 4;

class PhysicalAllocator {
 public:
  virtual ~PhysicalAllocator() = default;
  virtual Result create(const PhysicalSpec& spec, PhysicalId* out) = 0;
  virtual Result release(PhysicalId memory) = 0;
  virtual Result properties(PhysicalId memory, PhysicalProperties* out) const = 0;
  virtual Result granularity(const PhysicalSpec& spec, Granularity option, uint64_t* out) const = 0;
  virtual Result set_map_route(PhysicalId memory, uint32_t route) = 0;
  virtual Result map_route(PhysicalId memory, uint32_t* route) const = 0;
};

}  // namespace aclvmm::dev
