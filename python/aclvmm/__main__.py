"""`python -m aclvmm`: which `acl` module and which libascendcl.so this interpreter uses, so that
a real pyACL and aclvmm's are never confused silently (docs/python.md, 'Which acl')."""

import sys

from ._library import AclvmmNotLoaded, acl_module_path, extensions, library_path


def main():
    try:
        module = acl_module_path()
    except ImportError as e:
        print("acl: not importable (%s)" % e)
        return 1
    print("acl: %s" % module)
    try:
        print("library: %s" % library_path())
        extensions()
    except AclvmmNotLoaded as e:
        print("aclvmm: no (%s)" % e)
        return 2
    print("aclvmm: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
