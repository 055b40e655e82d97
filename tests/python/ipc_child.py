"""The other process of test_ipc.py: imports device memory by IPC key and works on its bytes.

Started as `ipc_child.py`. It initialises ACL on device 0, prints `ready <bare tgid>`, then answers
one line per command read from stdin (the reply repeats the command word, then the result):

  import <key> <flags>      -> import <ret> <dev_ptr>  (ipc_mem_import_by_key; the last one is used)
  read <offset> <n>         -> read <sha256 hex>       (n bytes of the import, copied D2H)
  write <offset> <n> <seed> -> write <ret>             (pattern(n, seed) copied H2D)
  close <key>               -> close <ret>             (ipc_mem_close)
  exit                      -> exit <ret>              (0 when every teardown call returned 0)
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
    if acl.init() != ACL_SUCCESS or acl.rt.set_device(0) != ACL_SUCCESS:
        return 1
    tgid, ret = acl.rt.device_get_bare_tgid()
    if ret != ACL_SUCCESS:
        return 1
    reply("ready", tgid)
    ptr = 0
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "import":
            ptr, ret = acl.rt.ipc_mem_import_by_key(args[0], int(args[1]))
            reply(cmd, ret, ptr)
        elif cmd == "read":
            reply(cmd, hashlib.sha256(d2h(ptr + int(args[0]), int(args[1]))).hexdigest())
        elif cmd == "write":
            reply(cmd, h2d(ptr + int(args[0]), pattern(int(args[1]), int(args[2]))))
        elif cmd == "close":
            reply(cmd, acl.rt.ipc_mem_close(args[0]))
        elif cmd == "exit":
            rets = [acl.rt.reset_device(0), acl.finalize()]
            reply(cmd, max(rets))
            return 0
        else:
            reply("unknown", cmd)
    return 1  # stdin closed without "exit": the parent is gone


if __name__ == "__main__":
    sys.exit(main())
