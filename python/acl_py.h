/*
 * Shared helpers of the pyACL-compatible Python binding (`import acl`, docs/python.md).
 *
 * The conventions are pyACL's (spec conventions.md section 4): outputs first and the aclError
 * last, a bare int when the call has no output; pointers and handles are Python ints; structs
 * are dicts keyed by the C member names. Exceptions are raised only when an argument cannot be
 * converted, never for an error code.
 */
#ifndef ACLVMM_PYTHON_ACL_PY_H
#define ACLVMM_PYTHON_ACL_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "acl/acl.h"

/* Replaces whatever PyArg_ParseTuple raised by TypeError("<qualname> args parse failed"), the
 * message pyACL gives for every argument conversion failure; returns NULL for `return`. */
PyObject *aclpy_parse_failed(const char *qualname);

/* Calls into the library run without the GIL: an import waits on another process, a copy may
 * be large, and other Python threads should keep running meanwhile. */
#define ACLPY_CALL(ret, call)  \
    do {                       \
        Py_BEGIN_ALLOW_THREADS \
        (ret) = (call);        \
        Py_END_ALLOW_THREADS   \
    } while (0)

/* Parses `args` with `fmt`, returning the pyACL TypeError from the calling function on failure. */
#define ACLPY_PARSE(args, fmt, qualname, ...)                  \
    do {                                                       \
        if (!PyArg_ParseTuple((args), (fmt), __VA_ARGS__)) {   \
            return aclpy_parse_failed(qualname);               \
        }                                                      \
    } while (0)

/* Python int <-> C pointer: the int is the address (uintptr_t), NULL is 0. */
static inline void *aclpy_ptr(unsigned long long v) { return (void *)(uintptr_t)v; }
static inline unsigned long long aclpy_int(const void *p) { return (unsigned long long)(uintptr_t)p; }

/* Defines `static PyObject *fn(self, args)` for the many calls that take one argument and
 * return only `ret`: a pointer or handle (PTR, parsed as an unsigned 64-bit int) or an int32
 * id (INT). */
#define ACLPY_PTR_TO_RET(fn, qualname, cfunc)                   \
    static PyObject *fn(PyObject *self, PyObject *args)         \
    {                                                           \
        unsigned long long arg = 0;                             \
        aclError ret;                                           \
        (void)self;                                             \
        ACLPY_PARSE(args, "K", qualname, &arg);                 \
        ACLPY_CALL(ret, cfunc(aclpy_ptr(arg)));                 \
        return aclpy_ret(ret);                                  \
    }
#define ACLPY_INT_TO_RET(fn, qualname, cfunc)                   \
    static PyObject *fn(PyObject *self, PyObject *args)         \
    {                                                           \
        int arg = 0;                                            \
        aclError ret;                                           \
        (void)self;                                             \
        ACLPY_PARSE(args, "i", qualname, &arg);                 \
        ACLPY_CALL(ret, cfunc(arg));                            \
        return aclpy_ret(ret);                                  \
    }

/* Defines `fn()` -> (value, ret) for a call whose only parameter is an integer output of
 * type ctype (get_device, get_device_count, device_get_bare_tgid). */
#define ACLPY_OUT_INT(fn, qualname, ctype, cfunc)               \
    static PyObject *fn(PyObject *self, PyObject *args)         \
    {                                                           \
        ctype out = 0;                                          \
        aclError ret;                                           \
        (void)self;                                             \
        ACLPY_PARSE(args, "", qualname, NULL);                  \
        ACLPY_CALL(ret, cfunc(&out));                           \
        return aclpy_i64_ret((long long)out, ret);              \
    }

/* Return shapes: `ret`, `(value, ret)`. */
PyObject *aclpy_ret(aclError ret);
PyObject *aclpy_u64_ret(unsigned long long value, aclError ret);
PyObject *aclpy_i64_ret(long long value, aclError ret);

/* aclrtPhysicalMemProp <-> dict {"handleType", "allocationType", "memAttr",
 * "location": {"id", "type"}, "reserve"}. Reading: the struct starts zeroed and a missing key or
 * a value that is not an int leaves its field zero, as pyACL does. */
void aclpy_prop_from_dict(PyObject *dict, aclrtPhysicalMemProp *prop);
PyObject *aclpy_prop_to_dict(const aclrtPhysicalMemProp *prop);

/* aclrtPtrAttributes -> {"location": {"id", "type"}, "page_size", "rsv": [4 ints]} (pyACL's
 * code spells page_size in snake_case although its document table says pageSize). */
PyObject *aclpy_attrs_to_dict(const aclrtPtrAttributes *attrs);

/* The submodules; each returns a new reference or NULL with an exception set. */
PyObject *aclpy_make_rt(void);
PyObject *aclpy_make_util(void);

/* Method tables of acl.rt, split by family (acl_rt_device.c, acl_rt_vmm.c). */
extern PyMethodDef aclpy_rt_device_methods[];
extern PyMethodDef aclpy_rt_vmm_methods[];

#endif
