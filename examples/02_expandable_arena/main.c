/*
 * 02_expandable_arena - the "expandable segments" pattern of PyTorch's NPU caching allocator.
 *
 * One large virtual range is reserved up front (cheap: no physical memory behind it). The arena
 * grows on demand by allocating 2 MiB physical handles and mapping them back-to-back at the top,
 * so the used part is always one contiguous device range. It shrinks by unmapping the top chunks
 * (each aclrtUnmapMem at the start address of that chunk's mapping) and freeing their handles,
 * which gives the memory back to the device while the remaining chunks keep their contents.
 */
#include "example_util.h" /* CHECK, expect, hbm_free, device_prop, count_nonzero, ... */

#define GIB ((size_t)1 << 30)

#define RESERVE_SIZE (1 * GIB)
#define MAX_CHUNKS 64

/* The byte that chunk `chunk` holds at offset `off` once it has been written. */
static uint8_t chunk_byte(size_t chunk, size_t off)
{
    return (uint8_t)((chunk * 37u + off * 13u + (off >> 9) + 5u) & 0xFFu);
}

/* Number of bytes of dev-copy `got` (covering chunks first..) that differ from chunk_byte. */
static size_t chunk_mismatches(const uint8_t *got, size_t firstChunk, size_t nChunks, size_t chunkSize)
{
    size_t bad = 0;
    for (size_t c = 0; c < nChunks; ++c) {
        for (size_t off = 0; off < chunkSize; ++off) {
            uint8_t want = chunk_byte(firstChunk + c, off);
            uint8_t have = got[c * chunkSize + off];
            if (have != want && bad++ == 0) {
                fprintf(stderr, "first mismatch in chunk %zu at offset %zu: got 0x%02x, expected 0x%02x\n",
                        firstChunk + c, off, have, want);
            }
        }
    }
    return bad;
}

typedef struct Arena {
    uint8_t *base;                          /* start of the reservation */
    size_t reserved;                        /* bytes reserved */
    size_t chunk;                           /* bytes per physical handle (the granularity) */
    size_t count;                           /* chunks currently mapped, at base + i * chunk */
    aclrtDrvMemHandle handles[MAX_CHUNKS];  /* handle backing chunk i */
    aclrtPhysicalMemProp prop;
} Arena;

/* Maps new chunks at the top until at least `bytes` are mapped; returns how many were added. */
static size_t arena_grow_to(Arena *a, size_t bytes)
{
    size_t added = 0;
    while (a->count * a->chunk < bytes) {
        if (a->count == MAX_CHUNKS || (a->count + 1) * a->chunk > a->reserved) {
            fprintf(stderr, "[FAIL] arena cannot grow past %zu chunks\n", a->count);
            exit(1);
        }
        aclrtDrvMemHandle h = NULL;
        CHECK(aclrtMallocPhysical(&h, a->chunk, &a->prop, 0));
        CHECK(aclrtMapMem(a->base + a->count * a->chunk, a->chunk, 0, h, 0));
        a->handles[a->count++] = h;
        ++added;
    }
    return added;
}

/* Unmaps and frees chunks from the top while the rest still covers `bytes`; returns how many. */
static size_t arena_shrink_to(Arena *a, size_t bytes)
{
    size_t removed = 0;
    while (a->count > 0 && (a->count - 1) * a->chunk >= bytes) {
        size_t top = a->count - 1;
        CHECK(aclrtUnmapMem(a->base + top * a->chunk)); /* start address of that chunk's mapping */
        CHECK(aclrtFreePhysical(a->handles[top]));
        a->handles[top] = NULL;
        a->count = top;
        ++removed;
    }
    return removed;
}

int main(void)
{
    /* The sizes the "allocator" needs over time: it grows in uneven steps up to 64 MiB. */
    static const size_t growSteps[] = {4 * MIB, 11 * MIB, 12 * MIB, 30 * MIB, 64 * MIB};
    const size_t shrinkTo = 40 * MIB;

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));

    Arena arena;
    memset(&arena, 0, sizeof(arena));
    arena.prop = device_prop(); /* pinned HBM with 2 MiB pages on device 0 */

    CHECK(aclrtMemGetAllocationGranularity(&arena.prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                                           &arena.chunk));
    expect(arena.chunk == 2 * MIB, "chunk size = recommended granularity = %zu bytes", arena.chunk);

    const size_t freeAtStart = hbm_free();

    void *base = NULL;
    CHECK(aclrtReserveMemAddress(&base, RESERVE_SIZE, 0, NULL, 0));
    arena.base = base;
    arena.reserved = RESERVE_SIZE;
    expect(((uintptr_t)base % arena.chunk) == 0,
           "reserved %zu bytes of virtual addresses, base aligned to the chunk size", arena.reserved);
    expect(hbm_free() == freeAtStart, "the reservation itself uses no device memory");

    size_t maxBytes = growSteps[sizeof(growSteps) / sizeof(growSteps[0]) - 1];
    uint8_t *staging = xmalloc(maxBytes);

    /* Grow: map new chunks on demand and fill them with one copy spanning all new mappings. */
    for (size_t s = 0; s < sizeof(growSteps) / sizeof(growSteps[0]); ++s) {
        size_t first = arena.count;
        size_t added = arena_grow_to(&arena, growSteps[s]);
        for (size_t c = 0; c < added; ++c) {
            for (size_t off = 0; off < arena.chunk; ++off) {
                staging[c * arena.chunk + off] = chunk_byte(first + c, off);
            }
        }
        if (added > 0) {
            size_t bytes = added * arena.chunk;
            CHECK(aclrtMemcpy(arena.base + first * arena.chunk, bytes, staging, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
        }
        expect(freeAtStart - hbm_free() == arena.count * arena.chunk,
               "need %zu MiB: mapped %zu new chunk(s), arena now %zu MiB, free HBM down by exactly that",
               growSteps[s] / MIB, added, arena.count * arena.chunk / MIB);
    }

    /* Read the whole arena back with one copy that crosses every chunk boundary. */
    size_t mapped = arena.count * arena.chunk;
    memset(staging, 0, mapped);
    CHECK(aclrtMemcpy(staging, mapped, arena.base, mapped, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(chunk_mismatches(staging, 0, arena.count, arena.chunk) == 0,
           "all %zu bytes of the %zu back-to-back chunks read back correctly", mapped, arena.count);

    /* Shrink: give the top chunks back to the device. */
    size_t freeBeforeShrink = hbm_free();
    size_t removed = arena_shrink_to(&arena, shrinkTo);
    size_t gained = hbm_free() - freeBeforeShrink;
    expect(removed * arena.chunk == mapped - shrinkTo && gained == removed * arena.chunk,
           "shrank to %zu MiB: unmapped and freed %zu top chunk(s), free HBM up by %zu bytes",
           arena.count * arena.chunk / MIB, removed, gained);

    mapped = arena.count * arena.chunk;
    memset(staging, 0, mapped);
    CHECK(aclrtMemcpy(staging, mapped, arena.base, mapped, ACL_MEMCPY_DEVICE_TO_HOST));
    expect(chunk_mismatches(staging, 0, arena.count, arena.chunk) == 0,
           "the remaining %zu chunks kept their %zu bytes", arena.count, mapped);

    aclError rc =
        aclrtMemcpy(staging, arena.chunk, arena.base + mapped, arena.chunk, ACL_MEMCPY_DEVICE_TO_HOST);
    expect(rc == ACL_ERROR_RT_DRV_INTERNAL_ERROR,
           "the released top of the range is no longer mapped (a copy from it returns %d)", (int)rc);

    /* Grow again: the re-mapped chunk is fresh memory and reads as zeros. */
    size_t firstNew = arena.count;
    expect(arena_grow_to(&arena, shrinkTo + arena.chunk) == 1, "grew again by one chunk at the same address");
    memset(staging, 0xFF, arena.chunk);
    CHECK(aclrtMemcpy(staging, arena.chunk, arena.base + firstNew * arena.chunk, arena.chunk,
                      ACL_MEMCPY_DEVICE_TO_HOST));
    expect(count_nonzero(staging, arena.chunk) == 0, "the re-grown chunk reads as zeros, not the bytes it held before");

    /* Tear down: every chunk is unmapped at its own start, then the reservation is released. */
    arena_shrink_to(&arena, 0);
    CHECK(aclrtReleaseMemAddress(arena.base));
    expect(hbm_free() == freeAtStart, "arena released, free HBM back to its starting value");

    free(staging);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
