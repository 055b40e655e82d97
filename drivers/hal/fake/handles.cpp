// Handles and physical memory: halMemCreate / halMemRelease, the handle registry and its
// reference counts (hal.md §3.1, §3.3, §3.7), granularity (§3.6), properties, the map-route
// attribute (§3.8), and the error translation every file shares.
//
// A handle is a heap object whose address the caller holds. The registry knows the live ones;
// a released object stays in quarantine for a while with ref 0 (what the vendor's freed object
// would read), then is freed, so a stale or forged pointer is refused with INVALID_VALUE and
// never dereferenced.
#include <unistd.h>

#include <cerrno>

#include "drivers/emu/device/emu_device_backend.h"
#include "drivers/emu/device/physical_object.h"
#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

constexpr size_t kQuarantine = 4096;  // released handle objects kept before they are freed

bool bad_fields(const drv_mem_handle& h) {
  if (h.side > MEM_DEV_SIDE) return true;
  if (h.side == MEM_HOST_SIDE && h.devid != kHostId) return true;
  if (h.side == MEM_DEV_SIDE && h.devid >= 66) return true;
  return h.pg_type >= MEM_MAX_PAGE_TYPE || h.mem_type >= MEM_MAX_TYPE;
}

dev::Location location_of(const drv_mem_prop& prop) {
  switch (prop.side) {
    case MEM_DEV_SIDE: return dev::Location::device(static_cast<int32_t>(prop.devid));
    case MEM_HOST_NUMA_SIDE: return dev::Location::host_numa(static_cast<int32_t>(prop.devid));
    default: return dev::Location::host();
  }
}

}  // namespace

drvError_t from_errno(int e) {
  switch (e) {
    case 0: return DRV_ERROR_NONE;
    case EINVAL: return DRV_ERROR_PARA_ERROR;
    case EFAULT: return DRV_ERROR_INVALID_HANDLE;
    case ENOMEM: return DRV_ERROR_OUT_OF_MEMORY;
    case EPERM: return DRV_ERROR_OPER_NOT_PERMITTED;
    case EBUSY: return DRV_ERROR_BUSY;
    case EEXIST: case ENOENT: return DRV_ERROR_FILE_OPS;
    case ENOSPC: return DRV_ERROR_NO_RESOURCES;
    case ENODEV: case ENXIO: return DRV_ERROR_NO_DEVICE;
    case E2BIG: return DRV_ERROR_OVER_LIMIT;
    case EOPNOTSUPP: return DRV_ERROR_NOT_SUPPORT;
    case EAGAIN: return DRV_ERROR_TRY_AGAIN;
    case ETIMEDOUT: return DRV_ERROR_WAIT_TIMEOUT;
    case ESRCH: return DRV_ERROR_PROCESS_EXIT;
    default: return DRV_ERROR_IOCRL_FAIL;  // EACCES, EADDRINUSE, EIO, ... (hal.md §3.0)
  }
}

drvError_t from_result(dev::Result r) {
  if (r.ok()) return DRV_ERROR_NONE;
  if (r.is_driver()) return static_cast<drvError_t>(r.driver_value());
  return from_errno(r.errno_value());
}

drvError_t check_handle(Process& p, drv_mem_handle* h, drvError_t dead_code) {
  if (h == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (p.live.count(h) != 0) return bad_fields(*h) ? DRV_ERROR_INVALID_VALUE : DRV_ERROR_NONE;
  return p.dead.count(h) != 0 ? dead_code : DRV_ERROR_INVALID_VALUE;
}

drv_mem_handle* new_handle(Process& p) {
  auto* h = new drv_mem_handle();
  try {
    p.live.insert(h);
  } catch (...) {
    delete h;
    throw;
  }
  h->serial = p.next_serial++;
  h->ref = 1;
  return h;
}

void drop_reference(Process& p, drv_mem_handle* h) {
  if (h->ref > 1) {
    --h->ref;
    return;
  }
  // The last reference: the kernel frees the memory (emu: the object goes when nothing maps it;
  // its export ends with it) and the object is retired.
  if (dev::DeviceBackend* b = p.backend()) (void)b->physical().release(h->memory);
  if (h->imported) p.imports.erase({h->import_token, h->import_device});
  if (h->export_token != 0) {
    p.exports.erase(h->export_token);
    p.no_wlist.erase(h->export_token);
  }
  h->ref = 0;
  h->map_ref = 0;
  h->memory = dev::PhysicalId{};
  p.live.erase(h);
  // Quarantine: a stale pointer keeps meaning "released" for a while instead of aliasing a new
  // handle at once. Without memory for the records the object is freed now.
  try {
    p.dead.insert(h);
    p.quarantine.push_back(h);
  } catch (const std::bad_alloc&) {
    p.dead.erase(h);
    delete h;
    return;
  }
  if (p.quarantine.size() > kQuarantine) {
    drv_mem_handle* oldest = p.quarantine.front();
    p.quarantine.pop_front();
    p.dead.erase(oldest);
    delete oldest;
  }
}

namespace {

drvError_t create(drv_mem_handle** handle, size_t size, const drv_mem_prop* prop,
                  uint64_t flags) {
  if (handle == nullptr || size == 0 || flags != 0) return DRV_ERROR_INVALID_VALUE;
  if (prop == nullptr || prop->side >= MEM_MAX_SIDE ||
      (prop->devid >= kMaxDeviceIds && prop->side != MEM_HOST_NUMA_SIDE) ||
      prop->pg_type >= MEM_MAX_PAGE_TYPE || prop->mem_type >= MEM_MAX_TYPE) {
    return DRV_ERROR_INVALID_VALUE;
  }
  const Config& c = config();
  if (prop->mem_type == MEM_TS_DDR_TYPE) return DRV_ERROR_NOT_SUPPORT;
  if (prop->pg_type == MEM_GIANT_PAGE_TYPE) {
    const bool host = prop->side != MEM_DEV_SIDE;
    if (!giant_pages(c.family) || (host && prop->mem_type != MEM_P2P_DDR_TYPE)) {
      return DRV_ERROR_NOT_SUPPORT;
    }
  }
  if (prop->reserve != 0) return DRV_ERROR_INVALID_VALUE;
  if (prop->side == MEM_HOST_SIDE && prop->devid != 0) return DRV_ERROR_NOT_SUPPORT;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  // Decided by the device's agent on hardware (hal.md §7): a device this process has not opened.
  if (prop->side == MEM_DEV_SIDE && (!valid_device(prop->devid) || !p.mem_open[prop->devid])) {
    return DRV_ERROR_INVALID_DEVICE;
  }
  // The page type actually used (§3.1): giant stays, normal only for small RUNTIME requests.
  uint32_t pg = MEM_HUGE_PAGE_TYPE;
  if (prop->pg_type == MEM_GIANT_PAGE_TYPE) {
    pg = MEM_GIANT_PAGE_TYPE;
  } else if (prop->pg_type == MEM_NORMAL_PAGE_TYPE && prop->module_id == RUNTIME_MODULE_ID &&
             size < kHuge) {
    pg = MEM_NORMAL_PAGE_TYPE;
  }
  uint64_t bytes = size;
  if (pg == MEM_GIANT_PAGE_TYPE) {
    if (size > UINT64_MAX - kGiB) return DRV_ERROR_OUT_OF_MEMORY;
    bytes = round_up(size, kGiB);
  } else if (size % (pg == MEM_NORMAL_PAGE_TYPE ? 4096 : kHuge) != 0) {
    return DRV_ERROR_PARA_ERROR;  // the kernel's EINVAL
  }
  dev::DeviceBackend* b = p.backend();
  if (b == nullptr) return DRV_ERROR_INNER_ERR;
  dev::PhysicalSpec spec;
  spec.location = location_of(*prop);
  spec.page_type = static_cast<dev::PageType>(pg);
  spec.mem_type = static_cast<dev::MemType>(prop->mem_type);
  spec.size = bytes;
  dev::PhysicalId memory;
  if (pg == MEM_NORMAL_PAGE_TYPE) {
    // 4 KiB pages: below emu's 2 MiB granule, so made as emu makes a block's object.
    auto& allocator = static_cast<dev::emu::EmuPhysicalAllocator&>(b->physical());
    dev::emu::EmuPhysical* object = nullptr;
    if (dev::Result r = allocator.make(spec, &object); !r.ok()) return from_result(r);
    allocator.hold(object);
    memory = object->id();
  } else if (dev::Result r = b->physical().create(spec, &memory); !r.ok()) {
    return from_result(r);
  }
  drv_mem_handle* h = nullptr;
  try {
    h = new_handle(p);
  } catch (...) {
    (void)b->physical().release(memory);
    throw;
  }
  h->prop = *prop;
  h->side = prop->side == MEM_DEV_SIDE ? MEM_DEV_SIDE : MEM_HOST_SIDE;
  h->devid = prop->side == MEM_DEV_SIDE ? prop->devid : kHostId;
  h->pg_type = pg;
  h->mem_type = prop->mem_type;
  h->module_id =
      prop->module_id == UNKNOWN_MODULE_ID ? uint32_t{ASCENDCL_MODULE_ID} : prop->module_id;
  h->size = bytes;
  h->memory = memory;
  *handle = h;
  return DRV_ERROR_NONE;
}

drvError_t release(drv_mem_handle* handle) {
  if (handle == nullptr) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  if (drvError_t e = check_handle(p, handle, DRV_ERROR_INVALID_VALUE)) return e;
  if (handle->ref == 0 || handle->ref > UINT32_MAX) return DRV_ERROR_INVALID_VALUE;
  // "Released more often than retained": the mappings' references are not the caller's.
  if (handle->map_ref != 0 && handle->ref <= handle->map_ref) return DRV_ERROR_INVALID_VALUE;
  drop_reference(p, handle);
  return DRV_ERROR_NONE;
}

drvError_t granularity(const drv_mem_prop* prop, uint32_t option, size_t* out) {
  if (option >= MEM_ALLOC_GRANULARITY_INVALID) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  if (out == nullptr || prop == nullptr || prop->side >= MEM_MAX_SIDE ||
      (prop->devid >= kMaxDeviceIds && prop->devid != kHostId &&
       prop->side != MEM_HOST_NUMA_SIDE) ||
      prop->pg_type >= MEM_MAX_PAGE_TYPE || prop->mem_type >= MEM_MAX_TYPE ||
      prop->reserve != 0) {
    return DRV_ERROR_INVALID_VALUE;
  }
  if (prop->side == MEM_HOST_SIDE && prop->devid != 0 && prop->devid != kHostId) {
    return DRV_ERROR_NOT_SUPPORT;
  }
  if (prop->pg_type == MEM_GIANT_PAGE_TYPE) {
    *out = kGiB;
  } else if (option == MEM_ALLOC_GRANULARITY_MINIMUM && prop->pg_type == MEM_NORMAL_PAGE_TYPE &&
             prop->devid == kHostId && prop->module_id == RUNTIME_MODULE_ID) {
    *out = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  } else {
    *out = kHuge;
  }
  return DRV_ERROR_NONE;
}

drvError_t properties(drv_mem_prop* prop, drv_mem_handle* handle) {
  if (prop == nullptr || handle == nullptr) return DRV_ERROR_INVALID_VALUE;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  if (drvError_t e = check_handle(p, handle, DRV_ERROR_INVALID_VALUE)) return e;
  if (handle->prop.devid >= 66 || handle->ref == 0 || handle->ref > UINT32_MAX) {
    return DRV_ERROR_INVALID_VALUE;
  }
  *prop = handle->prop;
  return DRV_ERROR_NONE;
}

drvError_t set_route(drv_mem_handle* handle, uint32_t type, const HandleAttr& value) {
  if (type >= HANDLE_ATTR_TYPE_MAX) return DRV_ERROR_NOT_SUPPORT;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  if (drvError_t e = check_handle(p, handle, DRV_ERROR_INVALID_VALUE)) return e;
  if (!route_offered(config().family, value.mem_map_route)) return DRV_ERROR_NOT_EXIST;
  if (dev::DeviceBackend* b = p.backend()) {
    if (dev::Result r = b->physical().set_map_route(handle->memory, value.mem_map_route);
        !r.ok()) {
      return r.condition() == dev::Condition::kNotFound ? DRV_ERROR_NOT_EXIST : from_result(r);
    }
  }
  handle->route = value.mem_map_route;
  return DRV_ERROR_NONE;
}

drvError_t get_route(drv_mem_handle* handle, uint32_t type, HandleAttr* value) {
  if (value == nullptr) return DRV_ERROR_INVALID_VALUE;
  if (type >= HANDLE_ATTR_TYPE_MAX) return DRV_ERROR_NOT_SUPPORT;
  Process& p = Process::get();
  std::lock_guard lock(p.mu);
  if (!p.svm_open()) return DRV_ERROR_INVALID_HANDLE;
  if (drvError_t e = check_handle(p, handle, DRV_ERROR_INVALID_VALUE)) return e;
  *value = HandleAttr{};
  value->mem_map_route = handle->route;
  return DRV_ERROR_NONE;
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::raw;
using aclvmm::fakehal::Fn;

FAKE_HAL_API drvError_t halMemCreate(drv_mem_handle_t** handle, size_t size,
                                     const struct drv_mem_prop* prop, uint64_t flags) {
  return entry(Fn::halMemCreate,
               [&] { return aclvmm::fakehal::create(handle, size, prop, flags); });
}

FAKE_HAL_API drvError_t halMemRelease(drv_mem_handle_t* handle) {
  return entry(Fn::halMemRelease, [&] { return aclvmm::fakehal::release(handle); });
}

FAKE_HAL_API drvError_t halMemGetAllocationGranularity(const struct drv_mem_prop* prop,
                                                       drv_mem_granularity_options option,
                                                       size_t* granularity) {
  return entry(Fn::halMemGetAllocationGranularity,
               [&] { return aclvmm::fakehal::granularity(prop, raw(option), granularity); });
}

FAKE_HAL_API drvError_t halMemGetAllocationPropertiesFromHandle(struct drv_mem_prop* prop,
                                                                drv_mem_handle_t* handle) {
  return entry(Fn::halMemGetAllocationPropertiesFromHandle,
               [&] { return aclvmm::fakehal::properties(prop, handle); });
}

FAKE_HAL_API drvError_t halMemHandleSetAttribute(drv_mem_handle_t* handle,
                                                 enum HandleAttrType type,
                                                 struct HandleAttr value) {
  return entry(Fn::halMemHandleSetAttribute,
               [&] { return aclvmm::fakehal::set_route(handle, raw(type), value); });
}

FAKE_HAL_API drvError_t halMemHandleGetAttribute(drv_mem_handle_t* handle,
                                                 enum HandleAttrType type,
                                                 struct HandleAttr* value) {
  return entry(Fn::halMemHandleGetAttribute,
               [&] { return aclvmm::fakehal::get_route(handle, raw(type), value); });
}
