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

namespace aclvmm {

// hal.md §3.0 (the vendor runtime's driver-result table, through its RT -> ACL mapping).
int code_from_driver(uint32_t driver_error) {
  switch (driver_error) {
    case 0: return 0;
    case 1: return 207004;                       // NO_DEVICE
    case 2: return 107001;                       // INVALID_DEVICE
    case 3: case 58: case 83: return 107000;     // INVALID_VALUE, MEMORY_OPT_FAIL, CDQ_NOT_EXIST
    case 4: return 107017;                       // INVALID_HANDLE
    case 5: return 107018;                       // INVALID_MALLOC_TYPE
    case 6: return 207001;                       // OUT_OF_MEMORY
    case 10: return 207015;                      // REPEATED_INIT
    case 14: case 40: return 207005;             // NO_RESOURCES, MALLOC_FAIL
    case 16: return 507012;                      // WAIT_TIMEOUT
    case 25: return 507901;                      // SOCKET_CLOSE
    case 27: return 507051;                      // SEND_MESG
    case 33: return 507010;                      // BUS_DOWN
    case 37: return 207012;                      // OVER_LIMIT
    case 43: return 507000;                      // DEV_PROCESS_HANG
    case 46: return 207006;                      // OPER_NOT_PERMITTED
    case 47: return 207007;                      // NO_EVENT_RESOURCES
    case 48: return 207008;                      // NO_STREAM_RESOURCES
    case 49: return 207009;                      // NO_NOTIFY_RESOURCES
    case 50: return 207010;                      // NO_MODEL_RESOURCES
    case 74: return 507052;                      // COPY_USER_FAIL
    case 75: return 207013;                      // QUEUE_EMPTY
    case 76: return 207014;                      // QUEUE_FULL
    case 82: return 507037;                      // CDQ_ABNORMAL
    case 84: return 207011;                      // NO_CDQ_RESOURCES
    case 89: return 207020;                      // RESUME
    case 0xfffe: return 207000;                  // NOT_SUPPORT
    default: return 507899;  // INNER_ERR, PARA_ERROR, UNINIT, NOT_EXIST, BUSY, IOCRL_FAIL, ...
  }
}

}  // namespace aclvmm
