/*
 * aclvmm extensions: what the emulated NPU offers beyond the ACL API.
 *
 * - aclvmmStatsJson: a JSON snapshot of the process's emulated state (devices, live objects,
 *   managed-memory and sharing counters); see docs/emulation.md for the keys.
 * - aclvmmInjectFault: make the nth following call of an ACL function fail with a chosen code,
 *   to test an application's error paths. The failing call changes nothing. A "drv.*", "dev.*",
 *   "emu.*" or "host.*" name fails one backend step (memfd, mmap, mbind, socket, userfaultfd, a
 *   device-MMU map ...) in the middle of a call instead, to test the library's own rollback;
 *   aclvmmFaultRemaining tells whether it fired.
 * - Emulated kernels: there is no Ascend C compiler here, so a host function stands in for a
 *   kernel. aclvmmLaunchKernel queues it on a stream; when the stream reaches it, it runs on the
 *   stream's device and reaches device memory through aclvmmKernelRead/aclvmmKernelWrite, which
 *   translate device addresses through the emulated device MMU with that device's access rights
 *   (exactly like aclrtMemcpy does). A failed access fails the kernel; the error is reported by the
 *   next synchronisation of the stream, as a device exception would be.
 * - Named emulated kernels: aclvmmRegisterKernel registers a host function under a kernel name;
 *   aclrtBinaryGetFunction finds kernels by that name, and aclrtLaunchKernelWithConfig runs the
 *   function with the launch's block count and parameter buffer. ACLVMM_KERNEL_LIBS names shared
 *   libraries, loaded when the runtime starts, whose constructors register kernels.
 */
#ifndef ACLVMM_ACLVMM_H_
#define ACLVMM_ACLVMM_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The statistics JSON; valid until the next call on the same thread. NULL when it cannot be
   composed (no memory); aclGetRecentErrMsg says why. */
ACL_FUNC_VISIBILITY const char *aclvmmStatsJson(void);

/* nth >= 1: the nth following call of `api` (e.g. "aclrtMapMem") returns `code`; nth 0 clears.
   `api` may also name a backend step, "dev.*", "emu.*" or "host.*" (e.g. "emu.cpu.map"), or its
   older name "drv.<step>" (e.g. "drv.map_cpu"; the list is in docs/configuration.md,
   ACLVMM_FAULTS): the nth following execution of that step fails with the
   errno `code` (a positive errno, e.g. 12 = ENOMEM), in the middle of whichever call runs it, and
   the call rolls back and returns an error code, usually the one the errno maps to (ENOMEM:
   207001; most others: 507899). Failures that only cost statistics are absorbed.
   A code ACLVMM_FAULT_THROW_* (below; ACL functions only) makes the nth call throw that C++
   exception inside the library instead, at the start of the function, to test that no exception
   leaves an exported function: the call returns 207001 (bad_alloc, length_error), 207005
   (system_error) or 500000 (anything else) with a message, and changes nothing. Every exported
   function counts such a rule, including those that do not start the runtime; a function that
   returns no aclError returns its failure value (NULL, 0 or -1). Other negative codes → 100000. */
#define ACLVMM_FAULT_THROW_BAD_ALLOC (-1)      /* std::bad_alloc */
#define ACLVMM_FAULT_THROW_LENGTH_ERROR (-2)   /* std::length_error */
#define ACLVMM_FAULT_THROW_SYSTEM_ERROR (-3)   /* std::system_error (EAGAIN), as std::thread throws */
#define ACLVMM_FAULT_THROW_RUNTIME_ERROR (-4)  /* std::runtime_error */
#define ACLVMM_FAULT_THROW_NON_STANDARD (-5)   /* an exception that is not a std::exception */
ACL_FUNC_VISIBILITY aclError aclvmmInjectFault(const char *api, uint32_t nth, aclError code);

/* Calls of `api` (or executions of a backend step) left until its armed rule fires, the failing one
   included; 0 when no rule is armed for `api` (never armed, cleared, or already fired) or `api` is
   NULL. Lets a test tell whether a rule fired. */
ACL_FUNC_VISIBILITY uint32_t aclvmmFaultRemaining(const char *api);

typedef struct aclvmmKernelContext aclvmmKernelContext;
typedef void (*aclvmmKernelFunc)(aclvmmKernelContext *ctx, void *args);

/* Queues `func(ctx, args)` on `stream` (NULL: the current context's default stream). */
ACL_FUNC_VISIBILITY aclError aclvmmLaunchKernel(aclrtStream stream, aclvmmKernelFunc func, void *args);

/* A named kernel: called once per aclrtLaunchKernelWithConfig, on the stream's worker as the stream's
   device, with the launch's numBlocks and parameter buffer (`args`, `argsSize` bytes, valid during
   the call only; the parameters in append order, each at an 8-byte-aligned offset) and the
   `userData` it was registered with. */
typedef void (*aclvmmNamedKernelFunc)(aclvmmKernelContext *ctx, uint32_t numBlocks, const void *args,
                                      size_t argsSize, void *userData);

/* Registers `func` as the kernel `name` (compared byte for byte) for aclrtBinaryGetFunction and
   aclrtLaunchKernelWithConfig. 100000 for a NULL or empty name or a NULL func; 100031
   (ACL_ERROR_KERNEL_ALREADY_REGISTERED) when the name is taken, the existing entry stays. The
   registry belongs to the process: any thread, any time, before aclInit and after aclFinalize. */
ACL_FUNC_VISIBILITY aclError aclvmmRegisterKernel(const char *name, aclvmmNamedKernelFunc func,
                                                  void *userData);

/* Removes the kernel `name`; later launches of it fail with 107017. 100000 for a NULL or empty name;
   100029 (ACL_ERROR_KERNEL_NOT_FOUND) when it is not registered. */
ACL_FUNC_VISIBILITY aclError aclvmmUnregisterKernel(const char *name);

/* Inside a kernel: copy between device memory and the kernel's own (host) buffers. On failure the
   kernel is marked failed and the call returns the error; later accesses keep failing. */
ACL_FUNC_VISIBILITY aclError aclvmmKernelRead(aclvmmKernelContext *ctx, void *dst, const void *devSrc,
                                              size_t size);
ACL_FUNC_VISIBILITY aclError aclvmmKernelWrite(aclvmmKernelContext *ctx, void *devDst, const void *src,
                                               size_t size);
/* The user device id the kernel runs on. */
ACL_FUNC_VISIBILITY int32_t aclvmmKernelDeviceId(const aclvmmKernelContext *ctx);

#ifdef __cplusplus
}
#endif

#endif /* ACLVMM_ACLVMM_H_ */
