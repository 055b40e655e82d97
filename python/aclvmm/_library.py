"""Finding the libascendcl.so that the `acl` module runs on, and its aclvmm extensions.

The `acl` module links libascendcl.so; which file that is depends on how aclvmm was installed
(the wheel's aclvmm/lib, a CANN-like root's lib64, a build tree) and on PYTHONPATH, which may
put a real CANN's pyACL first. So the library is never guessed: the extensions are looked up
through the loaded acl.so's own handle, which resolves them in the library the module was linked
with, so they act on the same runtime state as the module.
"""

import ctypes
import os

class AclvmmNotLoaded(RuntimeError):
    """The `acl` module in use is not aclvmm's (a real pyACL came first on sys.path)."""


def package_library_dir():
    """aclvmm/lib of the wheel, or None outside a wheel installation."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
    return d if os.path.isfile(os.path.join(d, "libascendcl.so")) else None


def acl_module_path():
    """The file of the `acl` module this interpreter imports."""
    import acl  # noqa: F401  (imported for its side effect: the library gets loaded)

    return os.path.abspath(acl.__file__)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _acl_handle():
    """ctypes handle of the loaded acl.so itself (RTLD_NOLOAD: never a second copy). dlsym on it
    searches acl.so and then its dependencies, so a name resolves in the very libascendcl.so the
    module runs on, whatever else the process has loaded (a vendor library through torch_npu,
    a file replaced by a rebuild)."""
    return ctypes.CDLL(acl_module_path(), mode=os.RTLD_NOLOAD | os.RTLD_NOW)


def library_path():
    """The libascendcl.so that `import acl` runs on (importing it if needed): the file that
    defines the aclInit the module's handle resolves to."""
    function = _acl_handle().aclInit
    info = _DlInfo()
    libc = ctypes.CDLL(None)
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    if not libc.dladdr(ctypes.cast(function, ctypes.c_void_p), ctypes.byref(info)) or not info.dli_fname:
        raise AclvmmNotLoaded("cannot tell which file defines the aclInit of `acl`")
    return os.path.abspath(info.dli_fname.decode())


_extensions = None


def extensions():
    """ctypes handle of the loaded library with the aclvmm extension signatures set.

    Raises AclvmmNotLoaded when the library is the vendor's (it has no aclvmmStatsJson)."""
    global _extensions
    if _extensions is None:
        path = library_path()
        lib = _acl_handle()
        try:
            lib.aclvmmStatsJson.restype = ctypes.c_char_p
            lib.aclvmmStatsJson.argtypes = []
            lib.aclvmmInjectFault.restype = ctypes.c_int
            lib.aclvmmInjectFault.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int]
            lib.aclvmmFaultRemaining.restype = ctypes.c_uint32
            lib.aclvmmFaultRemaining.argtypes = [ctypes.c_char_p]
            lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
            lib.aclGetRecentErrMsg.argtypes = []
        except AttributeError:
            raise AclvmmNotLoaded(
                "`acl` (%s) runs on %s, which is not aclvmm's library (no aclvmmStatsJson): a "
                "real pyACL comes first on sys.path; see docs/python.md, 'Which acl'"
                % (acl_module_path(), path)) from None
        _extensions = lib
    return _extensions
