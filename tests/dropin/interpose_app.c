/*
 * An application that defines its own aclrtMalloc, aclrtFree and aclrtFreePhysical, each wrapping
 * the library's function found with dlsym(RTLD_NEXT) and counting its calls (the way leak
 * checkers and allocator hooks interpose on ACL). It checks that
 *   - its definitions win in the global scope (dlsym(RTLD_DEFAULT) finds the wrappers), so any
 *     caller that binds through the dynamic linker would reach them;
 *   - the forwarded calls work (memory is usable, frees succeed);
 *   - the library never calls these exported names itself: it leaves one aclrtMalloc block and
 *     one physical handle for aclrtResetDevice / aclFinalize to tear down, and the counters must
 *     still equal the application's own calls exactly. A library that freed through its
 *     exported (interposable) names would be counted here.
 * Prints "interpose: malloc=<n> free=<n> freePhysical=<n>" and "interpose: ok"; exits 0 if ok.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#define CONSUMER_TAG "interpose"
#include "consumer_util.h" /* tests/install */

static int g_malloc_calls, g_free_calls, g_free_physical_calls;

typedef aclError (*malloc_fn)(void **, size_t, aclrtMemMallocPolicy);
typedef aclError (*free_fn)(void *);
typedef aclError (*free_physical_fn)(aclrtDrvMemHandle);

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    ++g_malloc_calls;
    malloc_fn real = (malloc_fn)dlsym(RTLD_NEXT, "aclrtMalloc");
    return real ? real(devPtr, size, policy) : ACL_ERROR_INTERNAL_ERROR;
}

aclError aclrtFree(void *devPtr)
{
    ++g_free_calls;
    free_fn real = (free_fn)dlsym(RTLD_NEXT, "aclrtFree");
    return real ? real(devPtr) : ACL_ERROR_INTERNAL_ERROR;
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle)
{
    ++g_free_physical_calls;
    free_physical_fn real = (free_physical_fn)dlsym(RTLD_NEXT, "aclrtFreePhysical");
    return real ? real(handle) : ACL_ERROR_INTERNAL_ERROR;
}

int main(void)
{
    if (dlsym(RTLD_DEFAULT, "aclrtFree") != (void *)aclrtFree ||
        dlsym(RTLD_DEFAULT, "aclrtMalloc") != (void *)aclrtMalloc ||
        dlsym(RTLD_DEFAULT, "aclrtFreePhysical") != (void *)aclrtFreePhysical) {
        printf("interpose: the application's definitions are not the global ones\n");
        return 1;
    }
    if (dlsym(RTLD_NEXT, "aclrtFree") == NULL || dlsym(RTLD_NEXT, "aclrtFree") == (void *)aclrtFree) {
        printf("interpose: RTLD_NEXT does not find the library's aclrtFree\n");
        return 1;
    }

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    void *blocks[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; ++i) CHECK(aclrtMalloc(&blocks[i], 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    const unsigned char in[4] = {1, 2, 3, 4};
    unsigned char out[4] = {0};
    CHECK(aclrtMemcpy(blocks[2], sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(out, sizeof out, blocks[2], sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(aclrtFree(blocks[0]));
    CHECK(aclrtFree(blocks[1]));
    /* A second free of the same block reaches the library and is refused there. */
    if (aclrtFree(blocks[1]) == ACL_SUCCESS) {
        printf("interpose: double aclrtFree succeeded\n");
        return 1;
    }

    aclrtPhysicalMemProp prop = consumer_hbm_prop(0);
    aclrtDrvMemHandle handles[2] = {NULL, NULL};
    for (int i = 0; i < 2; ++i) CHECK(aclrtMallocPhysical(&handles[i], 2u << 20, &prop, 0));
    CHECK(aclrtFreePhysical(handles[0]));

    /* blocks[2] and handles[1] are left for the teardown. */
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());

    printf("interpose: malloc=%d free=%d freePhysical=%d\n", g_malloc_calls, g_free_calls,
           g_free_physical_calls);
    if (memcmp(in, out, sizeof in) != 0) {
        printf("interpose: data did not round-trip\n");
        return 1;
    }
    if (g_malloc_calls != 3 || g_free_calls != 3 || g_free_physical_calls != 1) {
        printf("interpose: the library called its own exported names (expected 3, 3, 1)\n");
        return 1;
    }
    printf("interpose: ok\n");
    return 0;
}
