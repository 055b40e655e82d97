// HalPhysical: halMemCreate / halMemRelease and the handle queries (hal.md §3.1, §3.6, §3.7, §3.8).
#include <cstring>

#include "drivers/hal/hal_units.h"

namespace aclvmm::dev::hal {
namespace {

// struct drv_mem_prop as the vendor runtime builds it (hal.md §3.1): the location's side, the
// drv id for device memory (0 for the host, the node for HOST_NUMA), module APP (33).
drv_mem_prop prop_of(const PhysicalSpec& spec) {
  drv_mem_prop p;
  std::memset(&p, 0, sizeof p);
  p.side = static_cast<uint32_t>(spec.location.kind);
  p.devid =
      spec.location.kind == Location::Kind::kHost ? 0 : static_cast<uint32_t>(spec.location.id);
  p.module_id = APP_MODULE_ID;
  p.pg_type = static_cast<uint32_t>(spec.page_type);
  p.mem_type = static_cast<uint32_t>(spec.mem_type);
  return p;
}

}  // namespace

Result HalPhysical::create(const PhysicalSpec& spec, PhysicalId* out) {
  const HalFunctions& fn = *ctx_.fn;
  if (fn.halMemCreate == nullptr) return missing();
  if (spec.location.kind == Location::Kind::kNone)
    return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  if (spec.location.kind == Location::Kind::kDevice &&
      (spec.location.id < 0 || spec.location.id >= ctx_.device_count)) {
    return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  }
  if (spec.page_type == PageType::kGiant && !giant_pages_) return missing();
  // The core rounded the size (physical_allocator.h); the driver would round a smaller one up
  // to its page and charge what this backend never booked.
  if (spec.size == 0 || spec.size % page_granule(spec.page_type) != 0) {
    return Result::from_driver(DRV_ERROR_INVALID_VALUE);
  }
  const drv_mem_prop prop = prop_of(spec);
  drv_mem_handle_t* h = nullptr;
  if (Result r = driver_result(fn.halMemCreate(&h, spec.size, &prop, 0)); !r.ok()) return r;
  book_.add(id_of(h).value,
            spec.location.kind == Location::Kind::kDevice ? spec.location.id : kNoDevice,
            spec.size);
  *out = id_of(h);
  return Result::success();
}

Result HalPhysical::release(PhysicalId memory) {
  if (ctx_.fn->halMemRelease == nullptr) return missing();
  const Result r = driver_result(ctx_.fn->halMemRelease(handle_of(memory)));
  // The core releases once, at its last reference: the driver frees the bytes once the mappings
  // (which hold references of their own) are gone, which the core has seen to first.
  if (r.ok()) book_.remove(memory.value);
  return r;
}

void HalPhysical::release_all() {
  if (ctx_.fn->halMemRelease == nullptr) return;
  for (uint64_t key : book_.keys()) (void)release(PhysicalId{key});
}

Result HalPhysical::properties(PhysicalId memory, PhysicalProperties* out) const {
  if (ctx_.fn->halMemGetAllocationPropertiesFromHandle == nullptr) return missing();
  drv_mem_prop p;
  std::memset(&p, 0, sizeof p);
  const Result r =
      driver_result(ctx_.fn->halMemGetAllocationPropertiesFromHandle(&p, handle_of(memory)));
  if (!r.ok()) return r;
  PhysicalProperties props;
  props.location.kind = static_cast<Location::Kind>(p.side);
  props.location.id = p.side == MEM_HOST_SIDE ? 0 : static_cast<int32_t>(p.devid);
  props.page_type = static_cast<PageType>(p.pg_type);
  props.mem_type = static_cast<MemType>(p.mem_type);
  props.size = book_.size_of(memory.value);
  props.imported = props.size == 0;  // only what this backend created has a size here
  *out = props;
  return Result::success();
}

Result HalPhysical::granularity(const PhysicalSpec& spec, Granularity option, uint64_t* out) const {
  if (ctx_.fn->halMemGetAllocationGranularity == nullptr) return missing();
  const drv_mem_prop prop = prop_of(spec);
  size_t g = 0;
  const Result r = driver_result(ctx_.fn->halMemGetAllocationGranularity(
      &prop, static_cast<drv_mem_granularity_options>(option), &g));
  if (r.ok()) *out = g;
  return r;
}

Result HalPhysical::set_map_route(PhysicalId memory, uint32_t route) {
  if (ctx_.fn->halMemHandleSetAttribute == nullptr) return missing();
  HandleAttr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.mem_map_route = route;
  return driver_result(
      ctx_.fn->halMemHandleSetAttribute(handle_of(memory), HANDLE_ATTR_MEM_MAP_ROUTE, attr));
}

Result HalPhysical::map_route(PhysicalId memory, uint32_t* route) const {
  if (ctx_.fn->halMemHandleGetAttribute == nullptr) return missing();
  HandleAttr attr;
  std::memset(&attr, 0, sizeof attr);
  const Result r = driver_result(
      ctx_.fn->halMemHandleGetAttribute(handle_of(memory), HANDLE_ATTR_MEM_MAP_ROUTE, &attr));
  if (r.ok()) *route = attr.mem_map_route;
  return r;
}

}  // namespace aclvmm::dev::hal
