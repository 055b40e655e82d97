// A device backend, and host services, that forward every call to another one: a test derives
// from them to change one unit's answers (a table that is refused, a segment that is counted)
// while the rest stays the real backend's.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "drivers/device_backend.h"
#include "drivers/host_services.h"

namespace aclvmm::testing {

class ForwardingHost : public dev::HostServices {
 public:
  explicit ForwardingHost(dev::HostServices& inner) : inner_(inner) {}
  uint64_t page_size() const override { return inner_.page_size(); }
  uint64_t memory_total() override { return inner_.memory_total(); }
  uint64_t memory_free() override { return inner_.memory_free(); }
  int32_t numa_node_count() const override { return inner_.numa_node_count(); }
  int32_t current_numa_node() override { return inner_.current_numa_node(); }
  dev::Result create_statistics_segment(const std::string& dir, const std::string& prefix,
                                        size_t size,
                                        std::shared_ptr<dev::StatisticsSegment>* out) override {
    return inner_.create_statistics_segment(dir, prefix, size, out);
  }
  void* allocate_table(uint64_t bytes) override { return inner_.allocate_table(bytes); }

 private:
  dev::HostServices& inner_;
};

class ForwardingBackend : public dev::DeviceBackend {
 public:
  explicit ForwardingBackend(std::shared_ptr<dev::DeviceBackend> inner) : be_(std::move(inner)) {}

  const char* name() const override { return be_->name(); }
  const dev::Capabilities& capabilities() const override { return be_->capabilities(); }
  dev::DeviceManager& devices() override { return be_->devices(); }
  dev::AddressWindows& windows() override { return be_->windows(); }
  dev::PhysicalAllocator& physical() override { return be_->physical(); }
  dev::BlockAllocator& blocks() override { return be_->blocks(); }
  dev::DeviceMmu& mmu() override { return be_->mmu(); }
  dev::CopyEngine& copy_engine() override { return be_->copy_engine(); }
  dev::Sharing& sharing() override { return be_->sharing(); }
  dev::UnifiedMemory& unified_memory() override { return be_->unified_memory(); }
  dev::HostServices& host() override { return be_->host(); }
  std::string describe(dev::Result result) const override { return be_->describe(result); }
  void visit_statistics(dev::StatisticsVisitor& visitor) const override {
    be_->visit_statistics(visitor);
  }
  void prepare_fork() override { be_->prepare_fork(); }
  void after_fork_parent() override { be_->after_fork_parent(); }
  void after_fork_child() override { be_->after_fork_child(); }
  void release_inherited() override { be_->release_inherited(); }

 protected:
  dev::DeviceBackend& inner() const { return *be_; }

 private:
  std::shared_ptr<dev::DeviceBackend> be_;
};

}  // namespace aclvmm::testing
