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
#include "example_util.h" /* CHECK, expect, stats_now, add_one_kernel, select_a2_product, ... */

#define MANAGED_SIZE (64 * MIB)
#define PAGE_SIZE_2M (2 * MIB)

/* ---- statistics --------------------------------------------------------------------------- */

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

/* The kernel is add_one_kernel (example_util.h): it adds 1 to every byte of the range. */

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

    struct kernel_args args = {data, MANAGED_SIZE, kernelChunk, 0};
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
    size_t bad = pattern_mismatches(data, 0, MANAGED_SIZE, 1);
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

int main(void)
{
    select_a2_product(); /* before aclInit: the SoC is read when the runtime starts */
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    uint8_t *kernelChunk = xmalloc(KERNEL_CHUNK);

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
