/*
 * A different library with the vendor's file name and SONAME (libascendcl.so, or libacl_rt.so
 * when built as dropin_stub_acl_rt): every function the drop-in program calls exists, prints
 * "stub: <name>" and fails with 207000. Linked into the drop-in program in place of aclvmm, it
 * stands for "the application was built against some other ACL runtime"; the tests then show
 * that putting aclvmm on LD_LIBRARY_PATH or in LD_PRELOAD makes the unmodified program run on
 * aclvmm. The constructor line tells whether the dynamic loader loaded the stub at all.
 */
#include <stdio.h>

#include "acl/acl.h"

#ifndef STUB_SONAME
#define STUB_SONAME "libascendcl.so"
#endif

__attribute__((constructor)) static void stub_loaded(void)
{
    printf("stub library %s loaded\n", STUB_SONAME);
    fflush(stdout);
}

static aclError stub(const char *name)
{
    printf("stub: %s\n", name);
    return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
}

aclError aclInit(const char *configPath) { (void)configPath; return stub("aclInit"); }
aclError aclFinalize(void) { return stub("aclFinalize"); }
const char *aclrtGetSocName(void) { stub("aclrtGetSocName"); return "stub"; }
aclError aclrtSetDevice(int32_t deviceId) { (void)deviceId; return stub("aclrtSetDevice"); }
aclError aclrtResetDevice(int32_t deviceId) { (void)deviceId; return stub("aclrtResetDevice"); }

aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop,
                             uint64_t flags)
{
    (void)handle; (void)size; (void)prop; (void)flags;
    return stub("aclrtMallocPhysical");
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle) { (void)handle; return stub("aclrtFreePhysical"); }

aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr, uint64_t flags)
{
    (void)virPtr; (void)size; (void)alignment; (void)expectPtr; (void)flags;
    return stub("aclrtReserveMemAddress");
}

aclError aclrtReleaseMemAddress(void *virPtr) { (void)virPtr; return stub("aclrtReleaseMemAddress"); }

aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags)
{
    (void)virPtr; (void)size; (void)offset; (void)handle; (void)flags;
    return stub("aclrtMapMem");
}

aclError aclrtUnmapMem(void *virPtr) { (void)virPtr; return stub("aclrtUnmapMem"); }

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    (void)dst; (void)destMax; (void)src; (void)count; (void)kind;
    return stub("aclrtMemcpy");
}
