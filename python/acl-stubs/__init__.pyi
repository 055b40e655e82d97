"""Type stubs of the pyACL-compatible binding `acl` (acl.so, docs/python.md).

Every function takes positional arguments only, in the C order without the output parameters, and
returns its outputs first and the aclError last (a bare int when the C call has no output).
tests/python/test_stubs.py checks that these stubs and the module define the same names with the
same number of arguments.
"""
from typing import Optional, Tuple, TypedDict

from . import rt as rt
from . import util as util

class _CANNPackageVersion(TypedDict):
    """aclCANNPackageVersion, each member a str ("" after a failure)."""

    version: str
    majorVersion: str
    minorVersion: str
    releaseVersion: str
    patchVersion: str
    reserved: str

def init(config_path: Optional[str] = None, /) -> int:
    """aclInit; no argument or None means NULL."""

def finalize() -> int:
    """aclFinalize."""

def get_soc_name() -> Optional[str]:
    """aclrtGetSocName; None when the C call returns NULL."""

def get_recent_err_msg() -> Optional[str]:
    """aclGetRecentErrMsg; reading clears the thread's queue; None when it is empty."""

def get_version() -> Tuple[int, int, int, int]:
    """aclrtGetVersion -> (major, minor, patch, ret)."""

def sys_get_version_str(pkg_name: Optional[str], /) -> Tuple[str, int]:
    """aclsysGetVersionStr -> (version, ret); "" on failure."""

def sys_get_version_num(pkg_name: Optional[str], /) -> Tuple[int, int]:
    """aclsysGetVersionNum -> (version_num, ret)."""

def sys_get_cann_version(name: int, /) -> Tuple[_CANNPackageVersion, int]:
    """aclsysGetCANNVersion (deprecated in C) -> (version dict, ret)."""
