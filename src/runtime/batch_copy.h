// aclrtMemcpyBatch / aclrtMemcpyBatchAsync (runtime-extra.md §7): host<->device copies given as
// arrays, with location attributes that must match what each address really is.
//
// The ACL layer checks the arrays (100000) and answers an all-zero batch; this module does the
// rest in the spec's order, and validates every entry before it copies or queues anything
// (deliberate: the vendor's asynchronous form may have queued earlier entries when a later one
// is refused). *fail_index names the entry a check or a copy failed on, SIZE_MAX otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "acl/acl_rt.h"
#include "base/status.h"

namespace aclvmm {

class Runtime;

struct BatchCopy {
  void** dsts = nullptr;
  void** srcs = nullptr;
  size_t* sizes = nullptr;
  size_t count = 0;
  aclrtMemcpyBatchAttr* attrs = nullptr;
  size_t* attr_starts = nullptr;  // attrsIndexes
  size_t attr_count = 0;
  bool async = false;
  uint64_t stream = 0;  // async: 0 names the default stream
};

Status memcpy_batch(Runtime& rt, const BatchCopy& batch, size_t* fail_index);

}  // namespace aclvmm
