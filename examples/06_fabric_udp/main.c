/*
 * 06_fabric_udp - V2 FABRIC shareable handles, sent as raw 128-byte blobs over UDP.
 *
 * FABRIC handles (ACL_MEM_SHARE_HANDLE_TYPE_FABRIC) exist on super-pod products (Atlas A3) only.
 * Unless ACLVMM_SOC already names an A3 SoC, this program sets ACLVMM_SOC=Ascend910_9391 for
 * itself (and so for its child) before aclInit, and says so.
 *
 * One binary plays both roles. Started with no arguments it is the EXPORTER:
 *
 *   aclInit -> aclrtSetDevice(0) -> aclrtMallocPhysical (2 MiB) -> map -> aclrtMemcpy a pattern in
 *   -> aclrtMemExportToShareableHandleV2(flags 1 = DISABLE_PID_VALIDATION, FABRIC) => 128-byte blob
 *   -> binds a UDP socket on 127.0.0.1, port chosen by the kernel
 *   -> fork + exec itself as "importer <port>"; the importer:
 *        aclrtSetDevice(1, or 0 with a single device) -> sends "HELLO" to 127.0.0.1:<port>
 *   -> answers the HELLO with the 128-byte aclrtMemFabricHandle, as one datagram
 *        importer: aclrtMemImportFromShareableHandleV2(blob, FABRIC, 0) onto its current device
 *                  -> map -> verify the pattern -> write a reply pattern -> unmap, free -> exit 0
 *   -> reads the reply pattern through its own mapping -> aclFinalize.
 *
 * This is the shape of the vendor's V2 sample and of Mooncake / shmem / hixl, which put the blob
 * in their own metadata messages. Every wait is bounded (10 s); on failure children are killed.
 */
#define _GNU_SOURCE /* kill, nanosleep, setenv under -std=c11 */
#include "example_util.h" /* CHECK, expect (with g_role), fill_device, spawn_self, wait_child, ... */

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#define SHARE_SIZE (2 * MIB) /* both sides know the size; real programs send it with the handle */
#define WAIT_MS 10000        /* bound on every wait for the other process */

/* The exporter fills the shared memory with pattern_byte, the importer answers with reply_byte. */

/* ---- fabric handles ------------------------------------------------------------------------ */

/* The five u32 words the driver writes at the start of a FABRIC handle. */
static void fabric_words(const aclrtMemFabricHandle *fabric, uint32_t w[5])
{
    memcpy(w, fabric->data, 5 * sizeof(uint32_t));
}

static void print_fabric(const aclrtMemFabricHandle *fabric)
{
    uint32_t w[5];
    fabric_words(fabric, w);
    expect(w[0] == 1 && w[4] != 0,
           "fabric handle words: type %" PRIu32 ", super-pod %" PRIu32 ", logical device %" PRIu32
           ", physical device %" PRIu32 ", share id 0x%08" PRIx32,
           w[0], w[1], w[2], w[3], w[4]);
}

/* ---- processes ----------------------------------------------------------------------------- */

/* One datagram into buf within WAIT_MS; its length. If from != NULL the sender is stored there.
   If child > 0, fails as soon as that child exits. */
static size_t receive(int sock, void *buf, size_t cap, struct sockaddr_in *from, pid_t child)
{
    for (int waited = 0; waited < WAIT_MS; waited += 100) {
        struct pollfd p = {sock, POLLIN, 0};
        if (poll(&p, 1, 100) == 1) {
            socklen_t len = sizeof(*from);
            ssize_t n = recvfrom(sock, buf, cap, 0, (struct sockaddr *)from, from ? &len : NULL);
            if (n < 0) {
                expect(0, "recvfrom: %s", strerror(errno));
            }
            return (size_t)n;
        }
        int status = 0;
        if (child > 0 && child_exited(child, &status)) {
            expect(0, "the importer exited (status 0x%x) before it said hello", status);
        }
    }
    expect(0, "no datagram within %d ms", WAIT_MS);
    return 0;
}

/* ---- the importer (a separate process, started as "importer <port>") ------------------------ */

static int run_importer(int port)
{
    g_role = "importer";
    CHECK(aclInit(NULL));
    uint32_t count = 0;
    CHECK(aclrtGetDeviceCount(&count));
    const int32_t device = count > 1 ? 1 : 0; /* another device than the exporter's, if there is one */
    CHECK(aclrtSetDevice(device));

    int sock = socket(AF_INET, SOCK_DGRAM, 0);
    if (sock < 0) {
        expect(0, "socket: %s", strerror(errno));
    }
    struct sockaddr_in exporter;
    memset(&exporter, 0, sizeof(exporter));
    exporter.sin_family = AF_INET;
    exporter.sin_port = htons((uint16_t)port);
    exporter.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sendto(sock, "HELLO", 5, 0, (const struct sockaddr *)&exporter, sizeof(exporter)) != 5) {
        expect(0, "sendto 127.0.0.1:%d: %s", port, strerror(errno));
    }

    /* One byte more than a handle: a longer datagram would show up as too long, not as a handle. */
    unsigned char buf[sizeof(aclrtMemFabricHandle) + 1];
    size_t n = receive(sock, buf, sizeof(buf), NULL, 0);
    close(sock);
    expect(n == sizeof(aclrtMemFabricHandle), "received a %zu-byte datagram from 127.0.0.1:%d", n, port);
    aclrtMemFabricHandle fabric;
    memcpy(&fabric, buf, sizeof(fabric));
    print_fabric(&fabric);

    /* V2 imports onto the current device; flags must be 0. */
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMemImportFromShareableHandleV2(&fabric, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &handle));
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    CHECK(aclrtMemGetAllocationPropertiesFromHandle(handle, &prop));
    uint32_t w[5];
    fabric_words(&fabric, w);
    /* Like the vendor's, the reported location id is the driver's (physical) device id. */
    expect(prop.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && prop.location.id == w[3],
           "imported onto current device %d; the handle's location is the exporter's physical device %u",
           (int)device, prop.location.id);

    void *va = map_handle(handle, SHARE_SIZE);
    expect(device_mismatches(va, SHARE_SIZE, pattern_byte) == 0, "all %zu bytes match the exporter's pattern",
           (size_t)SHARE_SIZE);
    fill_device(va, SHARE_SIZE, reply_byte);
    expect(1, "wrote the reply pattern");

    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle));
    CHECK(aclrtResetDevice(device));
    CHECK(aclFinalize());
    return 0;
}

/* ---- the exporter --------------------------------------------------------------------- */

static int run_exporter(const char *self)
{
    atexit(kill_children);
    select_a3_product(); /* before aclInit: the SoC is read once, at initialisation */
    CHECK(aclInit(NULL));
    char soc[64];
    snprintf(soc, sizeof(soc), "%s", aclrtGetSocName() ? aclrtGetSocName() : "(none)");
    expect(strcmp(soc, getenv("ACLVMM_SOC")) == 0, "aclrtGetSocName() = %s", soc);
    CHECK(aclrtSetDevice(0));

    aclrtPhysicalMemProp prop = device_prop();
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, SHARE_SIZE, &prop, 0));
    void *va = map_handle(handle, SHARE_SIZE);
    fill_device(va, SHARE_SIZE, pattern_byte);
    expect(1, "allocated, mapped and filled %zu bytes on device 0", (size_t)SHARE_SIZE);

    /* Export as FABRIC; flags 1 (DISABLE_PID_VALIDATION): no whitelist, any process may import. */
    aclrtMemFabricHandle fabric;
    memset(&fabric, 0, sizeof(fabric)); /* bytes 20..127 are left as given */
    CHECK(aclrtMemExportToShareableHandleV2(handle, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
                                            ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &fabric));
    print_fabric(&fabric);
    uint32_t w[5];
    fabric_words(&fabric, w);
    expect(w[2] == 0, "the blob names logical device %" PRIu32 " as the exporter's", w[2]);

    /* A UDP socket on 127.0.0.1; the kernel picks the port, the importer gets it on its command line
       (SOCK_CLOEXEC: the importer opens its own socket). */
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        expect(0, "socket: %s", strerror(errno));
    }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(sock, (const struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        getsockname(sock, (struct sockaddr *)&addr, &len) != 0) {
        expect(0, "bind/getsockname: %s", strerror(errno));
    }
    const int port = ntohs(addr.sin_port);
    char portText[16];
    snprintf(portText, sizeof(portText), "%d", port);
    expect(port > 0, "UDP socket bound to 127.0.0.1:%d", port);

    char *argv[] = {(char *)self, "importer", portText, NULL};
    const pid_t importer = spawn_self(argv, -1);
    expect(1, "started the importer as pid %d: %s importer %s", (int)importer, self, portText);

    char hello[16];
    struct sockaddr_in peer;
    memset(&peer, 0, sizeof(peer));
    size_t n = receive(sock, hello, sizeof(hello), &peer, importer);
    expect(n == 5 && memcmp(hello, "HELLO", 5) == 0, "HELLO from 127.0.0.1:%d", ntohs(peer.sin_port));
    if (sendto(sock, &fabric, sizeof(fabric), 0, (const struct sockaddr *)&peer, sizeof(peer)) !=
        (ssize_t)sizeof(fabric)) {
        expect(0, "sendto: %s", strerror(errno));
    }
    expect(1, "sent the %zu-byte fabric handle as one datagram", sizeof(fabric));
    close(sock);

    int code = wait_child(importer, WAIT_MS);
    expect(code == 0, "the importer exited with %d", code);
    expect(device_mismatches(va, SHARE_SIZE, reply_byte) == 0,
           "all %zu bytes now hold the importer's reply pattern", (size_t)SHARE_SIZE);

    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* expect() flushes each line itself */
    g_role = "exporter";                     /* the importer sets its own */
    if (argc == 3 && strcmp(argv[1], "importer") == 0) {
        return run_importer(atoi(argv[2]));
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s (no arguments; the importer is started by the program)\n", argv[0]);
        return 2;
    }
    return run_exporter(argv[0]);
}
