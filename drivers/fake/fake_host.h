// FakeHost: HostServices of the fake backend: configured facts; statistics segments as zeroed
// buffers whose "names" are entries in a set the test can look at (created invisible, visible
// from publish until withdraw); tables from calloc, freed with the backend (the core never holds
// one longer than its backend).
//
// A directory is one of FakeConfig::segment_dirs, else kNotFound, as for a missing directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "drivers/fake/fake_machine.h"
#include "drivers/host_services.h"

namespace aclvmm::dev::fake {

// The names published in the fake's "directories"; shared with the segments, which may outlive
// the backend (the core keeps its segment for the process's life).
struct PublishedNames {
  std::mutex mu;
  std::set<std::string> paths;
};

class FakeHost final : public HostServices {
 public:
  explicit FakeHost(FakeMachine& machine);
  ~FakeHost() override;
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  uint64_t page_size() const override { return machine_.config().page_size; }
  uint64_t memory_total() override;
  uint64_t memory_free() override;
  int32_t numa_node_count() const override { return machine_.config().numa_nodes; }
  int32_t current_numa_node() override { return machine_.config().current_numa_node; }
  Result create_statistics_segment(const std::string& dir, const std::string& prefix, size_t size,
                                   std::shared_ptr<StatisticsSegment>* out) override;
  void* allocate_table(uint64_t bytes) override;

  bool published(const std::string& path) const;

 private:
  FakeMachine& machine_;
  const std::shared_ptr<PublishedNames> names_;
  std::vector<void*> tables_;  // under the machine's lock
};

}  // namespace aclvmm::dev::fake
