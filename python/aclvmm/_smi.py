"""The `aclvmm-smi` console script of the wheel: runs the aclvmm-smi binary the wheel carries
(aclvmm/bin), with the same arguments, in place of this process."""

import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "aclvmm-smi")
    if not os.access(binary, os.X_OK):
        sys.stderr.write("aclvmm-smi: %s is missing; this aclvmm package is not a wheel "
                         "installation (a CANN-like root has bin/aclvmm-smi)\n" % binary)
        return 127
    os.execv(binary, [binary] + sys.argv[1:])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
