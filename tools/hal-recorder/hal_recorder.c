/*
 * hal_recorder.c: the core of libaclvmm_hal_recorder.so, the LD_PRELOAD recorder of the driver
 * library calls (README.md): symbol resolution, the trace file, the per-call line and the
 * guarantees that the recorded program behaves exactly as without it.
 *
 * Rules this file keeps (and why):
 * - No heap allocation and no lock on the recording path: a line is built on the stack and
 *   written with one write(2); the trace descriptor and the resolved symbols are atomics. A
 *   forked child of a multi-threaded parent may call the driver while another parent thread
 *   held malloc's (or any) lock at fork time; such a lock is never released in the child.
 * - errno: the driver sees the caller's errno and the caller sees the driver's.
 * - A thread-local guard: while a thread is inside the recorder (the driver calling another of
 *   its own exported functions through the global scope, a signal handler), calls pass through
 *   unrecorded, so a line is exactly one call the program made.
 */
#define _GNU_SOURCE
#include "hal_recorder.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static const char* const rec_fn_names[REC_FN_COUNT] = {
#define REC_NAME_(name) #name,
    REC_FUNCTIONS(REC_NAME_)
#undef REC_NAME_
};

/* ---- resolution ------------------------------------------------------------------------- */

/* A symbol found is kept for good (the driver library is never unloaded while in use). A symbol
 * not found is looked up again only after another object was loaded: aclvmm's hal backend
 * dlopen()s the driver with RTLD_GLOBAL after the recorder's constructor ran, and RTLD_NEXT
 * then finds it. `missing_gen` is the load count at the failed look-up, plus one (0: never). */
struct rec_slot {
    _Atomic(void*) addr;
    _Atomic unsigned long long missing_gen;
};
static struct rec_slot rec_slots[REC_FN_COUNT];

static int count_loads(struct dl_phdr_info* info, size_t size, void* data) {
    (void)size;
    *(unsigned long long*)data = info->dlpi_adds;
    return 1; /* every entry carries the same counters: the first is enough */
}

void* rec_next(enum rec_fn fn) {
    struct rec_slot* s = &rec_slots[fn];
    void* p = atomic_load_explicit(&s->addr, memory_order_acquire);
    if (p != NULL)
        return p;
    int saved = errno;
    unsigned long long loads = 0;
    dl_iterate_phdr(count_loads, &loads);
    if (atomic_load_explicit(&s->missing_gen, memory_order_relaxed) != loads + 1) {
        p = dlsym(RTLD_NEXT, rec_fn_names[fn]);
        if (p != NULL) {
            atomic_store_explicit(&s->addr, p, memory_order_release);
        } else {
            (void)dlerror(); /* leave no error of ours for the program's next dlerror() */
            atomic_store_explicit(&s->missing_gen, loads + 1, memory_order_relaxed);
        }
    }
    errno = saved;
    return p;
}

/* Resolves everything the loader already has, so that the common path never calls dlsym. */
__attribute__((constructor)) static void rec_resolve_all(void) {
    for (int f = 0; f < REC_FN_COUNT; f++)
        (void)rec_next((enum rec_fn)f);
}

/* ---- reading caller memory --------------------------------------------------------------- */

/* process_vm_readv on ourselves reports a bad address as EFAULT instead of faulting. Where a
 * sandbox forbids it (seccomp: EPERM/ENOSYS) the pointer is trusted, as the driver trusts it. */
static atomic_bool rec_vm_read_blocked;

bool rec_read(void* dst, const void* p, size_t n) {
    if (p == NULL)
        return false;
    if (n == 0)
        return true;
    if (!atomic_load_explicit(&rec_vm_read_blocked, memory_order_relaxed)) {
        struct iovec local = {dst, n};
        struct iovec remote = {(void*)(uintptr_t)p, n};
        ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (got == (ssize_t)n)
            return true;
        if (got >= 0 || errno == EFAULT)
            return false;
        atomic_store_explicit(&rec_vm_read_blocked, true, memory_order_relaxed);
    }
    memcpy(dst, p, n);
    return true;
}

/* ---- the trace file ---------------------------------------------------------------------- */

/* (pid << 32) | (fd + 1), 0 before the first line: a forked child sees its parent's pid here
 * and opens its own file when the path is per process. fd + 1 == 0 means "could not open". */
static _Atomic unsigned long long rec_trace;

/* ACLVMM_HAL_TRACE with each %p replaced by the pid (%% by %), into `out`; false when too long.
 * `per_pid` tells whether the name depends on the pid. */
static bool trace_path(char* out, size_t cap, pid_t pid, bool* per_pid) {
    const char* t = getenv("ACLVMM_HAL_TRACE");
    if (t == NULL || *t == '\0')
        t = "aclvmm-hal-trace.%p.jsonl";
    char digits[16];
    int nd = 0;
    for (unsigned long v = (unsigned long)pid; nd == 0 || v != 0; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    size_t len = 0;
    *per_pid = false;
    for (; *t != '\0'; t++) {
        if (t[0] == '%' && (t[1] == 'p' || t[1] == '%')) {
            if (*++t == 'p') {
                *per_pid = true;
                for (int i = nd - 1; i >= 0; i--) {
                    if (len + 1 >= cap)
                        return false;
                    out[len++] = digits[i];
                }
                continue;
            }
        }
        if (len + 1 >= cap)
            return false;
        out[len++] = *t;
    }
    out[len] = '\0';
    return true;
}

static void say(const char* a, const char* b) {
    /* stderr, unbuffered and allocation-free; failures are of no consequence */
    ssize_t r = write(STDERR_FILENO, a, strlen(a));
    if (b != NULL)
        r = write(STDERR_FILENO, b, strlen(b));
    r = write(STDERR_FILENO, "\n", 1);
    (void)r;
}

/* This process's trace descriptor, opened on its first recorded call; -1 when not recording. */
static int trace_fd(pid_t pid) {
    unsigned long long cur = atomic_load_explicit(&rec_trace, memory_order_acquire);
    if (cur != 0 && (pid_t)(cur >> 32) == pid)
        return (int)(cur & 0xffffffffu) - 1;
    char path[PATH_MAX];
    bool per_pid;
    int fd = -1;
    if (!trace_path(path, sizeof path, pid, &per_pid)) {
        if (cur == 0)
            say("aclvmm-hal-recorder: trace path too long, not recording: ",
                getenv("ACLVMM_HAL_TRACE"));
    } else if (cur != 0 && !per_pid) {
        fd = (int)(cur & 0xffffffffu) - 1; /* forked child: the file it shares with its parent */
    } else {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            say("aclvmm-hal-recorder: cannot open the trace file, not recording: ", path);
    }
    unsigned long long next = ((unsigned long long)(unsigned)pid << 32) | (unsigned)(fd + 1);
    if (!atomic_compare_exchange_strong(&rec_trace, &cur, next)) {
        /* another thread of this process opened it first: use theirs */
        if (fd >= 0 && (cur == 0 || (int)(cur & 0xffffffffu) - 1 != fd))
            close(fd);
        return (pid_t)(cur >> 32) == pid ? (int)(cur & 0xffffffffu) - 1 : -1;
    }
    return fd;
}

/* ---- one line per call ------------------------------------------------------------------- */

static _Thread_local int rec_busy __attribute__((tls_model("initial-exec")));
static _Atomic unsigned long long rec_seq;

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* Room kept for the arguments: the outputs (handles, a 128-byte token, DVattribute) come after
 * them and must fit even when an argument array is long. */
#define REC_ARGS_LIMIT (JL_LINE_MAX - 1024)
/* Room kept for the top-level fields written last (ret, ret_name, dur_ns, missing). */
#define REC_OUT_LIMIT (JL_LINE_MAX - 160)

bool rec_begin(struct rec* c, enum rec_fn fn) {
    if (rec_busy != 0)
        return false;
    int saved = errno;
    rec_busy = 1;
    pid_t pid = getpid();
    c->fd = trace_fd(pid);
    if (c->fd < 0) {
        rec_busy = 0;
        errno = saved;
        return false;
    }
    c->fn = fn;
    c->saved_errno = saved;
    c->missing = false;
    c->dur = 0;
    jl_init(&c->j);
    jl_u64(&c->j, "seq", atomic_fetch_add(&rec_seq, 1) + 1);
    jl_u64(&c->j, "t_ns", now_ns());
    jl_i64(&c->j, "pid", pid);
    jl_i64(&c->j, "tid", (long long)syscall(SYS_gettid));
    jl_str(&c->j, "fn", rec_fn_names[fn], 64);
    jl_object(&c->j, "args");
    jl_set_limit(&c->j, REC_ARGS_LIMIT);
    return true;
}

bool rec_call(struct rec* c, const void* next) {
    jl_close(&c->j);
    jl_set_limit(&c->j, REC_OUT_LIMIT);
    c->missing = next == NULL;
    errno = c->saved_errno;
    c->t_call = now_ns();
    return !c->missing;
}

void rec_called(struct rec* c) {
    c->saved_errno = errno;
    c->dur = now_ns() - c->t_call;
}

bool rec_out(struct rec* c, bool ok) {
    jl_object(&c->j, "out");
    return ok && !c->missing;
}

static void rec_end(struct rec* c) {
    jl_u64(&c->j, "dur_ns", c->dur);
    if (c->missing)
        jl_bool(&c->j, "missing", true);
    size_t n = jl_finish(&c->j);
    /* One write: O_APPEND places the whole line at the end of the file atomically with respect
     * to other writers. A short write (disk full) is not retried: its rest could land after
     * another process's line. */
    ssize_t w;
    do
        w = write(c->fd, c->j.buf, n);
    while (w < 0 && errno == EINTR);
    errno = c->saved_errno;
    rec_busy = 0;
}

void rec_end_drv(struct rec* c, unsigned r) {
    jl_close(&c->j); /* out */
    jl_u64(&c->j, "ret", r);
    const char* name = rec_error_name(r);
    jl_str(&c->j, "ret_name", name != NULL ? name : "UNKNOWN", 64);
    rec_end(c);
}

void rec_end_int(struct rec* c, long long r) {
    jl_close(&c->j);
    jl_i64(&c->j, "ret", r);
    rec_end(c);
}

void rec_end_bool(struct rec* c, bool r) {
    jl_close(&c->j);
    jl_bool(&c->j, "ret", r);
    rec_end(c);
}
