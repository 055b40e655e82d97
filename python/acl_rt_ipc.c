/* acl.rt: IPC memory by key (runtime-extra.md 3; pyACL's ipc_mem_* calls, conventions.md 4.2) and
 * the two A3 calls next to them, named and shaped the same way. Keys are str: the 64 hex digits
 * the export wrote. */
#include "acl_py.h"

/* key_len is the C call's `len`: the room of the key buffer, which the binding provides (pyACL's
 * limit: below 1024 bytes). A key_len of 1024 or more is refused with 100000 before the call;
 * below 65 the C API refuses it (107000). On failure the key is "". */
#define ACLPY_IPC_KEY_BUFFER 1024

static PyObject *ipc_mem_get_export_key(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0, key_len = 0, flags = 0;
    char key[ACLPY_IPC_KEY_BUFFER];
    aclError ret;
    ACLPY_PARSE(args, "KKKK", "acl.rt.ipc_mem_get_export_key", &ptr, &size, &key_len, &flags);
    memset(key, 0, sizeof(key));
    if (key_len >= ACLPY_IPC_KEY_BUFFER) {
        ret = ACL_ERROR_INVALID_PARAM;
    } else {
        ACLPY_CALL(ret, aclrtIpcMemGetExportKey(aclpy_ptr(ptr), (size_t)size, key, (size_t)key_len, flags));
    }
    if (ret != ACL_SUCCESS) {
        key[0] = '\0';
    }
    key[ACLPY_IPC_KEY_BUFFER - 1] = '\0';
    return Py_BuildValue("(si)", key, (int)ret);
}

static PyObject *ipc_mem_set_import_pid(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.ipc_mem_set_import_pid";
    const char *key = NULL;
    PyObject *list = NULL;
    Py_ssize_t n = 0;
    aclError ret;
    ACLPY_PARSE(args, "sO", name, &key, &list);
    int32_t *pids = aclpy_int32_array(list, name, "pid_list", &n);
    if (pids == NULL) {
        return NULL;
    }
    ACLPY_CALL(ret, aclrtIpcMemSetImportPid(key, pids, (size_t)n));
    PyMem_Free(pids);
    return aclpy_ret(ret);
}

static PyObject *ipc_mem_import_by_key(PyObject *self, PyObject *args)
{
    (void)self;
    const char *key = NULL;
    unsigned long long flags = 0;
    void *ptr = NULL;
    aclError ret;
    ACLPY_PARSE(args, "sK", "acl.rt.ipc_mem_import_by_key", &key, &flags);
    ACLPY_CALL(ret, aclrtIpcMemImportByKey(&ptr, key, flags));
    return aclpy_u64_ret(aclpy_int(ptr), ret);
}

static PyObject *ipc_mem_close(PyObject *self, PyObject *args)
{
    (void)self;
    const char *key = NULL;
    aclError ret;
    ACLPY_PARSE(args, "s", "acl.rt.ipc_mem_close", &key);
    ACLPY_CALL(ret, aclrtIpcMemClose(key));
    return aclpy_ret(ret);
}

/* ---- A3 only (runtime-extra.md 3.7, 3.8); not in pyACL ---- */

static PyObject *ipc_mem_set_attr(PyObject *self, PyObject *args)
{
    (void)self;
    const char *key = NULL;
    int type = 0;
    unsigned long long attr = 0;
    aclError ret;
    ACLPY_PARSE(args, "siK", "acl.rt.ipc_mem_set_attr", &key, &type, &attr);
    ACLPY_CALL(ret, aclrtIpcMemSetAttr(key, (aclrtIpcMemAttrType)type, attr));
    return aclpy_ret(ret);
}

/* server_pids: a list of {"sdid": int, "pid": [int32, ...]}. Each entry's `num` is len(pid), never
 * read from the dict, so the C call cannot read past a list; a missing or None "pid" is NULL (the
 * C API's 107000). The pid arrays live in one block after the entries. */
static PyObject *ipc_mem_import_pid_inter_server(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.ipc_mem_import_pid_inter_server";
    const char *key = NULL;
    PyObject *list = NULL;
    aclrtServerPid *entries = NULL;
    int32_t **pids = NULL;
    PyObject *result = NULL;
    Py_ssize_t n = 0;
    aclError ret;
    ACLPY_PARSE(args, "sO", name, &key, &list);
    if (!PyList_Check(list)) {
        return PyErr_Format(PyExc_TypeError, "%s: server_pids must be a list", name);
    }
    /* Strong references to the entries and their pid lists while they are read: a dict lookup
     * can run a key's __eq__, which could change the list or the dicts. */
    PyObject *items = PyList_AsTuple(list);
    if (items == NULL) {
        return NULL;
    }
    n = PyTuple_GET_SIZE(items);
    entries = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(*entries));
    pids = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(*pids));
    if (entries == NULL || pids == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        unsigned long long v = 0;
        if (!PyDict_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s: server_pids[%zd] is not a dict", name, i);
            goto done;
        }
        if (aclpy_dict_int(item, "sdid", &v)) entries[i].sdid = (uint32_t)v;
        PyObject *pid = PyDict_GetItemString(item, "pid");
        if (pid == NULL || pid == Py_None) {
            continue;
        }
        Py_ssize_t count = 0;
        Py_INCREF(pid);
        pids[i] = aclpy_int32_array(pid, name, "server_pids[].pid", &count);
        Py_DECREF(pid);
        if (pids[i] == NULL) {
            goto done;
        }
        entries[i].pid = pids[i];
        entries[i].num = (size_t)count;
    }
    ACLPY_CALL(ret, aclrtIpcMemImportPidInterServer(key, entries, (size_t)n));
    result = aclpy_ret(ret);
done:
    for (Py_ssize_t i = 0; pids != NULL && i < n; ++i) {
        PyMem_Free(pids[i]);
    }
    PyMem_Free(pids);
    PyMem_Free(entries);
    Py_DECREF(items);
    return result;
}

PyMethodDef aclpy_rt_ipc_methods[] = {
    {"ipc_mem_get_export_key", ipc_mem_get_export_key, METH_VARARGS,
     "ipc_mem_get_export_key(dev_ptr, size, key_len, flags) -> (key, ret)"},
    {"ipc_mem_set_import_pid", ipc_mem_set_import_pid, METH_VARARGS, "ipc_mem_set_import_pid(key, pid_list) -> ret"},
    {"ipc_mem_import_by_key", ipc_mem_import_by_key, METH_VARARGS, "ipc_mem_import_by_key(key, flags) -> (dev_ptr, ret)"},
    {"ipc_mem_close", ipc_mem_close, METH_VARARGS, "ipc_mem_close(key) -> ret"},
    {"ipc_mem_set_attr", ipc_mem_set_attr, METH_VARARGS, "ipc_mem_set_attr(key, type, attr) -> ret"},
    {"ipc_mem_import_pid_inter_server", ipc_mem_import_pid_inter_server, METH_VARARGS,
     "ipc_mem_import_pid_inter_server(key, server_pids) -> ret"},
    {NULL, NULL, 0, NULL},
};
