/*
 * smi_child: the process that test_smi.py watches with aclvmm-smi.
 *
 * It allocates known amounts of device memory and then obeys one-word commands on stdin,
 * answering each on stdout with the HBM bytes it holds on devices 0 and 1 as aclrtGetMemInfo
 * reports them (the numbers aclvmm-smi must show):
 *   start             device 0: 3 x 2 MiB aclrtMallocPhysical; device 1: 1 x 2 MiB
 *                     aclrtMallocPhysical + aclrtMalloc(1 MiB)     -> "ready <used0> <used1>"
 *   free              frees one handle on device 0 and the aclrtMalloc block on device 1
 *                                                                  -> "freed <used0> <used1>"
 *   finalize          frees the rest, resets both devices, aclFinalize -> "finalized"
 *   init              (after finalize) aclInit, 1 x 2 MiB on device 0  -> "again <used0> <used1>"
 *   churn N           N times: 2 MiB more on device 0, then freed again -> "churned <used0> <used1>"
 *   keys N            N IPC keys (any process may import them) of a new 2 MiB aclrtMalloc
 *                     block on device 0                             -> "keys <key> ..."
 *   hold KEY...       imports each KEY onto device 0, exports one key of its own (another new
 *                     2 MiB block), registers one host page and loads a kernel binary (its own
 *                     executable)                                   -> "held"
 *   release           closes every import and every key of its own, unregisters the host
 *                     pages, unloads the binaries, frees the blocks -> "released"
 *   fork              forks a child that, in the runtime it inherited, allocates 4 MiB, frees
 *                     the aclrtMalloc block and calls aclFinalize (none of which may show in this
 *                     process's file), then starts a runtime of its own with 2 MiB on device 0
 *                     and one registered host page
 *                     -> the child says "child <pid> <malloc> <free> <finalize> <init> <alloc>
 *                     <register>" (the codes) and waits for
 *   reap              the child exits (normally: its exit handlers run)  -> "reaped <status>"
 *   quit (or EOF)     exits 0 (without aclFinalize unless done: the exit handler tears down)
 * Any failing call prints "error <call> <code>" and exits 1. With SMI_CHILD_WAIT=1 in the
 * environment it first prints "waiting <pid>" and waits for a line "go" before aclInit, so that a
 * test can prepare the segment directory for this pid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <acl/acl.h>

#define MIB ((size_t)1 << 20)
#define KEY_BYTES 65 /* an IPC key and its NUL */
#define MAX_HELD 16

static void check(aclError rc, const char* what)
{
    if (rc != ACL_SUCCESS) {
        printf("error %s %d\n", what, (int)rc);
        fflush(stdout);
        exit(1);
    }
}

static aclError try_alloc_physical(int device, size_t size, aclrtDrvMemHandle* h)
{
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.id = (uint32_t)device;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    *h = NULL;
    return aclrtMallocPhysical(h, size, &prop, 0);
}

static aclrtDrvMemHandle alloc_physical(int device, size_t size)
{
    aclrtDrvMemHandle h = NULL;
    check(try_alloc_physical(device, size, &h), "aclrtMallocPhysical");
    return h;
}

static size_t used_on(int device)
{
    size_t free_bytes = 0, total = 0;
    check(aclrtSetDevice(device), "aclrtSetDevice");
    check(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), "aclrtGetMemInfo");
    check(aclrtResetDevice(device), "aclrtResetDevice"); /* balances the SetDevice above */
    return total - free_bytes;
}

static void report(const char* word)
{
    printf("%s %zu %zu\n", word, used_on(0), used_on(1));
    fflush(stdout);
}

/* What "keys" and "hold" made and "release" gives back. */
static char exported[MAX_HELD][KEY_BYTES];
static int n_exported;
static char imported[MAX_HELD][KEY_BYTES];
static int n_imported;
static void* blocks[MAX_HELD];
static int n_blocks;
static void* pages[MAX_HELD];
static int n_pages;
static aclrtBinHandle binaries[MAX_HELD];
static int n_binaries;

/* A new 2 MiB device block on the current device, exported `count` times with `flags`. */
static void export_keys(int count, uint64_t flags)
{
    void* block = NULL;
    if (n_blocks == MAX_HELD || n_exported + count > MAX_HELD) check(ACL_ERROR_INVALID_PARAM, "too-many");
    check(aclrtMalloc(&block, 2 * MIB, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc");
    blocks[n_blocks++] = block;
    for (int i = 0; i < count; ++i) {
        check(aclrtIpcMemGetExportKey(block, 2 * MIB, exported[n_exported], KEY_BYTES, flags),
              "aclrtIpcMemGetExportKey");
        ++n_exported;
    }
}

/* One host page registered for the current device: its aclError. */
static aclError register_page(void)
{
    void* dev = NULL;
    void* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED || n_pages == MAX_HELD) return ACL_ERROR_INVALID_PARAM;
    const aclError rc = aclrtHostRegister(page, 4096, ACL_HOST_REGISTER_MAPPED, &dev);
    if (rc == ACL_SUCCESS) pages[n_pages++] = page;
    return rc;
}

static void hold(char* keys)
{
    check(aclrtSetDevice(0), "aclrtSetDevice");
    for (char* key = strtok(keys, " "); key; key = strtok(NULL, " ")) {
        void* ptr = NULL;
        if (n_imported == MAX_HELD || strlen(key) >= KEY_BYTES) check(ACL_ERROR_INVALID_PARAM, "key");
        check(aclrtIpcMemImportByKey(&ptr, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT), "aclrtIpcMemImportByKey");
        strcpy(imported[n_imported++], key);
    }
    export_keys(1, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT);
    check(register_page(), "aclrtHostRegister");
    if (n_binaries == MAX_HELD) check(ACL_ERROR_INVALID_PARAM, "too-many");
    check(aclrtBinaryLoadFromFile("/proc/self/exe", NULL, &binaries[n_binaries]), "aclrtBinaryLoadFromFile");
    ++n_binaries;
}

static void release(void)
{
    check(aclrtSetDevice(0), "aclrtSetDevice");
    for (; n_imported > 0; --n_imported) check(aclrtIpcMemClose(imported[n_imported - 1]), "aclrtIpcMemClose");
    for (; n_exported > 0; --n_exported) check(aclrtIpcMemClose(exported[n_exported - 1]), "aclrtIpcMemClose");
    for (; n_pages > 0; --n_pages) check(aclrtHostUnregister(pages[n_pages - 1]), "aclrtHostUnregister");
    for (; n_binaries > 0; --n_binaries) check(aclrtBinaryUnLoad(binaries[n_binaries - 1]), "aclrtBinaryUnLoad");
    for (; n_blocks > 0; --n_blocks) check(aclrtFree(blocks[n_blocks - 1]), "aclrtFree");
}

/* The forked child of "fork" (see the top): never returns. */
static void forked_child(void* block, int freed, int go)
{
    void* more = NULL;
    const aclError m = aclrtMalloc(&more, 4 * MIB, ACL_MEM_MALLOC_HUGE_FIRST);
    const aclError f = freed ? 0 : aclrtFree(block);
    const aclError fin = aclFinalize();
    const aclError init = aclInit(NULL);
    aclError alloc = init;
    aclrtDrvMemHandle h = NULL;
    if (init == ACL_SUCCESS) alloc = aclrtSetDevice(0);
    if (alloc == ACL_SUCCESS) alloc = try_alloc_physical(0, 2 * MIB, &h);
    n_pages = 0; /* the parent's registrations are not this runtime's */
    const aclError reg = alloc == ACL_SUCCESS ? register_page() : alloc;
    printf("child %d %d %d %d %d %d %d\n", (int)getpid(), (int)m, (int)f, (int)fin, (int)init, (int)alloc,
           (int)reg);
    fflush(stdout);
    char c;
    while (read(go, &c, 1) < 0) {
    }
    exit(0);
}

int main(void)
{
    const char* wait = getenv("SMI_CHILD_WAIT");
    if (wait && strcmp(wait, "1") == 0) {
        char go[16];
        printf("waiting %d\n", (int)getpid());
        fflush(stdout);
        if (!fgets(go, sizeof go, stdin) || strcmp(go, "go\n") != 0) return 1;
    }
    check(aclInit(NULL), "aclInit");
    check(aclrtSetDevice(0), "aclrtSetDevice");
    check(aclrtSetDevice(1), "aclrtSetDevice");
    aclrtDrvMemHandle dev0[3];
    for (int i = 0; i < 3; ++i) dev0[i] = alloc_physical(0, 2 * MIB);
    aclrtDrvMemHandle dev1 = alloc_physical(1, 2 * MIB);
    void* block = NULL; /* aclrtMalloc allocates on the current device: 1 */
    check(aclrtMalloc(&block, MIB, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    report("ready");

    char line[64 + MAX_HELD * KEY_BYTES];
    int freed = 0;
    pid_t child = -1;
    int child_go = -1;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "free") == 0 && !freed) {
            check(aclrtFreePhysical(dev0[2]), "aclrtFreePhysical");
            check(aclrtFree(block), "aclrtFree");
            freed = 1;
            report("freed");
        } else if (strcmp(line, "finalize") == 0) {
            for (int i = 0; i < (freed ? 2 : 3); ++i) check(aclrtFreePhysical(dev0[i]), "aclrtFreePhysical");
            check(aclrtFreePhysical(dev1), "aclrtFreePhysical");
            if (!freed) check(aclrtFree(block), "aclrtFree");
            check(aclrtResetDevice(1), "aclrtResetDevice");
            check(aclrtResetDevice(0), "aclrtResetDevice");
            check(aclFinalize(), "aclFinalize");
            printf("finalized\n");
            fflush(stdout);
        } else if (strcmp(line, "init") == 0) {
            check(aclInit(NULL), "aclInit");
            check(aclrtSetDevice(0), "aclrtSetDevice");
            (void)alloc_physical(0, 2 * MIB); /* held until exit */
            report("again");
        } else if (strncmp(line, "churn ", 6) == 0) {
            const int n = atoi(line + 6);
            check(aclrtSetDevice(0), "aclrtSetDevice");
            for (int i = 0; i < n; ++i) check(aclrtFreePhysical(alloc_physical(0, 2 * MIB)), "aclrtFreePhysical");
            report("churned");
        } else if (strncmp(line, "keys ", 5) == 0) {
            check(aclrtSetDevice(0), "aclrtSetDevice");
            const int first = n_exported;
            export_keys(atoi(line + 5), ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
            printf("keys");
            for (int i = first; i < n_exported; ++i) printf(" %s", exported[i]);
            printf("\n");
            fflush(stdout);
        } else if (strncmp(line, "hold", 4) == 0 && (line[4] == ' ' || line[4] == '\0')) {
            hold(line + 4);
            printf("held\n");
            fflush(stdout);
        } else if (strcmp(line, "release") == 0) {
            release();
            printf("released\n");
            fflush(stdout);
        } else if (strcmp(line, "fork") == 0 && child < 0) {
            int fds[2];
            if (pipe(fds) != 0) return 1;
            fflush(stdout);
            child = fork();
            if (child == 0) {
                close(fds[1]);
                forked_child(block, freed, fds[0]);
            }
            close(fds[0]);
            child_go = fds[1];
        } else if (strcmp(line, "reap") == 0 && child > 0) {
            int status = 0;
            close(child_go); /* EOF: the child exits */
            waitpid(child, &status, 0);
            printf("reaped %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            fflush(stdout);
            child = -1;
        } else if (strcmp(line, "quit") == 0) {
            return 0;
        } else {
            printf("error unknown-command %s\n", line);
            fflush(stdout);
        }
    }
    return 0;
}
