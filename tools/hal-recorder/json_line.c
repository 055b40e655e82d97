/* json_line.c: the fixed-buffer JSON writer of the trace lines (json_line.h). */
#include "json_line.h"

/* Bytes kept free for what jl_finish appends whatever happened before: one closer per open
 * container, ,"truncated":true (17), the final } and the newline. */
#define JL_TAIL (JL_MAX_DEPTH + 17 + 2)
#define JL_HARD (JL_LINE_MAX - JL_TAIL)

static const char jl_digits[] = "0123456789abcdef";

static void put(struct jl* j, char c) {
    if (j->len < JL_HARD)
        j->buf[j->len++] = c;
    else
        j->overflow = true;
}

static void put_s(struct jl* j, const char* s) {
    while (*s != '\0')
        put(j, *s++);
}

static void put_u64(struct jl* j, unsigned long long v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        put(j, tmp[--n]);
}

static void put_hex(struct jl* j, unsigned long long v) {
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = jl_digits[v & 0xf];
        v >>= 4;
    } while (v != 0);
    put_s(j, "\"0x");
    while (n > 0)
        put(j, tmp[--n]);
    put(j, '"');
}

/* Starts a member of the innermost container; false when it takes no more members. */
static bool begin(struct jl* j, const char* key, size_t* mark) {
    if (j->skipped != 0 || j->full[j->depth - 1])
        return false;
    *mark = j->len;
    j->overflow = false;
    if (!j->first[j->depth - 1])
        put(j, ',');
    if (key != NULL) {
        put(j, '"');
        put_s(j, key); /* keys are the recorder's own identifiers: nothing to escape */
        put_s(j, "\":");
    }
    return true;
}

/* Keeps the member just written, or drops it whole when it went past its limit. */
static bool commit(struct jl* j, size_t mark) {
    size_t limit = j->depth > 1 ? j->limit : (size_t)JL_HARD;
    if (!j->overflow && j->len <= limit) {
        j->first[j->depth - 1] = false;
        return true;
    }
    j->len = mark;
    j->overflow = false;
    j->full[j->depth - 1] = true;
    j->truncated = true;
    j->drops++;
    return false;
}

void jl_init(struct jl* j) {
    j->len = 0;
    j->limit = JL_HARD;
    j->depth = 1;
    j->skipped = 0;
    j->overflow = false;
    j->truncated = false;
    j->drops = 0;
    j->first[0] = true;
    j->full[0] = false;
    j->closer[0] = '}';
    j->buf[j->len++] = '{';
}

void jl_set_limit(struct jl* j, size_t limit) {
    j->limit = limit < (size_t)JL_HARD ? limit : (size_t)JL_HARD;
}

struct jl_mark jl_element_begin(const struct jl* j) {
    struct jl_mark m = {j->len, j->depth, j->drops, j->first[j->depth - 1]};
    return m;
}

void jl_element_end(struct jl* j, const struct jl_mark* m) {
    if (j->drops == m->drops || j->depth != m->depth || j->skipped != 0)
        return;
    j->len = m->len;
    j->first[j->depth - 1] = m->first;
    j->full[j->depth - 1] = true;
}

static void open_container(struct jl* j, const char* key, char open, char close) {
    size_t mark;
    if (j->depth >= JL_MAX_DEPTH) { /* deeper than the recorder ever writes: dropped */
        j->truncated = true;
        j->drops++;
        j->skipped++;
        return;
    }
    if (!begin(j, key, &mark)) { /* inside what was already dropped */
        j->skipped++;
        return;
    }
    put(j, open);
    if (!commit(j, mark)) {
        j->skipped++;
        return;
    }
    j->first[j->depth] = true;
    j->full[j->depth] = false;
    j->closer[j->depth] = close;
    j->depth++;
}

void jl_object(struct jl* j, const char* key) {
    open_container(j, key, '{', '}');
}

void jl_array(struct jl* j, const char* key) {
    open_container(j, key, '[', ']');
}

void jl_close(struct jl* j) {
    if (j->skipped != 0) {
        j->skipped--;
        return;
    }
    if (j->depth > 1) {
        j->depth--;
        j->buf[j->len++] = j->closer[j->depth]; /* room kept by JL_TAIL */
    }
}

size_t jl_finish(struct jl* j) {
    static const char marker[] = ",\"truncated\":true";
    j->skipped = 0;
    while (j->depth > 1)
        jl_close(j);
    if (j->truncated)
        for (const char* s = marker; *s != '\0'; s++)
            j->buf[j->len++] = *s;
    j->buf[j->len++] = '}';
    j->buf[j->len++] = '\n';
    return j->len;
}

void jl_u64(struct jl* j, const char* key, unsigned long long v) {
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    put_u64(j, v);
    commit(j, mark);
}

void jl_i64(struct jl* j, const char* key, long long v) {
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    if (v < 0) {
        put(j, '-');
        put_u64(j, 0ULL - (unsigned long long)v);
    } else {
        put_u64(j, (unsigned long long)v);
    }
    commit(j, mark);
}

void jl_hex(struct jl* j, const char* key, unsigned long long v) {
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    put_hex(j, v);
    commit(j, mark);
}

void jl_ptr(struct jl* j, const char* key, const void* p) {
    jl_hex(j, key, (unsigned long long)(uintptr_t)p);
}

void jl_bool(struct jl* j, const char* key, bool v) {
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    put_s(j, v ? "true" : "false");
    commit(j, mark);
}

void jl_null(struct jl* j, const char* key) {
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    put_s(j, "null");
    commit(j, mark);
}

void jl_str(struct jl* j, const char* key, const char* s, size_t max) {
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    put(j, '"');
    for (size_t i = 0; i < max && s[i] != '\0'; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            put(j, '\\');
            put(j, (char)c);
        } else if (c >= 0x20 && c < 0x7f) {
            put(j, (char)c);
        } else {
            /* Control characters and every non-ASCII byte: \u00XX keeps the line valid UTF-8
             * whatever the driver wrote (a byte reads as its Latin-1 character). */
            put_s(j, "\\u00");
            put(j, jl_digits[c >> 4]);
            put(j, jl_digits[c & 0xf]);
        }
    }
    put(j, '"');
    commit(j, mark);
}

void jl_bytes(struct jl* j, const char* key, const void* p, size_t n) {
    const unsigned char* b = p;
    size_t mark;
    if (!begin(j, key, &mark))
        return;
    put(j, '"');
    for (size_t i = 0; i < n; i++) {
        put(j, jl_digits[b[i] >> 4]);
        put(j, jl_digits[b[i] & 0xf]);
    }
    put(j, '"');
    commit(j, mark);
}
