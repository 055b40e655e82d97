// Configuration from the environment (emulation.md section 7), read when the runtime starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/pod.h"
#include "runtime/product.h"

namespace aclvmm {

struct InjectionRule {
  std::string api;
  uint32_t nth = 0;
  int code = 0;
};

// How the emulated devices are attached to the host (ACLVMM_INTERCONNECT). It decides what a
// product offers where the documentation depends on the link: aclrtMemMapNoAccess over PCIe.
enum class Interconnect { kHccs, kPcie };
const char* interconnect_name(Interconnect link);

struct Config {
  Product product;
  int device_count = 8;           // physical emulated devices
  uint64_t device_memory = 0;     // bytes per device
  bool device_memory_set = false; // ACLVMM_DEVICE_MEMORY was given
  bool host_access_open = false;  // ACLVMM_HOST_ACCESS=open
  bool quirks_vendor = false;     // ACLVMM_QUIRKS=vendor
  Interconnect interconnect = Interconnect::kHccs;
  // ACLVMM_HOST_NUMA=off emulates a host without NUMA support, whatever the machine has.
  bool host_numa = true;
  std::vector<InjectionRule> injections;
  std::string stats_file;
  std::string trace_file;  // ACLVMM_TRACE_FILE: managed-memory events as Chrome trace JSON
  std::string driver = "emu";
  // ACLVMM_HAL_LIBRARY, ACLVMM_HAL_HIDE: the driver library the hal backend loads and the
  // functions it treats as missing (hal.md §1.5).
  std::string hal_library;
  std::string hal_hide;
  // ACLVMM_KERNEL_LIBS: shared libraries whose constructors register emulated kernels, loaded at
  // the start (runtime-extra.md §9.8).
  std::vector<std::string> kernel_libs;
  // User device id -> physical device id (ASCEND_RT_VISIBLE_DEVICES). A bad value does not fail
  // start-up: as in CANN, the device queries fail and say why.
  std::vector<int> visible;
  std::string visible_error;
  bool visible_set = false;  // ASCEND_RT_VISIBLE_DEVICES was given (device_ids.h tells them apart)
  // Logical device id -> physical (chip) id, as the driver reports it (drvDeviceGetPhyIdByIndex;
  // they differ inside containers). Empty: equal, as in the emulator.
  std::vector<int> physical_ids;
  // The super-pod (runtime/pod.h, docs/fabric.md): ACLVMM_SERVER_ID, and ACLVMM_POD_FILE's path
  // and members (empty: this host alone).
  int server_id = 0;
  std::string pod_file;
  std::vector<PodMember> pod;
};

// Reads every variable; a malformed value is an error naming the variable and what it accepts.
StatusOr<Config> load_config();

// With a driver that reports the machine (hal): the device count and SoC the driver reports
// replace ACLVMM_DEVICE_COUNT / ACLVMM_SOC, which do not apply then (hal.md §1.5). The device
// memory stays the product's unless ACLVMM_DEVICE_MEMORY was given. An SoC the product table
// does not know is an error naming it.
Status adopt_driver_machine(Config& config, int device_count, const std::string& soc);

// Parsers, exposed for their unit tests.
bool parse_size(const std::string& text, uint64_t* out);  // "64G", "1024", "512M"
StatusOr<std::vector<InjectionRule>> parse_injections(const std::string& text);
StatusOr<std::vector<std::string>> parse_kernel_libs(const std::string& text);
// CANN rules: stop at the first non-digit token or out-of-range id; descending or repeated ids
// and an empty result are errors.
std::vector<int> parse_visible_devices(const std::string& text, int count, std::string* error);

}  // namespace aclvmm
