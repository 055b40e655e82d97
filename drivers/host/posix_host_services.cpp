#include "drivers/host/posix_host_services.h"

#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

#include "drivers/host/host_facts.h"
#include "drivers/host/stats_segment.h"
#include "drivers/host/table_memory.h"
#include "drivers/injection_steps.h"

namespace aclvmm::dev::host {
namespace {

// The writer (stats_segment.h) answers in errnos, as the monitor's reader beside it does; this
// presents it through the device interface.
class SegmentAdapter final : public StatisticsSegment {
 public:
  explicit SegmentAdapter(std::shared_ptr<StatsSegment> inner) : inner_(std::move(inner)) {
    const StatsOwner& o = inner_->owner();
    owner_.pid = o.pid;
    owner_.uid = o.uid;
    owner_.start_time = o.start_time;
    owner_.name = o.name;
    owner_.pid_namespace = o.pid_namespace;
  }
  void* data() override { return inner_->data(); }
  size_t size() const override { return inner_->size(); }
  const SegmentOwner& owner() const override { return owner_; }
  const std::string& path() const override { return inner_->path(); }
  Result publish() override { return Result::from_raw(inner_->publish()); }
  void withdraw() override { inner_->withdraw(); }

 private:
  std::shared_ptr<StatsSegment> inner_;
  SegmentOwner owner_;
};

}  // namespace

PosixHostServices::PosixHostServices(BackendListener& listener, bool numa)
    : gate_(listener),
      page_size_(static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))),
      numa_nodes_(numa ? host::numa_node_count() : 0) {}

uint64_t PosixHostServices::memory_total() { return host::memory_total(); }
uint64_t PosixHostServices::memory_free() { return host::memory_free(); }

int32_t PosixHostServices::current_numa_node() {
  return numa_nodes_ > 0 ? host::current_numa_node() : 0;
}

Result PosixHostServices::create_statistics_segment(const std::string& dir,
                                                    const std::string& prefix, size_t size,
                                                    std::shared_ptr<StatisticsSegment>* out) {
  if (out == nullptr) return Result::from_errno(EINVAL);
  if (Result r = gate_.check(steps::kHostShmSegment); !r.ok()) return r;
  std::shared_ptr<StatsSegment> inner;
  if (int rc = ShmStatsSegment::create(dir, prefix, size, &inner)) return Result::from_raw(rc);
  try {
    *out = std::make_shared<SegmentAdapter>(std::move(inner));
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);  // the segment unmaps, its temporary name removed
  }
  return Result::success();
}

void* PosixHostServices::allocate_table(uint64_t bytes) {
  if (!gate_.check(steps::kHostTableMap).ok()) return nullptr;
  return map_table(bytes);
}

}  // namespace aclvmm::dev::host
