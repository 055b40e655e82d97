/*
 * example_util.h - the helpers every example shares (header-only C11).
 *
 * Include it before any system header: the examples build as strict C11, and the process
 * helpers below need POSIX.1-2008 (an example that defines _GNU_SOURCE or _POSIX_C_SOURCE
 * itself does so before this include).
 *
 *   checks      CHECK(call), expect(cond, fmt, ...), recent_msg(), xmalloc(n)
 *   bytes       pattern_byte / reply_byte, count_mismatches, pattern_mismatches, count_nonzero
 *   device      device_prop(), hbm_free(), hbm_used(), fill_device, device_mismatches,
 *               map_handle, unmap_and_release, stats_value(key)
 *   managed     managed_stats / stats_now / stats_delta, fault_tracking(), location(),
 *               select_a2_product(), struct kernel_args + add_one_kernel
 *   processes   sleep_ms, spawn_self, child_exited, wait_child, kill_children
 *
 * g_role names the process in multi-process examples ("exporter", "importer 2", ...): when set,
 * every line that expect(), CHECK and the mismatch reports print names it after [OK]/[FAIL].
 */
#ifndef ACLVMM_EXAMPLE_UTIL_H
#define ACLVMM_EXAMPLE_UTIL_H

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* fork, kill, nanosleep, setenv under -std=c11 */
#endif

#include <errno.h>
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

/* ---- checks -------------------------------------------------------------------------------- */

static const char *g_role = NULL; /* prefix of every line this process prints; NULL: none */

/* "<role>: " when g_role is set, else "" (two strings for one printf: "%s%s"). */
#define ROLE_PREFIX_ g_role ? g_role : "", g_role ? ": " : ""

/* Run an ACL call; on failure print the call, its code and the library's message, exit 1. */
#define CHECK(call)                                                  \
    do {                                                             \
        aclError check_rc_ = (call);                                 \
        if (check_rc_ != ACL_SUCCESS) {                              \
            check_failed_(__FILE__, __LINE__, #call, check_rc_);     \
        }                                                            \
    } while (0)

static inline const char *recent_msg(void)
{
    const char *msg = aclGetRecentErrMsg();
    return msg ? msg : "(no message)";
}

static inline void check_failed_(const char *file, int line, const char *call, aclError rc)
{
    fprintf(stderr, "[FAIL] %s%s%s:%d: %s returned %d: %s\n", ROLE_PREFIX_, file, line, call, (int)rc,
            recent_msg());
    exit(1);
}

/* Print "[OK] <role>: <what>" when cond holds, otherwise "[FAIL] <role>: <what>" and exit 1. */
static inline void expect(int cond, const char *fmt, ...)
{
    FILE *out = cond ? stdout : stderr;
    va_list ap;
    va_start(ap, fmt);
    fprintf(out, "%s %s%s", cond ? "[OK]" : "[FAIL]", ROLE_PREFIX_);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
    fflush(out); /* one write per line: lines of concurrent processes do not mix */
    if (!cond) {
        exit(1);
    }
}

/* malloc that fails the example ("[FAIL] out of host memory") instead of returning NULL. */
static inline void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        expect(0, "out of host memory");
    }
    return p;
}

/* ---- bytes --------------------------------------------------------------------------------- */

static inline uint8_t pattern_byte(size_t i) { return (uint8_t)((i * 131u + (i >> 12) * 7u + 1u) & 0xFFu); }
/* A second pattern, for what another process writes back. */
static inline uint8_t reply_byte(size_t i) { return (uint8_t)((i * 29u + (i >> 11) + 0xA5u) & 0xFFu); }

static inline void report_mismatch_(size_t offset, uint8_t got, uint8_t want)
{
    fprintf(stderr, "%s%sfirst mismatch at offset %zu: got 0x%02x, expected 0x%02x\n", ROLE_PREFIX_, offset,
            got, want);
}

/* Number of differing bytes; the first difference is printed to stderr. */
static inline size_t count_mismatches(const uint8_t *got, const uint8_t *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (got[i] != want[i] && bad++ == 0) {
            report_mismatch_(i, got[i], want[i]);
        }
    }
    return bad;
}

/* Bytes of data[0, n) that differ from pattern_byte(first + i) + add; prints the first one
   (at its offset in the pattern, first + i). */
static inline size_t pattern_mismatches(const uint8_t *data, size_t first, size_t n, uint8_t add)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        uint8_t want = (uint8_t)(pattern_byte(first + i) + add);
        if (data[i] != want && bad++ == 0) {
            report_mismatch_(first + i, data[i], want);
        }
    }
    return bad;
}

static inline size_t count_nonzero(const uint8_t *data, size_t n)
{
    size_t nonZero = 0;
    for (size_t i = 0; i < n; ++i) {
        nonZero += data[i] != 0;
    }
    return nonZero;
}

/* ---- device memory ------------------------------------------------------------------------- */

/* Physical memory description: pinned HBM with 2 MiB pages on device 0. */
static inline aclrtPhysicalMemProp device_prop(void)
{
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.id = 0;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.reserve = 0;
    return prop;
}

/* Free / used HBM of the current device (aclrtGetMemInfo). */
static inline size_t hbm_free(void)
{
    size_t freeBytes = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeBytes, &total));
    return freeBytes;
}
static inline size_t hbm_used(void)
{
    size_t freeBytes = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeBytes, &total));
    return total - freeBytes;
}

/* Copy pattern(i) for every byte into device memory at va. */
static inline void fill_device(void *va, size_t n, uint8_t (*pattern)(size_t))
{
    uint8_t *host = xmalloc(n);
    for (size_t i = 0; i < n; ++i) {
        host[i] = pattern(i);
    }
    CHECK(aclrtMemcpy(va, n, host, n, ACL_MEMCPY_HOST_TO_DEVICE));
    free(host);
}

/* Number of bytes of device memory at va that differ from pattern(i); prints the first one. */
static inline size_t device_mismatches(const void *va, size_t n, uint8_t (*pattern)(size_t))
{
    uint8_t *host = xmalloc(n);
    memset(host, 0, n);
    CHECK(aclrtMemcpy(host, n, va, n, ACL_MEMCPY_DEVICE_TO_HOST));
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (host[i] != pattern(i) && bad++ == 0) {
            report_mismatch_(i, host[i], pattern(i));
        }
    }
    free(host);
    return bad;
}

/* Reserve `size` bytes of virtual addresses and map the handle at their start. */
static inline void *map_handle(aclrtDrvMemHandle handle, size_t size)
{
    void *va = NULL;
    CHECK(aclrtReserveMemAddress(&va, size, 0, NULL, 0));
    CHECK(aclrtMapMem(va, size, 0, handle, 0));
    return va;
}

static inline void unmap_and_release(void *va)
{
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtReleaseMemAddress(va));
}

/* One number of the statistics JSON (aclvmmStatsJson), e.g. "exports"; -1 if absent. */
static inline long stats_value(const char *key)
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

/* ---- managed memory ------------------------------------------------------------------------ */

/* The counters of the "managed" object of aclvmmStatsJson(). */
typedef struct {
    uint64_t host_faults;
    uint64_t device_faults;
    uint64_t bytes_to_device;
    uint64_t bytes_to_host;
    uint64_t evictions;
    uint64_t prefetch_bytes;
} managed_stats;

/* One unsigned number inside the "managed" object of `json`; exits when it is missing. */
static inline uint64_t managed_value(const char *json, const char *key)
{
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\":", key);
    const char *managed = json ? strstr(json, "\"managed\":") : NULL;
    const char *p = managed ? strstr(managed, quoted) : NULL;
    if (p == NULL) {
        fprintf(stderr, "[FAIL] statistics key managed.%s not found in %s\n", key, json ? json : "(null)");
        exit(1);
    }
    return strtoull(p + strlen(quoted), NULL, 10);
}

static inline managed_stats stats_now(void)
{
    const char *json = aclvmmStatsJson();
    managed_stats s;
    s.host_faults = managed_value(json, "host_faults");
    s.device_faults = managed_value(json, "device_faults");
    s.bytes_to_device = managed_value(json, "bytes_to_device");
    s.bytes_to_host = managed_value(json, "bytes_to_host");
    s.evictions = managed_value(json, "evictions");
    s.prefetch_bytes = managed_value(json, "prefetch_bytes");
    return s;
}

static inline managed_stats stats_delta(const managed_stats *before, const managed_stats *after)
{
    managed_stats d;
    d.host_faults = after->host_faults - before->host_faults;
    d.device_faults = after->device_faults - before->device_faults;
    d.bytes_to_device = after->bytes_to_device - before->bytes_to_device;
    d.bytes_to_host = after->bytes_to_host - before->bytes_to_host;
    d.evictions = after->evictions - before->evictions;
    d.prefetch_bytes = after->prefetch_bytes - before->prefetch_bytes;
    return d;
}

/* "fault_tracking": true once managed memory is in use and the machine can track CPU faults. */
static inline int fault_tracking(void)
{
    const char *json = aclvmmStatsJson();
    return json != NULL && strstr(json, "\"fault_tracking\": true") != NULL;
}

static inline aclrtMemManagedLocation location(aclrtMemManagedLocationType type, int32_t id)
{
    aclrtMemManagedLocation loc;
    memset(&loc, 0, sizeof(loc));
    loc.type = type;
    loc.id = id;
    return loc;
}

/* FABRIC handles exist on A3 (super-pod) products only: every A3 SoC name starts with
   "Ascend910_93". Another SoC (or none) chosen in the environment is replaced for this run, before
   aclInit reads it; child processes inherit the choice. */
#define A3_SOC "Ascend910_9391"
static inline void select_a3_product(void)
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

/* Managed memory exists on A2 products only (ACLVMM_SOC Ascend910B1, B2, B2C, B3, B4, B4-1). The
   default SoC is one; another SoC chosen in the environment is replaced for this run. */
static inline void select_a2_product(void)
{
    const char *soc = getenv("ACLVMM_SOC");
    if (soc == NULL || soc[0] == '\0' || (strncmp(soc, "Ascend910B", 10) == 0 && soc[10] != '\0')) {
        return;
    }
    printf("ACLVMM_SOC=%s has no managed memory: this run uses Ascend910B1\n", soc);
    setenv("ACLVMM_SOC", "Ascend910B1", 1);
}

#define KERNEL_CHUNK (1 * MIB)

/* Arguments of the emulated kernels. */
struct kernel_args {
    uint8_t *dev;
    size_t n;
    uint8_t *chunk; /* the kernel's own buffer, KERNEL_CHUNK bytes */
    uint64_t sum;   /* a checksum kernel's result */
};

/* The emulated kernel: adds 1 to every byte of [dev, dev+n), one chunk at a time. */
static inline void add_one_kernel(aclvmmKernelContext *ctx, void *p)
{
    struct kernel_args *a = p;
    for (size_t off = 0; off < a->n; off += KERNEL_CHUNK) {
        size_t len = a->n - off < KERNEL_CHUNK ? a->n - off : KERNEL_CHUNK;
        if (aclvmmKernelRead(ctx, a->chunk, a->dev + off, len) != ACL_SUCCESS) {
            return; /* the kernel is marked failed; aclrtSynchronizeStream reports it */
        }
        for (size_t i = 0; i < len; ++i) {
            a->chunk[i] = (uint8_t)(a->chunk[i] + 1u);
        }
        if (aclvmmKernelWrite(ctx, a->dev + off, a->chunk, len) != ACL_SUCCESS) {
            return;
        }
    }
}

/* ---- processes ----------------------------------------------------------------------------- */

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

#define MAX_CHILDREN 4
static pid_t g_children[MAX_CHILDREN]; /* running children; 0 = free slot */

/* atexit in a parent: no child outlives a failed run. */
static inline void kill_children(void)
{
    for (int i = 0; i < MAX_CHILDREN; ++i) {
        if (g_children[i] > 0) {
            kill(g_children[i], SIGKILL);
            waitpid(g_children[i], NULL, 0);
            g_children[i] = 0;
        }
    }
}

/* fork() with both output streams flushed first (or the child would print them again); exits
   the example when it fails. */
static inline pid_t fork_or_fail(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        expect(0, "fork: %s", strerror(errno));
    }
    return pid;
}

/* The child is killed by kill_children() unless reaped before. */
static inline void remember_child(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; ++i) {
        if (g_children[i] == 0) {
            g_children[i] = pid;
            break;
        }
    }
}

/* fork + exec this program with argv; stdin_fd (if >= 0) becomes the child's standard input. */
static inline pid_t spawn_self(char *const argv[], int stdin_fd)
{
    pid_t pid = fork_or_fail();
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec (the library runs threads). */
        if (stdin_fd >= 0 && stdin_fd != STDIN_FILENO) {
            dup2(stdin_fd, STDIN_FILENO); /* the copy does not inherit FD_CLOEXEC */
        }
        execv("/proc/self/exe", argv); /* this very binary, whatever argv[0] says */
        execv(argv[0], argv);
        _exit(127);
    }
    remember_child(pid);
    return pid;
}

static inline void forget_child(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; ++i) {
        if (g_children[i] == pid) {
            g_children[i] = 0;
        }
    }
}

/* 1 and *status set when the child has exited (reaped), 0 while it runs. */
static inline int child_exited(pid_t pid, int *status)
{
    if (waitpid(pid, status, WNOHANG) == pid) {
        forget_child(pid);
        return 1;
    }
    return 0;
}

/* Waits up to timeout_ms for the child; its exit code, or -1 if it was killed or timed out. */
static inline int wait_child(pid_t pid, int timeout_ms)
{
    int status = 0;
    for (int waited = 0; !child_exited(pid, &status); waited += 10) {
        if (waited >= timeout_ms) {
            fprintf(stderr, "%s%schild %d did not finish within %d ms; killing it\n", ROLE_PREFIX_, (int)pid,
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

#endif /* ACLVMM_EXAMPLE_UTIL_H */
