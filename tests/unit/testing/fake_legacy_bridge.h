// The fake backend with the transitional LegacyMemory bridge (drivers/legacy_memory.h) that the
// core's DeviceMemory::create and the modules over it still need until issue 14 step 9: a
// forwarding DeviceBackend around an opened fake whose legacy_memory() hands out a
// drv::PhysicalMemory over the fake's byte store (read/write/fill through the fake's hooks; no
// descriptor). Everything else is the fake's, so its ledger refuses, its violations count and
// "dev.*" rules reach it through its decorator. adopt: kNotSupported (the fake has no
// descriptors to adopt).
#pragma once

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "drivers/device_backend.h"
#include "drivers/driver.h"
#include "drivers/fake/fake_backend.h"
#include "drivers/legacy_memory.h"
#include "unit/testing/forwarding_backend.h"

namespace aclvmm::testing {

class FakeBytes final : public drv::PhysicalMemory {
 public:
  FakeBytes(dev::fake::FakeBackend& fake, dev::PhysicalId id, uint64_t size)
      : fake_(fake), id_(id), size_(size) {}
  uint64_t size() const override { return size_; }
  int read(uint64_t offset, void* dst, size_t n) const override {
    return fake_.read_physical(id_, offset, dst, n).raw();
  }
  int write(uint64_t offset, const void* src, size_t n) override {
    return fake_.write_physical(id_, offset, src, n).raw();
  }
  int fill(uint64_t offset, uint8_t value, size_t n) override {
    std::vector<uint8_t> bytes(n, value);
    return write(offset, bytes.data(), n);
  }
  int fd() const override { return -1; }
  int populate(uint64_t, size_t) override { return 0; }
  int copy_to(uint64_t offset, PhysicalMemory& dst, uint64_t dst_offset, size_t n) const override {
    std::vector<uint8_t> bytes(n);
    if (int rc = read(offset, bytes.data(), n)) return rc;
    return dst.write(dst_offset, bytes.data(), n);
  }

 private:
  dev::fake::FakeBackend& fake_;
  const dev::PhysicalId id_;
  const uint64_t size_;
};

class BridgedFake final : public ForwardingBackend, public dev::LegacyMemory {
 public:
  // `fake` is the bare backend inside `opened` (open_fake_backend's two results).
  BridgedFake(std::unique_ptr<dev::DeviceBackend> opened, dev::fake::FakeBackend* fake)
      : ForwardingBackend(std::shared_ptr<dev::DeviceBackend>(std::move(opened))), fake_(*fake) {}

  dev::LegacyMemory* legacy_memory() override { return this; }

  // ---- LegacyMemory
  std::shared_ptr<drv::PhysicalMemory> memory(dev::PhysicalId id) const override {
    dev::PhysicalProperties props;
    if (!inner().physical().properties(id, &props).ok()) return nullptr;
    return std::make_shared<FakeBytes>(fake_, id, props.size);
  }
  dev::Result adopt(const dev::PhysicalProperties&, std::shared_ptr<drv::PhysicalMemory>,
                    dev::PhysicalId*) override {
    return dev::Result::from_errno(EOPNOTSUPP);
  }

 private:
  dev::fake::FakeBackend& fake_;
};

}  // namespace aclvmm::testing
