/*
 * The stand-in's watch (tests/hal/coexist/README.md): proof that aclvmm, beside the vendor
 * runtime, never opens or closes a device in the driver and never maps, unmaps, protects or
 * advises memory in the driver's windows (hal.md §6.2 rules 2 and 3).
 *
 * It interposes by symbol order: the stand-in comes after aclvmm and before the driver library
 * in the lookup order, and aclvmm calls the driver through the global scope (drivers/hal/
 * hal_library.cpp), so the driver's open and close functions defined here see aclvmm's calls and
 * the stand-in's own; the mmap family defined here sees every call made through the PLT. Each
 * forwards to the next definition (RTLD_NEXT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "drivers/hal/hal_decls.h"
#include "tests/hal/coexist/standin.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))

_Thread_local int standin_in_driver_call;

/* ---- the driver's open and close functions -------------------------------------------------- */

static atomic_int g_foreign;
static char g_first_foreign[64];

static void driver_call(const char* name) {
    if (standin_in_driver_call) return;
    if (atomic_fetch_add(&g_foreign, 1) == 0) snprintf(g_first_foreign, sizeof g_first_foreign, "%s", name);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

/* One interposer: notes the call, then hands it to the driver library. */
#define WATCHED(ret, name, params, args)       \
    STANDIN_EXPORT ret name params {           \
        driver_call(#name);                    \
        return NEXT(name) args;                \
    }

WATCHED(drvError_t, halDeviceOpen, (uint32_t dev, halDevOpenIn* in, halDevOpenOut* out), (dev, in, out))
WATCHED(drvError_t, halDeviceClose, (uint32_t dev, halDevCloseIn* in), (dev, in))
WATCHED(drvError_t, drvDeviceOpen, (void** info, uint32_t dev), (info, dev))
WATCHED(drvError_t, drvDeviceClose, (uint32_t dev), (dev))
WATCHED(int, drvMemDeviceOpen, (uint32_t dev, int unusedFd), (dev, unusedFd))
WATCHED(int, drvMemDeviceClose, (uint32_t dev), (dev))
WATCHED(drvError_t, halMemAgentOpen, (uint32_t dev, uint32_t agentKind), (dev, agentKind))
WATCHED(drvError_t, halMemAgentClose, (uint32_t dev, uint32_t agentKind), (dev, agentKind))

STANDIN_EXPORT int standinForeignDriverCalls(char* first, size_t first_size) {
    if (first != NULL && first_size > 0) snprintf(first, first_size, "%s", g_first_foreign);
    return atomic_load(&g_foreign);
}

/* ---- the mmap family ------------------------------------------------------------------------ */

/* Ranges aclvmm's library asked for, kept until the test asks (the fake driver's windows are
 * only known then: asking earlier could make it claim them). */
#define MAX_RANGES 4096
struct range { const char* call; uintptr_t base; size_t size; };
static struct range g_ranges[MAX_RANGES];
static atomic_int g_range_count;

static int from_aclvmm(const void* caller) {
    Dl_info info;
    if (dladdr(caller, &info) == 0 || info.dli_fname == NULL) return 0;
    const char* base = strrchr(info.dli_fname, '/');
    base = base != NULL ? base + 1 : info.dli_fname;
    return strcmp(base, "libascendcl.so") == 0 || strcmp(base, "libacl_rt.so") == 0;
}

static void note(const char* call, const void* caller, const void* base, size_t size) {
    if (!from_aclvmm(caller)) return;
    const int i = atomic_fetch_add(&g_range_count, 1);
    if (i < MAX_RANGES) g_ranges[i] = (struct range){call, (uintptr_t)base, size};
}

STANDIN_EXPORT void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
    void* out = NEXT(mmap)(addr, length, prot, flags, fd, offset);
    if (out != MAP_FAILED) note("mmap", __builtin_return_address(0), out, length);
    return out;
}
STANDIN_EXPORT int munmap(void* addr, size_t length) {
    note("munmap", __builtin_return_address(0), addr, length);
    return NEXT(munmap)(addr, length);
}
STANDIN_EXPORT int mprotect(void* addr, size_t length, int prot) {
    note("mprotect", __builtin_return_address(0), addr, length);
    return NEXT(mprotect)(addr, length, prot);
}
STANDIN_EXPORT int madvise(void* addr, size_t length, int advice) {
    note("madvise", __builtin_return_address(0), addr, length);
    return NEXT(madvise)(addr, length, advice);
}

static int meets(const struct range* r, uint64_t base, uint64_t size) {
    return size != 0 && r->base < base + size && base < r->base + r->size;
}

STANDIN_EXPORT int standinWindowTouches(char* first, size_t first_size) {
    /* A sanitizer intercepts the mmap family first: the caller seen here is its runtime. */
    if (dlsym(RTLD_DEFAULT, "__asan_init") != NULL || dlsym(RTLD_DEFAULT, "__tsan_init") != NULL) {
        return -1;
    }
    /* The fixed windows (behavior.md §4: host-pin, UVM, SOMA, SVM) and the fake's placement of
     * its own. Not the dynamic range above them: the kernel hands out ordinary mappings there,
     * and the driver takes its ranges from the kernel like everyone else. */
    uint64_t windows[12] = {0x70000000000ull, 0x180000000000ull - 0x70000000000ull};
    int (*layout)(uint64_t*) = (int (*)(uint64_t*))dlsym(RTLD_DEFAULT, "aclvmmFakeHalLayout");
    /* host_pinned, managed, device, device_general; its no_uc pair (out[8..9]) is dropped */
    const int with_fake = layout != NULL && layout(windows + 2) == 0;
    const int n = atomic_load(&g_range_count) < MAX_RANGES ? atomic_load(&g_range_count) : MAX_RANGES;
    int touches = 0;
    for (int i = 0; i < n; ++i) {
        for (int w = 0; w < (with_fake ? 5 : 1); ++w) {
            if (!meets(&g_ranges[i], windows[2 * w], windows[2 * w + 1])) continue;
            if (touches++ == 0 && first != NULL && first_size > 0) {
                snprintf(first, first_size, "%s(0x%lx, %zu)", g_ranges[i].call,
                         (unsigned long)g_ranges[i].base, g_ranges[i].size);
            }
            break;
        }
    }
    return touches;
}
