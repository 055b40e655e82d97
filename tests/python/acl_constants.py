"""The ACL constants the Python tests use.

pyACL exports no named constants (conventions.md 4.1): applications define their own, as here.
Values are those of include/acl/acl_rt.h and acl_base_rt.h.
"""

# aclError
ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_INVALID_HANDLE = 107017
ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000
ACL_ERROR_RT_NO_PERMISSION = 207006
ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899

# aclrtMemMallocPolicy
ACL_MEM_MALLOC_HUGE_FIRST = 0

# aclrtMemcpyKind
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3

# aclrtMemAttr
ACL_HBM_MEM = 1
ACL_HBM_MEM_HUGE = 4
ACL_HBM_MEM_HUGE1G = 10

# aclrtMemLocationType
ACL_MEM_LOCATION_TYPE_HOST = 0
ACL_MEM_LOCATION_TYPE_DEVICE = 1
ACL_MEM_LOCATION_TYPE_UNREGISTERED = 2

# aclrtMemHandleType
ACL_MEM_HANDLE_TYPE_NONE = 0
ACL_MEM_HANDLE_TYPE_POSIX = 2

# aclrtMemGranularityOptions
ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM = 0
ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1
ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF = 0xFFFF

# export flags
ACL_RT_VMM_EXPORT_FLAG_DEFAULT = 0
ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION = 1

# IPC memory by key: export and import flags
ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT = 0
ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION = 1
ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT = 0
ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS = 1
IPC_KEY_BYTES = 65  # the key's 64 characters and the NUL: the `len` clients pass

MIB = 1 << 20
GIB = 1 << 30


def device_prop(device=0, mem_attr=ACL_HBM_MEM_HUGE):
    """An aclrtPhysicalMemProp dict for pinned memory on `device`, keyed by the C member names."""
    return {
        "handleType": ACL_MEM_HANDLE_TYPE_NONE,
        "allocationType": 0,
        "memAttr": mem_attr,
        "location": {"id": device, "type": ACL_MEM_LOCATION_TYPE_DEVICE},
        "reserve": 0,
    }


def pattern(size, seed):
    """size bytes that differ at every offset within 251 bytes and between seeds."""
    return bytes((i * 7 + seed) % 251 for i in range(size))
