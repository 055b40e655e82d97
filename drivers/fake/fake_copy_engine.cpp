#include "drivers/fake/fake_copy_engine.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "drivers/fake/byte_store.h"

namespace aclvmm::dev::fake {
namespace {

using Side = CopyOutcome::Side;

// Bytes move through a bounce buffer of at most this many bytes (a store's page).
constexpr uint64_t kBounce = ByteStore::kPageBytes;

bool known(EndpointKind kind) {
  return kind == EndpointKind::kHostMemory || kind == EndpointKind::kMapped ||
         kind == EndpointKind::kManaged;
}

}  // namespace

bool FakeCopyEngine::broken(uint64_t size, EndpointKind a, EndpointKind b) {
  if (size != 0 && known(a) && known(b)) return false;
  std::lock_guard<std::mutex> lock(machine_.mutex());
  (void)machine_.violation("copy/fill: size 0 or an unknown endpoint kind");
  return true;
}

bool FakeCopyEngine::dead(QueueId queue) const {
  if (live(queue)) return false;
  std::lock_guard<std::mutex> lock(machine_.mutex());
  (void)machine_.violation("queue: not a live QueueId");
  return true;
}

void FakeCopyEngine::destroy_queue(QueueId queue) {
  if (!dead(queue)) CopyEngineBase::destroy_queue(queue);
}

void FakeCopyEngine::cancel(QueueId queue) {
  if (!dead(queue)) CopyEngineBase::cancel(queue);
}

Result FakeCopyEngine::submit(QueueId queue, const Command& command, Fence* fence) {
  if (dead(queue) || fence == nullptr) return Result::from_errno(EINVAL);
  return CopyEngineBase::submit(queue, command, fence);
}

Result FakeCopyEngine::wait(QueueId queue, Fence fence, int timeout_ms) {
  if (dead(queue)) return Result::from_errno(EINVAL);
  return CopyEngineBase::wait(queue, fence, timeout_ms);
}

Fence FakeCopyEngine::completed(QueueId queue) const {
  return dead(queue) ? 0 : CopyEngineBase::completed(queue);
}

bool FakeCopyEngine::host_refused(const CopyEndpoint& endpoint, uint64_t size, Side side,
                                  CopyOutcome* out) const {
  uint64_t bad = 0;
  if (endpoint.kind != EndpointKind::kHostMemory ||
      mmu_.host_reaches_locked(endpoint.address, size, &bad)) {
    return false;
  }
  *out = failure(Result::from_errno(EFAULT), side, bad);
  return true;
}

Result FakeCopyEngine::reach_locked(const CopyEndpoint& endpoint, uint64_t va, uint64_t left,
                                    bool write, const Executor& who, ByteStore** bytes,
                                    uint64_t* offset, uint64_t* length) {
  return endpoint.kind == EndpointKind::kManaged
             ? unified_.reach_locked(va, left, write, who, bytes, offset, length)
             : mmu_.reach_locked(va, left, write, who, bytes, offset, length);
}

CopyOutcome FakeCopyEngine::copy(const CopyRequest& request) {
  const CopyEndpoint& src = request.src;
  const CopyEndpoint& dst = request.dst;
  CopyOutcome refused;
  if (broken(request.size, src.kind, dst.kind)) {
    return failure(Result::from_errno(EINVAL), Side::kNone, 0);
  }
  if (!admissible(src, request.size, Side::kSource, &refused, true) ||
      !admissible(dst, request.size, Side::kDestination, &refused, true)) {
    return refused;
  }
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (host_refused(src, request.size, Side::kSource, &refused) ||
      host_refused(dst, request.size, Side::kDestination, &refused)) {
    return refused;
  }
  std::vector<uint8_t> bounce;
  try {
    bounce.resize(std::min(request.size, kBounce));
  } catch (const std::bad_alloc&) {
    return failure(Result::from_errno(ENOMEM), Side::kNone, 0);
  }
  for (uint64_t done = 0; done < request.size;) {
    const uint64_t left = request.size - done;
    ByteStore* from = nullptr;
    ByteStore* to = nullptr;
    uint64_t from_at = 0, to_at = 0, from_len = left, to_len = left;
    if (src.kind != EndpointKind::kHostMemory) {
      Result r = reach_locked(src, src.address + done, left, false, request.executor, &from,
                              &from_at, &from_len);
      if (!r.ok()) return failure(r, Side::kSource, src.address + done);
    }
    if (dst.kind != EndpointKind::kHostMemory) {
      Result r = reach_locked(dst, dst.address + done, left, true, request.executor, &to, &to_at,
                              &to_len);
      if (!r.ok()) return failure(r, Side::kDestination, dst.address + done);
    }
    const uint64_t len = std::min({from_len, to_len, kBounce});
    if (from != nullptr) {
      Result r = from->read(from_at, bounce.data(), len);
      if (!r.ok()) return failure(r, Side::kSource, src.address + done);
    } else {
      std::memcpy(bounce.data(), reinterpret_cast<const void*>(src.address + done), len);
    }
    if (to != nullptr) {
      Result r = to->write(to_at, bounce.data(), len);
      if (!r.ok()) return failure(r, Side::kDestination, dst.address + done);
    } else {
      std::memcpy(reinterpret_cast<void*>(dst.address + done), bounce.data(), len);
    }
    done += len;
  }
  return CopyOutcome{};
}

CopyOutcome FakeCopyEngine::fill(const FillRequest& request) {
  const CopyEndpoint& dst = request.dst;
  CopyOutcome refused;
  if (broken(request.size, dst.kind, dst.kind)) {
    return failure(Result::from_errno(EINVAL), Side::kNone, 0);
  }
  if (!admissible(dst, request.size, Side::kDestination, &refused, true)) return refused;
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (host_refused(dst, request.size, Side::kDestination, &refused)) return refused;
  if (dst.kind == EndpointKind::kHostMemory) {
    std::memset(reinterpret_cast<void*>(dst.address), request.value, request.size);
    return CopyOutcome{};
  }
  for (uint64_t done = 0; done < request.size;) {
    ByteStore* to = nullptr;
    uint64_t at = 0, len = 0;
    Result r = reach_locked(dst, dst.address + done, request.size - done, true, request.executor,
                            &to, &at, &len);
    if (r.ok()) r = to->fill(at, request.value, len);
    if (!r.ok()) return failure(r, Side::kDestination, dst.address + done);
    done += len;
  }
  return CopyOutcome{};
}

}  // namespace aclvmm::dev::fake
