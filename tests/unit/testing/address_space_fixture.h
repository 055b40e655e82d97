// An AddressSpace as a runtime start leaves it: the old seam (a drv::Backend) attached, and an emu
// device backend attached (its windows, MMU and blocks).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "unit/testing/test_device.h"
#include "unit/testing/window_releasing_backend.h"
#include "vmm/address_space.h"

namespace aclvmm::testing {

class AddressSpaceOverDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<WindowReleasingBackend>();
    ASSERT_TRUE(backend_->ok());
    as_ = std::make_unique<AddressSpace>();
    as_->attach_driver(backend_.get());
    device_ = open_test_device();
    as_->attach_device(device_);
  }
  void TearDown() override {
    as_.reset();
    device_.reset();
    backend_.reset();
  }

  std::unique_ptr<WindowReleasingBackend> backend_;
  std::shared_ptr<dev::DeviceBackend> device_;
  std::unique_ptr<AddressSpace> as_;
};

}  // namespace aclvmm::testing
