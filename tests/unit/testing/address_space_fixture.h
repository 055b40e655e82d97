// An AddressSpace as a runtime start leaves it: an emu device backend attached (its windows, MMU
// and blocks).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "unit/testing/test_device.h"
#include "vmm/address_space.h"

namespace aclvmm::testing {

class AddressSpaceOverDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    as_ = std::make_unique<AddressSpace>();
    device_ = open_test_device();
    as_->attach_device(device_);
  }
  void TearDown() override {
    as_.reset();
    device_.reset();
  }

  std::shared_ptr<dev::DeviceBackend> device_;
  std::unique_ptr<AddressSpace> as_;
};

}  // namespace aclvmm::testing
