/*
 * 09_oversubscription - more managed memory than the device has.
 *
 * The example gives itself a small device: ACLVMM_DEVICE_MEMORY=64M (set before aclInit, unless
 * the environment already sets it). It then
 *   allocates 256 MiB of managed memory -> the CPU fills a pattern -> prefetches the range to
 *   device 0 in 32 MiB pieces, each followed by aclrtSynchronizeStream
 * Only 64 MiB fit on the device: once it is full, every page that arrives evicts the least
 * recently used managed page of device 0 back to the host. The bytes never change: the CPU reads
 * every byte back, and aclrtMemcpy (device to host, on device 0) copies every byte out again.
 */
#include "example_util.h" /* CHECK, expect, stats_now, pattern_mismatches, select_a2_product, ... */

#define MANAGED_SIZE (256 * MIB)
#define PIECE (32 * MIB)

static void hbm_info(size_t *used, size_t *total)
{
    size_t freeBytes = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeBytes, total));
    *used = *total - freeBytes;
}

int main(void)
{
    /* A 64 MiB device, unless the caller chose a size (an empty value counts as unset). */
    const char *configured = getenv("ACLVMM_DEVICE_MEMORY");
    if (configured == NULL || configured[0] == '\0') {
        setenv("ACLVMM_DEVICE_MEMORY", "64M", 1);
    }

    select_a2_product();
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    size_t used0 = 0, total = 0;
    hbm_info(&used0, &total);
    printf("device 0 has %zu MiB of memory (ACLVMM_DEVICE_MEMORY=%s), %zu MiB in use\n", total / MIB,
           getenv("ACLVMM_DEVICE_MEMORY"), used0 / MIB);

    void *ptr = NULL;
    CHECK(aclrtMemAllocManaged(&ptr, MANAGED_SIZE, ACL_RT_MEM_ATTACH_GLOBAL));
    uint8_t *data = ptr;
    expect(1, "allocated %zu MiB of managed memory for a device of %zu MiB", MANAGED_SIZE / MIB, total / MIB);
    const int tracking = fault_tracking();
    const int oversubscribed = total - used0 < MANAGED_SIZE;

    for (size_t i = 0; i < MANAGED_SIZE; ++i) {
        data[i] = pattern_byte(i);
    }
    expect(1, "the CPU filled %zu MiB with a pattern", MANAGED_SIZE / MIB);

    /* Prefetch to device 0, piece by piece; each piece is finished before the next is queued. */
    const uint64_t evictions0 = stats_now().evictions;
    const uint64_t hostFaults0 = stats_now().host_faults;
    const aclrtMemManagedLocation device0 = location(ACL_MEM_LOCATIONTYPE_DEVICE, 0);
    for (size_t off = 0; off < MANAGED_SIZE; off += PIECE) {
        CHECK(aclrtMemManagedPrefetchAsync(data + off, PIECE, device0, 0, stream));
        CHECK(aclrtSynchronizeStream(stream));
        size_t used = 0;
        hbm_info(&used, &total);
        printf("prefetched [%3zu, %3zu) MiB: device 0 holds %2zu MiB, evictions so far %llu\n", off / MIB,
               (off + PIECE) / MIB, (used - used0) / MIB,
               (unsigned long long)(stats_now().evictions - evictions0));
    }
    const uint64_t evictions = stats_now().evictions - evictions0;
    size_t usedAfter = 0;
    hbm_info(&usedAfter, &total);
    printf("evictions: %llu pages of 2 MiB (%llu MiB)\n", (unsigned long long)evictions,
           (unsigned long long)(evictions * 2));

    if (!tracking) {
        printf("fault tracking is off on this machine (no userfaultfd with minor faults on shared memory): "
               "managed memory stays on the host, nothing is prefetched or evicted; only the bytes are "
               "checked\n");
    } else if (!oversubscribed) {
        printf("ACLVMM_DEVICE_MEMORY=%s leaves room for all %zu MiB: nothing had to be evicted\n",
               getenv("ACLVMM_DEVICE_MEMORY"), MANAGED_SIZE / MIB);
    } else {
        expect(evictions > 0, "the device was oversubscribed: %llu pages were evicted to the host",
               (unsigned long long)evictions);
        expect(total - usedAfter < 2 * MIB, "device 0 is full (%zu of %zu MiB): the last pieces stayed there",
               usedAfter / MIB, total / MIB);
    }

    /* The CPU reads everything: evicted pages are on the host already, the pages still on the
       device fault back one by one. */
    size_t bad = pattern_mismatches(data, 0, MANAGED_SIZE, 0);
    expect(bad == 0, "the CPU reads the pattern in all %zu MiB (%llu host faults brought pages back)",
           MANAGED_SIZE / MIB, (unsigned long long)(stats_now().host_faults - hostFaults0));

    /* aclrtMemcpy runs on device 0: it migrates the pages there again, evicting as it goes. */
    uint8_t *out = xmalloc(PIECE);
    const uint64_t evictionsBeforeCopy = stats_now().evictions;
    bad = 0;
    for (size_t off = 0; off < MANAGED_SIZE; off += PIECE) {
        memset(out, 0, PIECE);
        CHECK(aclrtMemcpy(out, PIECE, data + off, PIECE, ACL_MEMCPY_DEVICE_TO_HOST));
        bad += pattern_mismatches(out, off, PIECE, 0);
    }
    expect(bad == 0, "aclrtMemcpy device to host returns the pattern in all %zu MiB (%llu more evictions)",
           MANAGED_SIZE / MIB, (unsigned long long)(stats_now().evictions - evictionsBeforeCopy));
    free(out);

    CHECK(aclrtFree(data));
    size_t usedEnd = 0;
    hbm_info(&usedEnd, &total);
    expect(usedEnd == used0, "aclrtFree gave device 0 its memory back (%zu MiB in use)", usedEnd / MIB);

    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
