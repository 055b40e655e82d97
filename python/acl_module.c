/*
 * The `acl` extension module (acl.so): the top-level calls and the submodules acl.rt and
 * acl.util, laid out like pyACL so that pyACL programs run unchanged on aclvmm.
 */
#include "acl_py.h"

static PyObject *init(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path = NULL; /* acl.init() and acl.init(None) mean aclInit(NULL) */
    aclError ret;
    ACLPY_PARSE(args, "|z", "acl.init", &path);
    ACLPY_CALL(ret, aclInit(path));
    return aclpy_ret(ret);
}

static PyObject *finalize(PyObject *self, PyObject *args)
{
    (void)self;
    aclError ret;
    ACLPY_PARSE(args, "", "acl.finalize", NULL);
    ACLPY_CALL(ret, aclFinalize());
    return aclpy_ret(ret);
}

/* str, or None when the C call returns NULL. */
static PyObject *str_or_none(const char *s)
{
    if (s == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *get_soc_name(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name = NULL;
    ACLPY_PARSE(args, "", "acl.get_soc_name", NULL);
    ACLPY_CALL(name, aclrtGetSocName()); /* may start the runtime */
    return str_or_none(name);
}

/* Reading clears the calling thread's queue (aclGetRecentErrMsg semantics). */
static PyObject *get_recent_err_msg(PyObject *self, PyObject *args)
{
    (void)self;
    const char *msg = NULL;
    ACLPY_PARSE(args, "", "acl.get_recent_err_msg", NULL);
    ACLPY_CALL(msg, aclGetRecentErrMsg()); /* the queue is per thread: still this one after */
    return str_or_none(msg);
}

static PyObject *get_version(PyObject *self, PyObject *args)
{
    (void)self;
    int32_t major = 0, minor = 0, patch = 0;
    ACLPY_PARSE(args, "", "acl.get_version", NULL);
    /* aclrtGetVersion is deprecated in the C headers but is what pyACL's get_version reports. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    aclError ret;
    ACLPY_CALL(ret, aclrtGetVersion(&major, &minor, &patch));
#pragma GCC diagnostic pop
    return Py_BuildValue("(iiii)", (int)major, (int)minor, (int)patch, (int)ret);
}

static PyMethodDef acl_methods[] = {
    {"init", init, METH_VARARGS, "init([config_path]) -> ret"},
    {"finalize", finalize, METH_VARARGS, "finalize() -> ret"},
    {"get_soc_name", get_soc_name, METH_VARARGS, "get_soc_name() -> str or None"},
    {"get_recent_err_msg", get_recent_err_msg, METH_VARARGS, "get_recent_err_msg() -> str or None"},
    {"get_version", get_version, METH_VARARGS, "get_version() -> (major, minor, patch, ret)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef acl_def = {
    PyModuleDef_HEAD_INIT, "acl", "pyACL-compatible binding of aclvmm (docs/python.md).", -1, acl_methods,
    NULL, NULL, NULL, NULL,
};

static struct PyModuleDef rt_def = {
    PyModuleDef_HEAD_INIT, "acl.rt",
    "Runtime: devices, streams, memory, virtual memory management, sharing, managed memory.", -1, NULL, NULL, NULL,
    NULL, NULL,
};

/* Every family's table (acl_py.h); a name defined twice would silently replace the first, so
 * tests/python/test_stubs.py compares the module's names with the stubs'. */
static PyMethodDef *const rt_tables[] = {
    aclpy_rt_device_methods,
    aclpy_rt_device_info_methods,
    aclpy_rt_vmm_methods,
    aclpy_rt_ipc_methods,
    aclpy_rt_access_methods,
    aclpy_rt_link_methods,
    aclpy_rt_share_v2_methods,
    aclpy_rt_host_methods,
    aclpy_rt_stream_methods,
    aclpy_rt_copy_methods,
    aclpy_rt_managed_methods,
};

PyObject *aclpy_make_rt(void)
{
    PyObject *rt = PyModule_Create(&rt_def);
    if (rt == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof(rt_tables) / sizeof(rt_tables[0]); ++i) {
        if (PyModule_AddFunctions(rt, rt_tables[i]) < 0) {
            Py_DECREF(rt);
            return NULL;
        }
    }
    return rt;
}

/* Attaches sub as acl.<attr> and registers it in sys.modules, so that `import acl.rt` and
 * `from acl.rt import map_mem` work as well as the attribute access pyACL programs use. */
static int add_submodule(PyObject *acl, const char *attr, const char *qualname, PyObject *sub)
{
    if (sub == NULL) {
        return -1;
    }
    int rc = PyDict_SetItemString(PyImport_GetModuleDict(), qualname, sub);
    if (rc == 0) {
        rc = PyModule_AddObjectRef(acl, attr, sub);
    }
    Py_DECREF(sub);
    return rc;
}

PyMODINIT_FUNC PyInit_acl(void)
{
    PyObject *acl = PyModule_Create(&acl_def);
    if (acl == NULL) {
        return NULL;
    }
    if (PyModule_AddFunctions(acl, aclpy_sys_methods) < 0 ||
        add_submodule(acl, "rt", "acl.rt", aclpy_make_rt()) < 0 ||
        add_submodule(acl, "util", "acl.util", aclpy_make_util()) < 0) {
        Py_DECREF(acl);
        return NULL;
    }
    return acl;
}
