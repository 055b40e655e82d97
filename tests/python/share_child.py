"""The other process of test_share.py and test_share_v2.py: imports a shareable handle and works
on its bytes.

Started as `share_child.py <shareable-handle-hex>` (V1: the 64-bit token) or
`share_child.py v2 <share_type> <shareable-handle bytes in hex>` (V2: the bytes). It initialises
ACL on device 0, prints `ready <bare tgid>`, then answers one line per command read from stdin (the
reply repeats the command word, then the result):

  import                    -> import <ret>          (V1: mem_import_from_shareable_handle onto
                                                      device 0; V2: mem_import_from_shareable_handle_v2,
                                                      onto the current device 0)
  map <size>                -> map <ret>             (reserve + map the imported handle)
  read <offset> <n>         -> read <sha256 hex>     (n bytes of the mapping, copied D2H)
  write <offset> <n> <seed> -> write <ret>           (pattern(n, seed) copied H2D)
  exit                      -> exit <ret>            (0 when every teardown call returned 0)
"""
import hashlib
import sys

import acl
import acl.rt

from acl_constants import ACL_SUCCESS, pattern
from acl_helpers import d2h, h2d


def reply(*words):
    print(*words, flush=True)


def main():
    if sys.argv[1] == "v2":
        share_type, shareable = int(sys.argv[2]), bytes.fromhex(sys.argv[3])

        def import_handle():
            return acl.rt.mem_import_from_shareable_handle_v2(shareable, share_type, 0)
    else:
        token = int(sys.argv[1], 16)

        def import_handle():
            return acl.rt.mem_import_from_shareable_handle(token, 0)
    if acl.init() != ACL_SUCCESS or acl.rt.set_device(0) != ACL_SUCCESS:
        return 1
    tgid, ret = acl.rt.device_get_bare_tgid()
    if ret != ACL_SUCCESS:
        return 1
    reply("ready", tgid)
    handle = va = 0
    for line in sys.stdin:
        cmd, *args = line.split()
        n = [int(a) for a in args]
        if cmd == "import":
            handle, ret = import_handle()
            reply(cmd, ret)
        elif cmd == "map":
            va, ret = acl.rt.reserve_mem_address(n[0], 0, 0, 0)
            reply(cmd, ret if ret != ACL_SUCCESS else acl.rt.map_mem(va, n[0], 0, handle, 0))
        elif cmd == "read":
            reply(cmd, hashlib.sha256(d2h(va + n[0], n[1])).hexdigest())
        elif cmd == "write":
            reply(cmd, h2d(va + n[0], pattern(n[1], n[2])))
        elif cmd == "exit":
            rets = [acl.rt.unmap_mem(va), acl.rt.release_mem_address(va), acl.rt.free_physical(handle),
                    acl.rt.reset_device(0), acl.finalize()]
            reply(cmd, max(rets))
            return 0
        else:
            reply("unknown", cmd)
    return 1  # stdin closed without "exit": the parent is gone


if __name__ == "__main__":
    sys.exit(main())
