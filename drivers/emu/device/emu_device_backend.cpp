#include "drivers/emu/device/emu_device_backend.h"

#include <cerrno>
#include <new>
#include <utility>

#include "drivers/result_text.h"

namespace aclvmm::dev::emu {
namespace {

// What steps 1–2's units offer; the rest stays at the conservative defaults.
Capabilities capabilities_of(const HostServices& host) {
  Capabilities c;
  c.giant_page = kGiB;
  c.map_routes = true;
  c.map_without_access = true;
  c.access_none_and_read = true;
  c.cpu_visible_device_memory = true;  // a HOST grant maps the memfd for the CPU
  c.cpu_visible_host_memory = true;
  c.host_numa = host.numa_node_count() > 0;
  c.sharing = true;
  c.fabric_sharing = true;
  c.ipc_keys = true;
  c.disable_validation = true;
  c.managed_memory = true;
  c.managed_residency = true;  // where userfaultfd works (tracking() says after an allocation)
  c.managed_write_tracking = true;
  c.copies_check_access = true;
  return c;
}

std::vector<fabric::PodAddress> pod_addresses(const EmulationOptions& options) {
  std::vector<fabric::PodAddress> pod;
  for (const EmulationOptions::PodServer& s : options.pod) {
    pod.push_back(fabric::PodAddress{s.server_id, s.address, s.port});
  }
  return pod;
}

}  // namespace

EmuDeviceBackend::EmuDeviceBackend(const EmulationOptions& options, BackendListener& listener)
    : host_(listener, options.host_numa),
      ledger_(listener, options.device_count, options.device_memory, host_.memory_total()),
      capabilities_(capabilities_of(host_)),
      devices_(options, ledger_, host_),
      windows_(listener),
      physical_(ledger_, listener, options.device_count, host_.numa_node_count(),
                capabilities_.giant_page != 0),
      sharing_(listener, share_transport_, options.device_count, options.visible_devices,
               options.server_id, pod_addresses(options)),
      mmu_(listener, options.host_access_open),
      blocks_(physical_, mmu_, windows_, options.device_count),
      unified_(ledger_, windows_, listener, options.device_count, options.host_numa,
               host_.numa_node_count()),
      copy_engine_(mmu_.page_table(), &listener, &unified_) {
  physical_.end_exports_through(&sharing_);
  sharing_.hold_imports_in(&physical_);
}

Result EmuDeviceBackend::open(const BackendOptions& options, BackendListener& listener,
                              std::unique_ptr<DeviceBackend>* out) {
  const EmulationOptions& emulation = options.emulation;
  if (out == nullptr || emulation.device_count < 1 || emulation.device_count > kMaxDevices ||
      emulation.device_memory == 0) {
    return Result::from_errno(EINVAL);
  }
  auto* backend = new (std::nothrow) EmuDeviceBackend(emulation, listener);
  if (backend == nullptr) return Result::from_errno(ENOMEM);
  std::unique_ptr<DeviceBackend> owned(backend);
  // The windows are final when open returns (device_backend.h): claimed now by the process's
  // first backend.
  if (Result r = backend->windows_.open(); !r.ok()) return r;
  *out = std::move(owned);
  return Result::success();
}

std::string EmuDeviceBackend::describe(Result result) const { return result_text(result); }

void EmuDeviceBackend::visit_statistics(StatisticsVisitor& visitor) const {
  unified_.visit_statistics(visitor);
  EmuSharing::visit_statistics(visitor);
}

}  // namespace aclvmm::dev::emu
