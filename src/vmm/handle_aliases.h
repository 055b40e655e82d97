// HandleAliases: the driver's own physical-memory handles, as aclvmm hands them out beside the
// vendor runtime (hal.md §6.2 rule 4: "pass handles and tokens unchanged, so that a handle made by
// aclvmm works in a vendor call").
//
// The core keeps its physical handles in a HandleTable of generation-checked tokens. Beside the
// vendor runtime the application gets the driver's handle instead (the backend's PhysicalId), and
// the facade turns it back into the core's token here. A value never bound here (made by the
// vendor, forged) turns into itself, which no table knows: the call answers 107000. A binding
// stays after its token dies (the call then answers 107000, the "handles seen die" of rule 4)
// until the driver hands the same value out again and it is bound anew.
//
// Threading: any thread; one lock, taken with nothing held (lock_rank.h: kHandleAliases).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "base/lock_rank.h"

namespace aclvmm {

class HandleAliases {
 public:
  // `driver_handle` now stands for `token` (replacing what it stood for before). false: no
  // memory for the binding (nothing changed).
  bool bind(uint64_t driver_handle, uint64_t token) noexcept;
  // The token `value` stands for; `value` itself when it was never bound.
  uint64_t token_of(uint64_t value) const;
  // Forgets every binding (the runtime's teardown: its tokens all die).
  void clear();

 private:
  mutable RankedMutex<LockRank::kHandleAliases> mu_;
  std::unordered_map<uint64_t, uint64_t> tokens_;
};

}  // namespace aclvmm
