/* acl.rt: the V2 shareable-handle calls (behavior.md 7, "V2"). Not in pyACL; named and shaped like
 * its V1 calls, except that the handle is `bytes`: the C API takes it through a void *, 8 bytes
 * (a uint64_t in the V1 format) for ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT and a 128-byte
 * aclrtMemFabricHandle for ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, so the same Python type carries both
 * and the bytes can be sent to another process as they are. */
#include "acl_py.h"

/* How many bytes of the handle a share type uses: what the export returns. Any other type is
 * refused by the C API before it writes anything. */
static size_t handle_bytes(int share_type)
{
    return share_type == ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT ? sizeof(uint64_t) : sizeof(aclrtMemFabricHandle);
}

/* The bytes-like `buf` copied into a zeroed aclrtMemFabricHandle, the largest form, so that the C
 * API never reads past what Python gave: a shorter handle is zero-padded and the C API decides
 * (a DEFAULT handle is its first 8 bytes). More than 128 bytes cannot be a handle: ValueError. */
static int handle_in(const Py_buffer *buf, const char *qualname, aclrtMemFabricHandle *out)
{
    memset(out, 0, sizeof(*out));
    if ((size_t)buf->len > sizeof(out->data)) {
        PyErr_Format(PyExc_ValueError, "%s: shareable_handle has %zd bytes, at most %zu", qualname, buf->len,
                     sizeof(out->data));
        return -1;
    }
    memcpy(out->data, buf->buf, (size_t)buf->len);
    return 0;
}

/* -> (shareable_handle: bytes, ret): 8 bytes for DEFAULT, 128 for FABRIC, b"" on failure. */
static PyObject *mem_export_to_shareable_handle_v2(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long handle = 0, flags = 0;
    int share_type = 0;
    aclrtMemFabricHandle out;
    aclError ret;
    ACLPY_PARSE(args, "KKi", "acl.rt.mem_export_to_shareable_handle_v2", &handle, &flags, &share_type);
    memset(&out, 0, sizeof(out));
    ACLPY_CALL(ret, aclrtMemExportToShareableHandleV2(aclpy_ptr(handle), flags, (aclrtMemSharedHandleType)share_type,
                                                      &out));
    return aclpy_bytes_ret(out.data, handle_bytes(share_type), ret);
}

static PyObject *mem_set_pid_to_shareable_handle_v2(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.mem_set_pid_to_shareable_handle_v2";
    Py_buffer buf;
    int share_type = 0;
    PyObject *list = NULL;
    aclrtMemFabricHandle in;
    Py_ssize_t n = 0;
    aclError ret;
    ACLPY_PARSE(args, "y*iO", name, &buf, &share_type, &list);
    int rc = handle_in(&buf, name, &in);
    PyBuffer_Release(&buf);
    if (rc < 0) {
        return NULL;
    }
    int32_t *pids = aclpy_int32_array(list, name, "pid_list", &n);
    if (pids == NULL) {
        return NULL;
    }
    ACLPY_CALL(ret, aclrtMemSetPidToShareableHandleV2(&in, (aclrtMemSharedHandleType)share_type, pids, (size_t)n));
    PyMem_Free(pids);
    return aclpy_ret(ret);
}

/* Imports onto the calling thread's current device (the V2 call has no device argument). */
static PyObject *mem_import_from_shareable_handle_v2(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.mem_import_from_shareable_handle_v2";
    Py_buffer buf;
    int share_type = 0;
    unsigned long long flags = 0;
    aclrtMemFabricHandle in;
    aclrtDrvMemHandle handle = NULL;
    aclError ret;
    ACLPY_PARSE(args, "y*iK", name, &buf, &share_type, &flags);
    int rc = handle_in(&buf, name, &in);
    PyBuffer_Release(&buf);
    if (rc < 0) {
        return NULL;
    }
    ACLPY_CALL(ret, aclrtMemImportFromShareableHandleV2(&in, (aclrtMemSharedHandleType)share_type, flags, &handle));
    return aclpy_u64_ret(aclpy_int(handle), ret);
}

PyMethodDef aclpy_rt_share_v2_methods[] = {
    {"mem_export_to_shareable_handle_v2", mem_export_to_shareable_handle_v2, METH_VARARGS,
     "mem_export_to_shareable_handle_v2(handle, flags, share_type) -> (shareable_handle, ret)"},
    {"mem_set_pid_to_shareable_handle_v2", mem_set_pid_to_shareable_handle_v2, METH_VARARGS,
     "mem_set_pid_to_shareable_handle_v2(shareable_handle, share_type, pid_list) -> ret"},
    {"mem_import_from_shareable_handle_v2", mem_import_from_shareable_handle_v2, METH_VARARGS,
     "mem_import_from_shareable_handle_v2(shareable_handle, share_type, flags) -> (handle, ret)"},
    {NULL, NULL, 0, NULL},
};
