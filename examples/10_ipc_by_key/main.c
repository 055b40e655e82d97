/*
 * 10_ipc_by_key - two processes share an aclrtMalloc block through a 65-byte IPC key.
 *
 * One binary plays both roles. Started with no arguments it is the EXPORTER:
 *
 *   aclInit -> aclrtSetDevice(0) -> aclrtMalloc (2 MiB) -> aclrtMemcpy a pattern in
 *
 *   (1) pid validation on (ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT)
 *   -> aclrtIpcMemGetExportKey(flags DEFAULT)                          => a 65-byte key
 *   -> fork + exec itself as "importer whitelist <back-fd>"
 *        importer: aclrtDeviceGetBareTgid -> sends its pid on <back-fd>
 *   -> sends the 65 key bytes through the importer's stdin (a pipe)
 *        importer: aclrtIpcMemImportByKey -> 507899: not whitelisted yet -> says so on <back-fd>
 *   -> aclrtIpcMemSetImportPid(key, {pid}, 1) -> "go" on the pipe
 *        importer: aclrtIpcMemImportByKey -> its own device address for the same bytes
 *                  -> checks the pattern -> writes a reply pattern -> aclrtIpcMemClose -> exit 0
 *   -> reads the reply pattern from its own block -> aclrtIpcMemClose (importer first, exporter last)
 *
 *   (2) no pid validation (ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
 *   -> aclrtIpcMemGetExportKey(flags DISABLE_PID_VALIDATION) on the same block => a new key
 *   -> aclrtIpcMemSetImportPid on it -> 207006: such a key has no whitelist
 *   -> fork + exec itself as "importer open <back-fd>", sends the key at once
 *        importer: aclrtIpcMemImportByKey -> checks the reply pattern -> writes a third pattern
 *                  -> aclrtIpcMemClose -> exit 0
 *   -> reads the third pattern -> aclrtIpcMemClose -> aclrtFree -> aclFinalize.
 *
 * The importer is started before it is whitelisted, as the whitelist requires: a process may
 * import only if it was already running when its pid was added (a recycled pid inherits
 * nothing). Every wait is bounded (10 s); on any failure the exporter kills its child, exits 1.
 */
#define _GNU_SOURCE /* kill, nanosleep, setenv under -std=c11 */
#include "example_util.h" /* CHECK, expect (with g_role), fill_device, spawn_self, wait_child, ... */

#include <fcntl.h>
#include <poll.h>

#define SHARE_SIZE (2 * MIB) /* both sides know the size; real programs send it with the key */
#define KEY_LEN 65           /* a key is up to 64 characters and a NUL; all 65 bytes travel */
#define WAIT_MS 10000        /* bound on every wait for the other process */

/* The exporter writes pattern_byte, the first importer answers with reply_byte, the second
   with third_byte. */
static uint8_t third_byte(size_t i) { return (uint8_t)~pattern_byte(i); }

/* ---- pipes --------------------------------------------------------------------------------- */

static void pipe_cloexec(int fds[2])
{
    if (pipe(fds) != 0) {
        expect(0, "pipe: %s", strerror(errno));
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
}

/* Reads exactly n bytes from fd within WAIT_MS; fails the example on timeout or EOF. */
static void read_exactly(int fd, void *buf, size_t n, const char *what)
{
    size_t got = 0;
    for (int waited = 0; got < n; waited += 100) {
        if (waited >= WAIT_MS) {
            expect(0, "no %s within %d ms", what, WAIT_MS);
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) == 1) {
            ssize_t r = read(fd, (char *)buf + got, n - got);
            if (r <= 0) {
                expect(0, "the other process is gone (no %s)", what);
            }
            got += (size_t)r;
        }
    }
}

static void write_exactly(int fd, const void *buf, size_t n, const char *what)
{
    if (write(fd, buf, n) != (ssize_t)n) {
        expect(0, "cannot send %s: %s", what, strerror(errno));
    }
}

/* The first bytes of device memory at va, as hex ("01 84 07 ..."), for the log. */
static const char *head_hex(const void *va)
{
    static char text[8 * 3 + 4];
    uint8_t head[8];
    CHECK(aclrtMemcpy(head, sizeof(head), va, sizeof(head), ACL_MEMCPY_DEVICE_TO_HOST));
    char *p = text;
    for (size_t i = 0; i < sizeof(head); ++i) {
        p += sprintf(p, "%02x ", head[i]);
    }
    strcpy(p, "...");
    return text;
}

/* ---- the importer (started as "importer whitelist|open <back-fd>", the key on stdin) --------- */

static int run_importer(int whitelisted, int backFd)
{
    g_role = whitelisted ? "importer" : "importer (open key)";
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    if (whitelisted) {
        /* The pid the exporter must whitelist: the driver's (host-namespace) view of this process. */
        int32_t tgid = -1;
        CHECK(aclrtDeviceGetBareTgid(&tgid));
        write_exactly(backFd, &tgid, sizeof(tgid), "the pid");
        expect(1, "started; aclrtDeviceGetBareTgid says %d (getpid() %d); sent it to the exporter", (int)tgid,
               (int)getpid());
    }

    char key[KEY_LEN];
    read_exactly(STDIN_FILENO, key, sizeof(key), "key");
    expect(memchr(key, '\0', sizeof(key)) != NULL, "received the %d key bytes through the pipe: %s", KEY_LEN,
           key);

    void *va = NULL;
    if (whitelisted) {
        /* Not on the whitelist yet: the import is refused. */
        aclError rc = aclrtIpcMemImportByKey(&va, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT);
        expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR,
               "import before being whitelisted is refused with %d (expected 507899): %s", (int)rc, recent_msg());
        write_exactly(backFd, "r", 1, "the refusal");
        char go = 0;
        read_exactly(STDIN_FILENO, &go, 1, "go from the exporter");
        expect(go == 'g', "the exporter whitelisted this pid and said go");
    }

    CHECK(aclrtIpcMemImportByKey(&va, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT));
    aclrtPtrAttributes attr;
    memset(&attr, 0, sizeof(attr));
    CHECK(aclrtPointerGetAttributes(va, &attr));
    expect(va != NULL && attr.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && attr.location.id == 0,
           "imported the key at %p (its own device address: DEVICE %u, page size %llu)", va,
           (unsigned)attr.location.id, (unsigned long long)attr.pageSize);

    uint8_t (*want)(size_t) = whitelisted ? pattern_byte : reply_byte;
    uint8_t (*answer)(size_t) = whitelisted ? reply_byte : third_byte;
    expect(device_mismatches(va, SHARE_SIZE, want) == 0, "all %zu bytes match the %s: %s", (size_t)SHARE_SIZE,
           whitelisted ? "exporter's pattern" : "first importer's reply", head_hex(va));
    fill_device(va, SHARE_SIZE, answer);
    expect(device_mismatches(va, SHARE_SIZE, answer) == 0, "wrote its answer into the shared memory: %s",
           head_hex(va));

    CHECK(aclrtIpcMemClose(key)); /* importers close first; this unmaps the import */
    expect(1, "aclrtIpcMemClose: import closed, exiting 0");
    close(backFd);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}

/* ---- the exporter --------------------------------------------------------------------------- */

/* IPC keys exist on every product except EDGE (ACLVMM_SOC Ascend310B1 .. B4). Such a SoC chosen in
   the environment is replaced for this run, before aclInit; the importers inherit the change. */
static void select_ipc_product(void)
{
    const char *soc = getenv("ACLVMM_SOC");
    if (soc == NULL || strncmp(soc, "Ascend310B", 10) != 0) {
        return;
    }
    printf("ACLVMM_SOC=%s has no IPC keys: this run uses Ascend910B1\n", soc);
    setenv("ACLVMM_SOC", "Ascend910B1", 1);
}

/* Starts "importer <mode> <back-fd>": *toChild becomes its stdin, *fromChild its <back-fd>. */
static pid_t start_importer(const char *self, const char *mode, int *toChild, int *fromChild)
{
    int down[2], up[2];
    pipe_cloexec(down);
    pipe_cloexec(up);
    fcntl(up[1], F_SETFD, 0); /* the child's end of the back pipe survives exec */
    char backFd[16];
    snprintf(backFd, sizeof(backFd), "%d", up[1]);
    char *argv[] = {(char *)self, "importer", (char *)mode, backFd, NULL};
    pid_t pid = spawn_self(argv, down[0]);
    close(down[0]);
    close(up[1]);
    *toChild = down[1];
    *fromChild = up[0];
    expect(pid > 0, "started the importer as pid %d: %s importer %s %s", (int)pid, self, mode, backFd);
    return pid;
}

static int run_exporter(const char *self)
{
    atexit(kill_children);
    select_ipc_product();
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    void *dev = NULL;
    CHECK(aclrtMalloc(&dev, SHARE_SIZE, ACL_MEM_MALLOC_HUGE_FIRST));
    fill_device(dev, SHARE_SIZE, pattern_byte);
    expect(1, "aclrtMalloc: %zu bytes at %p on device 0, filled: %s", (size_t)SHARE_SIZE, dev, head_hex(dev));

    /* (1) Pid validation on: only whitelisted processes may import. */
    char key[KEY_LEN];
    memset(key, 0, sizeof(key));
    CHECK(aclrtIpcMemGetExportKey(dev, SHARE_SIZE, key, sizeof(key), ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT));
    expect(strlen(key) == KEY_LEN - 1, "(1) exported with flags DEFAULT (whitelist on): key %s", key);
    expect(stats_value("ipc_keys") == 1, "statistics: live.ipc_keys = 1");

    int toChild = -1, fromChild = -1;
    pid_t importer = start_importer(self, "whitelist", &toChild, &fromChild);
    int32_t pid = -1;
    read_exactly(fromChild, &pid, sizeof(pid), "pid from the importer");
    expect(pid == (int32_t)importer, "the importer runs and reports pid %d", (int)pid);

    write_exactly(toChild, key, sizeof(key), "the key");
    char refused = 0;
    read_exactly(fromChild, &refused, 1, "answer from the importer");
    expect(refused == 'r', "sent the key; the importer's import was refused (not whitelisted yet)");

    CHECK(aclrtIpcMemSetImportPid(key, &pid, 1));
    expect(1, "aclrtIpcMemSetImportPid(key, {%d}, 1): the running importer is whitelisted", (int)pid);
    write_exactly(toChild, "g", 1, "go");

    int code = wait_child(importer, WAIT_MS);
    expect(code == 0, "the importer exited with %d", code);
    close(toChild);
    close(fromChild);
    expect(device_mismatches(dev, SHARE_SIZE, reply_byte) == 0,
           "all %zu bytes of its own block now hold the importer's reply: %s", (size_t)SHARE_SIZE, head_hex(dev));
    CHECK(aclrtIpcMemClose(key)); /* the exporter closes last */
    expect(stats_value("ipc_keys") == 0, "aclrtIpcMemClose: key closed (live.ipc_keys = 0)");

    /* (2) No pid validation: any process that has the key may import it. */
    char openKey[KEY_LEN];
    memset(openKey, 0, sizeof(openKey));
    CHECK(aclrtIpcMemGetExportKey(dev, SHARE_SIZE, openKey, sizeof(openKey),
                                  ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION));
    expect(strlen(openKey) == KEY_LEN - 1 && strcmp(openKey, key) != 0,
           "(2) exported the same block with DISABLE_PID_VALIDATION: a new key %s", openKey);
    aclError rc = aclrtIpcMemSetImportPid(openKey, &pid, 1);
    expect(rc == ACL_ERROR_RT_NO_PERMISSION, "aclrtIpcMemSetImportPid on it returns %d (expected 207006): %s",
           (int)rc, recent_msg());

    importer = start_importer(self, "open", &toChild, &fromChild);
    write_exactly(toChild, openKey, sizeof(openKey), "the key");
    expect(1, "sent the key at once: no pid, no whitelist");
    code = wait_child(importer, WAIT_MS);
    expect(code == 0, "the importer exited with %d", code);
    close(toChild);
    close(fromChild);
    expect(device_mismatches(dev, SHARE_SIZE, third_byte) == 0,
           "all %zu bytes of its own block now hold the second importer's answer: %s", (size_t)SHARE_SIZE,
           head_hex(dev));
    CHECK(aclrtIpcMemClose(openKey));
    expect(stats_value("ipc_keys") == 0 && stats_value("ipc_imports") == 0,
           "aclrtIpcMemClose: key closed (live.ipc_keys = 0, live.ipc_imports = 0)");

    CHECK(aclrtFree(dev));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* expect() flushes each line itself */
    g_role = "exporter";                     /* the importer sets its own */
    if (argc == 4 && strcmp(argv[1], "importer") == 0 &&
        (strcmp(argv[2], "whitelist") == 0 || strcmp(argv[2], "open") == 0)) {
        return run_importer(strcmp(argv[2], "whitelist") == 0, atoi(argv[3]));
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s (no arguments; the importer is started by the program)\n", argv[0]);
        return 2;
    }
    return run_exporter(argv[0]);
}
