/*
 * fake_hal_ext.h: the extension functions of aclvmm's fake driver library libascend_hal.so
 * (drivers/hal/fake/README.md). No vendor driver has them: a caller resolves them with dlsym and
 * treats their absence as "a real driver", so nothing here is ever linked against by name.
 *
 * Contract
 * - aclvmmFakeHalInject: the calls of the exported driver function `function` (its exact name,
 *   e.g. "halMemCreate") fail with `error` (a drvError_t value, > 0) without doing anything: the
 *   next `skip` calls pass, then `count` calls fail (0: every call from then on). Rules add up;
 *   a call is failed by the first armed rule of its function whose skip is used up. Returns 0,
 *   or -1 for an unknown or non-injectable name (halMapErrorCode, the extensions) or error 0.
 *   Functions that do not return a drvError_t fail their own way: halSupportFeature returns
 *   false, drvDeviceGetBareTgid and halGetCurrentThreadNumaNode return -1, drvMemDeviceOpen and
 *   drvMemDeviceClose return the code.
 * - aclvmmFakeHalClearInjections: drops every rule, ACLVMM_HAL_FAULTS's included.
 * - aclvmmFakeHalLayout: the emulator's address windows as base/size pairs, in this order:
 *   host_pinned, managed, device, device_general, no_uc (out[0..9]). Creates the emulated machine
 *   if no call did yet (it claims the windows). 0, or -1 when it cannot (out NULL, malformed
 *   configuration, the windows cannot be claimed). Under sanitizers the windows are not at the
 *   vendor's addresses; a caller that needs to know where they are asks here.
 *
 * - aclvmmFakeHalStatistics: the emulator's counters (the groups "managed" and "ipc" of
 *   aclvmmStatsJson: migrations, faults, imports refused by this process's listener), one call
 *   of `visit` each (is_flag: a flag, value 0 or 1). 0, or -1 before any call made the emulated
 *   machine (nothing was counted then) or for a NULL `visit`. The hal backend reports them as
 *   its own statistics, so programs that read the counters run unchanged on the fake.
 *
 * Threading: every function from any thread. C11 and C++.
 */
#ifndef ACLVMM_DRIVERS_HAL_FAKE_FAKE_HAL_EXT_H
#define ACLVMM_DRIVERS_HAL_FAKE_FAKE_HAL_EXT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int aclvmmFakeHalInject(const char* function, unsigned skip, unsigned count, unsigned error);
void aclvmmFakeHalClearInjections(void);
int aclvmmFakeHalLayout(uint64_t out[10]);
typedef void (*aclvmmFakeHalCounterVisit)(void* context, const char* group, const char* name,
                                          uint64_t value, int is_flag);
int aclvmmFakeHalStatistics(aclvmmFakeHalCounterVisit visit, void* context);

#ifdef __cplusplus
}
#endif

#endif /* ACLVMM_DRIVERS_HAL_FAKE_FAKE_HAL_EXT_H */
