#include "runtime/smi_publisher.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "observability/live_counts.h"
#include "observability/log.h"
#include "observability/smi_layout.h"

namespace aclvmm {
namespace {

void copy_text(char* dst, size_t cap, const std::string& src) {
  const size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

smi::Segment* layout(dev::StatisticsSegment& seg) {
  return static_cast<smi::Segment*>(seg.data());
}

// A refusal of the host's, for the warning.
std::string why(dev::Result r) {
  if (r.condition() == dev::Condition::kNotFound) return "the directory does not exist";
  if (r.condition() == dev::Condition::kNotSupported) return "the host has no such segments";
  return r.is_errno() ? std::strerror(r.errno_value()) : "error " + std::to_string(r.raw());
}

}  // namespace

SmiPublisher& SmiPublisher::get() {
  static SmiPublisher* p = new SmiPublisher();  // never destroyed, like the Runtime
  return *p;
}

void SmiPublisher::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  ACLVMM_LOG_WARN("RUNTIME", "aclvmm-smi will not show this process: {}", what);
}

bool SmiPublisher::own_segment() {
  if (segment_ && segment_->owner().pid != static_cast<int>(getpid())) {
    // The parent's (a private copy since the fork): counts stop going there before it may be
    // unmapped. The child's runtime starts without any of the counted objects, like its segment.
    set_live_count_target(nullptr);
    segment_.reset();  // the parent's: its pools keep it mapped, this process makes its own
    tried_ = false;
    warned_ = false;
  }
  return segment_ != nullptr;
}

std::vector<UsageMirror> SmiPublisher::publish(dev::HostServices& host, const Config& config) {
  std::vector<UsageMirror> mirrors(static_cast<size_t>(config.device_count));
  if (!own_segment() && !tried_) {
    tried_ = true;
    const char* env = std::getenv(smi::kDirEnv);
    const std::string dir = env && *env ? env : smi::kDefaultDir;
    if (dir == "none") return mirrors;
    std::shared_ptr<dev::StatisticsSegment> seg;
    const dev::Result made =
        host.create_statistics_segment(dir, smi::kPrefix, sizeof(smi::Segment), &seg);
    if (!made.ok()) {
      warn_once("cannot create its statistics segment in " + dir + ": " + why(made));
      return mirrors;
    }
    // Still unnamed to readers (HostServices::create_statistics_segment): the fixed part is
    // written once.
    smi::Segment* s = new (seg->data()) smi::Segment();
    const dev::SegmentOwner& owner = seg->owner();
    s->magic = smi::kMagic;
    s->version = smi::kVersion;
    s->size = sizeof(smi::Segment);
    s->pid = owner.pid;
    s->start_time = owner.start_time;
    s->uid = owner.uid;
    s->pid_namespace = owner.pid_namespace;
    copy_text(s->name, sizeof(s->name), owner.name);
    if (const dev::Result published = seg->publish(); !published.ok()) {
      warn_once("cannot publish " + seg->path() + ": " + why(published));
      return mirrors;
    }
    segment_ = std::move(seg);
    // Zeros in the new segment, as in the runtime being started: from now on every change of a
    // count is written there (observability/live_counts.h).
    set_live_count_target(s->live);
    ACLVMM_LOG_INFO("RUNTIME", "statistics for aclvmm-smi in {}", segment_->path());
  }
  if (!segment_) return mirrors;
  if (config.device_count > smi::kMaxDevices) {
    warn_once("more devices than the segment holds");
    return mirrors;
  }
  // What may change between starts (the environment is read again). The segment is inactive
  // here, so a monitor that reads it half-written does not list it.
  smi::Segment* s = layout(*segment_);
  s->device_count = config.device_count;
  copy_text(s->soc, sizeof(s->soc), config.product.soc);
  for (int i = 0; i < config.device_count; ++i) {
    s->devices[i].total = config.device_memory;
    mirrors[i].keep = segment_;
    mirrors[i].used = &s->devices[i].used;
  }
  s->active.store(1, std::memory_order_release);
  return mirrors;
}

void SmiPublisher::deactivate() {
  if (own_segment()) layout(*segment_)->active.store(0, std::memory_order_release);
}

void SmiPublisher::remove() {
  if (own_segment()) segment_->withdraw();
}

}  // namespace aclvmm
