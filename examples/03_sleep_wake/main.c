/*
 * 03_sleep_wake - the sleep mode of vLLM-Ascend (CaMemAllocator) and SGLang's memory saver.
 *
 * Model weights live in device memory mapped into a reserved virtual range. To "sleep", the
 * engine copies them to a pinned host buffer, unmaps and frees the physical memory (the device
 * gets it back) but keeps the virtual range reserved, so every pointer into the weights stays
 * valid. To "wake", it allocates a fresh physical handle, maps it at the SAME address, and
 * restores the bytes from the host backup. Fresh memory never shows the old bytes: it reads as
 * zeros until restored.
 */
#include "example_util.h" /* CHECK, expect, hbm_free, count_mismatches, device_prop, ... */

int main(void)
{
    const size_t weightsSize = 8 * MIB;   /* the "model weights" */
    const size_t reserveSize = 16 * MIB;  /* virtual range kept across sleep/wake */

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    aclrtPhysicalMemProp prop = device_prop(); /* pinned HBM with 2 MiB pages on device 0 */

    size_t gran = 0;
    CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &gran));
    expect(gran == 2 * MIB && weightsSize % gran == 0, "weights size %zu is a multiple of the granularity %zu",
           weightsSize, gran);

    /* Host-side reference copy of the weights and a scratch buffer (plain process memory). */
    uint8_t *weights = xmalloc(weightsSize);
    uint8_t *scratch = xmalloc(weightsSize);
    for (size_t i = 0; i < weightsSize; ++i) {
        weights[i] = (uint8_t)((i * 2654435761u) >> 13);
    }

    /* --- Load: reserve, allocate, map, copy the weights in. --- */
    const size_t freeAtStart = hbm_free();
    void *va = NULL;
    CHECK(aclrtReserveMemAddress(&va, reserveSize, 0, NULL, 0));
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, weightsSize, &prop, 0));
    CHECK(aclrtMapMem(va, weightsSize, 0, handle, 0));
    CHECK(aclrtMemcpy(va, weightsSize, weights, weightsSize, ACL_MEMCPY_HOST_TO_DEVICE));
    expect(freeAtStart - hbm_free() == weightsSize, "loaded %zu bytes of weights into mapped device memory",
           weightsSize);

    /* --- Sleep: back up to pinned host memory, then give the physical memory back. --- */
    void *backupPtr = NULL;
    CHECK(aclrtMallocHost(&backupPtr, weightsSize));
    uint8_t *backup = backupPtr;
    CHECK(aclrtMemcpy(backup, weightsSize, va, weightsSize, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_mismatches(backup, weights, weightsSize) == 0,
           "sleep: %zu bytes backed up to an aclrtMallocHost buffer", weightsSize);

    const size_t freeAwake = hbm_free();
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtFreePhysical(handle));
    handle = NULL;
    const size_t freeAsleep = hbm_free();
    expect(freeAsleep - freeAwake == weightsSize, "sleep: unmapped and freed, free HBM up by %zu bytes",
           freeAsleep - freeAwake);

    aclError rc = aclrtMemcpy(scratch, weightsSize, va, weightsSize, ACL_MEMCPY_DEVICE_TO_HOST);
    expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR,
           "sleep: the range stays reserved but unmapped (a copy from it returns %d)", (int)rc);

    /* --- Wake: a fresh handle mapped at the same virtual address. --- */
    aclrtDrvMemHandle fresh = NULL;
    CHECK(aclrtMallocPhysical(&fresh, weightsSize, &prop, 0));
    CHECK(aclrtMapMem(va, weightsSize, 0, fresh, 0));
    const size_t freeWoken = hbm_free();
    expect(freeAsleep - freeWoken == weightsSize,
           "wake: new handle mapped at the same address, free HBM down by %zu bytes", freeAsleep - freeWoken);

    memset(scratch, 0xFF, weightsSize);
    CHECK(aclrtMemcpy(scratch, weightsSize, va, weightsSize, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_nonzero(scratch, weightsSize) == 0, "wake: fresh memory reads as zeros before the restore (no stale weights)");

    CHECK(aclrtMemcpy(va, weightsSize, backup, weightsSize, ACL_MEMCPY_HOST_TO_DEVICE));
    memset(scratch, 0, weightsSize);
    CHECK(aclrtMemcpy(scratch, weightsSize, va, weightsSize, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_mismatches(scratch, weights, weightsSize) == 0,
           "wake: %zu bytes restored from the host backup match the original weights", weightsSize);

    /* --- Clean up. --- */
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtFreePhysical(fresh));
    CHECK(aclrtReleaseMemAddress(va));
    CHECK(aclrtFreeHost(backup));
    expect(hbm_free() == freeAtStart, "cleaned up, free HBM back to its starting value");

    free(weights);
    free(scratch);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
