// StandInRuntime: the RuntimeServices a unit test of vmm::Vmm or memops::MemoryOps constructs
// them with instead of the process's Runtime (vmm/runtime_services.h): product rules, the
// thread's device and context, the pools and the device backend are the test's fields, and no
// runtime is started. Over emu (unit/vmm/vmm_test.cpp) or over the fake
// (unit/testing/fake_runtime.h).
//
// User ids are the physical ids swapped (user_device(id) == 1 - id), so that a message naming
// the wrong one of the two fails its test.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "acl/acl_base.h"
#include "base/status.h"
#include "vmm/physical.h"
#include "vmm/runtime_services.h"

namespace aclvmm::testing {

class StandInRuntime final : public RuntimeServices {
 public:
  StandInRuntime() { set_svm_ready(true); }
  std::shared_ptr<MemoryPool> pool(int id) const override {
    return id >= 0 && id < 2 ? pools[id] : nullptr;
  }
  int user_device(int id) const override { return 1 - id; }
  bool host_numa() const override { return numa; }
  int device_count() const override { return 2; }
  void enable_peer_pair(int, int) override {}
  const std::shared_ptr<dev::DeviceBackend>& device() const override { return device_backend; }

  ProductRules rules() const override {
    ProductRules r = product;
    r.soc = &soc;
    return r;
  }
  // Whether a device counts as opened (RuntimeServices::svm_ready; true from the start).
  void set_svm(bool ready) { set_svm_ready(ready); }
  StatusOr<uint64_t> current_context() const override {
    if (current < 0) return Error(ACL_ERROR_RT_CONTEXT_NULL, "stand-in: no context");
    return uint64_t{1};
  }
  StatusOr<int> current_device() const override {
    if (current < 0) return Error(ACL_ERROR_RT_CONTEXT_NULL, "stand-in: no device");
    return current;
  }
  std::shared_ptr<MemoryPool> host_pool() const override { return host; }

  static constexpr uint64_t kPoolBytes = 64ull << 20;
  std::string soc = "StandInSoc";
  ProductRules product;
  bool numa = false;
  int current = 1;
  std::shared_ptr<MemoryPool> pools[2] = {std::make_shared<MemoryPool>(kPoolBytes),
                                          std::make_shared<MemoryPool>(kPoolBytes)};
  std::shared_ptr<MemoryPool> host = std::make_shared<MemoryPool>(kPoolBytes);
  std::shared_ptr<dev::DeviceBackend> device_backend;  // what the address space is attached to
};

}  // namespace aclvmm::testing
