/*
 * hal_recorder.h: what the recorder's wrappers (rec_dev.c, rec_mem.c) share with its core
 * (hal_recorder.c) and its decoders (rec_decode.c). Internal; nothing here is exported.
 *
 * A wrapper's life (REC_ENTER ... REC_CALL ... rec_out ... rec_end_*):
 *   1. resolve the next definition (dlsym(RTLD_NEXT), cached);
 *   2. rec_begin: unless this thread is already inside the recorder or no trace file can be
 *      opened, take the guard, save errno and start the line (seq, t_ns, pid, tid, fn, "args");
 *      otherwise forward the call untouched;
 *   3. decode the arguments, restore errno, forward the call (or note that it is missing),
 *      save the errno it left;
 *   4. decode what it wrote through its output pointers when it succeeded ("out");
 *   5. rec_end_*: the result, the duration, one write(2), errno restored, guard released.
 */
#ifndef ACLVMM_HAL_RECORDER_H
#define ACLVMM_HAL_RECORDER_H

#include <stdbool.h>
#include <stddef.h>

#include "hal_decls.h"
#include "hal_functions.h"
#include "json_line.h"

#define REC_EXPORT __attribute__((visibility("default")))

struct rec {
    enum rec_fn fn;
    int fd;
    int saved_errno;
    bool missing;
    unsigned long long t_call; /* CLOCK_MONOTONIC when the forwarded call started */
    unsigned long long dur;
    struct jl j;
};

/* The next definition of `fn` after the recorder, or NULL when none is loaded (yet). */
void* rec_next(enum rec_fn fn);
/* False: forward without recording (nested call, or no trace file for this process). */
bool rec_begin(struct rec* c, enum rec_fn fn);
/* Ends "args" and restores the caller's errno; false when the function is missing. */
bool rec_call(struct rec* c, const void* next);
/* Right after the forwarded call: its duration and the errno it left. */
void rec_called(struct rec* c);
/* Opens "out"; true when the call succeeded and its outputs may be decoded. */
bool rec_out(struct rec* c, bool ok);
/* End the line with the result and write it. `drv`: a drvError_t with its name. */
void rec_end_drv(struct rec* c, unsigned r);
void rec_end_int(struct rec* c, long long r);
void rec_end_bool(struct rec* c, bool r);

/* Reads `n` bytes of the process's own memory without faulting on a bad pointer: arguments are
 * decoded before the driver sees them, and a pointer the driver would reject must not crash
 * the recorder. False when `p` is NULL or not readable. */
bool rec_read(void* dst, const void* p, size_t n);

/* ---- decoders (rec_decode.c): each writes one member named `key` ---------------------- */
const char* rec_error_name(unsigned code); /* NULL for a value the header does not name */
void dec_enum(struct jl* j, const char* key, unsigned v, const char* const* names, unsigned n);
void dec_prop(struct jl* j, const char* key, const struct drv_mem_prop* p);
void dec_location(struct jl* j, const char* key, const struct drv_mem_location* p);
void dec_access_descs(struct jl* j, const char* key, const struct drv_mem_access_desc* p,
                      size_t count);
void dec_share_handle(struct jl* j, const char* key, const struct MemShareHandle* p);
void dec_share_attr(struct jl* j, const char* key, const struct ShareHandleAttr* p);
void dec_handle_attr(struct jl* j, const char* key, const struct HandleAttr* p);
void dec_uvm_location(struct jl* j, const char* key, const struct drv_uvm_location* p);
void dec_uvm_locations(struct jl* j, const char* key, const struct drv_uvm_location* p, size_t n);
void dec_dvattribute(struct jl* j, const char* key, const struct DVattribute* p);
void dec_mem_info(struct jl* j, const char* key, const struct MemInfo* p);
void dec_memcpy_info(struct jl* j, const char* key, const struct memcpy_info* p);
void dec_close_in(struct jl* j, const char* key, const halDevCloseIn* p);
void dec_share_info(struct jl* j, const char* key, const struct ShareHandleGetInfo* p);
void dec_alloc_flags(struct jl* j, const char* key, unsigned long long flags);
void dec_reserve_flags(struct jl* j, const char* key, unsigned long long flags);
/* Arrays read from caller memory; at most REC_ARRAY_MAX elements are shown. */
#define REC_ARRAY_MAX 64
void dec_u32s(struct jl* j, const char* key, const void* p, size_t n, bool is_signed);
void dec_u64s(struct jl* j, const char* key, const void* p, size_t n, bool as_hex);
void dec_bytes(struct jl* j, const char* key, const void* p, size_t n);
void dec_string(struct jl* j, const char* key, const char* p, size_t max);
/* A pointer to one scalar of the given size (4 or 8), read; "0x…" when `as_hex`. */
void dec_scalar(struct jl* j, const char* key, const void* p, size_t size, bool is_signed,
                bool as_hex);

/* Enum names (index = value), for dec_enum. */
extern const char* const rec_side_names[4];
extern const char* const rec_handle_type_names[4];
extern const char* const rec_granularity_names[3];
extern const char* const rec_advise_names[6];
extern const char* const rec_mem_info_names[6];
extern const char* const rec_feature_names[12];
extern const char* const rec_range_attr_names[10];
#define REC_NAMES(a) (a), (unsigned)(sizeof(a) / sizeof((a)[0]))

/* The wrapper's prologue: resolves the next definition and, when this call is not recorded,
 * forwards it (or returns `missing_value` when there is nothing to forward to). */
#define REC_ENTER(name, missing_value, ...)                            \
    __typeof__(&name) next_ = (__typeof__(&name))rec_next(REC_##name); \
    struct rec c_;                                                     \
    if (!rec_begin(&c_, REC_##name))                                   \
        return next_ != NULL ? next_(__VA_ARGS__) : (missing_value);   \
    struct jl* const j_ = &c_.j

/* Forwards the recorded call, storing its result in `r` (left as is when missing). */
#define REC_CALL(r, ...)                         \
    do {                                         \
        if (rec_call(&c_, (const void*)next_)) { \
            (r) = next_(__VA_ARGS__);            \
            rec_called(&c_);                     \
        }                                        \
    } while (0)

#endif /* ACLVMM_HAL_RECORDER_H */
