/*
 * 01_basic_lifecycle - the whole life of one piece of virtual device memory.
 *
 *   aclInit -> aclrtSetDevice -> granularity -> aclrtMallocPhysical (4 MiB)
 *   -> aclrtReserveMemAddress (8 MiB) -> aclrtMapMem (4 MiB at the base)
 *   -> aclrtMemcpy H2D / aclrtMemset / aclrtMemcpy D2H -> aclrtPointerGetAttributes
 *   -> aclrtUnmapMem -> aclrtFreePhysical -> aclrtReleaseMemAddress -> aclFinalize
 *
 * Device memory is not CPU-accessible: every byte moves through aclrtMemcpy/aclrtMemset.
 * Two deliberate misuses show how errors are reported (code + aclGetRecentErrMsg()).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>

#define MIB ((size_t)1 << 20)

/* Run an ACL call; on failure print the call, its code and the library's message, exit 1. */
#define CHECK(call)                                                                        \
    do {                                                                                   \
        aclError check_rc_ = (call);                                                       \
        if (check_rc_ != ACL_SUCCESS) {                                                    \
            const char *check_msg_ = aclGetRecentErrMsg();                                 \
            fprintf(stderr, "[FAIL] %s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #call, \
                    (int)check_rc_, check_msg_ ? check_msg_ : "(no message)");            \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* Print "[OK] <what>" when cond holds, otherwise "[FAIL] <what>" and exit 1. */
static void expect(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(cond ? "[OK] " : "[FAIL] ", cond ? stdout : stderr);
    vfprintf(cond ? stdout : stderr, fmt, ap);
    fputc('\n', cond ? stdout : stderr);
    va_end(ap);
    fflush(stdout);
    if (!cond) {
        exit(1);
    }
}

/* Number of differing bytes; the first difference is printed to stderr. */
static size_t count_mismatches(const uint8_t *got, const uint8_t *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (got[i] != want[i] && bad++ == 0) {
            fprintf(stderr, "first mismatch at offset %zu: got 0x%02x, expected 0x%02x\n", i, got[i],
                    want[i]);
        }
    }
    return bad;
}

static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)((i * 131u + (i >> 12) * 7u + 1u) & 0xFFu);
}

int main(void)
{
    const size_t physSize = 4 * MIB;
    const size_t reserveSize = 8 * MIB;
    const size_t setOffset = 1 * MIB + 4096; /* aclrtMemset a sub-range of the mapping */
    const size_t setCount = 512 * 1024;
    const int setValue = 0x5A;

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    /* Physical memory description: pinned HBM with 2 MiB pages on device 0. */
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.id = 0;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.reserve = 0;

    size_t gran = 0;
    CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &gran));
    expect(gran == 2 * MIB, "recommended granularity is %zu bytes (2 MiB)", gran);

    size_t freeBefore = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeBefore, &total));
    expect(total > 0 && freeBefore <= total, "aclrtGetMemInfo(ACL_HBM_MEM) reports free <= total on device 0");

    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, physSize, &prop, 0));
    expect(handle != NULL, "aclrtMallocPhysical returned a handle for %zu bytes", physSize);

    size_t freeAfterMalloc = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeAfterMalloc, &total));
    expect(freeBefore - freeAfterMalloc == physSize, "free HBM dropped by %zu bytes after aclrtMallocPhysical",
           freeBefore - freeAfterMalloc);

    void *va = NULL;
    CHECK(aclrtReserveMemAddress(&va, reserveSize, 0, NULL, 0));
    expect(va != NULL && ((uintptr_t)va % gran) == 0, "reserved %zu bytes, base aligned to the granularity",
           reserveSize);

    size_t freeAfterReserve = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeAfterReserve, &total));
    expect(freeAfterReserve == freeAfterMalloc, "reserving virtual addresses costs no HBM");

    CHECK(aclrtMapMem(va, physSize, 0, handle, 0));
    expect(1, "mapped %zu bytes of the handle at the reservation base", physSize);

    aclrtPtrAttributes attr;
    memset(&attr, 0, sizeof(attr));
    CHECK(aclrtPointerGetAttributes(va, &attr));
    expect(attr.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && attr.location.id == 0 &&
               attr.pageSize == 2 * MIB,
           "pointer attributes: location DEVICE (type %d), id %u, pageSize %u",
           (int)attr.location.type, attr.location.id, attr.pageSize);

    /* Fresh physical memory reads as zeros. */
    uint8_t *host = malloc(physSize);
    uint8_t *back = malloc(physSize);
    if (host == NULL || back == NULL) {
        fprintf(stderr, "[FAIL] out of host memory\n");
        return 1;
    }
    memset(back, 0xFF, physSize);
    CHECK(aclrtMemcpy(back, physSize, va, physSize, ACL_MEMCPY_DEVICE_TO_HOST));
    size_t nonZero = 0;
    for (size_t i = 0; i < physSize; ++i) {
        nonZero += back[i] != 0;
    }
    expect(nonZero == 0, "fresh physical memory reads as %zu zero bytes", physSize);

    /* Host pattern in, a memset over part of it, everything back out. */
    for (size_t i = 0; i < physSize; ++i) {
        host[i] = pattern_byte(i);
    }
    CHECK(aclrtMemcpy(va, physSize, host, physSize, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemset((uint8_t *)va + setOffset, physSize - setOffset, setValue, setCount));
    memset(back, 0, physSize);
    CHECK(aclrtMemcpy(back, physSize, va, physSize, ACL_MEMCPY_DEVICE_TO_HOST));

    /* What the device should now hold: the pattern with the memset range overwritten. */
    for (size_t i = setOffset; i < setOffset + setCount; ++i) {
        host[i] = (uint8_t)setValue;
    }
    expect(count_mismatches(back, host, physSize) == 0,
           "round trip of %zu bytes matches (pattern + memset of %zu bytes at offset %zu)", physSize,
           setCount, setOffset);

    /* Misuse 1: releasing the reservation while a mapping is still inside it. */
    aclError rc = aclrtReleaseMemAddress(va);
    const char *msg = aclGetRecentErrMsg();
    expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR,
           "release while mapped is refused with %d (expected 507899): %s", (int)rc,
           msg ? msg : "(no message)");

    /* The refused call changed nothing: the data is still there. */
    memset(back, 0, physSize);
    CHECK(aclrtMemcpy(back, physSize, va, physSize, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_mismatches(back, host, physSize) == 0, "mapping still intact after the refused release");

    /* Proper teardown: unmap (at the mapping's start), free, release. */
    CHECK(aclrtUnmapMem(va));
    expect(1, "unmapped the mapping at its start address (the reservation base)");
    CHECK(aclrtFreePhysical(handle));
    handle = NULL;

    size_t freeAfterFree = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeAfterFree, &total));
    expect(freeAfterFree == freeBefore, "free HBM back to its starting value after aclrtFreePhysical");

    /* Misuse 2: releasing with an interior pointer instead of the reservation base. */
    void *interior = (uint8_t *)va + gran;
    rc = aclrtReleaseMemAddress(interior);
    msg = aclGetRecentErrMsg();
    expect(rc == ACL_ERROR_RT_PARAM_INVALID,
           "release of an interior pointer (base + %zu) is refused with %d (expected 107000): %s", gran,
           (int)rc, msg ? msg : "(no message)");

    CHECK(aclrtReleaseMemAddress(va));
    expect(1, "released the reservation at its base");

    free(host);
    free(back);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
