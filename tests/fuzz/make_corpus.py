#!/usr/bin/env python3
"""Writes the seed corpus of aclvmm_fuzz_api (tests/fuzz/corpus/): a few dozen short call
sequences, at least one per operation, in the input format documented in fuzz_api.cpp.

Run from anywhere: python3 tests/fuzz/make_corpus.py. Each seed's file name says what it does."""
import os
import struct

OPS = {name: i for i, name in enumerate([
    "malloc_physical", "free_physical", "reserve", "reserve_no_uc", "release", "map", "unmap",
    "set_access", "get_access", "retain", "properties", "address_range", "pointer_attributes",
    "malloc", "free", "malloc_host", "free_host", "memcpy", "memset", "read_check",
    "alloc_managed", "managed_advise", "managed_prefetch", "managed_get_attr", "create_stream",
    "destroy_stream", "synchronize_stream", "export", "set_pid", "import", "set_device",
    "peer_access"])}

# Argument helpers (see the format comment of fuzz_api.cpp).
def chunks(n): return [n - 1]              # size: n * 2 MiB, 1 <= n <= 64
ODD_SIZE = [0x41]                          # size: 1 + 64 KiB
def u16(v): return list(struct.pack("<H", v))
def u64(v): return list(struct.pack("<Q", v))
def obj(i, w=0): return [i, w]             # address: the i-th object of the wanted kind (+ offset w)
STALE = [0xC0, 0]                          # address: a released one
NULL = [0xE0]
def forged(cls, v=0x1234): return [0xF0, cls] + u64(v)
def data(i, off, length): return [i] + u16(off) + u16(length)
def handle(i): return [i]                  # live handle i
STALE_HANDLE = [0xC0]
FORGED_HANDLE = [0xF0, 0] + u64(0x7a11000001000001)
DEV_HBM_HUGE = lambda n=1, dev=0: [OPS["malloc_physical"]] + chunks(n) + [1, dev, 4, 0]
HOST_HUGE = lambda n=1: [OPS["malloc_physical"]] + chunks(n) + [0, 0, 13, 0]
RESERVE = lambda n=4: [OPS["reserve"]] + chunks(n) + [0, 0]
MAP = lambda res, h, no_access=0: [OPS["map"]] + obj(res) + [0] + handle(h) + [no_access]
def op(name, *args): return [OPS[name]] + [b for a in args for b in a]

SEEDS = {
    "physical-device-alloc-free": DEV_HBM_HUGE() + op("free_physical", handle(0)),
    "physical-host-alloc-free": HOST_HUGE() + op("free_physical", handle(0)),
    "physical-numa": op("malloc_physical", chunks(1), [4, 0, 13, 0]) + op("free_physical", handle(0)),
    "physical-odd-size-1g-attr": op("malloc_physical", ODD_SIZE, [1, 0, 10, 0]) +
        op("malloc_physical", ODD_SIZE, [1, 1, 14, 0]) + op("malloc_physical", chunks(3), [0, 0, 17, 0]),
    "physical-acl-rejections": op("malloc_physical", chunks(1), [1, 0, 2, 0]) +
        op("malloc_physical", chunks(1), [2, 0, 4, 0]) + op("malloc_physical", [0x80], [1, 0, 4, 0]) +
        op("malloc_physical", chunks(1), [1, 0, 4, 4, 2]) + op("malloc_physical", chunks(1), [1, 2, 4, 0]),
    "physical-capacity": DEV_HBM_HUGE(64) + DEV_HBM_HUGE(1) + DEV_HBM_HUGE(64, 1),
    "physical-double-free": DEV_HBM_HUGE() + op("free_physical", handle(0)) + op("free_physical", STALE_HANDLE),
    "physical-forged-handles": op("free_physical", FORGED_HANDLE) + op("properties", FORGED_HANDLE, [0]) +
        op("free_physical", [0xE0]),
    "properties": DEV_HBM_HUGE() + HOST_HUGE() + op("properties", handle(0), [0]) +
        op("properties", handle(1), [0]) + op("properties", handle(1), [1]),
    "reserve-release": RESERVE() + op("release", obj(0)) + op("release", STALE),
    "reserve-expect-ptr": op("reserve", chunks(1), [0xC3, 0]) + op("reserve", chunks(1), [0x80, 0]) +
        op("reserve", chunks(1), [0xE1, 0]) + op("reserve", chunks(1), [0xE2, 0]),
    "reserve-large-and-odd": op("reserve", [0xA2], [0, 0]) + op("reserve", [0x41], [0, 8]) +
        op("reserve", [0xDF], [0, 0]) + op("reserve", chunks(1), [0, 2, 3]),
    "reserve-no-uc": op("reserve_no_uc", chunks(1), [0]) + op("reserve_no_uc", [0x80], [0]),
    "map-unmap": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) + op("unmap", obj(0)) +
        op("free_physical", handle(0)) + op("release", obj(0)),
    "map-errors": DEV_HBM_HUGE(2) + RESERVE(2) + op("map", obj(0, 0x41), [0], handle(0), [0]) +
        op("map", obj(0, 0x81), [0x81], handle(0), [0]) + op("map", obj(0), [0x82], handle(0), [0]) +
        op("map", obj(0), [0], handle(0), [2, 0]) + MAP(0, 0) + MAP(0, 0),
    "map-bound-location": DEV_HBM_HUGE(1, 0) + DEV_HBM_HUGE(1, 1) + RESERVE(4) + MAP(0, 0) +
        op("map", obj(0, 0x41), [0], handle(1), [0]),
    "free-while-mapped": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) + op("free_physical", handle(0)) +
        op("free_physical", handle(0)) + op("properties", handle(0), [0]) + op("unmap", obj(0)) +
        op("properties", STALE_HANDLE, [0]),
    "map-past-reservation-size": DEV_HBM_HUGE() + op("reserve", [0xA2], [0, 0]) +
        op("map", obj(0, 0x7c), [0], handle(0), [0]) + op("map", obj(0, 0x7d), [0], handle(0), [0]) +
        op("map", obj(0, 0x7b), [0], handle(0), [0]) + op("pointer_attributes", obj(0, 0x7d), [0]) +
        op("retain", obj(0, 0x7d), [0]) + op("address_range", obj(0, 0x7d), [0]),
    "release-while-mapped": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) + op("release", obj(0)),
    "retain": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) + op("retain", obj(0), [0]) +
        op("retain", obj(0, 0x81), [0]) + op("free_physical", handle(0)) + op("unmap", obj(0)) +
        op("free_physical", handle(0)),
    "no-access-then-set-access": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0, 1) +
        op("read_check", data(0, 0, 64)) +
        op("set_access", obj(0), [0], [0], [2, 1, 0], [0]) + op("read_check", data(0, 0, 64)) +
        op("get_access", obj(0), [1, 0], [0]) + op("get_access", obj(0), [0, 0], [0]),
    "set-access-host-and-peer": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) +
        op("set_access", obj(0), [0], [2], [1, 0, 0, 2, 1, 1, 2, 1, 0], [0]) +
        op("set_device", [1]) + op("read_check", data(0, 8, 100)) + op("get_access", obj(0), [1, 1], [0]),
    "set-access-errors": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) +
        op("set_access", obj(0), [0], [0], [3, 1, 0], [0]) + op("set_access", obj(0), [0], [0], [2, 2, 0], [0]) +
        op("set_access", obj(0), [0x81], [0], [2, 1, 0], [0]) + op("set_access", obj(0), [0], [0xF0], [0]),
    "address-range-and-pointer-attributes": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) +
        op("malloc", [0x41], [0], [0]) + op("address_range", obj(0, 0x81), [0]) +
        op("address_range", obj(1, 0x90), [1]) + op("pointer_attributes", obj(0, 0x81), [0]) +
        op("pointer_attributes", obj(1), [0]) + op("pointer_attributes", forged(0), [0]) +
        op("pointer_attributes", forged(2), [0]) + op("address_range", forged(5), [0]),
    "malloc-free": op("malloc", [0x41], [0], [0]) + op("malloc", chunks(2), [1], [0]) +
        op("malloc", [0x48], [2], [0]) + op("free", obj(0)) + op("free", obj(0)) + op("free", STALE),
    "malloc-policies": op("malloc", chunks(1), [6], [0]) + op("malloc", chunks(1), [8], [0]) +
        op("malloc", chunks(1), [9], [0]) + op("malloc", chunks(64), [0], [0]),
    "malloc-host": op("malloc_host", [0x41], [0]) + op("memcpy", data(0, 0, 512), data(1, 0, 0), [4], [0]) +
        op("read_check", data(0, 0, 512)) + op("free_host", obj(0)) + op("free_host", STALE),
    "memcpy-through-two-mappings": DEV_HBM_HUGE() + RESERVE() + RESERVE() + MAP(0, 0) + MAP(1, 0) +
        op("memcpy", data(0, 100, 4000), data(2, 7, 0), [1], [0]) + op("read_check", data(1, 90, 4100)),
    "memcpy-device-to-device": DEV_HBM_HUGE() + DEV_HBM_HUGE() + RESERVE(2) + RESERVE(2) + MAP(0, 0) +
        MAP(1, 1) + op("memset", data(0, 0, 3000), [0x5c], [0]) +
        op("memcpy", data(1, 16, 2000), data(0, 0, 0), [3], [0]) + op("read_check", data(1, 0, 2100)),
    "memcpy-errors": DEV_HBM_HUGE() + RESERVE() + MAP(0, 0) +
        op("memcpy", data(0, 0, 64), data(1, 0, 0), [6], [0]) + op("memcpy", data(0, 0, 64), data(1, 0, 0), [0], [1]) +
        op("memcpy", data(0, 0xFF10, 64), data(1, 0, 0), [1], [0]) + op("memcpy", [0xF0, 0] + u64(0) + u16(0) + u16(64), data(1, 0, 0), [1], [0]),
    "memset-malloc-read-back": op("malloc", [0x44], [0], [0]) + op("memset", data(0, 10, 300), [0xa7], [0]) +
        op("read_check", data(0, 0, 400)) + op("memset", data(0, 0, 10), [1], [1]),
    "malloc-peer-access": op("set_device", [1]) + op("malloc", chunks(1), [0], [0]) + op("set_device", [0]) +
        op("read_check", data(0, 0, 64)) + op("peer_access", [1], [0]) + op("read_check", data(0, 0, 64)) +
        op("peer_access", [1], [1]) + op("peer_access", [0], [0]) + op("peer_access", [1], [2, 0xE1]),
    "host-physical-mapping": HOST_HUGE() + RESERVE() + MAP(0, 0) +
        op("memcpy", data(0, 0, 1000), data(1, 0, 0), [1], [0]) + op("read_check", data(0, 0, 1000)) +
        op("pointer_attributes", obj(0), [0]),
    "managed": op("alloc_managed", [0x41], [0]) + op("memset", data(0, 0, 100), [9], [0]) +
        op("read_check", data(0, 0, 200)) + op("managed_advise", obj(0), chunks(1), [2, 1, 0]) +
        op("managed_prefetch", obj(0), chunks(1), [1, 1], [0xE0], [0]) +
        op("managed_get_attr", obj(0), chunks(1), [1], [0]) + op("read_check", data(0, 0, 200)) +
        op("free", obj(0)) + op("free", STALE),
    "managed-errors": op("alloc_managed", [0x80], [0]) + op("alloc_managed", chunks(1), [2, 0]) +
        op("alloc_managed", chunks(1), [0]) + op("managed_advise", obj(0), [0xA5], [0, 0, 0]) +
        op("managed_advise", obj(0), chunks(1), [6, 0, 0]) + op("managed_get_attr", obj(0), chunks(1), [3], [1]) +
        op("managed_prefetch", obj(0), chunks(1), [0, 0], [0xE0], [0]),
    "streams": op("create_stream", [0]) + op("synchronize_stream", [0]) +
        op("managed_prefetch", [0xF0, 3] + u64(0), chunks(1), [2, 0], [0], [0]) +
        op("destroy_stream", [0], [0]) + op("destroy_stream", [0xC0], [1]) + op("synchronize_stream", [0xE0]) +
        op("create_stream", [0]) + op("destroy_stream", [0], [1]),
    "export-import-other-device": DEV_HBM_HUGE() + op("export", handle(0), [0], [0]) +
        op("import", [0], [1], [0]) + op("import", [0], [1], [0]) + op("import", [0], [0], [0]) +
        RESERVE() + op("map", obj(0), [0], handle(1), [0]) + op("set_device", [1]) +
        op("memcpy", data(0, 0, 256), data(1, 0, 0), [1], [0]) + op("properties", handle(1), [0]),
    "export-v2-and-errors": DEV_HBM_HUGE() + HOST_HUGE() + op("export", handle(0), [1], [0]) +
        op("export", handle(0), [0], [0]) + op("export", handle(1), [0], [0]) + op("import", [0], [1], [0]) +
        op("export", handle(0), [5, 2], [0]) + op("import", [0xF0, 1] + u64(0x12345678), [0], [0]),
    "set-pid": DEV_HBM_HUGE() + op("export", handle(0), [0], [0]) + op("set_pid", [0], [0]) +
        op("set_pid", [0], [1]) + op("set_pid", [0], [8]) + op("set_pid", [0], [16]) +
        op("free_physical", handle(0)) + op("set_pid", [0xC0], [0]),
    "set-pid-disabled-validation": DEV_HBM_HUGE() + op("export", handle(0), [0], [0xE1]) + op("set_pid", [0], [0]),
    "import-token-other-device-field": DEV_HBM_HUGE() + op("export", handle(0), [0], [0]) +
        op("import", [0], [1], [0]) + op("import", [0xF0, 2] + u64(0), [1], [0]),
    "import-v2-current-device": DEV_HBM_HUGE() + op("export", handle(0), [0], [0]) + op("set_device", [1]) +
        op("import", [0], [0], [1]) + op("free_physical", handle(0)) + op("import", [0], [0], [1]),
    "devices": op("set_device", [1]) + op("set_device", [2]) + op("set_device", [0xF0] + list(struct.pack("<i", -1))) +
        op("set_device", [0]),
}

def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    for name, seq in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes(seq))
    print(f"wrote {len(SEEDS)} seeds to {out}")

if __name__ == "__main__":
    main()
