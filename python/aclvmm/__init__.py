"""aclvmm's Python side: where the library is, the emulated NPU as a Python object, and the
pytest plugin (fixture `npu_emulator`). The CANN API itself is the `acl` module (pyACL's
conventions, docs/python.md).

    import aclvmm
    aclvmm.library_path()        # the libascendcl.so that `import acl` loads
    with aclvmm.NpuEmulator(device_count=2) as npu:
        ...                      # acl.init() etc.; npu.stats(), npu.faults, npu.env
"""

from ._library import AclvmmNotLoaded, acl_module_path, library_path, package_library_dir
from .emulator import Faults, LeakError, NpuEmulator, Stats

__all__ = [
    "AclvmmNotLoaded",
    "Faults",
    "LeakError",
    "NpuEmulator",
    "Stats",
    "acl_module_path",
    "library_path",
    "package_library_dir",
]
