/*
 * 08_managed_advice - what aclrtMemManagedAdvise changes, measured with the statistics.
 *
 * Every scenario runs the same steps on a fresh 16 MiB managed allocation (8 pages of 2 MiB):
 *   [advice] -> the CPU writes a pattern -> an emulated kernel on device 0 reads the range (or
 *   adds 1 to every byte) -> the CPU reads the range -> aclrtFree
 * and prints the difference of the "managed" statistics (aclvmmStatsJson) over those steps.
 *
 *   no advice            the device pass migrates every page to device 0, the CPU read faults
 *                        every page back
 *   READ_MOSTLY          the device gets read copies; the pages stay on the host, the CPU read
 *                        does not fault, and a second device read costs nothing
 *   PREFERRED_LOCATION   device 0: pages migrate there once and stay; the CPU reads them in place
 *                        host: the device reaches the pages in place, nothing migrates
 *   ACCESSED_BY          device 0: the device reaches the pages in place, nothing migrates
 *                        host: pages migrate to device 0, the CPU keeps its mapping
 *
 * Then aclrtMemManagedGetAttr reads the advice back (READ_MOSTLY, PREFERRED_LOCATION and its
 * _TYPE/_ID, ACCESSED_BY with four slots), for a whole range and for a range whose pages differ.
 */
#include "example_util.h" /* CHECK, expect, stats_now, add_one_kernel, select_a2_product, ... */

#define RANGE_SIZE (16 * MIB)
#define PAGE_SIZE_2M (2 * MIB)
#define PAGES (RANGE_SIZE / PAGE_SIZE_2M)

/* ---- kernels -------------------------------------------------------------------------------- */

/* The writing pass is add_one_kernel (example_util.h); struct kernel_args has room for a sum. */

/* Reads the range only: a sum of its bytes. */
static void checksum_kernel(aclvmmKernelContext *ctx, void *p)
{
    struct kernel_args *a = p;
    a->sum = 0;
    for (size_t off = 0; off < a->n; off += KERNEL_CHUNK) {
        size_t len = a->n - off < KERNEL_CHUNK ? a->n - off : KERNEL_CHUNK;
        if (aclvmmKernelRead(ctx, a->chunk, a->dev + off, len) != ACL_SUCCESS) {
            return; /* the kernel is marked failed; aclrtSynchronizeStream reports it */
        }
        for (size_t i = 0; i < len; ++i) {
            a->sum += a->chunk[i];
        }
    }
}

/* ---- scenarios -------------------------------------------------------------------------------- */

#define NO_ADVICE (-1)

struct scenario {
    const char *name;
    int advice; /* an aclrtMemManagedAdviseType, or NO_ADVICE */
    aclrtMemManagedLocationType whereType;
    int writes; /* 0: the device only reads (checksum_kernel), 1: add_one_kernel */
};

struct outcome {
    managed_stats pass[2]; /* device pass + CPU read; the second pass only for read scenarios */
    size_t hbmHeld;        /* HBM still charged on device 0 after the (first) CPU read */
};

static void print_stats(const char *name, int pass, const managed_stats *d, size_t hbmHeld)
{
    printf("[stats] %-27s %s host_faults %llu, device_faults %llu, bytes_to_device %llu, bytes_to_host %llu",
           name, pass == 0 ? "pass 1:" : "pass 2:", (unsigned long long)d->host_faults,
           (unsigned long long)d->device_faults, (unsigned long long)d->bytes_to_device,
           (unsigned long long)d->bytes_to_host);
    if (pass == 0) {
        printf("; device 0 still holds %zu MiB", hbmHeld / MIB);
    }
    printf("\n");
    fflush(stdout);
}

/* One device pass on device 0 followed by a CPU read of the whole range; checks the bytes. */
static managed_stats device_then_cpu(const struct scenario *sc, aclrtStream stream, uint8_t *data,
                                     struct kernel_args *args, int pass, size_t hbmBefore, size_t *hbmHeld)
{
    managed_stats before = stats_now();
    args->dev = data;
    args->n = RANGE_SIZE;
    CHECK(aclvmmLaunchKernel(stream, sc->writes ? add_one_kernel : checksum_kernel, args));
    CHECK(aclrtSynchronizeStream(stream));

    /* The CPU reads every byte (and, for the read-only pass, sums them like the kernel did). */
    size_t bad = pattern_mismatches(data, 0, RANGE_SIZE, sc->writes ? 1u : 0u);
    uint64_t sum = 0;
    for (size_t i = 0; i < RANGE_SIZE; ++i) {
        sum += data[i];
    }
    managed_stats after = stats_now();
    managed_stats d = stats_delta(&before, &after);
    *hbmHeld = hbm_used() - hbmBefore;
    if (sc->writes) {
        expect(bad == 0, "%s: the CPU reads pattern + 1 in all %zu bytes", sc->name, (size_t)RANGE_SIZE);
    } else {
        expect(bad == 0 && sum == args->sum, "%s%s: the device's checksum %llu matches the CPU's", sc->name,
               pass ? " (pass 2)" : "", (unsigned long long)args->sum);
    }
    return d;
}

static struct outcome run_scenario(const struct scenario *sc, aclrtStream stream, struct kernel_args *args)
{
    struct outcome out;
    memset(&out, 0, sizeof(out));
    void *ptr = NULL;
    CHECK(aclrtMemAllocManaged(&ptr, RANGE_SIZE, ACL_RT_MEM_ATTACH_GLOBAL));
    uint8_t *data = ptr;
    if (sc->advice != NO_ADVICE) {
        CHECK(aclrtMemManagedAdvise(data, RANGE_SIZE, (aclrtMemManagedAdviseType)sc->advice,
                                    location(sc->whereType, 0)));
    }
    const size_t hbmBefore = hbm_used();
    for (size_t i = 0; i < RANGE_SIZE; ++i) {
        data[i] = pattern_byte(i);
    }
    out.pass[0] = device_then_cpu(sc, stream, data, args, 0, hbmBefore, &out.hbmHeld);
    print_stats(sc->name, 0, &out.pass[0], out.hbmHeld);
    if (!sc->writes) {
        size_t ignored = 0;
        out.pass[1] = device_then_cpu(sc, stream, data, args, 1, hbmBefore, &ignored);
        print_stats(sc->name, 1, &out.pass[1], 0);
    }
    CHECK(aclrtFree(data));
    return out;
}

/* ---- attributes ------------------------------------------------------------------------------ */

static int32_t get_attr(aclrtMemManagedRangeAttribute attr, const void *ptr, size_t size)
{
    int32_t value = 0x7777;
    CHECK(aclrtMemManagedGetAttr(attr, ptr, size, &value, sizeof(value)));
    return value;
}

static void show_attributes(void)
{
    uint32_t deviceCount = 0;
    CHECK(aclrtGetDeviceCount(&deviceCount));
    const int32_t second = deviceCount > 1 ? 1 : 0;

    void *ptr = NULL;
    CHECK(aclrtMemAllocManaged(&ptr, 8 * MIB, ACL_RT_MEM_ATTACH_GLOBAL));
    uint8_t *data = ptr;

    /* Nothing advised yet. */
    expect(get_attr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, data, 8 * MIB) == 0 &&
               get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, data, 8 * MIB) == -2 &&
               get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, data, 8 * MIB) ==
                   ACL_MEM_LOCATIONTYPE_INVALID,
           "no advice: READ_MOSTLY 0, PREFERRED_LOCATION -2, PREFERRED_LOCATION_TYPE 0 (INVALID)");

    CHECK(aclrtMemManagedAdvise(data, 8 * MIB, ACL_MEM_ADVISE_SET_READ_MOSTLY,
                                location(ACL_MEM_LOCATIONTYPE_DEVICE, 0)));
    CHECK(aclrtMemManagedAdvise(data, 8 * MIB, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION,
                                location(ACL_MEM_LOCATIONTYPE_DEVICE, 0)));
    CHECK(aclrtMemManagedAdvise(data, 8 * MIB, ACL_MEM_ADVISE_SET_ACCESSED_BY,
                                location(ACL_MEM_LOCATIONTYPE_HOST, 0)));
    CHECK(aclrtMemManagedAdvise(data, 8 * MIB, ACL_MEM_ADVISE_SET_ACCESSED_BY,
                                location(ACL_MEM_LOCATIONTYPE_DEVICE, 0)));
    CHECK(aclrtMemManagedAdvise(data, 8 * MIB, ACL_MEM_ADVISE_SET_ACCESSED_BY,
                                location(ACL_MEM_LOCATIONTYPE_DEVICE, second)));

    int32_t readMostly = get_attr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, data, 8 * MIB);
    int32_t preferred = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, data, 8 * MIB);
    int32_t preferredType = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, data, 8 * MIB);
    int32_t preferredId = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, data, 8 * MIB);
    expect(readMostly == 1, "READ_MOSTLY = %d after SET_READ_MOSTLY", readMostly);
    expect(preferred == 0 && preferredType == ACL_MEM_LOCATIONTYPE_DEVICE && preferredId == 0,
           "PREFERRED_LOCATION = %d, PREFERRED_LOCATION_TYPE = %d (DEVICE), PREFERRED_LOCATION_ID = %d",
           preferred, preferredType, preferredId);

    int32_t slots[4] = {0x7777, 0x7777, 0x7777, 0x7777};
    CHECK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, data, 8 * MIB, slots, sizeof(slots)));
    if (second != 0) {
        expect(slots[0] == -1 && slots[1] == 0 && slots[2] == 1 && slots[3] == -2,
               "ACCESSED_BY (dataSize 16) = {%d, %d, %d, %d}: host (-1), device 0, device 1, unused (-2)",
               slots[0], slots[1], slots[2], slots[3]);
    } else {
        expect(slots[0] == -1 && slots[1] == 0 && slots[2] == -2 && slots[3] == -2,
               "ACCESSED_BY (dataSize 16) = {%d, %d, %d, %d}: host (-1), device 0, unused (-2)", slots[0],
               slots[1], slots[2], slots[3]);
    }

    /* Pages that disagree: the first page prefers the host, is no longer read-mostly and is no
       longer accessed by device 0. A query over the whole range sees the mix; one over the first
       page sees that page alone. */
    CHECK(aclrtMemManagedAdvise(data, PAGE_SIZE_2M, ACL_MEM_ADVISE_SET_PREFERRED_LOCATION,
                                location(ACL_MEM_LOCATIONTYPE_HOST, 0)));
    CHECK(aclrtMemManagedAdvise(data, PAGE_SIZE_2M, ACL_MEM_ADVISE_UNSET_READ_MOSTLY,
                                location(ACL_MEM_LOCATIONTYPE_DEVICE, 0)));
    CHECK(aclrtMemManagedAdvise(data, PAGE_SIZE_2M, ACL_MEM_ADVISE_UNSET_ACCESSED_BY,
                                location(ACL_MEM_LOCATIONTYPE_DEVICE, 0)));
    readMostly = get_attr(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, data, 8 * MIB);
    preferred = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, data, 8 * MIB);
    preferredType = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, data, 8 * MIB);
    preferredId = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, data, 8 * MIB);
    expect(readMostly == 0 && preferred == -2 && preferredType == ACL_MEM_LOCATIONTYPE_INVALID &&
               preferredId == -2,
           "mixed pages, whole range: READ_MOSTLY %d, PREFERRED_LOCATION %d, _TYPE %d (INVALID), _ID %d",
           readMostly, preferred, preferredType, preferredId);
    CHECK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, data, 8 * MIB, slots, sizeof(slots)));
    expect(slots[0] == -1 && slots[1] == (second != 0 ? 1 : -2) && slots[2] == -2 && slots[3] == -2,
           "mixed pages, whole range: ACCESSED_BY = {%d, %d, %d, %d} (only what every page names)", slots[0],
           slots[1], slots[2], slots[3]);

    /* Ranges are whole 2 MiB pages: [data, data + 4096) is the first page. */
    preferred = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, data, 4096);
    preferredType = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, data, 4096);
    preferredId = get_attr(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, data, 4096);
    expect(preferred == -1 && preferredType == ACL_MEM_LOCATIONTYPE_HOST && preferredId == -2,
           "first page alone: PREFERRED_LOCATION %d (host), _TYPE %d (HOST), _ID %d (no id for the host)",
           preferred, preferredType, preferredId);

    CHECK(aclrtFree(data));
}

int main(void)
{
    select_a2_product(); /* before aclInit: the SoC is read when the runtime starts */
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    struct kernel_args args;
    memset(&args, 0, sizeof(args));
    args.chunk = xmalloc(KERNEL_CHUNK);

    const struct scenario reads = {"no advice, device reads", NO_ADVICE, ACL_MEM_LOCATIONTYPE_DEVICE, 0};
    const struct scenario readMostly = {"READ_MOSTLY, device reads", ACL_MEM_ADVISE_SET_READ_MOSTLY,
                                        ACL_MEM_LOCATIONTYPE_DEVICE, 0};
    const struct scenario writes = {"no advice, device writes", NO_ADVICE, ACL_MEM_LOCATIONTYPE_DEVICE, 1};
    const struct scenario prefDevice = {"PREFERRED_LOCATION device 0", ACL_MEM_ADVISE_SET_PREFERRED_LOCATION,
                                        ACL_MEM_LOCATIONTYPE_DEVICE, 1};
    const struct scenario prefHost = {"PREFERRED_LOCATION host", ACL_MEM_ADVISE_SET_PREFERRED_LOCATION,
                                      ACL_MEM_LOCATIONTYPE_HOST, 1};
    const struct scenario byDevice = {"ACCESSED_BY device 0", ACL_MEM_ADVISE_SET_ACCESSED_BY,
                                      ACL_MEM_LOCATIONTYPE_DEVICE, 1};
    const struct scenario byHost = {"ACCESSED_BY host", ACL_MEM_ADVISE_SET_ACCESSED_BY, ACL_MEM_LOCATIONTYPE_HOST,
                                    1};

    const uint64_t pages = PAGES, bytes = RANGE_SIZE;

    /* Baseline: every page goes to the device and comes back, in every pass. */
    struct outcome rReads = run_scenario(&reads, stream, &args);
    const int tracking = fault_tracking(); /* known once managed memory has been allocated */
    if (!tracking) {
        printf("fault tracking is off on this machine (no userfaultfd with minor faults on shared memory): "
               "managed memory stays on the host, advice changes no placement, and only the bytes are "
               "checked\n");
    } else {
        expect(rReads.pass[0].device_faults == pages && rReads.pass[0].host_faults == pages &&
                   rReads.pass[1].host_faults == pages,
               "no advice, device reads: %llu device faults and %llu host faults per pass, again in pass 2",
               (unsigned long long)rReads.pass[0].device_faults, (unsigned long long)rReads.pass[0].host_faults);
    }

    /* READ_MOSTLY: read copies, nothing comes back, copies are kept. */
    struct outcome rReadMostly = run_scenario(&readMostly, stream, &args);
    if (tracking) {
        expect(rReadMostly.pass[0].host_faults == 0 && rReadMostly.pass[0].bytes_to_host == 0,
               "READ_MOSTLY: the CPU read has no host fault and no page comes back (no advice: %llu faults)",
               (unsigned long long)rReads.pass[0].host_faults);
        expect(rReadMostly.pass[0].device_faults == pages && rReadMostly.pass[0].bytes_to_device == bytes,
               "READ_MOSTLY: the first device read makes one read copy per page (%llu bytes)",
               (unsigned long long)rReadMostly.pass[0].bytes_to_device);
        expect(rReadMostly.pass[1].device_faults == 0 && rReadMostly.pass[1].bytes_to_device == 0 &&
                   rReadMostly.pass[1].host_faults == 0,
               "READ_MOSTLY: the second pass costs nothing (no advice: %llu device + %llu host faults again)",
               (unsigned long long)rReads.pass[1].device_faults, (unsigned long long)rReads.pass[1].host_faults);
    }

    /* Baseline for the writing device pass. */
    struct outcome rWrites = run_scenario(&writes, stream, &args);
    if (tracking) {
        expect(rWrites.pass[0].host_faults == pages && rWrites.pass[0].bytes_to_host == bytes &&
                   rWrites.hbmHeld == 0,
               "no advice, device writes: %llu host faults, %llu bytes back to the host, device 0 holds nothing",
               (unsigned long long)rWrites.pass[0].host_faults, (unsigned long long)rWrites.pass[0].bytes_to_host);
    }

    /* PREFERRED_LOCATION device 0: migrates once, stays, the CPU reaches it in place. */
    struct outcome rPrefDevice = run_scenario(&prefDevice, stream, &args);
    if (tracking) {
        expect(rPrefDevice.pass[0].device_faults == pages && rPrefDevice.pass[0].host_faults == 0 &&
                   rPrefDevice.pass[0].bytes_to_host == 0,
               "PREFERRED_LOCATION device 0: pages migrate to device 0 and the CPU reads them in place "
               "(0 host faults, 0 bytes back; no advice: %llu host faults)",
               (unsigned long long)rWrites.pass[0].host_faults);
        expect(rPrefDevice.hbmHeld == bytes,
               "PREFERRED_LOCATION device 0: device 0 still holds the %zu MiB after the CPU read",
               rPrefDevice.hbmHeld / MIB);
    }

    /* PREFERRED_LOCATION host: the device works on the host pages. */
    struct outcome rPrefHost = run_scenario(&prefHost, stream, &args);
    if (tracking) {
        expect(rPrefHost.pass[0].device_faults == 0 && rPrefHost.pass[0].bytes_to_device == 0 &&
                   rPrefHost.pass[0].host_faults == 0,
               "PREFERRED_LOCATION host: the device reaches the pages in place, nothing migrates");
    }

    /* ACCESSED_BY: the named processor keeps access wherever the page is. */
    struct outcome rByDevice = run_scenario(&byDevice, stream, &args);
    if (tracking) {
        expect(rByDevice.pass[0].device_faults == 0 && rByDevice.pass[0].bytes_to_device == 0 &&
                   rByDevice.pass[0].host_faults == 0,
               "ACCESSED_BY device 0: device 0 reaches the host pages in place, nothing migrates");
    }
    struct outcome rByHost = run_scenario(&byHost, stream, &args);
    if (tracking) {
        expect(rByHost.pass[0].device_faults == pages && rByHost.pass[0].host_faults == 0 &&
                   rByHost.hbmHeld == bytes,
               "ACCESSED_BY host: pages migrate to device 0 and the CPU keeps its mapping (0 host faults)");
    }

    show_attributes();

    free(args.chunk);
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
