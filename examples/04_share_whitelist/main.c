/*
 * 04_share_whitelist - two processes share device memory; only whitelisted pids may import it.
 *
 * One binary plays every role. Started with no arguments it is the EXPORTER:
 *
 *   aclInit -> aclrtSetDevice(0) -> aclrtMallocPhysical (2 MiB) -> map -> aclrtMemcpy a pattern in
 *   -> aclrtMemExportToShareableHandle(flags 0: pid validation on)      => shareable handle (u64)
 *   -> fork + exec itself as "importer <handle-hex> <pidfile>"
 *        importer: aclrtDeviceGetBareTgid -> writes its pid into <pidfile> -> waits for "go"
 *   -> reads the pid from the file -> aclrtMemSetPidToShareableHandle(handle, &pid, 1)
 *   -> "go" (one byte on a pipe that is the importer's stdin)
 *        importer: aclrtMemImportFromShareableHandle(handle, 0) -> map -> verify the pattern
 *                  -> write a reply pattern into the shared memory -> unmap, free -> exit 0
 *   -> reads the reply pattern through its own mapping
 *   -> fork + exec itself as "intruder <handle-hex>": a process that is not on the whitelist;
 *        its import is refused with 507899
 *   -> teardown, aclFinalize.
 *
 * This is the vendor sample's pattern: the importer finds its pid with aclrtDeviceGetBareTgid and
 * hands it to the exporter through a file, the exporter whitelists it, then the importer imports.
 * Every wait is bounded (10 s); on any failure the exporter kills its children and exits 1.
 */
#define _GNU_SOURCE /* mkdtemp, kill, nanosleep under -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <aclvmm/aclvmm.h>

#define MIB ((size_t)1 << 20)
#define SHARE_SIZE (2 * MIB) /* both sides know the size; real programs send it with the handle */
#define WAIT_MS 10000        /* bound on every wait for the other process */

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
    fflush(out); /* one write per line: lines of concurrent processes do not mix */
    if (!cond) {
        exit(1);
    }
}

static const char *recent_msg(void)
{
    const char *msg = aclGetRecentErrMsg();
    return msg ? msg : "(no message)";
}

/* ---- the bytes each side writes ------------------------------------------------------------ */

static uint8_t export_byte(size_t i) { return (uint8_t)((i * 131u + (i >> 12) * 7u + 1u) & 0xFFu); }
static uint8_t reply_byte(size_t i) { return (uint8_t)((i * 29u + (i >> 11) + 0xA5u) & 0xFFu); }

/* Copy pattern(i) for every byte into device memory at va. */
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

/* Reserve SHARE_SIZE bytes of virtual addresses and map the handle at their start. */
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

/* One number of the statistics JSON (aclvmmStatsJson), e.g. "exports"; -1 if absent. */
static long stats_value(const char *key)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\"", key);
    const char *json = aclvmmStatsJson();
    const char *p = json ? strstr(json, quoted) : NULL;
    if (p == NULL) {
        return -1;
    }
    p += strlen(quoted);
    while (*p == ' ' || *p == ':') {
        ++p;
    }
    return strtol(p, NULL, 10);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- child processes (exporter side) ------------------------------------------------------- */

#define MAX_CHILDREN 4
static pid_t g_children[MAX_CHILDREN]; /* running children; 0 = free slot */
static char g_dir[64];                 /* the temporary directory, "" when there is none */
static char g_pidfile[128];

/* atexit in the exporter: no child outlives a failed run, no file is left behind. */
static void cleanup(void)
{
    for (int i = 0; i < MAX_CHILDREN; ++i) {
        if (g_children[i] > 0) {
            kill(g_children[i], SIGKILL);
            waitpid(g_children[i], NULL, 0);
            g_children[i] = 0;
        }
    }
    if (g_dir[0] != '\0') {
        char tmp[160];
        snprintf(tmp, sizeof(tmp), "%s.tmp", g_pidfile);
        unlink(tmp);
        unlink(g_pidfile);
        rmdir(g_dir);
        g_dir[0] = '\0';
    }
}

/* fork + exec this program with argv; stdin_fd (if >= 0) becomes the child's standard input. */
static pid_t spawn_self(char *const argv[], int stdin_fd)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        expect(0, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec (the library runs threads). */
        if (stdin_fd >= 0 && stdin_fd != STDIN_FILENO) {
            dup2(stdin_fd, STDIN_FILENO);
        }
        execv("/proc/self/exe", argv); /* this very binary, whatever argv[0] says */
        execv(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < MAX_CHILDREN; ++i) {
        if (g_children[i] == 0) {
            g_children[i] = pid;
            break;
        }
    }
    return pid;
}

static void forget_child(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; ++i) {
        if (g_children[i] == pid) {
            g_children[i] = 0;
        }
    }
}

/* 1 and *status set when the child has exited (reaped), 0 while it runs. */
static int child_exited(pid_t pid, int *status)
{
    if (waitpid(pid, status, WNOHANG) == pid) {
        forget_child(pid);
        return 1;
    }
    return 0;
}

/* Waits up to timeout_ms for the child; its exit code, or -1 if it was killed or timed out. */
static int wait_child(pid_t pid, int timeout_ms)
{
    int status = 0;
    for (int waited = 0; !child_exited(pid, &status); waited += 10) {
        if (waited >= timeout_ms) {
            fprintf(stderr, "%s: child %d did not finish within %d ms; killing it\n", g_role, (int)pid,
                    timeout_ms);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            forget_child(pid);
            return -1;
        }
        sleep_ms(10);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Waits for the importer's pid file; the pid in it. Fails if the child exits first. */
static int32_t wait_for_pidfile(const char *path, pid_t child)
{
    for (int waited = 0; waited < WAIT_MS; waited += 10) {
        FILE *f = fopen(path, "r"); /* appears complete: the importer renames it into place */
        if (f != NULL) {
            long pid = 0;
            int n = fscanf(f, "%ld", &pid);
            fclose(f);
            expect(n == 1 && pid > 0, "read pid %ld from %s", pid, path);
            return (int32_t)pid;
        }
        int status = 0;
        if (child_exited(child, &status)) {
            expect(0, "the importer exited (status 0x%x) before writing %s", status, path);
        }
        sleep_ms(10);
    }
    expect(0, "no pid file %s after %d ms", path, WAIT_MS);
    return -1;
}

/* ---- the importer (a separate process, started as "importer <handle-hex> <pidfile>") ---- */

static int run_importer(uint64_t token, const char *pidfile)
{
    g_role = "importer";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    /* The pid the exporter must whitelist: the driver's (host-namespace) view of this process. */
    int32_t tgid = -1;
    CHECK(aclrtDeviceGetBareTgid(&tgid));
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "%s.tmp", pidfile);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        expect(0, "cannot create %s: %s", tmp, strerror(errno));
    }
    fprintf(f, "%d\n", (int)tgid);
    expect(fclose(f) == 0 && rename(tmp, pidfile) == 0,
           "aclrtDeviceGetBareTgid says %d (getpid() %d); wrote it to the pid file", (int)tgid,
           (int)getpid());

    /* Wait (bounded) for the exporter's "go": one byte on stdin. EOF means the exporter is gone. */
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    char go = 0;
    expect(poll(&p, 1, WAIT_MS) == 1 && read(STDIN_FILENO, &go, 1) == 1 && go == 'g',
           "the exporter whitelisted this pid and said go");

    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMemImportFromShareableHandle(token, 0, &handle));
    expect(handle != NULL, "imported shareable handle 0x%016" PRIx64 " onto device 0", token);

    void *va = map_handle(handle);
    expect(device_mismatches(va, SHARE_SIZE, export_byte) == 0,
           "all %zu bytes match the exporter's pattern", (size_t)SHARE_SIZE);
    fill_device(va, SHARE_SIZE, reply_byte);
    expect(device_mismatches(va, SHARE_SIZE, reply_byte) == 0,
           "wrote the reply pattern into the shared memory");

    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "freed the imported handle, exiting 0");
    return 0;
}

/* ---- the intruder: never whitelisted, its import must be refused ------------------------ */

static int run_intruder(uint64_t token)
{
    g_role = "intruder";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    int32_t tgid = -1;
    CHECK(aclrtDeviceGetBareTgid(&tgid));
    aclrtDrvMemHandle handle = NULL;
    aclError rc = aclrtMemImportFromShareableHandle(token, 0, &handle);
    expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR && handle == NULL,
           "pid %d is not whitelisted: import refused with %d (expected 507899): %s", (int)tgid, (int)rc,
           recent_msg());
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

/* ---- the exporter --------------------------------------------------------------------- */

static int run_exporter(const char *self)
{
    atexit(cleanup);
    snprintf(g_dir, sizeof(g_dir), "/tmp/aclvmm-ex04-XXXXXX");
    if (mkdtemp(g_dir) == NULL) {
        g_dir[0] = '\0';
        expect(0, "mkdtemp: %s", strerror(errno));
    }
    snprintf(g_pidfile, sizeof(g_pidfile), "%s/importer.pid", g_dir);

    CHECK(aclInit(NULL));
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

    uint64_t token = 0;
    CHECK(aclrtMemExportToShareableHandle(handle, ACL_MEM_HANDLE_TYPE_NONE, 0, &token));
    expect(token != 0 && (token >> 40) == 0,
           "exported with flags 0: shareable handle 0x%016" PRIx64 " (share id 0x%08x, device %u)", token,
           (unsigned)(token & 0xFFFFFFFFu), (unsigned)((token >> 32) & 0xFFu));
    expect(stats_value("exports") == 1, "statistics: live.exports = 1");

    /* A process cannot import its own export onto the device the memory is on. */
    aclrtDrvMemHandle own = NULL;
    aclError rc = aclrtMemImportFromShareableHandle(token, 0, &own);
    expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR,
           "importing its own export onto device 0 is refused with %d (expected 507899): %s", (int)rc,
           recent_msg());

    /* The importer: started now, whitelisted once it has told us its pid. */
    char tokenHex[32];
    snprintf(tokenHex, sizeof(tokenHex), "%016" PRIx64, token);
    int goPipe[2];
    if (pipe(goPipe) != 0) {
        expect(0, "pipe: %s", strerror(errno));
    }
    fcntl(goPipe[1], F_SETFD, FD_CLOEXEC); /* our end stays here; later children must not hold it */
    char *importerArgv[] = {(char *)self, "importer", tokenHex, g_pidfile, NULL};
    pid_t importer = spawn_self(importerArgv, goPipe[0]);
    close(goPipe[0]);
    expect(importer > 0, "started the importer as pid %d: %s importer %s %s", (int)importer, self,
           tokenHex, g_pidfile);

    int32_t pid = wait_for_pidfile(g_pidfile, importer);
    expect(pid == (int32_t)importer, "the pid in the file is the importer's (%d)", (int)pid);
    CHECK(aclrtMemSetPidToShareableHandle(token, &pid, 1));
    expect(1, "aclrtMemSetPidToShareableHandle(handle, {%d}, 1): the importer is whitelisted", (int)pid);
    if (write(goPipe[1], "g", 1) != 1) {
        expect(0, "cannot signal the importer: %s", strerror(errno));
    }
    close(goPipe[1]);

    int code = wait_child(importer, WAIT_MS);
    expect(code == 0, "the importer exited with %d", code);
    expect(device_mismatches(va, SHARE_SIZE, reply_byte) == 0,
           "all %zu bytes now hold the importer's reply pattern (same physical memory)", (size_t)SHARE_SIZE);

    /* A process that is not on the whitelist: refused, whatever it does. */
    char *intruderArgv[] = {(char *)self, "intruder", tokenHex, NULL};
    pid_t intruder = spawn_self(intruderArgv, -1);
    code = wait_child(intruder, WAIT_MS);
    expect(code == 0, "the intruder (pid %d) saw its import refused and exited with %d", (int)intruder, code);
    expect(stats_value("imports_denied") == 1, "statistics: ipc.imports_denied = 1");

    /* Teardown. Freeing the last reference of the handle ends its export. */
    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle));
    expect(stats_value("exports") == 0, "freed the handle: its export ended (live.exports = 0)");
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* expect() flushes each line itself */
    if (argc == 4 && strcmp(argv[1], "importer") == 0) {
        return run_importer(strtoull(argv[2], NULL, 16), argv[3]);
    }
    if (argc == 3 && strcmp(argv[1], "intruder") == 0) {
        return run_intruder(strtoull(argv[2], NULL, 16));
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s (no arguments; the other roles are started by the program)\n", argv[0]);
        return 2;
    }
    return run_exporter(argv[0]);
}
