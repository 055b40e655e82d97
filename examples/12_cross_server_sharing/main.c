/*
 * 12_cross_server_sharing - device memory exported on one server of a super-pod, imported,
 * mapped, read and written on another: the flow of the vendor's sample
 * 12_cross_server_physical_memory_sharing_withoutpid, across two network namespaces that stand
 * for two servers (examples/common/example_pod.h, docs/fabric.md).
 *
 * One binary, three roles. Started with no arguments it is the LAUNCHER (needs root):
 *   creates servers 1 and 2 (namespaces on a bridge) and the pod file naming them,
 *   starts itself as "exporter" in server 1 and, once the exporter offered its handle, as
 *   "importer" in server 2, each with ACLVMM_SERVER_ID and ACLVMM_POD_FILE; passes the
 *   128-byte FABRIC handle from one to the other (real programs put it in their own messages).
 * EXPORTER (server 1):
 *   aclrtMallocPhysical(2 MiB) -> map -> fill a pattern
 *   -> aclrtMemExportToShareableHandleV2(DISABLE_PID_VALIDATION, FABRIC): the handle's SDID
 *      names server 1 -> offers it -> waits until the importer is done -> finds the importer's
 *      reply pattern in its own memory.
 * IMPORTER (server 2):
 *   aclrtMemImportFromShareableHandleV2(FABRIC) -> reserve + map -> checks the pattern (D2H from
 *   server 1's memory) -> writes a reply pattern (H2D into it) -> unmap, free.
 *
 * Without root the launcher says why and exits with 77 (examples/run.sh: SKIP).
 */
#include "example_pod.h" /* first: it defines _GNU_SOURCE */

#include <inttypes.h>

#define SHARE_SIZE (2 * MIB)
#define WAIT_MS 30000

static void print_handle(const aclrtMemFabricHandle *fabric)
{
    uint32_t w[5];
    memcpy(w, fabric->data, sizeof(w));
    expect(w[0] == 1 && w[4] != 0,
           "FABRIC handle: type %" PRIu32 ", SDID 0x%08" PRIx32 " (server %" PRIu32 ", device %" PRIu32
           "), share id 0x%08" PRIx32,
           w[0], w[1], w[1] >> 22, w[1] & 0xFFFF, w[4]);
}

static int run_exporter(void)
{
    g_role = "exporter (server 1)";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtPhysicalMemProp prop = device_prop();
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, SHARE_SIZE, &prop, 0));
    void *va = map_handle(handle, SHARE_SIZE);
    fill_device(va, SHARE_SIZE, pattern_byte);
    expect(1, "allocated, mapped and filled %zu bytes on device 0", (size_t)SHARE_SIZE);

    /* The sample's "withoutpid" flavour: no whitelist, any process of the pod may import. */
    aclrtMemFabricHandle fabric;
    memset(&fabric, 0, sizeof(fabric));
    CHECK(aclrtMemExportToShareableHandleV2(handle, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
                                            ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &fabric));
    print_handle(&fabric);
    uint32_t sdid;
    memcpy(&sdid, fabric.data + 4, sizeof(sdid));
    expect(sdid >> 22 == 1, "the handle names this server, 1, in the top bits of its SDID");
    char line[2 * sizeof(fabric) + 16] = "HANDLE ";
    to_hex(&fabric, sizeof(fabric), line + 7);
    send_line(STDOUT_FILENO, line);

    expect(next_line(STDIN_FILENO, line, sizeof(line), WAIT_MS) && strcmp(line, "DONE") == 0,
           "the importer on server 2 is done");
    expect(device_mismatches(va, SHARE_SIZE, reply_byte) == 0,
           "all %zu bytes of this server's memory now hold the importer's reply pattern", (size_t)SHARE_SIZE);
    expect(stats_value("fabric_served") == 1, "statistics: 1 import served to another server");
    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

static int run_importer(void)
{
    g_role = "importer (server 2)";
    char line[2 * sizeof(aclrtMemFabricHandle) + 16];
    expect(next_line(STDIN_FILENO, line, sizeof(line), WAIT_MS) && strncmp(line, "HANDLE ", 7) == 0,
           "received the exporter's handle");
    aclrtMemFabricHandle fabric;
    expect(from_hex(line + 7, &fabric, sizeof(fabric)), "the handle is 128 bytes");
    print_handle(&fabric);

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMemImportFromShareableHandleV2(&fabric, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &handle));
    expect(1, "imported the handle of server 1 onto device 0 of server 2");
    void *va = map_handle(handle, SHARE_SIZE);
    expect(device_mismatches(va, SHARE_SIZE, pattern_byte) == 0,
           "all %zu bytes read across servers match the exporter's pattern", (size_t)SHARE_SIZE);
    fill_device(va, SHARE_SIZE, reply_byte);
    expect(1, "wrote the reply pattern into server 1's memory");
    expect(stats_value("fabric_imports") == 1, "statistics: 1 import from another server");
    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle));
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

    char *exporter_argv[] = {"example_12_cross_server_sharing", "exporter", NULL};
    char *importer_argv[] = {"example_12_cross_server_sharing", "importer", NULL};
    int to_exporter, from_exporter, to_importer, from_importer;
    pid_t exporter = pod_spawn(&g_pod, 1, exporter_argv, &to_exporter, &from_exporter);
    char line[2 * sizeof(aclrtMemFabricHandle) + 16];
    expect(relay_until(from_exporter, "HANDLE ", line, sizeof(line), WAIT_MS),
           "the exporter offered its handle");
    pid_t importer = pod_spawn(&g_pod, 2, importer_argv, &to_importer, &from_importer);
    send_line(to_importer, line);
    relay_until(from_importer, NULL, line, sizeof(line), WAIT_MS);
    expect(wait_child(importer, WAIT_MS) == 0, "the importer exited with 0");
    send_line(to_exporter, "DONE");
    relay_until(from_exporter, NULL, line, sizeof(line), WAIT_MS);
    expect(wait_child(exporter, WAIT_MS) == 0, "the exporter exited with 0");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "exporter") == 0) {
        return run_exporter();
    }
    if (argc > 1 && strcmp(argv[1], "importer") == 0) {
        return run_importer();
    }
    return run_launcher();
}
