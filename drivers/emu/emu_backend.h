// The default backend: emulates the device's memory with plain Linux primitives (memfd, mmap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "drivers/driver.h"
#include "drivers/emu/unified/fault_tracker.h"

namespace aclvmm::drv::emu {

class EmuBackend final : public Backend {
 public:
  const char* name() const override { return "emu"; }

  int claim_window(uint64_t preferred, uint64_t size, uint64_t align, uint64_t* base) override;
  int claim_fixed(uint64_t addr, uint64_t size) override;
  int release_window(uint64_t base, uint64_t size) override;

  int create_physical(const PhysicalRequest& req, std::shared_ptr<PhysicalMemory>* out) override;
  int adopt_physical(int fd, uint64_t size, std::shared_ptr<PhysicalMemory>* out) override;

  int map_cpu(uint64_t va, uint64_t size, PhysicalMemory& mem, uint64_t offset,
              CpuAccess access) override;
  int unmap_cpu(uint64_t va, uint64_t size) override;
  int bind_numa(uint64_t va, uint64_t size, int node) override;

  int host_copy(void* dst, const void* src, size_t n) override;
  int host_fill(void* dst, uint8_t value, size_t n) override;

  FaultTracker& fault_tracker() override { return fault_tracker_; }

  int create_stats_segment(const std::string& dir, const std::string& prefix, size_t size,
                           std::shared_ptr<StatsSegment>* out) override;

  uint64_t host_memory_total() override;
  uint64_t host_memory_free() override;
  int numa_node_count() override;
  int current_numa_node() override;
  size_t host_page_size() override;
  void* allocate_table(uint64_t bytes) override;

 private:
  UffdFaultTracker fault_tracker_;
};

}  // namespace aclvmm::drv::emu
