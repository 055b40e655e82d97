/*
 * A CANN application in miniature, built by run_install_test.sh against an installed aclvmm root
 * in each of the ways applications build (CMake package, pkg-config, vendor-sample flags), and
 * the unmodified program of the drop-in tests (tests/dropin: linked against aclvmm, or against a
 * stub library and run on aclvmm through LD_LIBRARY_PATH or LD_PRELOAD).
 *
 * It maps 2 MiB of physical device memory into a reserved range, copies a known 8-byte value
 * in and out, and prints one line
 *     consumer: soc=<name> value=0x<hex> lib=<file that defines aclInit>
 * exiting 0 only if every call succeeded and the value came back unchanged. `lib=` lets the test
 * check that the installed library was loaded, not the build tree's copy.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#define CONSUMER_TAG "consumer"
#include "consumer_util.h"

int main(void)
{
    const size_t size = 2u << 20;
    const uint64_t sent = 0x5a5aa5a5c0ffee11ull;
    uint64_t back = 0;
    aclrtPhysicalMemProp prop = consumer_hbm_prop(0);
    aclrtDrvMemHandle handle = NULL;
    void *va = NULL;
    Dl_info info;
    const char *soc;

    CHECK(aclInit(NULL));
    soc = aclrtGetSocName();
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMallocPhysical(&handle, size, &prop, 0));
    CHECK(aclrtReserveMemAddress(&va, size, 0, NULL, 0));
    CHECK(aclrtMapMem(va, size, 0, handle, 0));
    CHECK(aclrtMemcpy(va, sizeof sent, &sent, sizeof sent, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(&back, sizeof back, va, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtReleaseMemAddress(va));
    CHECK(aclrtFreePhysical(handle));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());

    /* dlsym, not &aclInit: a non-PIE executable's function address is its own PLT slot. */
    memset(&info, 0, sizeof info);
    if (!dladdr(dlsym(RTLD_DEFAULT, "aclInit"), &info) || !info.dli_fname) {
        printf("consumer: dladdr(aclInit) failed\n");
        return 1;
    }
    printf("consumer: soc=%s value=0x%016" PRIx64 " lib=%s\n", soc ? soc : "(null)", back, info.dli_fname);
    return back == sent ? 0 : 1;
}
