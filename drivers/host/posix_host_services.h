// HostServices for POSIX hosts (D11): what the emu backend hands out today and the hal backend
// will, since neither a software NPU nor a real one changes what the host is.
//
// Host facts come from host_facts.h, segments from stats_segment.h (this class presents
// its writer as a dev::StatisticsSegment), tables from table_memory.h. Its two inner steps, host.shm.segment and host.table.map, are checked
// through the listener's InjectionGate, so a rule reaches them on every backend that uses them.
//
// Threading: as HostServices; no state after construction but the constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "drivers/backend_listener.h"
#include "drivers/host_services.h"

namespace aclvmm::dev::host {

class PosixHostServices final : public HostServices {
 public:
  // numa false: a host without NUMA, whatever the machine has (ACLVMM_HOST_NUMA=off): no nodes,
  // and every thread on node 0.
  PosixHostServices(BackendListener& listener, bool numa);

  uint64_t page_size() const override { return page_size_; }
  uint64_t memory_total() override;
  uint64_t memory_free() override;
  int32_t numa_node_count() const override { return numa_nodes_; }
  int32_t current_numa_node() override;
  Result create_statistics_segment(const std::string& dir, const std::string& prefix, size_t size,
                                   std::shared_ptr<StatisticsSegment>* out) override;
  void* allocate_table(uint64_t bytes) override;

 private:
  InjectionGate gate_;
  const uint64_t page_size_;
  const int32_t numa_nodes_;
};

}  // namespace aclvmm::dev::host
