/*
 * 07_managed_prefetch - the same workload on managed memory, on demand and with prefetch.
 *
 *   aclrtMemAllocManaged (64 MiB) -> CPU writes a pattern -> an emulated kernel on device 0 adds
 *   1 to every byte -> the CPU reads the result -> aclrtFree
 *
 * (a) on demand: the kernel's first touch of each 2 MiB page migrates it to device 0 (a device
 *     fault) and revokes the CPU's access; the CPU's first read of each page faults and migrates
 *     it back (a host fault).
 * (b) with prefetch: aclrtMemManagedPrefetchAsync moves the range to device 0 before the kernel
 *     and back to the host after it, on the same stream and in stream order. The same bytes move,
 *     but ahead of use: no device fault, no host fault.
 *
 * The statistics (aclvmmStatsJson, "managed" object) are read before and after each run and the
 * difference is printed. On a machine without CPU fault tracking managed memory stays on the
 * host, nothing migrates, and only the bytes are checked.
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
#define MANAGED_SIZE (64 * MIB)
#define PAGE_SIZE_2M (2 * MIB)
#define KERNEL_CHUNK (1 * MIB)

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

/* ---- statistics --------------------------------------------------------------------------- */

/* The counters of the "managed" object of aclvmmStatsJson(). */
typedef struct {
    uint64_t host_faults;
    uint64_t device_faults;
    uint64_t bytes_to_device;
    uint64_t bytes_to_host;
    uint64_t evictions;
    uint64_t prefetch_bytes;
} managed_stats;

/* One unsigned number inside the "managed" object of `json`; exits when it is missing. */
static uint64_t managed_value(const char *json, const char *key)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\":", key);
    const char *managed = json ? strstr(json, "\"managed\":") : NULL;
    const char *p = managed ? strstr(managed, quoted) : NULL;
    if (p == NULL) {
        fprintf(stderr, "[FAIL] statistics key managed.%s not found in %s\n", key, json ? json : "(null)");
        exit(1);
    }
    return strtoull(p + strlen(quoted), NULL, 10);
}

static managed_stats stats_now(void)
{
    const char *json = aclvmmStatsJson();
    managed_stats s;
    s.host_faults = managed_value(json, "host_faults");
    s.device_faults = managed_value(json, "device_faults");
    s.bytes_to_device = managed_value(json, "bytes_to_device");
    s.bytes_to_host = managed_value(json, "bytes_to_host");
    s.evictions = managed_value(json, "evictions");
    s.prefetch_bytes = managed_value(json, "prefetch_bytes");
    return s;
}

static managed_stats stats_delta(const managed_stats *before, const managed_stats *after)
{
    managed_stats d;
    d.host_faults = after->host_faults - before->host_faults;
    d.device_faults = after->device_faults - before->device_faults;
    d.bytes_to_device = after->bytes_to_device - before->bytes_to_device;
    d.bytes_to_host = after->bytes_to_host - before->bytes_to_host;
    d.evictions = after->evictions - before->evictions;
    d.prefetch_bytes = after->prefetch_bytes - before->prefetch_bytes;
    return d;
}

/* "fault_tracking": true once managed memory is in use and the machine can track CPU faults. */
static int fault_tracking(void)
{
    const char *json = aclvmmStatsJson();
    return json != NULL && strstr(json, "\"fault_tracking\": true") != NULL;
}

/* Bytes migrated because something faulted: every migrated byte minus the prefetched ones. */
static uint64_t faulted_bytes(const managed_stats *d)
{
    return d->bytes_to_device + d->bytes_to_host - d->prefetch_bytes;
}

static void print_stats(const char *label, const managed_stats *d)
{
    printf("[stats] %-11s host_faults %llu, device_faults %llu, bytes_to_device %llu, "
           "bytes_to_host %llu, prefetch_bytes %llu -> faulted migrations %llu bytes\n",
           label, (unsigned long long)d->host_faults, (unsigned long long)d->device_faults,
           (unsigned long long)d->bytes_to_device, (unsigned long long)d->bytes_to_host,
           (unsigned long long)d->prefetch_bytes, (unsigned long long)faulted_bytes(d));
    fflush(stdout);
}

/* ---- the workload -------------------------------------------------------------------------- */

static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)((i * 131u + (i >> 12) * 7u + 1u) & 0xFFu);
}

/* The emulated kernel: adds 1 to every byte of [dev, dev+n), one chunk at a time. */
struct add_one_args {
    uint8_t *dev;
    size_t n;
    uint8_t *chunk; /* the kernel's own buffer, KERNEL_CHUNK bytes */
};

static void add_one_kernel(aclvmmKernelContext *ctx, void *p)
{
    struct add_one_args *a = p;
    for (size_t off = 0; off < a->n; off += KERNEL_CHUNK) {
        size_t len = a->n - off < KERNEL_CHUNK ? a->n - off : KERNEL_CHUNK;
        if (aclvmmKernelRead(ctx, a->chunk, a->dev + off, len) != ACL_SUCCESS) {
            return; /* the kernel is marked failed; aclrtSynchronizeStream reports it */
        }
        for (size_t i = 0; i < len; ++i) {
            a->chunk[i] = (uint8_t)(a->chunk[i] + 1u);
        }
        if (aclvmmKernelWrite(ctx, a->dev + off, a->chunk, len) != ACL_SUCCESS) {
            return;
        }
    }
}

static aclrtMemManagedLocation location(aclrtMemManagedLocationType type, int32_t id)
{
    aclrtMemManagedLocation loc;
    memset(&loc, 0, sizeof(loc));
    loc.type = type;
    loc.id = id;
    return loc;
}

/*
 * One run on a fresh 64 MiB managed allocation; returns the statistics difference.
 * With `prefetch`, the range is prefetched to device 0 before the kernel and back to the host
 * after it, all on `stream`: prefetches run in stream order like any other task.
 */
static managed_stats run_workload(aclrtStream stream, int prefetch, uint8_t *kernelChunk, int *lastPrefetchType)
{
    void *ptr = NULL;
    CHECK(aclrtMemAllocManaged(&ptr, MANAGED_SIZE, ACL_RT_MEM_ATTACH_GLOBAL));
    uint8_t *data = ptr;
    managed_stats before = stats_now();

    /* The CPU initialises: a fresh managed allocation lives on the host. */
    for (size_t i = 0; i < MANAGED_SIZE; ++i) {
        data[i] = pattern_byte(i);
    }

    struct add_one_args args = {data, MANAGED_SIZE, kernelChunk};
    if (prefetch) {
        CHECK(aclrtMemManagedPrefetchAsync(data, MANAGED_SIZE, location(ACL_MEM_LOCATIONTYPE_DEVICE, 0), 0,
                                           stream));
    }
    CHECK(aclvmmLaunchKernel(stream, add_one_kernel, &args));
    if (prefetch) {
        CHECK(aclrtMemManagedPrefetchAsync(data, MANAGED_SIZE, location(ACL_MEM_LOCATIONTYPE_HOST, 0), 0,
                                           stream));
    }
    CHECK(aclrtSynchronizeStream(stream));

    /* The CPU reads the result. */
    size_t bad = 0;
    for (size_t i = 0; i < MANAGED_SIZE; ++i) {
        uint8_t want = (uint8_t)(pattern_byte(i) + 1u);
        if (data[i] != want && bad++ == 0) {
            fprintf(stderr, "first mismatch at offset %zu: got 0x%02x, expected 0x%02x\n", i, data[i], want);
        }
    }
    managed_stats after = stats_now();

    expect(bad == 0, "%s: the CPU reads pattern + 1 in all %zu bytes", prefetch ? "(b) prefetch" : "(a) on demand",
           (size_t)MANAGED_SIZE);

    int32_t type = -1;
    CHECK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, data, MANAGED_SIZE, &type,
                                 sizeof(type)));
    *lastPrefetchType = type;

    CHECK(aclrtFree(data));
    return stats_delta(&before, &after);
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
    select_a2_product(); /* before aclInit: the SoC is read when the runtime starts */
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    uint8_t *kernelChunk = malloc(KERNEL_CHUNK);
    if (kernelChunk == NULL) {
        fprintf(stderr, "[FAIL] out of host memory\n");
        return 1;
    }

    const size_t pages = MANAGED_SIZE / PAGE_SIZE_2M;
    int lastType = -1;
    managed_stats onDemand = run_workload(stream, 0, kernelChunk, &lastType);
    expect(lastType == ACL_MEM_LOCATIONTYPE_INVALID,
           "(a) on demand: LAST_PREFETCH_LOCATION_TYPE is %d (INVALID: never prefetched)", lastType);
    print_stats("on demand:", &onDemand);
    const int tracking = fault_tracking(); /* known once managed memory has been allocated */
    managed_stats prefetched = run_workload(stream, 1, kernelChunk, &lastType);
    expect(lastType == ACL_MEM_LOCATIONTYPE_HOST,
           "(b) prefetch: LAST_PREFETCH_LOCATION_TYPE is %d (HOST, the last prefetch)", lastType);
    print_stats("prefetch:", &prefetched);

    if (!tracking) {
        printf("fault tracking is off on this machine (no userfaultfd with minor faults on shared memory): "
               "managed memory stays on the host and devices reach it in place, so nothing migrates and "
               "there is nothing to compare; the bytes were checked above\n");
        expect(onDemand.host_faults == 0 && prefetched.host_faults == 0 && faulted_bytes(&onDemand) == 0,
               "no faults and no migrations without fault tracking");
    } else {
        expect(onDemand.host_faults == pages && onDemand.device_faults == pages,
               "(a) on demand: one device fault and one host fault per 2 MiB page (%zu pages)", pages);
        expect(prefetched.prefetch_bytes == 2 * (uint64_t)MANAGED_SIZE,
               "(b) prefetch: %llu bytes prefetched (64 MiB to device 0, 64 MiB back to the host)",
               (unsigned long long)prefetched.prefetch_bytes);
        expect(prefetched.host_faults < onDemand.host_faults,
               "prefetch: fewer host faults (%llu) than on demand (%llu)",
               (unsigned long long)prefetched.host_faults, (unsigned long long)onDemand.host_faults);
        expect(faulted_bytes(&prefetched) < faulted_bytes(&onDemand),
               "prefetch: fewer bytes migrated by faults (%llu) than on demand (%llu)",
               (unsigned long long)faulted_bytes(&prefetched), (unsigned long long)faulted_bytes(&onDemand));
    }

    free(kernelChunk);
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
