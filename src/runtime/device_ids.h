// The three device numberings and the conversions between them (runtime-extra.md §4).
//
// The user id is what the application passes to aclrtSetDevice: an index into
// ASCEND_RT_VISIBLE_DEVICES when that is set. The logical id is the driver's device index. The
// physical id is the chip number; in the emulator it equals the logical id, with a driver it is
// what the driver reported at the start (Config::physical_ids; they differ inside containers).
// Which code a miss gives depends on the layer that finds it: the runtime's own checks give 107001,
// the driver's 107000, hence the two rows per direction.
#pragma once

#include "base/status.h"
#include "runtime/config.h"

namespace aclvmm::device_ids {

// `in` is >= 0 (the ACL layer refused negative ids). `config`: one start's snapshot.
StatusOr<int> logical_from_user(const Config& config, int user);
StatusOr<int> user_from_logical(const Config& config, int logical);
// Physical from user (aclrtGetPhyDevIdByUserDevId and, by the vendor's documented quirk, also
// aclrtGetPhyDevIdByLogicDevId).
StatusOr<int> physical_from_user(const Config& config, int user);
// User from physical (aclrtGetUserDevIdByPhyDevId and aclrtGetLogicDevIdByPhyDevId).
StatusOr<int> user_from_physical(const Config& config, int physical);

}  // namespace aclvmm::device_ids
