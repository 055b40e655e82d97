// The two ends of memory shared across hosts (docs/fabric.md §3.3):
// - ExportedRegion: an exporter's physical memory (a memfd, os/memfd_memory.h) mapped once and
//   registered with its RmaEndpoint for remote read and write;
// - RemoteMemory: on the importing host, emu's os::PhysicalMemory whose bytes are that region:
//   read, write, fill and copy_to become the endpoint's reads and writes, in pieces, each within
//   its bound. It cannot be passed on (fd() is -1) nor given a CPU view.
//
// Contract (RemoteMemory, besides os::PhysicalMemory's): -EINVAL for a range past the end,
// -ETIMEDOUT when a piece did not complete within the bound (the link is cut, the exporter is
// gone; the endpoint is then done with, rma_endpoint.h), the provider's -errno otherwise;
// populate() is -EOPNOTSUPP (nothing local to populate).
//
// Threading: any thread (the endpoint serialises its operations). Lifetime: RemoteMemory holds
// its endpoint; ExportedRegion deregisters and unmaps when destroyed, after which importers'
// operations fail.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>

#include "drivers/emu/fabric/rma_endpoint.h"
#include "drivers/emu/os/physical_memory.h"

namespace aclvmm::dev::emu::fabric {

class ExportedRegion {
 public:
  // Maps `memory` (which must have a descriptor) and registers it with `endpoint`.
  static Result create(std::shared_ptr<RmaEndpoint> endpoint,
                       std::shared_ptr<os::PhysicalMemory> memory,
                       std::unique_ptr<ExportedRegion>* out);
  ~ExportedRegion();
  ExportedRegion(const ExportedRegion&) = delete;
  ExportedRegion& operator=(const ExportedRegion&) = delete;

  const RemoteRegion& region() const { return region_; }
  uint64_t size() const { return memory_->size(); }

 private:
  ExportedRegion() = default;
  std::shared_ptr<RmaEndpoint> endpoint_;
  std::shared_ptr<os::PhysicalMemory> memory_;  // kept alive while registered
  void* view_ = nullptr;
  RemoteRegion region_;
};

class RemoteMemory final : public os::PhysicalMemory {
 public:
  // Pieces are at most this large: the endpoint stages each through its buffer.
  static constexpr size_t kPiece = RmaEndpoint::kStaging;

  // `holder`, if any, lives as long as this memory: the importer's control connection, whose
  // end tells the exporter that this host holds the region no more.
  RemoteMemory(std::shared_ptr<RmaEndpoint> endpoint, PeerId peer, RemoteRegion region,
               uint64_t size, std::chrono::milliseconds bound,
               std::shared_ptr<const void> holder = nullptr)
      : endpoint_(std::move(endpoint)),
        peer_(peer),
        region_(region),
        size_(size),
        bound_(bound),
        holder_(std::move(holder)) {}

  uint64_t size() const override { return size_; }
  int read(uint64_t offset, void* dst, size_t n) const override;
  int write(uint64_t offset, const void* src, size_t n) override;
  int fill(uint64_t offset, uint8_t value, size_t n) override;
  int fd() const override { return -1; }
  int populate(uint64_t, size_t) override { return -EOPNOTSUPP; }
  int copy_to(uint64_t offset, os::PhysicalMemory& dst, uint64_t dst_offset,
              size_t n) const override;

 private:
  bool in_range(uint64_t offset, size_t n) const { return offset <= size_ && n <= size_ - offset; }

  std::shared_ptr<RmaEndpoint> endpoint_;
  const PeerId peer_;
  const RemoteRegion region_;
  const uint64_t size_;
  const std::chrono::milliseconds bound_;
  const std::shared_ptr<const void> holder_;
};

}  // namespace aclvmm::dev::emu::fabric
