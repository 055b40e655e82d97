#include "base/status.h"

#include <cerrno>

namespace aclvmm {

int code_from_errno(int neg_errno) {
  switch (-neg_errno) {
    case 0: return 0;
    case EFAULT: return ACL_ERROR_RT_INVALID_HANDLE;
    case ENOMEM: return ACL_ERROR_RT_MEMORY_ALLOCATION;
    case EPERM: return ACL_ERROR_RT_NO_PERMISSION;
    case EOPNOTSUPP: return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
    case ENOSPC: return ACL_ERROR_RT_RESOURCE_ALLOC_FAIL;
    case ENODEV:
    case ENXIO: return ACL_ERROR_RT_NO_DEVICE;
    case E2BIG: return ACL_ERROR_RT_OVER_LIMIT;
    default: return ACL_ERROR_RT_DRV_INTERNAL_ERROR;  // EINVAL, EACCES, EBUSY, EEXIST, ...
  }
}

}  // namespace aclvmm
