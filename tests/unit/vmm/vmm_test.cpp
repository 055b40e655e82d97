// vmm::Vmm and memops::MemoryOps get what they ask the runtime through the RuntimeServices they
// are constructed with (vmm/runtime_services.h), not from the process's Runtime: on the real emu
// backend, with a stand-in that answers the product rules, the thread's device and the pools, and
// no runtime started, the operations refuse what the stand-in's rules refuse (with its SoC's
// name), charge the stand-in's pools, and copy through its backend.
#include "vmm/vmm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "base/handle_table.h"
#include "base/status.h"
#include "base/units.h"
#include "runtime/core_listener.h"
#include "unit/testing/stand_in_runtime.h"
#include "vmm/address_space.h"
#include "vmm/managed.h"
#include "vmm/memory_ops.h"
#include "vmm/runtime_services.h"
#include "vmm/share.h"

namespace aclvmm {
namespace {

using testing::StandInRuntime;

// The operations' pieces over an address space with its device backend, as a Runtime holds them.
class VmmOverStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    // aclrtMalloc blocks come from the device backend (BlockAllocator): two devices of the
    // pools' size.
    attach_device(64 * kMiB);
  }
  // A device backend whose ledger is the capacity authority with the stand-in's pools as its
  // mirrors, as a runtime start connects them (D8).
  void attach_device(uint64_t device_memory) {
    Config config;
    config.device_count = 2;
    config.device_memory = device_memory;
    auto device = open_device(config);
    ASSERT_TRUE(device.ok()) << device.status().message();
    connect_pools(*device, {rt_.pools[0], rt_.pools[1]}, rt_.host);
    space_->attach_device(*device);
    rt_.device_backend = *device;  // copies run on the backend that maps, as in a runtime
    // The managed window and its ranges are the device backend's too (step 6).
    managed_.attach((*device)->windows().layout().managed);
  }
  void TearDown() override {
    vmm_.reset();
    space_.reset();
  }

  std::unique_ptr<AddressSpace> space_ = std::make_unique<AddressSpace>();
  StandInRuntime rt_;
  HandleTable<PhysicalAllocation> physical_{0x7a11};
  // Like the runtime's, never destroyed (its fork handling refers to it for the process's life).
  ShareService& sharing_ = *new ShareService();
  ManagedMemory managed_{rt_};
  std::unique_ptr<vmm::Vmm> vmm_ =
      std::make_unique<vmm::Vmm>(rt_, *space_, physical_, sharing_, managed_);
};

struct RuleCase {
  const char* name;
  void (*refuse)(ProductRules&);
  Status (*call)(vmm::Vmm&);
};

TEST_F(VmmOverStandIn, RefusesWhatTheStandInsRulesRefuse) {
  rt_.product.no_uc_reserve = true;
  rt_.product.expect_ptr = true;
  rt_.product.no_access_mappings = true;
  rt_.product.huge_1g_pages = true;
  const RuleCase cases[] = {
      {"no-UC reservation", [](ProductRules& r) { r.no_uc_reserve = false; },
       [](vmm::Vmm& v) { return v.reserve(2 * kMiB, 0, 0x100000000000ull, true).status(); }},
      {"expectPtr", [](ProductRules& r) { r.expect_ptr = false; },
       [](vmm::Vmm& v) { return v.reserve(2 * kMiB, 0, 0x100000000000ull, false).status(); }},
      {"no-access mapping", [](ProductRules& r) { r.no_access_mappings = false; },
       [](vmm::Vmm& v) { return v.map(0x100000000000ull, 2 * kMiB, 0, 1, true); }},
      {"1 GiB aclrtMalloc", [](ProductRules& r) { r.huge_1g_pages = false; },
       [](vmm::Vmm& v) { return v.device_malloc(kMiB, 6).status(); }},
      {"1 GiB physical", [](ProductRules& r) { r.huge_1g_pages = false; },
       [](vmm::Vmm& v) {
         vmm::PhysicalSpec spec;
         spec.page_type = kHuge1GPage;
         return v.malloc_physical(kGiB, spec).status();
       }},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ProductRules allowed = rt_.product;
    c.refuse(rt_.product);
    Status st = c.call(*vmm_);
    EXPECT_EQ(st.code(), ACL_ERROR_RT_FEATURE_NOT_SUPPORT) << st.message();
    EXPECT_NE(st.message().find("StandInSoc"), std::string::npos) << st.message();
    rt_.product = allowed;
  }
}

TEST_F(VmmOverStandIn, AnswersForTheStandInsDeviceState) {
  rt_.set_svm(false);
  EXPECT_EQ(vmm_->reserve(2 * kMiB, 0, 0, false).status().code(), ACL_ERROR_RT_INVALID_HANDLE);
  EXPECT_EQ(vmm_->pointer_info(0x1000).status().code(), ACL_ERROR_RT_INVALID_HANDLE);
  rt_.set_svm(true);
  rt_.current = -1;
  EXPECT_EQ(vmm_->device_malloc(kMiB, 0).status().code(), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(vmm_->host_malloc(kMiB).status().code(), ACL_ERROR_RT_CONTEXT_NULL);
}

TEST_F(VmmOverStandIn, DeviceMallocChargesTheCurrentDevicesPool) {
  auto ptr = vmm_->device_malloc(kMiB, 0);  // 1 MiB + 32 bytes of padding: one 2 MiB page
  ASSERT_TRUE(ptr.ok()) << ptr.status().message();
  EXPECT_EQ(rt_.pools[1]->used(), 2 * kMiB);
  EXPECT_EQ(rt_.pools[0]->used(), 0u);
  // The stand-in's pool is full: the message names the device by the stand-in's user id.
  rt_.current = 0;
  auto too_big = vmm_->device_malloc(64 * kMiB, 0);
  EXPECT_EQ(too_big.status().code(), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(too_big.status().message().find("device 1 is out of memory"), std::string::npos)
      << too_big.status().message();
  EXPECT_EQ(rt_.pools[0]->used(), 0u);
  ASSERT_TRUE(vmm_->device_free(*ptr).ok());
  EXPECT_EQ(rt_.pools[1]->used(), 0u);
}

TEST_F(VmmOverStandIn, HostMallocChargesTheHostPoolAndMemoryOpsReachIt) {
  auto ptr = vmm_->host_malloc(100);
  ASSERT_TRUE(ptr.ok()) << ptr.status().message();
  EXPECT_EQ(rt_.host->used(), rt_.device_backend->host().page_size());
  memops::MemoryOps ops(rt_, *space_, managed_);
  Accessor who;
  who.device = 1;
  void* pinned = reinterpret_cast<void*>(*ptr);
  ASSERT_TRUE(ops.fill(pinned, 0x5a, 100, who).ok());
  std::vector<uint8_t> out(100, 0);
  ASSERT_TRUE(ops.copy(out.data(), pinned, out.size(), who).ok());
  EXPECT_EQ(out, std::vector<uint8_t>(100, 0x5a));
  ASSERT_TRUE(vmm_->host_free(*ptr).ok());
  EXPECT_EQ(rt_.host->used(), 0u);
}

// D8: the device backend's ledger refuses, with the message the pools gave before, and the pools
// only mirror it: here pools of 64 MiB over devices of 8 MiB.
TEST_F(VmmOverStandIn, TheDevicesLedgerRefusesWhatThePoolsWouldHold) {
  attach_device(8 * kMiB);
  auto refused = vmm_->device_malloc(16 * kMiB, 0);
  EXPECT_EQ(refused.status().code(), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.status().message().find("device 0 is out of memory: "), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(rt_.pools[1]->used(), 0u);
  auto fits = vmm_->device_malloc(4 * kMiB, 0);  // + 32 bytes of padding: three 2 MiB pages
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(rt_.pools[1]->used(), 6 * kMiB);
  EXPECT_EQ(vmm_->device_malloc(4 * kMiB, 0).status().code(), ACL_ERROR_RT_MEMORY_ALLOCATION);
  ASSERT_TRUE(vmm_->device_free(*fits).ok());
  EXPECT_EQ(rt_.pools[1]->used(), 0u);
}

}  // namespace
}  // namespace aclvmm
