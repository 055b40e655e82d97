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
#include "example_util.h" /* CHECK, expect (with g_role), fill_device, spawn_self, wait_child, ... */

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>

#define SHARE_SIZE (2 * MIB) /* both sides know the size; real programs send it with the handle */
#define WAIT_MS 10000        /* bound on every wait for the other process */

/* The exporter fills the shared memory with pattern_byte, the importer answers with reply_byte. */

/* ---- child processes (exporter side) ------------------------------------------------------- */

static char g_dir[64]; /* the temporary directory, "" when there is none */
static char g_pidfile[128];

/* atexit in the exporter: no child outlives a failed run, no file is left behind. */
static void cleanup(void)
{
    kill_children();
    if (g_dir[0] != '\0') {
        char tmp[160];
        snprintf(tmp, sizeof(tmp), "%s.tmp", g_pidfile);
        unlink(tmp);
        unlink(g_pidfile);
        rmdir(g_dir);
        g_dir[0] = '\0';
    }
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

    void *va = map_handle(handle, SHARE_SIZE);
    expect(device_mismatches(va, SHARE_SIZE, pattern_byte) == 0,
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

    aclrtPhysicalMemProp prop = device_prop();
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, SHARE_SIZE, &prop, 0));
    void *va = map_handle(handle, SHARE_SIZE);
    fill_device(va, SHARE_SIZE, pattern_byte);
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
    g_role = "exporter";                     /* the other roles set their own */
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
