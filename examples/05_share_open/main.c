/*
 * 05_share_open - one exporter, three importers at once, no pid whitelist.
 *
 * Exporting with ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION lets any process import the handle:
 * this is how torch_npu, Mooncake and SGLang share device memory between processes. One binary
 * plays every role. Started with no arguments it is the EXPORTER:
 *
 *   aclInit -> aclrtSetDevice(0) -> aclrtMallocPhysical (2 MiB) -> map -> aclrtMemcpy a pattern in
 *   -> aclrtMemExportToShareableHandle(flags DISABLE_PID_VALIDATION)     => shareable handle (u64)
 *   -> fork + exec itself 3 times as "importer <handle-hex> <n> <ack-fd>"; each importer:
 *        aclrtMemImportFromShareableHandle(handle, 0) -> map -> verify the pattern
 *        -> one byte on <ack-fd> -> waits for "again" on its stdin (a pipe from the exporter)
 *   -> aclrtMemSetPidToShareableHandle on this handle: 207006 (there is no whitelist to set)
 *   -> aclrtFreePhysical + aclrtUnmapMem: the exporter lets go of the memory; the export ends
 *   -> "late <handle-hex>": a process that imports after that gets 107017
 *   -> tells the importers to read again: each still has all its bytes
 *   -> aclFinalize.
 *
 * Every wait is bounded (10 s); on any failure the exporter kills its children and exits 1.
 */
#define _GNU_SOURCE /* kill, nanosleep under -std=c11 */
#include "example_util.h" /* CHECK, expect (with g_role), fill_device, spawn_self, wait_child, ... */

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>

#define SHARE_SIZE (2 * MIB) /* both sides know the size; real programs send it with the handle */
#define WAIT_MS 10000        /* bound on every wait for another process */
#define IMPORTERS 3
_Static_assert(IMPORTERS + 1 <= MAX_CHILDREN, "spawn_self tracks the importers and the late one");

static char g_roleText[32]; /* g_role of an importer: "importer <n>" */

/* ---- child processes (exporter side) ------------------------------------------------------- */

static void pipe_cloexec(int fds[2])
{
    if (pipe(fds) != 0) {
        expect(0, "pipe: %s", strerror(errno));
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
}

/* ---- an importer (a separate process, started as "importer <handle-hex> <n> <ack-fd>") ---- */

static int run_importer(uint64_t token, int n, int ackFd)
{
    snprintf(g_roleText, sizeof(g_roleText), "importer %d", n);
    g_role = g_roleText;
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMemImportFromShareableHandle(token, 0, &handle));
    void *va = map_handle(handle, SHARE_SIZE);
    expect(device_mismatches(va, SHARE_SIZE, pattern_byte) == 0,
           "pid %d imported 0x%016" PRIx64 " without being whitelisted; all %zu bytes match", (int)getpid(),
           token, (size_t)SHARE_SIZE);

    /* Tell the exporter, then wait (bounded) for "again"; EOF means the exporter is gone. */
    char ack = (char)('0' + n);
    if (write(ackFd, &ack, 1) != 1) {
        expect(0, "cannot reach the exporter: %s", strerror(errno));
    }
    close(ackFd);
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    char again = 0;
    if (poll(&p, 1, WAIT_MS) != 1 || read(STDIN_FILENO, &again, 1) != 1 || again != 'a') {
        expect(0, "no word from the exporter within %d ms", WAIT_MS);
    }
    expect(device_mismatches(va, SHARE_SIZE, pattern_byte) == 0,
           "after the exporter freed its handle, all %zu bytes still match", (size_t)SHARE_SIZE);

    unmap_and_release(va);
    CHECK(aclrtFreePhysical(handle)); /* the last holder: now the memory is gone */
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

/* ---- a late importer: the export has ended ------------------------------------------------- */

static int run_late(uint64_t token)
{
    g_role = "late importer";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtDrvMemHandle handle = NULL;
    aclError rc = aclrtMemImportFromShareableHandle(token, 0, &handle);
    expect(rc == ACL_ERROR_RT_INVALID_HANDLE && handle == NULL,
           "import after the export ended is refused with %d (expected 107017): %s", (int)rc, recent_msg());
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

/* ---- the exporter --------------------------------------------------------------------- */

/* Waits for one ack byte from each importer; fails early if one of them exits. */
static void wait_acks(int ackFd, const pid_t *importers)
{
    int got = 0;
    for (int waited = 0; got < IMPORTERS; waited += 100) {
        if (waited >= WAIT_MS) {
            expect(0, "only %d of %d importers reported within %d ms", got, IMPORTERS, WAIT_MS);
        }
        struct pollfd p = {ackFd, POLLIN, 0};
        char ack[IMPORTERS];
        if (poll(&p, 1, 100) == 1) {
            ssize_t r = read(ackFd, ack, sizeof(ack));
            got += r > 0 ? (int)r : 0;
        }
        for (int i = 0; i < IMPORTERS; ++i) {
            int status = 0;
            if (got < IMPORTERS && child_exited(importers[i], &status)) {
                expect(0, "importer %d exited early (status 0x%x)", i, status);
            }
        }
    }
}

static int run_exporter(const char *self)
{
    atexit(kill_children);
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    aclrtPhysicalMemProp prop = device_prop();
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, SHARE_SIZE, &prop, 0));
    void *va = map_handle(handle, SHARE_SIZE);
    fill_device(va, SHARE_SIZE, pattern_byte);
    expect(1, "allocated, mapped and filled %zu bytes on device 0", (size_t)SHARE_SIZE);

    uint64_t token = 0;
    CHECK(aclrtMemExportToShareableHandle(handle, ACL_MEM_HANDLE_TYPE_NONE,
                                          ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &token));
    expect(token != 0, "exported with DISABLE_PID_VALIDATION: shareable handle 0x%016" PRIx64, token);

    /* Three importers at once. Each gets its own "again" pipe as stdin and shares the ack pipe. */
    char tokenHex[32];
    snprintf(tokenHex, sizeof(tokenHex), "%016" PRIx64, token);
    int ack[2];
    pipe_cloexec(ack);
    fcntl(ack[1], F_SETFD, 0); /* the write end goes to the importers */
    char ackFdText[16];
    snprintf(ackFdText, sizeof(ackFdText), "%d", ack[1]);

    pid_t importers[IMPORTERS];
    int again[IMPORTERS];
    for (int i = 0; i < IMPORTERS; ++i) {
        int cmd[2];
        pipe_cloexec(cmd);
        char index[8];
        snprintf(index, sizeof(index), "%d", i);
        char *argv[] = {(char *)self, "importer", tokenHex, index, ackFdText, NULL};
        importers[i] = spawn_self(argv, cmd[0]);
        close(cmd[0]);
        again[i] = cmd[1];
    }
    close(ack[1]);
    expect(1, "started %d importers: pids %d, %d, %d", IMPORTERS, (int)importers[0], (int)importers[1],
           (int)importers[2]);

    /* There is no whitelist on this handle, so there is none to add to. */
    int32_t pids[IMPORTERS];
    for (int i = 0; i < IMPORTERS; ++i) {
        pids[i] = (int32_t)importers[i];
    }
    aclError rc = aclrtMemSetPidToShareableHandle(token, pids, IMPORTERS);
    expect(rc == ACL_ERROR_RT_NO_PERMISSION,
           "aclrtMemSetPidToShareableHandle on it is refused with %d (expected 207006): %s", (int)rc,
           recent_msg());

    wait_acks(ack[0], importers);
    close(ack[0]);
    expect(1, "all %d importers verified the bytes", IMPORTERS);
    expect(stats_value("exports") == 1 && stats_value("imports_denied") == 0,
           "statistics: live.exports = 1, ipc.imports_denied = 0");

    /* Let go: free first (the mapping keeps the handle alive), then unmap (the last reference). */
    CHECK(aclrtFreePhysical(handle));
    expect(stats_value("exports") == 1, "aclrtFreePhysical while mapped: release deferred, still exported");
    unmap_and_release(va);
    expect(stats_value("exports") == 0 && stats_value("physical_handles") == 0,
           "aclrtUnmapMem dropped the last reference: no handle, export ended");

    char *lateArgv[] = {(char *)self, "late", tokenHex, NULL};
    pid_t late = spawn_self(lateArgv, -1);
    int code = wait_child(late, WAIT_MS);
    expect(code == 0, "the late importer exited with %d", code);

    /* The importers still hold the memory: they read it again. */
    for (int i = 0; i < IMPORTERS; ++i) {
        if (write(again[i], "a", 1) != 1) {
            expect(0, "cannot signal importer %d: %s", i, strerror(errno));
        }
        close(again[i]);
    }
    for (int i = 0; i < IMPORTERS; ++i) {
        code = wait_child(importers[i], WAIT_MS);
        expect(code == 0, "importer %d exited with %d", i, code);
    }

    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* expect() flushes each line itself */
    g_role = "exporter";                     /* the other roles set their own */
    if (argc == 5 && strcmp(argv[1], "importer") == 0) {
        return run_importer(strtoull(argv[2], NULL, 16), atoi(argv[3]), atoi(argv[4]));
    }
    if (argc == 3 && strcmp(argv[1], "late") == 0) {
        return run_late(strtoull(argv[2], NULL, 16));
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s (no arguments; the other roles are started by the program)\n", argv[0]);
        return 2;
    }
    return run_exporter(argv[0]);
}
