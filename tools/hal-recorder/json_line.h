/*
 * json_line.h: one JSON object written into a fixed buffer, for the recorder's trace lines.
 *
 * Why a buffer of its own: a line is built on the calling thread's stack and written with one
 * write(2), so that no heap allocation happens on a path a forked child may take while another
 * thread of its parent held malloc's lock, and so that concurrent writers never interleave
 * inside a line. Nothing here calls malloc or the printf family.
 *
 * Bounds: a line never exceeds JL_LINE_MAX bytes including its newline. A member (key and value,
 * or a container's opening) that would not fit is dropped whole, the container it belongs to
 * takes no further members, and the line ends with "truncated":true, so a truncated line is
 * still valid JSON. Nested members obey a soft limit (jl_set_limit) so that the top-level
 * fields written last (the return code, the duration) always fit.
 */
#ifndef ACLVMM_HAL_RECORDER_JSON_LINE_H
#define ACLVMM_HAL_RECORDER_JSON_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One page: also PIPE_BUF, so a line written to a pipe or FIFO is atomic too. */
#define JL_LINE_MAX 4096
#define JL_MAX_DEPTH 8

struct jl {
    size_t len;
    size_t limit;     /* soft limit for members below the top level */
    unsigned depth;   /* open containers, the line's own object included */
    unsigned skipped; /* containers opened where nothing could be written: closed silently */
    bool overflow;    /* the member being written ran past the hard limit */
    bool truncated;   /* some member was dropped */
    unsigned drops;   /* members dropped so far (jl_element_end compares) */
    bool first[JL_MAX_DEPTH];
    bool full[JL_MAX_DEPTH];
    char closer[JL_MAX_DEPTH];
    char buf[JL_LINE_MAX];
};

/* Starts the line's object. */
void jl_init(struct jl* j);
/* Members below the top level may use the buffer up to `limit` bytes. */
void jl_set_limit(struct jl* j, size_t limit);
/* Closes every open container, adds the truncation marker when needed and the newline; returns
 * the line's length (at most JL_LINE_MAX). */
size_t jl_finish(struct jl* j);

/* An array element kept whole or not at all: jl_element_begin before writing it,
 * jl_element_end after its last member; a member of it dropped removes the whole element and
 * closes the array to further elements. */
struct jl_mark {
    size_t len;
    unsigned depth;
    unsigned drops;
    bool first;
};
struct jl_mark jl_element_begin(const struct jl* j);
void jl_element_end(struct jl* j, const struct jl_mark* m);

/* `key` is NULL for an array element. */
void jl_object(struct jl* j, const char* key);
void jl_array(struct jl* j, const char* key);
void jl_close(struct jl* j);

void jl_u64(struct jl* j, const char* key, unsigned long long v);
void jl_i64(struct jl* j, const char* key, long long v);
void jl_hex(struct jl* j, const char* key, unsigned long long v); /* "0x…" string */
void jl_ptr(struct jl* j, const char* key, const void* p);        /* "0x…" string */
void jl_bool(struct jl* j, const char* key, bool v);
void jl_null(struct jl* j, const char* key);
/* At most `max` bytes of `s`, stopping at a NUL; escaped so that any byte gives valid JSON. */
void jl_str(struct jl* j, const char* key, const char* s, size_t max);
/* `n` bytes as lower-case hex digits in one string. */
void jl_bytes(struct jl* j, const char* key, const void* p, size_t n);

#endif /* ACLVMM_HAL_RECORDER_JSON_LINE_H */
