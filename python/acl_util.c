/* acl.util: moving bytes between Python and C pointers (pyACL's bytes_to_ptr / ptr_to_bytes). */
#include "acl_py.h"

/* The address of the bytes object's own buffer: no copy, so the object must outlive every use
 * of the pointer (pyACL's documented restriction). Only `bytes` is accepted, as in pyACL. */
static PyObject *bytes_to_ptr(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data = NULL;
    ACLPY_PARSE(args, "O", "acl.util.bytes_to_ptr", &data);
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_ValueError, "acl.util.bytes_to_ptr needs a bytes object");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(aclpy_int(PyBytes_AS_STRING(data)));
}

/* A new bytes object holding a copy of size bytes at ptr (a host address the process can read). */
static PyObject *ptr_to_bytes(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0;
    ACLPY_PARSE(args, "KK", "acl.util.ptr_to_bytes", &ptr, &size);
    if (size > (unsigned long long)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "acl.util.ptr_to_bytes: size too large");
        return NULL;
    }
    if (ptr == 0 && size != 0) {
        PyErr_SetString(PyExc_ValueError, "acl.util.ptr_to_bytes: ptr is 0");
        return NULL;
    }
    return PyBytes_FromStringAndSize(size == 0 ? "" : (const char *)aclpy_ptr(ptr), (Py_ssize_t)size);
}

static PyMethodDef util_methods[] = {
    {"bytes_to_ptr", bytes_to_ptr, METH_VARARGS, "bytes_to_ptr(data: bytes) -> ptr"},
    {"ptr_to_bytes", ptr_to_bytes, METH_VARARGS, "ptr_to_bytes(ptr, size) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef util_def = {
    PyModuleDef_HEAD_INIT, "acl.util", "Conversions between Python bytes and C pointers.", -1, util_methods,
    NULL, NULL, NULL, NULL,
};

PyObject *aclpy_make_util(void) { return PyModule_Create(&util_def); }
