/*
 * hal_decls.h: aclvmm's own declarations of the part of the vendor driver library
 * (libascend_hal.so) that the hal backend loads at run time and the fake library implements.
 *
 * Contract
 * - Names, numeric values, layouts and prototypes are those fixed by the specification's hal.md
 *   section 4; `hal_probe.c` compiled against this file prints exactly `hal_reference.txt`
 *   (ctest abi.hal_probe). Nothing here comes from a vendor header, and none is shipped.
 * - Functions are declarations only. The hal backend never links them: it takes
 *   `__typeof__(&name)` as the type of the pointer it fills with dlsym (drivers/hal/hal_symbols.h),
 *   so a prototype here that differs from the driver's is caught by the probe, not by a crash.
 *   The fake library (drivers/hal/fake/) defines them with C linkage.
 * - Structures that the HAL takes by value (ShareHandleAttr, HandleAttr, drv_uvm_location) must
 *   keep their exact sizes: x86_64 passes the 36-byte ones on the stack, aarch64 by hidden
 *   reference; a pointer-taking declaration would corrupt the call (hal.md 1.4).
 * - C11 and C++17 alike (the backend and the fake are C++, the probe is C).
 */
#ifndef ACLVMM_DRIVERS_HAL_HAL_DECLS_H
#define ACLVMM_DRIVERS_HAL_HAL_DECLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- basic types ------------------------------------------------------------------------- */
typedef unsigned char UINT8;
typedef unsigned int UINT32;
typedef unsigned long long UINT64;
typedef UINT32 DVdevice;
typedef UINT64 DVdeviceptr;

/* Every value is non-negative and below 2^32, so the enum's type is unsigned int (hal.md 1.4). */
typedef enum tagDrvError {
    DRV_ERROR_NONE = 0,
    DRV_ERROR_NO_DEVICE = 1,
    DRV_ERROR_INVALID_DEVICE = 2,
    DRV_ERROR_INVALID_VALUE = 3,
    DRV_ERROR_INVALID_HANDLE = 4,
    DRV_ERROR_INVALID_MALLOC_TYPE = 5,
    DRV_ERROR_OUT_OF_MEMORY = 6,
    DRV_ERROR_INNER_ERR = 7,
    DRV_ERROR_PARA_ERROR = 8,
    DRV_ERROR_UNINIT = 9,
    DRV_ERROR_REPEATED_INIT = 10,
    DRV_ERROR_NOT_EXIST = 11,
    DRV_ERROR_REPEATED_USERD = 12,
    DRV_ERROR_BUSY = 13,
    DRV_ERROR_NO_RESOURCES = 14,
    DRV_ERROR_WAIT_TIMEOUT = 16,
    DRV_ERROR_IOCRL_FAIL = 17,
    DRV_ERROR_CLIENT_BUSY = 23,
    DRV_ERROR_SOCKET_CLOSE = 25,
    DRV_ERROR_SEND_MESG = 27,
    DRV_ERROR_BUS_DOWN = 33,
    DRV_ERROR_OVER_LIMIT = 37,
    DRV_ERROR_FILE_OPS = 38,
    DRV_ERROR_MALLOC_FAIL = 40,
    DRV_ERROR_PROCESS_EXIT = 42,
    DRV_ERROR_DEV_PROCESS_HANG = 43,
    DRV_ERROR_OPER_NOT_PERMITTED = 46,
    DRV_ERROR_NO_EVENT_RESOURCES = 47,
    DRV_ERROR_NO_STREAM_RESOURCES = 48,
    DRV_ERROR_NO_NOTIFY_RESOURCES = 49,
    DRV_ERROR_NO_MODEL_RESOURCES = 50,
    DRV_ERROR_TRY_AGAIN = 51,
    DRV_ERROR_MEMORY_OPT_FAIL = 58,
    DRV_ERROR_COPY_USER_FAIL = 74,
    DRV_ERROR_QUEUE_EMPTY = 75,
    DRV_ERROR_QUEUE_FULL = 76,
    DRV_ERROR_BAD_ADDRESS = 79,
    DRV_ERROR_CDQ_ABNORMAL = 82,
    DRV_ERROR_CDQ_NOT_EXIST = 83,
    DRV_ERROR_NO_CDQ_RESOURCES = 84,
    DRV_ERROR_RESUME = 89,
    DRV_ERROR_NOT_SUPPORT = 0xfffe
} drvError_t;
typedef drvError_t DVresult;

/* ---- physical memory --------------------------------------------------------------------- */
enum drv_mem_side { MEM_HOST_SIDE = 0, MEM_DEV_SIDE = 1, MEM_HOST_NUMA_SIDE = 2, MEM_MAX_SIDE = 3 };
enum drv_mem_pg_type {
    MEM_NORMAL_PAGE_TYPE = 0,
    MEM_HUGE_PAGE_TYPE = 1,
    MEM_GIANT_PAGE_TYPE = 2,
    MEM_MAX_PAGE_TYPE = 3
};
enum drv_mem_type {
    MEM_HBM_TYPE = 0,
    MEM_DDR_TYPE = 1,
    MEM_P2P_HBM_TYPE = 2,
    MEM_P2P_DDR_TYPE = 3,
    MEM_TS_DDR_TYPE = 4,
    MEM_MAX_TYPE = 5
};

struct drv_mem_prop {
    uint32_t side;      /* enum drv_mem_side */
    uint32_t devid;     /* drv id; the NUMA node for MEM_HOST_NUMA_SIDE */
    uint32_t module_id; /* APP_MODULE_ID for everything ACL creates */
    uint32_t pg_type;   /* enum drv_mem_pg_type */
    uint32_t mem_type;  /* enum drv_mem_type */
    uint64_t reserve;
};

/* Opaque: aclvmm never dereferences one (hal.md 3.0 "Handles"). */
typedef struct drv_mem_handle drv_mem_handle_t;

struct drv_mem_location {
    uint32_t id;
    enum drv_mem_side side;
};

typedef enum {
    MEM_ACCESS_TYPE_NONE = 0,
    MEM_ACCESS_TYPE_READ = 1,
    MEM_ACCESS_TYPE_READWRITE = 3,
    MEM_ACCESS_TYPE_MAX = 0x7FFFFFFF
} drv_mem_access_type;

struct drv_mem_access_desc {
    drv_mem_access_type type;
    struct drv_mem_location location;
    unsigned int rsv[2];
};

typedef enum {
    MEM_HANDLE_TYPE_NONE = 0,
    MEM_HANDLE_TYPE_FABRIC = 1,
    MEM_HANDLE_TYPE_POSIX = 2,
    MEM_HANDLE_TYPE_MAX = 3
} drv_mem_handle_type;

typedef enum {
    MEM_ALLOC_GRANULARITY_MINIMUM = 0,
    MEM_ALLOC_GRANULARITY_RECOMMENDED = 1,
    MEM_ALLOC_GRANULARITY_INVALID = 2
} drv_mem_granularity_options;

/* ---- sharing ----------------------------------------------------------------------------- */
#define MEM_SHARE_HANDLE_LEN 128
struct MemShareHandle {
    uint8_t share_info[MEM_SHARE_HANDLE_LEN];
};

enum ShareHandleAttrType { SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER = 0, SHR_HANDLE_ATTR_TYPE_MAX = 1 };
#define SHR_HANDLE_WLIST_ENABLE 0
#define SHR_HANDLE_NO_WLIST_ENABLE 1
struct ShareHandleAttr {
    unsigned int enableFlag;
    unsigned int rsv[8];
};
struct ShareHandleGetInfo {
    unsigned int phyDevid;
    unsigned int reserve[8];
};

enum HandleAttrType { HANDLE_ATTR_MEM_MAP_ROUTE = 0, HANDLE_ATTR_TYPE_MAX = 1 };
struct HandleAttr {
    unsigned int mem_map_route;
    unsigned int rsv[8];
};
#define MEM_MAP_DEFAULT_PATH 0
#define MEM_MAP_INBUS 0
#define MEM_MAP_EXBUS 1
#define MEM_MAP_UB_ONE_PORT_PATH 2
#define MEM_MAP_UB_MULTI_PORT_PATH 3

/* ---- managed memory ---------------------------------------------------------------------- */
typedef enum {
    DRV_UVM_LOCATION_TYPE_INVALID = 0,
    DRV_UVM_LOCATION_TYPE_DEVICE = 1,
    DRV_UVM_LOCATION_TYPE_HOST = 2,
    DRV_UVM_LOCATION_TYPE_HOST_NUMA = 3
} drv_uvm_location_type;
struct drv_uvm_location {
    drv_uvm_location_type type;
    int id;
};
typedef enum {
    READ_MOSTLY = 0,
    UNSET_READ_MOSTLY = 1,
    PREFER_LOCATION = 2,
    UNSET_PREFER_LOCATION = 3,
    ACCESS_BY_LOCATION = 4,
    UNSET_ACCESS_BY_LOCATION = 5
} uvmMemAdviseType;
enum drvMemRangeAttribute {
    MEM_RANGE_ATTR_READ_MOSTLY = 1,
    MEM_RANGE_ATTR_PREFERRED_LOC = 2,
    MEM_RANGE_ATTR_ACCESS_BY = 3,
    MEM_RANGE_ATTR_PREFERRED_LOC_TYPE = 4,
    MEM_RANGE_ATTR_PREFERRED_LOC_ID = 5,
    MEM_RANGE_ATTR_LAST_PREFETCH_LOC = 6,
    MEM_RANGE_ATTR_LAST_PREFETCH_LOC_TYPE = 7,
    MEM_RANGE_ATTR_LAST_PREFETCH_LOC_ID = 8,
    MEM_RANGE_ATTR_MAX = 9
};
#define MEM_RANGE_CPU_DEVICE_ID (-1)
#define MEM_RANGE_INVALID_DEVICE_ID (-2)

/* ---- pointer attributes, memory info, copies --------------------------------------------- */
#define DV_MEM_SVM 0x0001
#define DV_MEM_SVM_HOST 0x0002
#define DV_MEM_SVM_DEVICE 0x0004
#define DV_MEM_LOCK_HOST 0x0008
#define DV_MEM_LOCK_DEV 0x0010
#define DV_MEM_LOCK_DEV_DVPP 0x0020
#define DV_MEM_LOCK_HOST_AGENT 0x0040
#define DV_MEM_USER_MALLOC 0x0080
#define DV_MEM_USER_REGISTER 0x0100
#define DV_MEM_UVM 0x0200
#define DV_MEM_SOMA 0x0400
#define DV_MEM_RESV 8
struct DVattribute {
    UINT32 memType; /* DV_MEM_* bits */
    UINT32 resv1;
    UINT32 resv2;
    UINT32 devId;
    UINT32 pageSize;
    UINT32 resv[DV_MEM_RESV];
};

struct MemPhyInfo {
    unsigned long total;
    unsigned long free;
    unsigned long huge_total;
    unsigned long huge_free;
    unsigned long giant_total;
    unsigned long giant_free;
};
/* The driver's union has other, larger members (260 bytes); callers pass the whole 264. */
struct MemInfo {
    union {
        struct MemPhyInfo phy_info;
        unsigned char whole_union_[260];
    };
};
#define MEM_INFO_TYPE_DDR_SIZE 1
#define MEM_INFO_TYPE_HBM_SIZE 2
#define MEM_INFO_TYPE_DDR_P2P_SIZE 3
#define MEM_INFO_TYPE_HBM_P2P_SIZE 4
#define MEM_INFO_TYPE_ADDR_CHECK 5

typedef enum {
    DRV_MEMCPY_HOST_TO_HOST = 0,
    DRV_MEMCPY_HOST_TO_DEVICE = 1,
    DRV_MEMCPY_DEVICE_TO_HOST = 2,
    DRV_MEMCPY_DEVICE_TO_DEVICE = 3
} drvMemcpyKind_t;
struct memcpy_info {
    drvMemcpyKind_t dir;
    uint32_t devid;
    uint64_t reserve[2];
};

/* ---- devices ----------------------------------------------------------------------------- */
typedef enum {
    FEATURE_SVM_GET_USER_MALLOC_ATTR = 2,
    FEATURE_SVM_VMM_NORMAL_GRANULARITY = 6,
    FEATURE_SVM_MEM_HOST_UVA = 8,
    FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR = 11
} drvFeature_t;

enum drvModuleId {
    UNKNOWN_MODULE_ID = 0,
    RUNTIME_MODULE_ID = 7,
    APP_MODULE_ID = 33,
    ASCENDCL_MODULE_ID = 48
};
enum drvDevCloseType { DEV_CLOSE_HOST_DEVICE = 0, DEV_CLOSE_ONLY_HOST = 1, DEV_CLOSE_HOST_USER = 2 };
enum drvMemCtlType { CTRL_TYPE_SUPPORT_FEATURE = 2 };
enum drvModuleType { MODULE_TYPE_SYSTEM = 0 };
enum drvInfoType { INFO_TYPE_SDID = 26, INFO_TYPE_SERVER_ID = 27 };

typedef struct {
    uint64_t reserve[8];
} halDevOpenIn;
typedef struct {
    uint64_t reserve[8];
} halDevOpenOut;
typedef struct {
    uint32_t close_type; /* enum drvDevCloseType */
    uint32_t reserve0;
    uint64_t reserve[7];
} halDevCloseIn;

struct supportFeaturePara {
    unsigned long long support_feature; /* CTRL_SUPPORT_*_MASK */
    unsigned int devid;
};
#define CTRL_SUPPORT_GIANT_PAGE_MASK 0x10ULL
#define SVM_AGENT_DEVICE 0
#define SVM_AGENT_HOST 1

/* ---- halMemAlloc flag word --------------------------------------------------------------- */
#define MEM_DEVID_MASK 0x3FFULL
#define MEM_VIRT_BIT 10
#define MEM_SVM (0x0ULL << MEM_VIRT_BIT)
#define MEM_DEV (0x1ULL << MEM_VIRT_BIT)
#define MEM_HOST (0x2ULL << MEM_VIRT_BIT)
#define MEM_DVPP (0x3ULL << MEM_VIRT_BIT)
#define MEM_HOST_AGENT (0x4ULL << MEM_VIRT_BIT)
#define MEM_RESERVE (0x5ULL << MEM_VIRT_BIT)
#define MEM_HOST_UVA (0x6ULL << MEM_VIRT_BIT)
#define MEM_UVM (0x7ULL << MEM_VIRT_BIT)
#define MEM_PHY_BIT 14
#define MEM_TYPE_DDR (0x0ULL << MEM_PHY_BIT)
#define MEM_TYPE_HBM (0x1ULL << MEM_PHY_BIT)
#define MEM_PAGE_BIT 17
#define MEM_PAGE_NORMAL (0x0ULL << MEM_PAGE_BIT)
#define MEM_PAGE_HUGE (0x1ULL << MEM_PAGE_BIT)
#define MEM_SVM_NORMAL MEM_PAGE_NORMAL
#define MEM_SVM_HUGE MEM_PAGE_HUGE
#define MEM_CONTIGUOUS_PHY 0x80000ULL
#define MEM_ALIGN_BIT 20
#define MEM_SET_ALIGN_SIZE(exp) (((unsigned long long)(exp) & 0x1FULL) << MEM_ALIGN_BIT)
#define MEM_ADVISE_P2P 0x2000000ULL
#define MEM_ADVISE_4G 0x4000000ULL
#define MEM_ADVISE_TS 0x8000000ULL
#define MEM_READONLY 0x20000000ULL
#define MEM_HOST_RW_DEV_RO 0x40000000ULL
#define MEM_PAGE_GIANT 0x80000000ULL
#define MEM_DEV_CP_ONLY 0x100000000ULL
#define MEM_MODULE_ID_BIT 56
#define MEM_MODULE_ID_MASK 0xFFULL

/* ---- halMemAddressReserve flag word ------------------------------------------------------ */
#define MEM_RSV_TYPE_DEVICE_SHARE 0x100ULL
#define MEM_RSV_TYPE_REMOTE_MAP 0x200ULL

/* ---- functions (hal.md 4, "Prototypes") -------------------------------------------------- */
drvError_t halGetAPIVersion(int* version);
drvError_t drvGetDevNum(uint32_t* count);
drvError_t drvDeviceGetPhyIdByIndex(uint32_t logicId, uint32_t* phyId);
drvError_t drvDeviceGetIndexByPhyId(uint32_t phyId, uint32_t* logicId);
drvError_t halGetHostID(uint32_t* hostId);
drvError_t halDeviceOpen(uint32_t dev, halDevOpenIn* in, halDevOpenOut* out);
drvError_t halDeviceClose(uint32_t dev, halDevCloseIn* in);
drvError_t drvDeviceOpen(void** info, uint32_t dev);
drvError_t drvDeviceClose(uint32_t dev);
int drvMemDeviceOpen(uint32_t dev, int unusedFd);
int drvMemDeviceClose(uint32_t dev);
drvError_t halMemAgentOpen(uint32_t dev, uint32_t agentKind);
drvError_t halMemAgentClose(uint32_t dev, uint32_t agentKind);
DVresult drvMemSmmuQuery(DVdevice dev, UINT32* ssid);
bool halSupportFeature(uint32_t dev, drvFeature_t feature);
drvError_t halGetDeviceInfo(uint32_t dev, int32_t moduleType, int32_t infoType, int64_t* value);
drvError_t halGetSocVersion(uint32_t dev, char* name, uint32_t nameLen);
drvError_t halMemCtl(int ctlType, void* in, size_t inSize, void* out, size_t* outSize);
drvError_t halDeviceEnableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags);
drvError_t halDeviceDisableP2P(uint32_t dev, uint32_t peerPhyId, uint32_t flags);
drvError_t halDeviceCanAccessPeer(int* canAccess, uint32_t dev, uint32_t peerPhyId);
int32_t halMapErrorCode(drvError_t code);

drvError_t halMemAddressReserve(void** va, size_t size, size_t alignment, void* fixedVa,
                                uint64_t flags);
drvError_t halMemAddressFree(void* va);
drvError_t halMemCreate(drv_mem_handle_t** handle, size_t size, const struct drv_mem_prop* prop,
                        uint64_t flags);
drvError_t halMemRelease(drv_mem_handle_t* handle);
drvError_t halMemMap(void* va, size_t size, size_t offset, drv_mem_handle_t* handle,
                     uint64_t flags);
drvError_t halMemUnmap(void* va);
drvError_t halMemSetAccess(void* va, size_t size, struct drv_mem_access_desc* desc, size_t count);
drvError_t halMemGetAccess(void* va, struct drv_mem_location* location, uint64_t* flags);
drvError_t halMemGetAllocationGranularity(const struct drv_mem_prop* prop,
                                          drv_mem_granularity_options option, size_t* granularity);
drvError_t halMemRetainAllocationHandle(drv_mem_handle_t** handle, void* va);
drvError_t halMemGetAllocationPropertiesFromHandle(struct drv_mem_prop* prop,
                                                   drv_mem_handle_t* handle);
drvError_t halMemGetAddressRange(DVdeviceptr va, DVdeviceptr* base, size_t* size);
drvError_t halMemHandleSetAttribute(drv_mem_handle_t* handle, enum HandleAttrType type,
                                    struct HandleAttr value);
drvError_t halMemHandleGetAttribute(drv_mem_handle_t* handle, enum HandleAttrType type,
                                    struct HandleAttr* value);

drvError_t halMemExportToShareableHandle(drv_mem_handle_t* handle, drv_mem_handle_type type,
                                         uint64_t flags, uint64_t* token);
drvError_t halMemExportToShareableHandleV2(drv_mem_handle_t* handle, drv_mem_handle_type type,
                                           uint64_t flags, struct MemShareHandle* token);
drvError_t halMemImportFromShareableHandle(uint64_t token, uint32_t dev, drv_mem_handle_t** handle);
drvError_t halMemImportFromShareableHandleV2(drv_mem_handle_type type, struct MemShareHandle* token,
                                             uint32_t dev, drv_mem_handle_t** handle);
drvError_t halMemSetPidToShareableHandle(uint64_t token, int pids[], uint32_t count);
drvError_t halMemTransShareableHandle(drv_mem_handle_type type, struct MemShareHandle* token,
                                      uint32_t* serverId, uint64_t* token64);
drvError_t halMemShareHandleSetAttribute(uint64_t token, enum ShareHandleAttrType type,
                                         struct ShareHandleAttr value);
drvError_t halMemShareHandleGetAttribute(uint64_t token, enum ShareHandleAttrType type,
                                         struct ShareHandleAttr* value);
drvError_t halMemShareHandleInfoGet(uint64_t token, struct ShareHandleGetInfo* info);
pid_t drvDeviceGetBareTgid(void);

drvError_t halMemAlloc(void** ptr, unsigned long long size, unsigned long long flags);
drvError_t halMemFree(void* ptr);
drvError_t halMemAdvise(DVdeviceptr ptr, size_t size, unsigned int advice, DVdevice dev);
drvError_t halMemManagedAdvise(DVdeviceptr ptr, size_t size, uint32_t advice,
                               struct drv_uvm_location location);
drvError_t halMemManagedRangeGetAttributes(void** data, size_t* dataSizes, uint32_t* attributes,
                                           size_t count, DVdeviceptr ptr, size_t size);
DVresult halMemManagedPrefetch(DVdeviceptr ptr, size_t size, struct drv_uvm_location location,
                               unsigned int flags);
DVresult halMemManagedPrefetchBatch(DVdeviceptr* ptrs, size_t* sizes, size_t count,
                                    struct drv_uvm_location* locations, size_t* locationStarts,
                                    size_t locationCount, unsigned long long flags);
int halGetCurrentThreadNumaNode(void);
DVresult drvMemPrefetchToDevice(DVdeviceptr ptr, size_t size, DVdevice dev);
DVresult drvMemGetAttribute(DVdeviceptr ptr, struct DVattribute* attr);
DVresult halMemGetInfo(DVdevice dev, unsigned int type, struct MemInfo* info);
DVresult drvMemcpy(DVdeviceptr dst, size_t dstMax, DVdeviceptr src, size_t count);
DVresult drvMemsetD8(DVdeviceptr dst, size_t dstMax, UINT8 value, size_t count);
drvError_t halMemcpy(void* dst, size_t dstSize, void* src, size_t count, struct memcpy_info* info);
drvError_t halSdmaCopy(DVdeviceptr dst, size_t dstSize, DVdeviceptr src, size_t count);

/* Not in any vendor header; the vendor runtime declares it itself and no public driver has it
 * (hal.md 3.3): resolved by name like the others, missing everywhere today. Not probed. */
drvError_t halMemMapNoAccess(void* va, size_t size, size_t offset, drv_mem_handle_t* handle,
                             uint64_t flags);

#ifdef __cplusplus
}
#endif

#endif /* ACLVMM_DRIVERS_HAL_HAL_DECLS_H */
