#include "runtime/stream_values.h"

#include <spdlog/fmt/fmt.h>

#include "acl/acl_rt.h"
#include "runtime/runtime.h"

namespace aclvmm {
namespace {

// The checks both calls share, after the flag's own: the address, the context, the stream's
// context and the alignment. The stream the work goes to.
StatusOr<std::shared_ptr<Stream>> checked_stream(Runtime& rt, uint64_t address, uint64_t token,
                                                 const char* api) {
  ACLVMM_ASSIGN_OR_RETURN(const PointerInfo info, rt.vmm().pointer_info(address));
  if (info.kind != PointerInfo::kDevice) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("{}: 0x{:x} is not device memory (host, unregistered and managed "
                             "memory cannot be used)",
                             api, address));
  }
  ACLVMM_ASSIGN_OR_RETURN(const uint64_t context, rt.current_context());
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, rt.resolve_stream(token));
  if (stream->context() != context) {
    return Error(ACL_ERROR_RT_STREAM_CONTEXT,
                 "the stream belongs to another context than the current one");
  }
  // aclvmm's own check (runtime-extra.md, deliberate differences): the word is read and written
  // whole, as the documentation requires.
  if (address % sizeof(uint64_t) != 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("{}: 0x{:x} is not 8-byte aligned", api, address));
  }
  return stream;
}

Status common_checks(Runtime& rt, uint64_t token, const char* api) {
  const Config& cfg = rt.config();
  if (!cfg.product.supports(Feature::kStreamMemoryOps)) {
    return Error(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 fmt::format("{} is not supported on {}", api, cfg.product.soc));
  }
  if (token != 0 && !rt.streams().find(token)) {
    return Error(ACL_ERROR_RT_INVALID_HANDLE, "the stream is not a live stream");
  }
  return Status::Ok();
}

}  // namespace

bool value_wait_ready(uint32_t flag, uint64_t word, uint64_t value) {
  switch (flag) {
    case ACL_STREAM_WAIT_VALUE_GEQ: return static_cast<int64_t>(word - value) >= 0;
    case ACL_STREAM_WAIT_VALUE_EQ: return word == value;
    case ACL_STREAM_WAIT_VALUE_AND: return (word & value) != 0;
    case ACL_STREAM_WAIT_VALUE_NOR: return ~(word | value) != 0;
    default: return false;
  }
}

Status value_write(Runtime& rt, uint64_t address, uint64_t value, uint32_t flag, uint64_t token) {
  ACLVMM_RETURN_IF_ERROR(common_checks(rt, token, "aclrtValueWrite"));
  if (flag != 0) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("aclrtValueWrite: flag must be 0, not {}", flag));
  }
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream,
                          checked_stream(rt, address, token, "aclrtValueWrite"));
  stream->enqueue_value_write(rt.memory_ops(), address, value, rt.accessor_for(stream->device()));
  return Status::Ok();
}

Status value_wait(Runtime& rt, uint64_t address, uint64_t value, uint32_t flag, uint64_t token) {
  ACLVMM_RETURN_IF_ERROR(common_checks(rt, token, "aclrtValueWait"));
  if (flag > ACL_STREAM_WAIT_VALUE_NOR) {
    return Error(ACL_ERROR_RT_PARAM_INVALID,
                 fmt::format("aclrtValueWait: flag must be one of ACL_STREAM_WAIT_VALUE_GEQ, _EQ, "
                             "_AND, _NOR (0..3), not {}",
                             flag));
  }
  ACLVMM_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream,
                          checked_stream(rt, address, token, "aclrtValueWait"));
  stream->enqueue_value_wait(
      rt.memory_ops(), address,
      [flag, value](uint64_t word) { return value_wait_ready(flag, word, value); },
      rt.accessor_for(stream->device()));
  return Status::Ok();
}

}  // namespace aclvmm
