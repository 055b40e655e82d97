/*
 * hal_functions.h: the driver functions the recorder interposes, one X(name) per function of
 * drivers/hal/hal_decls.h (hal.md 4, "Prototypes"), in the header's order. It numbers the
 * resolution slots and names them for dlsym; the wrappers themselves are written by hand
 * (rec_dev.c, rec_mem.c) because each one decodes its own arguments. ctest
 * hal.recorder.exports checks that the library defines exactly the header's functions.
 */
#ifndef ACLVMM_HAL_RECORDER_FUNCTIONS_H
#define ACLVMM_HAL_RECORDER_FUNCTIONS_H

#define REC_FUNCTIONS(X)                                                                           \
    X(halGetAPIVersion)                                                                            \
    X(drvGetDevNum)                                                                                \
    X(drvDeviceGetPhyIdByIndex)                                                                    \
    X(drvDeviceGetIndexByPhyId)                                                                    \
    X(halGetHostID)                                                                                \
    X(halDeviceOpen)                                                                               \
    X(halDeviceClose)                                                                              \
    X(drvDeviceOpen)                                                                               \
    X(drvDeviceClose)                                                                              \
    X(drvMemDeviceOpen)                                                                            \
    X(drvMemDeviceClose)                                                                           \
    X(halMemAgentOpen)                                                                             \
    X(halMemAgentClose)                                                                            \
    X(drvMemSmmuQuery)                                                                             \
    X(halSupportFeature)                                                                           \
    X(halGetDeviceInfo)                                                                            \
    X(halGetSocVersion)                                                                            \
    X(halMemCtl)                                                                                   \
    X(halDeviceEnableP2P)                                                                          \
    X(halDeviceDisableP2P)                                                                         \
    X(halDeviceCanAccessPeer)                                                                      \
    X(halMapErrorCode)                                                                             \
    X(halMemAddressReserve)                                                                        \
    X(halMemAddressFree)                                                                           \
    X(halMemCreate)                                                                                \
    X(halMemRelease)                                                                               \
    X(halMemMap)                                                                                   \
    X(halMemUnmap)                                                                                 \
    X(halMemSetAccess)                                                                             \
    X(halMemGetAccess)                                                                             \
    X(halMemGetAllocationGranularity)                                                              \
    X(halMemRetainAllocationHandle)                                                                \
    X(halMemGetAllocationPropertiesFromHandle)                                                     \
    X(halMemGetAddressRange)                                                                       \
    X(halMemHandleSetAttribute)                                                                    \
    X(halMemHandleGetAttribute)                                                                    \
    X(halMemExportToShareableHandle)                                                               \
    X(halMemExportToShareableHandleV2)                                                             \
    X(halMemImportFromShareableHandle)                                                             \
    X(halMemImportFromShareableHandleV2)                                                           \
    X(halMemSetPidToShareableHandle)                                                               \
    X(halMemTransShareableHandle)                                                                  \
    X(halMemShareHandleSetAttribute)                                                               \
    X(halMemShareHandleGetAttribute)                                                               \
    X(halMemShareHandleInfoGet)                                                                    \
    X(drvDeviceGetBareTgid)                                                                        \
    X(halMemAlloc)                                                                                 \
    X(halMemFree)                                                                                  \
    X(halMemAdvise)                                                                                \
    X(halMemManagedAdvise)                                                                         \
    X(halMemManagedRangeGetAttributes)                                                             \
    X(halMemManagedPrefetch)                                                                       \
    X(halMemManagedPrefetchBatch)                                                                  \
    X(halGetCurrentThreadNumaNode)                                                                 \
    X(drvMemPrefetchToDevice)                                                                      \
    X(drvMemGetAttribute)                                                                          \
    X(halMemGetInfo)                                                                               \
    X(drvMemcpy)                                                                                   \
    X(drvMemsetD8)                                                                                 \
    X(halMemcpy)                                                                                   \
    X(halSdmaCopy)                                                                                 \
    X(halMemMapNoAccess)

enum rec_fn {
#define REC_ENUM_(name) REC_##name,
    REC_FUNCTIONS(REC_ENUM_)
#undef REC_ENUM_
    REC_FN_COUNT
};

#endif /* ACLVMM_HAL_RECORDER_FUNCTIONS_H */
