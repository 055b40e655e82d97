// Synchronous copies and fills (hal.md §3.11): drvMemcpy, drvMemsetD8, halMemcpy, halSdmaCopy,
// through emu's copy engine.
//
// The driver's DMA reaches everything the process mapped, whichever device it belongs to, while
// emu's engine checks the executing device's rights like a device MMU (copy_engine.h). So each
// side is classified (the managed window: kManaged; the device and host-pinned windows, and
// anything emu's page table holds, such as no-UC mappings: kMapped; the rest: process memory),
// the copy is cut where the device owning either side changes (emu's DeviceMmu::query), and each
// piece is executed by the device that owns its device-side memory, with every device in its
// peer mask. A piece between memory of two different devices goes through a bounded host
// buffer: the source's device reads, the destination's writes, so no peer grant is needed.
//
// Results: a range that is not fully mapped, not reachable, or a bad process pointer is the
// kernel's EINVAL for a copy request, i.e. PARA_ERROR (507899 at the ACL layer, as behavior.md
// wants for these); a managed page that does not fit on its device OUT_OF_MEMORY. No lock is
// held while bytes move.
#include <algorithm>
#include <memory>

#include "drivers/hal/fake/fake_hal.h"

namespace aclvmm::fakehal {
namespace {

constexpr uint64_t kBounce = 4 * kMiB;  // the host buffer of a device-to-device piece

struct Engine {
  dev::DeviceBackend* backend = nullptr;
  dev::WindowLayout layout;
  uint64_t peers = 0;  // every device
};

drvError_t engine(Engine* e) {
  Process* p = Process::peek();
  if (p == nullptr || !p->svm_open()) return DRV_ERROR_INVALID_HANDLE;
  e->backend = p->backend();
  if (e->backend == nullptr) return DRV_ERROR_INNER_ERR;
  e->layout = p->layout();
  const int n = config().device_count;
  e->peers = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  return DRV_ERROR_NONE;
}

// emu's query reads the page-table entry without a reference of its own: it runs under the
// process's lock, which every unmap and block free of this library holds, so that the entry it
// reads cannot be freed meanwhile (the copy itself runs outside the lock: emu's engine takes
// references when it translates).
bool query(const Engine& e, uint64_t va, dev::AddressInfo* info) {
  std::lock_guard lock(Process::get().mu);
  return e.backend->mmu().query(va, info).ok();
}

dev::CopyEndpoint endpoint(const Engine& e, uint64_t va) {
  if (e.layout.managed.contains(va)) return {va, dev::EndpointKind::kManaged};
  if (e.layout.device.contains(va) || e.layout.host_pinned.contains(va)) {
    return {va, dev::EndpointKind::kMapped};
  }
  dev::AddressInfo info;
  if (query(e, va, &info)) return {va, dev::EndpointKind::kMapped};
  return {va, dev::EndpointKind::kHostMemory};
}

// The device whose memory is at a mapped endpoint, and where that memory ends; kNoDevice (and
// no end) for host memory, managed memory and addresses nothing maps (emu then refuses them).
struct Owner {
  dev::DeviceIndex device = dev::kNoDevice;
  uint64_t end = UINT64_MAX;
};
Owner owner_of(const Engine& e, const dev::CopyEndpoint& side) {
  Owner o;
  dev::AddressInfo info;
  if (side.kind != dev::EndpointKind::kMapped || !query(e, side.address, &info)) {
    return o;
  }
  o.end = info.range.base + info.range.size;
  if (info.owner.kind == dev::Location::Kind::kDevice) o.device = info.owner.id;
  return o;
}

drvError_t outcome(const dev::CopyOutcome& out) {
  if (out.result.ok()) return DRV_ERROR_NONE;
  switch (out.result.condition()) {
    case dev::Condition::kBadAddress:
    case dev::Condition::kNotPermitted:
    case dev::Condition::kInvalidArgument: return DRV_ERROR_PARA_ERROR;
    default: return from_result(out.result);
  }
}

drvError_t copy_piece(const Engine& e, uint64_t dst, uint64_t src, uint64_t n,
                      dev::DeviceIndex executor) {
  dev::CopyRequest request;
  request.dst = endpoint(e, dst);
  request.src = endpoint(e, src);
  request.size = n;
  request.executor = dev::Executor{executor, e.peers};
  return outcome(e.backend->copy_engine().copy(request));
}

drvError_t copy(uint64_t dst, uint64_t src, uint64_t count) {
  Engine e;
  if (drvError_t r = engine(&e)) return r;
  std::unique_ptr<uint8_t[]> bounce;
  for (uint64_t done = 0; done < count;) {
    const uint64_t d = dst + done, s = src + done;
    const Owner od = owner_of(e, endpoint(e, d)), os = owner_of(e, endpoint(e, s));
    const uint64_t n = std::min({count - done, od.end - d, os.end - s});
    if (od.device == dev::kNoDevice || os.device == dev::kNoDevice || od.device == os.device) {
      const dev::DeviceIndex executor = od.device != dev::kNoDevice ? od.device : os.device;
      if (drvError_t r = copy_piece(e, d, s, n, executor)) return r;
    } else {
      if (!bounce) bounce.reset(new uint8_t[kBounce]);
      const auto buf = reinterpret_cast<uint64_t>(bounce.get());
      for (uint64_t off = 0; off < n; off += kBounce) {
        const uint64_t k = std::min(kBounce, n - off);
        if (drvError_t r = copy_piece(e, buf, s + off, k, os.device)) return r;
        if (drvError_t r = copy_piece(e, d + off, buf, k, od.device)) return r;
      }
    }
    done += n;
  }
  return DRV_ERROR_NONE;
}

drvError_t fill(uint64_t dst, uint8_t value, uint64_t count) {
  Engine e;
  if (drvError_t r = engine(&e)) return r;
  for (uint64_t done = 0; done < count;) {
    const uint64_t d = dst + done;
    const dev::CopyEndpoint side = endpoint(e, d);
    const Owner o = owner_of(e, side);
    const uint64_t n = std::min(count - done, o.end - d);
    dev::FillRequest request;
    request.dst = side;
    request.value = value;
    request.size = n;
    request.executor = dev::Executor{o.device, e.peers};
    if (drvError_t r = outcome(e.backend->copy_engine().fill(request))) return r;
    done += n;
  }
  return DRV_ERROR_NONE;
}

drvError_t memcpy_checked(DVdeviceptr dst, size_t dst_max, DVdeviceptr src, size_t count) {
  if (dst == 0 || src == 0 || dst_max == 0 || dst_max < count) return DRV_ERROR_INVALID_VALUE;
  if (count == 0) return DRV_ERROR_NONE;
  if (dst + count < dst || src + count < src) return DRV_ERROR_INVALID_VALUE;
  return copy(dst, src, count);
}

}  // namespace
}  // namespace aclvmm::fakehal

using aclvmm::fakehal::entry;
using aclvmm::fakehal::raw;
using aclvmm::fakehal::Fn;

FAKE_HAL_API DVresult drvMemcpy(DVdeviceptr dst, size_t dstMax, DVdeviceptr src, size_t count) {
  return entry(Fn::drvMemcpy,
               [&] { return aclvmm::fakehal::memcpy_checked(dst, dstMax, src, count); });
}

FAKE_HAL_API DVresult drvMemsetD8(DVdeviceptr dst, size_t dstMax, UINT8 value, size_t count) {
  return entry(Fn::drvMemsetD8, [&] {
    if (dst == 0 || dstMax < count || count == 0 || dst + count < dst) {
      return DRV_ERROR_INVALID_VALUE;
    }
    return aclvmm::fakehal::fill(dst, value, count);
  });
}

FAKE_HAL_API drvError_t halMemcpy(void* dst, size_t dstSize, void* src, size_t count,
                                  struct memcpy_info* info) {
  return entry(Fn::halMemcpy, [&] {
    if (info == nullptr) return DRV_ERROR_INVALID_VALUE;
    // SVM v2 serves only device-to-host here (§3.11).
    if (raw(info->dir) != DRV_MEMCPY_DEVICE_TO_HOST) return DRV_ERROR_NOT_SUPPORT;
    return aclvmm::fakehal::memcpy_checked(reinterpret_cast<DVdeviceptr>(dst), dstSize,
                                           reinterpret_cast<DVdeviceptr>(src), count);
  });
}

// Device-side (offline) mode's SDMA copy; on the host it is a copy like drvMemcpy.
FAKE_HAL_API drvError_t halSdmaCopy(DVdeviceptr dst, size_t dstSize, DVdeviceptr src,
                                    size_t count) {
  return entry(Fn::halSdmaCopy,
               [&] { return aclvmm::fakehal::memcpy_checked(dst, dstSize, src, count); });
}
