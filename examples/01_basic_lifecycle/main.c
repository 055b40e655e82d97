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
#include "example_util.h" /* CHECK, expect, pattern_byte, count_mismatches, device_prop, ... */

int main(void)
{
    const size_t physSize = 4 * MIB;
    const size_t reserveSize = 8 * MIB;
    const size_t setOffset = 1 * MIB + 4096; /* aclrtMemset a sub-range of the mapping */
    const size_t setCount = 512 * 1024;
    const int setValue = 0x5A;

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    /* Physical memory description: pinned HBM with 2 MiB pages on device 0 (handleType NONE,
       allocationType PINNED, memAttr ACL_HBM_MEM_HUGE, location DEVICE 0). */
    aclrtPhysicalMemProp prop = device_prop();

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
    uint8_t *host = xmalloc(physSize);
    uint8_t *back = xmalloc(physSize);
    memset(back, 0xFF, physSize);
    CHECK(aclrtMemcpy(back, physSize, va, physSize, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_nonzero(back, physSize) == 0, "fresh physical memory reads as %zu zero bytes", physSize);

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
    expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR,
           "release while mapped is refused with %d (expected 507899): %s", (int)rc, recent_msg());

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
    expect(rc == ACL_ERROR_RT_PARAM_INVALID,
           "release of an interior pointer (base + %zu) is refused with %d (expected 107000): %s", gran,
           (int)rc, recent_msg());

    CHECK(aclrtReleaseMemAddress(va));
    expect(1, "released the reservation at its base");

    free(host);
    free(back);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
