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
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>

#define MIB ((size_t)1 << 20)
#define SHARE_SIZE (2 * MIB) /* both sides know the size; real programs send it with the handle */
#define WAIT_MS 10000        /* bound on every wait for the other process */
#define A3_SOC "Ascend910_9391"

static const char *g_role = "exporter"; /* prefix of every line this process prints */

/* Run an ACL call; on failure print the call, its code and the library's message, exit 1. */
#define CHECK(call)                                                                              \
    do {                                                                                         \
        aclError check_rc_ = (call);                                                             \
        if (check_rc_ != ACL_SUCCESS) {                                                          \
            const char *check_msg_ = aclGetRecentErrMsg();                                       \
            fprintf(stderr, "[FAIL] %s: %s:%d: %s returned %d: %s\n", g_role, __FILE__, __LINE__, \
                    #call, (int)check_rc_, check_msg_ ? check_msg_ : "(no message)");           \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

/* Print "[OK] <role>: <what>" when cond holds, otherwise "[FAIL] <role>: <what>" and exit 1. */
static void expect(int cond, const char *fmt, ...)
{
    FILE *out = cond ? stdout : stderr;
    va_list ap;
    va_start(ap, fmt);
    fprintf(out, "%s %s: ", cond ? "[OK]" : "[FAIL]", g_role);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
    fflush(out); /* one write per line: lines of the two processes do not mix */
    if (!cond) {
        exit(1);
    }
}

/* ---- device memory helpers ----------------------------------------------------------------- */

static uint8_t export_byte(size_t i) { return (uint8_t)((i * 131u + (i >> 12) * 7u + 1u) & 0xFFu); }
static uint8_t reply_byte(size_t i) { return (uint8_t)((i * 29u + (i >> 11) + 0xA5u) & 0xFFu); }

static void fill_device(void *va, size_t n, uint8_t (*pattern)(size_t))
{
    uint8_t *host = malloc(n);
    if (host == NULL) {
        expect(0, "out of host memory");
    }
    for (size_t i = 0; i < n; ++i) {
        host[i] = pattern(i);
    }
    CHECK(aclrtMemcpy(va, n, host, n, ACL_MEMCPY_HOST_TO_DEVICE));
    free(host);
}

/* Number of bytes of device memory at va that differ from pattern(i); prints the first one. */
static size_t device_mismatches(const void *va, size_t n, uint8_t (*pattern)(size_t))
{
    uint8_t *host = malloc(n);
    if (host == NULL) {
        expect(0, "out of host memory");
    }
    memset(host, 0, n);
    CHECK(aclrtMemcpy(host, n, va, n, ACL_MEMCPY_DEVICE_TO_HOST));
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (host[i] != pattern(i) && bad++ == 0) {
            fprintf(stderr, "%s: first mismatch at offset %zu: got 0x%02x, expected 0x%02x\n", g_role, i,
                    host[i], pattern(i));
        }
    }
    free(host);
    return bad;
}

static void *map_handle(aclrtDrvMemHandle handle)
{
    void *va = NULL;
    CHECK(aclrtReserveMemAddress(&va, SHARE_SIZE, 0, NULL, 0));
    CHECK(aclrtMapMem(va, SHARE_SIZE, 0, handle, 0));
    return va;
}

static void unmap_and_release(void *va)
{
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtReleaseMemAddress(va));
}

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

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static pid_t g_child; /* the running importer, 0 when there is none */

/* atexit in the exporter: the child never outlives a failed run. */
static void kill_child(void)
{
    if (g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
        g_child = 0;
    }
}

/* 1 and *status set when the child has exited (reaped), 0 while it runs. */
static int child_exited(int *status)
{
    if (g_child > 0 && waitpid(g_child, status, WNOHANG) == g_child) {
        g_child = 0;
        return 1;
    }
    return 0;
}

/* Waits up to timeout_ms for the child; its exit code, or -1 if it was killed or timed out. */
static int wait_child(int timeout_ms)
{
    int status = 0;
    for (int waited = 0; !child_exited(&status); waited += 10) {
        if (waited >= timeout_ms) {
            fprintf(stderr, "%s: the importer did not finish within %d ms; killing it\n", g_role, timeout_ms);
            kill_child();
            return -1;
        }
        sleep_ms(10);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* One datagram into buf within WAIT_MS; its length. If from != NULL the sender is stored there.
   If watch_child, fails as soon as the child exits. */
static size_t receive(int sock, void *buf, size_t cap, struct sockaddr_in *from, int watch_child)
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
        if (watch_child && child_exited(&status)) {
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

    void *va = map_handle(handle);
    expect(device_mismatches(va, SHARE_SIZE, export_byte) == 0, "all %zu bytes match the exporter's pattern",
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

/* FABRIC needs an A3 (super-pod) product: every A3 SoC name starts with "Ascend910_93". */
static void select_a3_product(void)
{
    const char *soc = getenv("ACLVMM_SOC");
    if (soc != NULL && strncmp(soc, "Ascend910_93", 12) == 0) {
        expect(1, "ACLVMM_SOC=%s is an A3 product already", soc);
        return;
    }
    char was[80];
    snprintf(was, sizeof(was), "%s%s", soc != NULL ? "was " : "was unset", soc != NULL ? soc : "");
    if (setenv("ACLVMM_SOC", A3_SOC, 1) != 0) {
        expect(0, "setenv: %s", strerror(errno));
    }
    expect(1, "set ACLVMM_SOC=%s for this run (%s): FABRIC handles need an A3 product", A3_SOC, was);
}

static int run_exporter(const char *self)
{
    atexit(kill_child);
    select_a3_product(); /* before aclInit: the SoC is read once, at initialisation */
    CHECK(aclInit(NULL));
    char soc[64];
    snprintf(soc, sizeof(soc), "%s", aclrtGetSocName() ? aclrtGetSocName() : "(none)");
    expect(strcmp(soc, getenv("ACLVMM_SOC")) == 0, "aclrtGetSocName() = %s", soc);
    CHECK(aclrtSetDevice(0));

    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.id = 0;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;

    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, SHARE_SIZE, &prop, 0));
    void *va = map_handle(handle);
    fill_device(va, SHARE_SIZE, export_byte);
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
    fflush(stdout);
    fflush(stderr);
    g_child = fork();
    if (g_child < 0) {
        expect(0, "fork: %s", strerror(errno));
    }
    if (g_child == 0) {
        /* Only async-signal-safe calls between fork and exec (the library runs threads). */
        execv("/proc/self/exe", argv); /* this very binary, whatever argv[0] says */
        execv(argv[0], argv);
        _exit(127);
    }
    expect(1, "started the importer as pid %d: %s importer %s", (int)g_child, self, portText);

    char hello[16];
    struct sockaddr_in peer;
    memset(&peer, 0, sizeof(peer));
    size_t n = receive(sock, hello, sizeof(hello), &peer, 1);
    expect(n == 5 && memcmp(hello, "HELLO", 5) == 0, "HELLO from 127.0.0.1:%d", ntohs(peer.sin_port));
    if (sendto(sock, &fabric, sizeof(fabric), 0, (const struct sockaddr *)&peer, sizeof(peer)) !=
        (ssize_t)sizeof(fabric)) {
        expect(0, "sendto: %s", strerror(errno));
    }
    expect(1, "sent the %zu-byte fabric handle as one datagram", sizeof(fabric));
    close(sock);

    int code = wait_child(WAIT_MS);
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
    if (argc == 3 && strcmp(argv[1], "importer") == 0) {
        return run_importer(atoi(argv[2]));
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s (no arguments; the importer is started by the program)\n", argv[0]);
        return 2;
    }
    return run_exporter(argv[0]);
}
