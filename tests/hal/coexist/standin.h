/*
 * standin.h: what the stand-in vendor runtime (libaclvmm_standin_runtime.so and its *Impl twin)
 * offers the coexistence test beyond the ACL names it exports (tests/hal/coexist/README.md).
 *
 * - standinCalls: how many calls of the ACL function `name` (its plain name, also in the *Impl
 *   build) reached the stand-in.
 * - standinOpenDevices: how many devices the stand-in holds open in the driver.
 * - standinMalloc: device memory the vendor made itself (halMemAlloc on device 0), as its memory
 *   pools would: aclrtFree of it must reach the stand-in.
 * - standinHandleDevice: the device the driver says a physical-memory handle is on
 *   (halMemGetAllocationPropertiesFromHandle), or minus the driver's error: a vendor call on a
 *   handle aclvmm handed out must find the driver's own handle (hal.md §6.2 rule 4).
 * - standinForeignDriverCalls: calls of the driver's open and close functions (halDeviceOpen,
 *   drvMemDeviceOpen, halMemAgentOpen, … and their closes) that the stand-in did not make;
 *   `first` (may be NULL) gets the name of the first.
 * - standinWindowTouches: mmap / munmap / mprotect / madvise calls made from aclvmm's library
 *   (libascendcl.so / libacl_rt.so) on a range that meets the driver's windows (the vendor's
 *   fixed windows and where the fake driver placed its own); -1 when the calls cannot be
 *   attributed (a sanitizer's interceptor is the caller). `first` (may be NULL) gets the first.
 */
#ifndef ACLVMM_TESTS_HAL_COEXIST_STANDIN_H
#define ACLVMM_TESTS_HAL_COEXIST_STANDIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int standinCalls(const char* name);
int standinOpenDevices(void);
int standinMalloc(void** ptr, size_t size);
int standinHandleDevice(void* handle);
int standinForeignDriverCalls(char* first, size_t first_size);
int standinWindowTouches(char* first, size_t first_size);

/* Between the two files of the stand-in: set while the stand-in itself calls the driver. */
extern _Thread_local int standin_in_driver_call;

#ifdef __cplusplus
}
#endif

#endif
