"""Memory-manager scenarios the plugin's tests run on the `npu_emulator` fixture: device memory
mapped at a reservation, byte copies, and a second process that imports a shared handle. Plain
functions over `acl`, so the wheel test (tests/wheel) runs the same code from its own copy."""
import json
import sys

import acl
import acl.rt
import acl.util

MIB = 1 << 20
H2D, D2H = 1, 2  # aclrtMemcpyKind


def prop(device=0):
    """aclrtPhysicalMemProp of device memory in 2 MiB pages on `device`."""
    return {"handleType": 0, "allocationType": 0, "memAttr": 4,
            "location": {"id": device, "type": 1}, "reserve": 0}


def pattern(size, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(256)) * (size // 256)


def ok(ret, what):
    assert ret == 0, "%s returned %d (%s)" % (what, ret, acl.get_recent_err_msg())


def h2d(va, data):
    ok(acl.rt.memcpy(va, len(data), acl.util.bytes_to_ptr(data), len(data), H2D), "memcpy H2D")


def d2h(va, size):
    host, ret = acl.rt.malloc_host(size)
    ok(ret, "malloc_host")
    try:
        ok(acl.rt.memcpy(host, size, va, size, D2H), "memcpy D2H")
        return acl.util.ptr_to_bytes(host, size)
    finally:
        ok(acl.rt.free_host(host), "free_host")


def allocate_and_map(size, device=0, va=0):
    """(handle, va): size bytes of device memory mapped at a new reservation (at `va` if given)."""
    handle, ret = acl.rt.malloc_physical(size, prop(device), 0)
    ok(ret, "malloc_physical")
    if not va:
        va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
        ok(ret, "reserve_mem_address")
    ok(acl.rt.map_mem(va, size, 0, handle, 0), "map_mem")
    return handle, va


def unmap_and_free(handle, va, release=True):
    ok(acl.rt.unmap_mem(va), "unmap_mem")
    if release:
        ok(acl.rt.release_mem_address(va), "release_mem_address")
    ok(acl.rt.free_physical(handle), "free_physical")


# The importing process: `python npu_scenarios.py import`. It says `tgid <bare tgid>`, reads
# `<token hex> <size>`, imports and maps, prints `read <hex of the first 64 bytes> <all equal>`
# comparing with pattern(size, 7), writes pattern(size, 9), says `done <device count>`, and
# gives everything back before it exits.
def _importer():
    ok(acl.init(), "init")
    ok(acl.rt.set_device(0), "set_device")
    tgid, ret = acl.rt.device_get_bare_tgid()
    ok(ret, "device_get_bare_tgid")
    print("tgid", tgid, flush=True)
    token_hex, size = sys.stdin.readline().split()
    size = int(size)
    handle, ret = acl.rt.mem_import_from_shareable_handle(int(token_hex, 16), 0)
    ok(ret, "mem_import_from_shareable_handle")
    va, ret = acl.rt.reserve_mem_address(size, 0, 0, 0)
    ok(ret, "reserve_mem_address")
    ok(acl.rt.map_mem(va, size, 0, handle, 0), "map_mem")
    data = d2h(va, size)
    print("read", data[:64].hex(), data == pattern(size, 7), flush=True)
    h2d(va, pattern(size, 9))
    count, ret = acl.rt.get_device_count()
    print("done", count, json.dumps(sys.argv[2:]), flush=True)
    sys.stdin.readline()  # the parent has read the bytes
    unmap_and_free(handle, va)
    ok(acl.rt.reset_device(0), "reset_device")
    ok(acl.finalize(), "finalize")


def _reader(child):
    """A queue of the child's stdout lines, filled by a thread: a read with a timeout, so a stuck
    child fails the test instead of hanging it."""
    import queue
    import threading

    lines = queue.Queue()

    def pump():
        for line in child.stdout:
            lines.put(line.split())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _line(lines, timeout=60):
    import queue

    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError("the child said nothing for %d s" % timeout) from None
    assert line is not None, "the child ended early"
    return line


def share_with_child(npu, size=4 * MIB):
    """Exports `size` bytes to an importer process started with npu.python(); checks the bytes
    both ways and returns the importer's view of the device count."""
    import subprocess

    handle, va = allocate_and_map(size)
    try:
        h2d(va, pattern(size, 7))
        token, ret = acl.rt.mem_export_to_shareable_handle(handle, 0, 0)
        ok(ret, "mem_export_to_shareable_handle")
        child = npu.python(__file__, "import", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
        lines = _reader(child)
        try:
            word, tgid = _line(lines)
            assert word == "tgid"
            ok(acl.rt.mem_set_pid_to_shareable_handle(token, [int(tgid)]), "set_pid")
            child.stdin.write("%x %d\n" % (token, size))
            child.stdin.flush()
            read = _line(lines)
            assert read == ["read", pattern(size, 7)[:64].hex(), "True"], read
            done = _line(lines)
            assert done[0] == "done", done
            assert d2h(va, size) == pattern(size, 9)
            child.stdin.write("exit\n")
            child.stdin.flush()
            assert child.wait(timeout=60) == 0
            return int(done[1])
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    finally:
        unmap_and_free(handle, va)


if __name__ == "__main__" and sys.argv[1:2] == ["import"]:
    _importer()
