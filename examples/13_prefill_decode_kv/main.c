/*
 * 13_prefill_decode_kv - prefill/decode disaggregation: a prefill server computes KV-cache
 * blocks, a decode server pulls them into its own KV pool over FABRIC handles, and prints how
 * fast they moved. Two network namespaces stand for the two servers
 * (examples/common/example_pod.h, docs/fabric.md).
 *
 * Roles of one binary. With no arguments it is the LAUNCHER (needs root): it creates servers 1
 * and 2 and the pod file, starts "decode" on server 2 (which reports its bare tgid), then
 * "prefill <tgid>" on server 1, and passes the prefill's block handles to the decode.
 * PREFILL (server 1):
 *   64 KV blocks of 2 MiB, one physical handle each, mapped side by side in one reservation and
 *   written (block i holds pattern + i) -> each exported as FABRIC with the whitelist on, and
 *   the decode process's bare tgid set on it (aclrtMemSetPidToShareableHandleV2) -> offers the
 *   64 handles -> keeps the blocks until the decode is done.
 * DECODE (server 2):
 *   imports the 64 handles and maps them side by side (a view of the prefill's KV) -> its own
 *   KV pool of 64 x 2 MiB -> one device-to-device aclrtMemcpy per block, timed -> checks every
 *   byte of its pool -> frees the imports (the prefill's holder count drops to 0).
 *
 * Without root the launcher says why and exits with 77 (examples/run.sh: SKIP).
 */
#include "example_pod.h" /* first: it defines _GNU_SOURCE */

#define BLOCKS 64
#define BLOCK_SIZE (2 * MIB)
#define POOL_SIZE ((size_t)BLOCKS * BLOCK_SIZE)
#define WAIT_MS 60000
#define LINE_MAX_ 512

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What the prefill writes: block i holds pattern_byte + i. */
static void kv_content(uint8_t *host)
{
    for (size_t b = 0; b < BLOCKS; ++b) {
        for (size_t i = 0; i < BLOCK_SIZE; ++i) {
            host[b * BLOCK_SIZE + i] = (uint8_t)(pattern_byte(i) + b);
        }
    }
}

static int run_prefill(int decode_tgid)
{
    g_role = "prefill (server 1)";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    void *pool = NULL;
    CHECK(aclrtReserveMemAddress(&pool, POOL_SIZE, 0, NULL, 0));
    aclrtDrvMemHandle blocks[BLOCKS];
    aclrtPhysicalMemProp prop = device_prop();
    for (int b = 0; b < BLOCKS; ++b) {
        CHECK(aclrtMallocPhysical(&blocks[b], BLOCK_SIZE, &prop, 0));
        CHECK(aclrtMapMem((char *)pool + (size_t)b * BLOCK_SIZE, BLOCK_SIZE, 0, blocks[b], 0));
    }
    uint8_t *host = xmalloc(POOL_SIZE);
    kv_content(host);
    CHECK(aclrtMemcpy(pool, POOL_SIZE, host, POOL_SIZE, ACL_MEMCPY_HOST_TO_DEVICE));
    free(host);
    expect(1, "wrote %d KV blocks of %zu MiB", BLOCKS, BLOCK_SIZE / MIB);

    int32_t pid = decode_tgid;
    char line[LINE_MAX_];
    for (int b = 0; b < BLOCKS; ++b) {
        aclrtMemFabricHandle fabric;
        memset(&fabric, 0, sizeof(fabric));
        CHECK(aclrtMemExportToShareableHandleV2(blocks[b], 0, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &fabric));
        CHECK(aclrtMemSetPidToShareableHandleV2(&fabric, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &pid, 1));
        int k = snprintf(line, sizeof(line), "BLOCK %d ", b);
        to_hex(&fabric, sizeof(fabric), line + k);
        send_line(STDOUT_FILENO, line);
    }
    expect(1, "exported the %d blocks as FABRIC handles, whitelisted for the decode process (pid %d)", BLOCKS,
           (int)pid);
    send_line(STDOUT_FILENO, "END");
    expect(next_line(STDIN_FILENO, line, sizeof(line), WAIT_MS) && strcmp(line, "DONE") == 0,
           "the decode server is done");
    expect(stats_value("fabric_served") == BLOCKS && stats_value("fabric_holders") == 0,
           "statistics: %d imports served, no holder left", BLOCKS);
    for (int b = 0; b < BLOCKS; ++b) {
        CHECK(aclrtUnmapMem((char *)pool + (size_t)b * BLOCK_SIZE));
        CHECK(aclrtFreePhysical(blocks[b]));
    }
    CHECK(aclrtReleaseMemAddress(pool));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

static int run_decode(void)
{
    g_role = "decode (server 2)";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    int32_t tgid = 0;
    CHECK(aclrtDeviceGetBareTgid(&tgid));
    char line[LINE_MAX_];
    snprintf(line, sizeof(line), "TGID %d", (int)tgid);
    send_line(STDOUT_FILENO, line);

    /* The prefill's blocks, side by side: a view of its KV. */
    void *remote = NULL;
    CHECK(aclrtReserveMemAddress(&remote, POOL_SIZE, 0, NULL, 0));
    aclrtDrvMemHandle imported[BLOCKS];
    int count = 0;
    double t_first = 0, t_rest = 0;
    while (next_line(STDIN_FILENO, line, sizeof(line), WAIT_MS) && strcmp(line, "END") != 0) {
        const double t = now_s();
        int b = -1, k = 0;
        aclrtMemFabricHandle fabric;
        if (!(sscanf(line, "BLOCK %d %n", &b, &k) == 1 && b == count && b < BLOCKS &&
              from_hex(line + k, &fabric, sizeof(fabric)))) {
            expect(0, "block %d's handle is malformed: %.40s", count, line);
        }
        CHECK(aclrtMemImportFromShareableHandleV2(&fabric, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &imported[b]));
        CHECK(aclrtMapMem((char *)remote + (size_t)b * BLOCK_SIZE, BLOCK_SIZE, 0, imported[b], 0));
        *(count == 0 ? &t_first : &t_rest) += now_s() - t;
        ++count;
    }
    expect(count == BLOCKS,
           "imported and mapped the %d blocks of server 1: the first in %.0f ms (it opens the fabric "
           "endpoints), the other %d in %.1f ms",
           count, t_first * 1e3, count - 1, t_rest * 1e3);

    /* The decode's own KV pool, then the transfer: one copy per block, as a KV manager does. The
       first pass pays for fresh pages on both servers (the host allocates them on first touch);
       the second is what a pool in steady use sees. */
    aclrtDrvMemHandle pool_handle = NULL;
    aclrtPhysicalMemProp prop = device_prop();
    CHECK(aclrtMallocPhysical(&pool_handle, POOL_SIZE, &prop, 0));
    void *pool = map_handle(pool_handle, POOL_SIZE);
    for (int pass = 0; pass < 2; ++pass) {
        const double t0 = now_s();
        for (int b = 0; b < BLOCKS; ++b) {
            const size_t at = (size_t)b * BLOCK_SIZE;
            CHECK(aclrtMemcpy((char *)pool + at, BLOCK_SIZE, (char *)remote + at, BLOCK_SIZE,
                              ACL_MEMCPY_DEVICE_TO_DEVICE));
        }
        const double seconds = now_s() - t0;
        expect(1, "moved %d KV blocks (%zu MiB) from server 1 in %.1f ms: %.0f MB/s (%s)", BLOCKS,
               POOL_SIZE / MIB, seconds * 1e3, (double)POOL_SIZE / seconds / 1e6,
               pass == 0 ? "fresh pages" : "again, warm");
    }

    uint8_t *want = xmalloc(POOL_SIZE);
    uint8_t *got = xmalloc(POOL_SIZE);
    kv_content(want);
    CHECK(aclrtMemcpy(got, POOL_SIZE, pool, POOL_SIZE, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_mismatches(got, want, POOL_SIZE) == 0, "every byte of the %d blocks is the prefill's", BLOCKS);
    free(want);
    free(got);

    for (int b = 0; b < BLOCKS; ++b) {
        CHECK(aclrtUnmapMem((char *)remote + (size_t)b * BLOCK_SIZE));
        CHECK(aclrtFreePhysical(imported[b]));
    }
    CHECK(aclrtReleaseMemAddress(remote));
    unmap_and_release(pool);
    CHECK(aclrtFreePhysical(pool_handle));
    expect(1, "released the imports: the prefill may reuse its blocks");
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

static int run_launcher(void)
{
    g_role = "launcher";
    if (!launch_pod()) {
        return EXIT_SKIP;
    }

    char *decode_argv[] = {"example_13_prefill_decode_kv", "decode", NULL};
    int to_decode, from_decode, to_prefill, from_prefill;
    pid_t decode = pod_spawn(&g_pod, 2, decode_argv, &to_decode, &from_decode);
    char line[LINE_MAX_];
    expect(relay_until(from_decode, "TGID ", line, sizeof(line), WAIT_MS), "the decode server reported %s", line);
    char tgid[32];
    snprintf(tgid, sizeof(tgid), "%.20s", line + 5);
    char *prefill_argv[] = {"example_13_prefill_decode_kv", "prefill", tgid, NULL};
    pid_t prefill = pod_spawn(&g_pod, 1, prefill_argv, &to_prefill, &from_prefill);
    /* The block handles go from the prefill to the decode as they come. */
    int blocks = 0;
    while (next_line(from_prefill, line, sizeof(line), WAIT_MS)) {
        if (strncmp(line, "BLOCK ", 6) == 0 || strcmp(line, "END") == 0) {
            send_line(to_decode, line);
            if (line[0] == 'E') {
                break;
            }
            ++blocks;
        } else {
            printf("%s\n", line); /* the prefill's own report */
        }
    }
    expect(blocks == BLOCKS, "passed %d block handles from server 1 to server 2", blocks);
    relay_until(from_decode, NULL, line, sizeof(line), WAIT_MS);
    expect(wait_child(decode, WAIT_MS) == 0, "the decode process exited with 0");
    send_line(to_prefill, "DONE");
    relay_until(from_prefill, NULL, line, sizeof(line), WAIT_MS);
    expect(wait_child(prefill, WAIT_MS) == 0, "the prefill process exited with 0");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 2 && strcmp(argv[1], "prefill") == 0) {
        return run_prefill(atoi(argv[2]));
    }
    if (argc > 1 && strcmp(argv[1], "decode") == 0) {
        return run_decode();
    }
    return run_launcher();
}
