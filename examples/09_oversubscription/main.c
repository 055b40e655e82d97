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
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <aclvmm/aclvmm.h>

#define MIB ((size_t)1 << 20)
#define MANAGED_SIZE (256 * MIB)
#define PIECE (32 * MIB)

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

/* One unsigned number inside the "managed" object of aclvmmStatsJson(); exits when missing. */
static uint64_t managed_value(const char *key)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\":", key);
    const char *json = aclvmmStatsJson();
    const char *managed = json ? strstr(json, "\"managed\":") : NULL;
    const char *p = managed ? strstr(managed, quoted) : NULL;
    if (p == NULL) {
        fprintf(stderr, "[FAIL] statistics key managed.%s not found in %s\n", key, json ? json : "(null)");
        exit(1);
    }
    return strtoull(p + strlen(quoted), NULL, 10);
}

static int fault_tracking(void)
{
    const char *json = aclvmmStatsJson();
    return json != NULL && strstr(json, "\"fault_tracking\": true") != NULL;
}

static void hbm_info(size_t *used, size_t *total)
{
    size_t freeBytes = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeBytes, total));
    *used = *total - freeBytes;
}

static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)((i * 131u + (i >> 12) * 7u + 1u) & 0xFFu);
}

/* Differences between data[0..n) and the pattern starting at byte `first`; prints the first. */
static size_t count_mismatches(const uint8_t *data, size_t first, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        uint8_t want = pattern_byte(first + i);
        if (data[i] != want && bad++ == 0) {
            fprintf(stderr, "first mismatch at offset %zu: got 0x%02x, expected 0x%02x\n", first + i, data[i],
                    want);
        }
    }
    return bad;
}

/* Managed memory exists on A2 products only (ACLVMM_SOC Ascend910B1, B2, B2C, B3, B4, B4-1). The
   default SoC is one; another SoC chosen in the environment is replaced for this run. */
static void select_a2_product(void)
{
    const char *soc = getenv("ACLVMM_SOC");
    if (soc == NULL || soc[0] == '\0' || (strncmp(soc, "Ascend910B", 10) == 0 && soc[10] != '\0')) {
        return;
    }
    printf("ACLVMM_SOC=%s has no managed memory: this run uses Ascend910B1\n", soc);
    setenv("ACLVMM_SOC", "Ascend910B1", 1);
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
    const uint64_t evictions0 = managed_value("evictions");
    const uint64_t hostFaults0 = managed_value("host_faults");
    aclrtMemManagedLocation device0;
    memset(&device0, 0, sizeof(device0));
    device0.type = ACL_MEM_LOCATIONTYPE_DEVICE;
    device0.id = 0;
    for (size_t off = 0; off < MANAGED_SIZE; off += PIECE) {
        CHECK(aclrtMemManagedPrefetchAsync(data + off, PIECE, device0, 0, stream));
        CHECK(aclrtSynchronizeStream(stream));
        size_t used = 0;
        hbm_info(&used, &total);
        printf("prefetched [%3zu, %3zu) MiB: device 0 holds %2zu MiB, evictions so far %llu\n", off / MIB,
               (off + PIECE) / MIB, (used - used0) / MIB,
               (unsigned long long)(managed_value("evictions") - evictions0));
    }
    const uint64_t evictions = managed_value("evictions") - evictions0;
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
    size_t bad = count_mismatches(data, 0, MANAGED_SIZE);
    expect(bad == 0, "the CPU reads the pattern in all %zu MiB (%llu host faults brought pages back)",
           MANAGED_SIZE / MIB, (unsigned long long)(managed_value("host_faults") - hostFaults0));

    /* aclrtMemcpy runs on device 0: it migrates the pages there again, evicting as it goes. */
    uint8_t *out = malloc(PIECE);
    if (out == NULL) {
        fprintf(stderr, "[FAIL] out of host memory\n");
        return 1;
    }
    const uint64_t evictionsBeforeCopy = managed_value("evictions");
    bad = 0;
    for (size_t off = 0; off < MANAGED_SIZE; off += PIECE) {
        memset(out, 0, PIECE);
        CHECK(aclrtMemcpy(out, PIECE, data + off, PIECE, ACL_MEMCPY_DEVICE_TO_HOST));
        bad += count_mismatches(out, off, PIECE);
    }
    expect(bad == 0, "aclrtMemcpy device to host returns the pattern in all %zu MiB (%llu more evictions)",
           MANAGED_SIZE / MIB, (unsigned long long)(managed_value("evictions") - evictionsBeforeCopy));
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
