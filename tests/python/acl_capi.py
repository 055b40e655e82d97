"""The C API through ctypes, on the same libascendcl.so the extension loaded (one runtime state for
both), for the tests that compare the binding's `ret` with the C call's, and for the statistics
(aclvmmStatsJson, include/aclvmm/aclvmm.h) that the binding does not expose."""
import ctypes
import json
import os

vp, u64, u32, i32, sz = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int32, ctypes.c_size_t
enum = ctypes.c_int


class Location(ctypes.Structure):  # aclrtMemLocation, 8 bytes
    _fields_ = [("id", u32), ("type", enum)]


class AccessDesc(ctypes.Structure):  # aclrtMemAccessDesc, 24 bytes
    _fields_ = [("flags", enum), ("location", Location), ("rsv", ctypes.c_uint8 * 12)]


class ManagedLocation(ctypes.Structure):  # aclrtMemManagedLocation, 8 bytes: type first
    _fields_ = [("type", enum), ("id", i32)]


class BatchAttr(ctypes.Structure):  # aclrtMemcpyBatchAttr, 32 bytes
    _fields_ = [("dstLoc", Location), ("srcLoc", Location), ("rsv", ctypes.c_uint8 * 16)]


class ServerPid(ctypes.Structure):  # aclrtServerPid, 24 bytes
    _fields_ = [("sdid", u32), ("pid", ctypes.POINTER(i32)), ("num", sz)]


P = ctypes.POINTER
SIGNATURES = {
    # streams and copies
    "aclrtCreateStreamWithConfig": [P(vp), u32, u32],
    "aclrtDestroyStream": [vp], "aclrtDestroyStreamForce": [vp], "aclrtSynchronizeStream": [vp],
    "aclrtSynchronizeStreamWithTimeout": [vp, i32], "aclrtStreamAbort": [vp],
    "aclrtSynchronizeDeviceWithTimeout": [i32],
    "aclrtValueWrite": [vp, u64, u32, vp], "aclrtValueWait": [vp, u64, u32, vp],
    "aclrtMemcpyAsync": [vp, sz, vp, sz, enum, vp], "aclrtMemsetAsync": [vp, sz, i32, sz, vp],
    "aclrtMemcpyBatch": [P(vp), P(sz), P(vp), P(sz), sz, P(BatchAttr), P(sz), sz, P(sz)],
    "aclrtMemcpyBatchAsync": [P(vp), P(sz), P(vp), P(sz), sz, P(BatchAttr), P(sz), sz, P(sz), vp],
    # managed memory
    "aclrtMemAllocManaged": [P(vp), u64, u32],
    "aclrtMemManagedAdvise": [vp, u64, enum, ManagedLocation],
    "aclrtMemManagedGetAttr": [enum, vp, sz, vp, sz],
    "aclrtMemManagedGetAttrs": [P(enum), sz, vp, sz, P(vp), P(sz)],
    "aclrtMemManagedPrefetchAsync": [vp, sz, ManagedLocation, u32, vp],
    "aclrtMemManagedPrefetchBatchAsync": [P(vp), P(sz), sz, P(ManagedLocation), P(sz), sz, u64, vp],
    # access, links, VMM extras
    "aclrtMemSetAccess": [vp, sz, P(AccessDesc), sz], "aclrtMemGetAccess": [vp, P(Location), P(u64)],
    "aclrtMemMapNoAccess": [vp, sz, sz, vp, u64],
    "aclrtReserveMemAddressNoUCMemory": [P(vp), sz, sz, vp, u64],
    "aclrtMemMapSetLink": [vp, enum], "aclrtMemMapSelectedLink": [vp, sz, vp, u32],
    "aclrtMemP2PMap": [vp, sz, i32, u64],
    # V2 sharing
    "aclrtMemExportToShareableHandleV2": [vp, u64, enum, vp],
    "aclrtMemSetPidToShareableHandleV2": [vp, enum, P(i32), sz],
    "aclrtMemImportFromShareableHandleV2": [vp, enum, u64, P(vp)],
    # host registration
    "aclrtHostRegister": [vp, u64, enum, P(vp)], "aclrtHostRegisterV2": [vp, u64, u32],
    "aclrtHostGetDevicePointer": [vp, P(vp), u32], "aclrtHostUnregister": [vp],
    # devices, IPC extras, versions
    "aclrtDeviceGetUuid": [i32, ctypes.c_char * 16], "aclrtMallocAlign32": [P(vp), sz, enum],
    "aclrtIpcMemSetAttr": [ctypes.c_char_p, enum, u64],
    "aclrtIpcMemImportPidInterServer": [ctypes.c_char_p, P(ServerPid), sz],
    "aclsysGetVersionStr": [ctypes.c_char_p, ctypes.c_char_p], "aclsysGetVersionNum": [ctypes.c_char_p, P(i32)],
}
for _name in ("GetLogicDevIdByUserDevId", "GetUserDevIdByLogicDevId", "GetLogicDevIdByPhyDevId",
              "GetPhyDevIdByLogicDevId", "GetUserDevIdByPhyDevId", "GetPhyDevIdByUserDevId"):
    SIGNATURES["aclrt" + _name] = [i32, P(i32)]


def load():
    """The library, with the prototypes above; it must be the very file the extension loaded."""
    lib = ctypes.CDLL(os.environ["ACLVMM_LIBASCENDCL"])
    with open("/proc/self/maps") as f:
        loaded = {line.split()[-1] for line in f if "libascendcl" in line}
    assert loaded == {os.path.realpath(os.environ["ACLVMM_LIBASCENDCL"])}
    for name, args in SIGNATURES.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    lib.aclvmmStatsJson.restype = ctypes.c_char_p
    lib.aclvmmStatsJson.argtypes = []
    return lib


def stats(lib):
    """aclvmmStatsJson() parsed (docs/emulation.md, "Statistics")."""
    return json.loads(lib.aclvmmStatsJson().decode())


def array(ctype, values):
    """A C array holding values (at least one element, so that it is never NULL)."""
    return (ctype * max(1, len(values)))(*values)


def out_ptr():
    return ctypes.c_void_p(0)


def mismatches(cases):
    """The cases whose (expected, binding, C API) values are not all equal (empty when all agree)."""
    return {name: c for name, c in cases.items() if not (c[0] == c[1] == c[2])}
