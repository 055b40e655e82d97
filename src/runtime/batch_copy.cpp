#include "runtime/batch_copy.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include <spdlog/fmt/fmt.h>

#include "runtime/runtime.h"

namespace aclvmm {
namespace {

constexpr size_t kMaxSyncEntries = 4096;

Status invalid(const std::string& why) { return Error(ACL_ERROR_RT_PARAM_INVALID, why); }

// The location kinds the attributes compare: UNREGISTERED counts as HOST on the real side,
// HOST_NUMA as HOST on the attribute's.
enum class EntrySide { kHost, kDevice, kOther };

EntrySide real_side(const PointerInfo& info) {
  switch (info.kind) {
    case PointerInfo::kHost:
    case PointerInfo::kUnregistered: return EntrySide::kHost;
    case PointerInfo::kDevice: return EntrySide::kDevice;
    default: return EntrySide::kOther;  // managed memory has a location of its own
  }
}

EntrySide attr_side(const aclrtMemLocation& loc) {
  uint32_t type;
  static_assert(sizeof(type) == sizeof(loc.type), "an int-sized enum");
  std::memcpy(&type, &loc.type, sizeof type);
  switch (type) {
    case ACL_MEM_LOCATION_TYPE_HOST:
    case ACL_MEM_LOCATION_TYPE_HOST_NUMA: return EntrySide::kHost;
    case ACL_MEM_LOCATION_TYPE_DEVICE: return EntrySide::kDevice;
    default: return EntrySide::kOther;
  }
}

// The attribute that applies to entry i: attrs[k] covers attr_starts[k] .. attr_starts[k+1]-1.
const aclrtMemcpyBatchAttr& attr_of(const BatchCopy& b, size_t i) {
  size_t k = 0;
  while (k + 1 < b.attr_count && b.attr_starts[k + 1] <= i) ++k;
  return b.attrs[k];
}

// One side of entry i against its attribute (check 8).
Status check_side(Runtime& rt, const char* which, const void* p, const aclrtMemLocation& want) {
  ACLVMM_ASSIGN_OR_RETURN(const PointerInfo info, rt.vmm().pointer_info(reinterpret_cast<uint64_t>(p)));
  const EntrySide real = real_side(info);
  if (real != attr_side(want)) {
    return invalid(fmt::format("the {} {} does not lie where its attribute says", which, p));
  }
  if (real == EntrySide::kDevice && rt.user_device(info.device) != static_cast<int>(want.id)) {
    return invalid(fmt::format("the {} {} is memory of device {}, its attribute says device {}",
                               which, p, rt.user_device(info.device), want.id));
  }
  return Status::Ok();
}

}  // namespace

Status memcpy_batch(Runtime& rt, const BatchCopy& b, size_t* fail_index) {
  const Config& cfg = rt.config();
  if (!cfg.product.supports(Feature::kBatchCopy)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 (b.async ? "aclrtMemcpyBatchAsync" : "aclrtMemcpyBatch") +
                     std::string(" is not supported on ") + cfg.product.soc);
  }
  if (b.async && b.stream != 0 && !rt.streams().find(b.stream)) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE, "the stream is not a live stream");
  }
  // From check 6 on, *fail_index is SIZE_MAX unless an entry is named.
  *fail_index = SIZE_MAX;
  // Check 6: the attribute ranges.
  if (b.attr_count == 0 || b.attr_count > b.count) {
    return invalid(fmt::format("numAttrs must be 1..numBatches ({}), not {}", b.count, b.attr_count));
  }
  if (b.attr_starts[0] != 0) return invalid("attrsIndexes[0] must be 0");
  for (size_t k = 0; k < b.attr_count; ++k) {
    if (b.attr_starts[k] >= b.count) {
      return invalid(fmt::format("attrsIndexes[{}] = {} is not below numBatches {}", k,
                                 b.attr_starts[k], b.count));
    }
    if (k > 0 && b.attr_starts[k] <= b.attr_starts[k - 1]) {
      return invalid(fmt::format("attrsIndexes must increase strictly (index {})", k));
    }
  }
  if (!b.async && b.count > kMaxSyncEntries) {
    return invalid(fmt::format("aclrtMemcpyBatch takes at most {} entries, not {}",
                               kMaxSyncEntries, b.count));
  }
  std::shared_ptr<Stream> stream;
  if (b.async) {
    ACLVMM_RETURN_IF_ERROR(rt.current_context().status());
    ACLVMM_ASSIGN_OR_RETURN(stream, rt.resolve_stream(b.stream));
  }
  // Check 8, every entry before any copy (deliberate: nothing is queued for a refused batch).
  std::vector<bool> unregistered_host(b.count, false);
  for (size_t i = 0; i < b.count; ++i) {
    *fail_index = i;
    if (b.async && b.sizes[i] == 0) {
      return invalid(fmt::format("entry {} has size 0 in a batch that is not all zero", i));
    }
    if (b.dsts[i] == nullptr || b.srcs[i] == nullptr) {
      return invalid(fmt::format("entry {} has a NULL address", i));
    }
    const aclrtMemcpyBatchAttr& a = attr_of(b, i);
    ACLVMM_RETURN_IF_ERROR(check_side(rt, "destination", b.dsts[i], a.dstLoc));
    ACLVMM_RETURN_IF_ERROR(check_side(rt, "source", b.srcs[i], a.srcLoc));
    if (attr_side(a.dstLoc) == attr_side(a.srcLoc)) {
      return invalid(fmt::format("entry {} copies {} to {}: only host-to-device and "
                                 "device-to-host entries are allowed",
                                 i, attr_side(a.srcLoc) == EntrySide::kHost ? "host" : "device",
                                 attr_side(a.dstLoc) == EntrySide::kHost ? "host" : "device"));
    }
    const void* host = attr_side(a.dstLoc) == EntrySide::kHost ? b.dsts[i] : b.srcs[i];
    auto info = rt.vmm().pointer_info(reinterpret_cast<uint64_t>(host));
    unregistered_host[i] = info.ok() && info->kind == PointerInfo::kUnregistered;
  }
  *fail_index = SIZE_MAX;
  memops::MemoryOps& ops = rt.memory_ops();
  const char* api = b.async ? "aclrtMemcpyBatchAsync" : "aclrtMemcpyBatch";
  for (size_t i = 0; i < b.count; ++i) {
    if (b.sizes[i] == 0) continue;  // the synchronous form skips empty entries
    if (b.async && !unregistered_host[i]) {
      stream->enqueue_copy(ops, b.dsts[i], b.srcs[i], b.sizes[i],
                           rt.accessor_for(stream->device()), api);
      continue;
    }
    // Synchronous, or an unpinned host side in the asynchronous form: copied now, after what
    // the stream holds (the documented rule for unregistered memory).
    Accessor who = rt.accessor();
    if (b.async) {
      ACLVMM_RETURN_IF_ERROR(stream->drain());
      who = rt.accessor_for(stream->device());
    }
    Status st = ops.copy(b.dsts[i], b.srcs[i], b.sizes[i], who);
    if (!st.ok()) {
      *fail_index = i;
      return Error(st.code(), fmt::format("{}: entry {}: {}", api, i, st.message()));
    }
  }
  return Status::Ok();
}

}  // namespace aclvmm
