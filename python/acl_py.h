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

/* Defines `fn(in)` -> (out, ret) for the device id conversions: one int32 in, one int32 out. */
#define ACLPY_INT_TO_INT(fn, qualname, cfunc)                   \
    static PyObject *fn(PyObject *self, PyObject *args)         \
    {                                                           \
        int in = 0;                                             \
        int32_t out = 0;                                        \
        aclError ret;                                           \
        (void)self;                                             \
        ACLPY_PARSE(args, "i", qualname, &in);                  \
        ACLPY_CALL(ret, cfunc(in, &out));                       \
        return aclpy_i64_ret(out, ret);                         \
    }

/* Return shapes: `ret`, `(value, ret)`. */
PyObject *aclpy_ret(aclError ret);
PyObject *aclpy_u64_ret(unsigned long long value, aclError ret);
PyObject *aclpy_i64_ret(long long value, aclError ret);
/* `(bytes, ret)`: len bytes at data on success, b"" on failure (the bytes analogue of the zero
 * outputs: a failed call has written nothing worth returning). */
PyObject *aclpy_bytes_ret(const void *data, size_t len, aclError ret);

/* ---- Python lists -> C arrays (PyMem_Free the result) ----
 * The count comes from len(list), never from a separate argument, so the C call cannot read past
 * the array. An empty list gives a valid pointer and a count of 0, and the C API decides what an
 * empty array means. On a conversion failure they return NULL with TypeError (or MemoryError)
 * set, naming the function (qualname), the argument (what) and the index. */

/* A list of int32 (pids): values outside int32 are refused, as a pid cannot be truncated. */
int32_t *aclpy_int32_array(PyObject *list, const char *qualname, const char *what, Py_ssize_t *count);
/* A list of ints converted like the "K" format (unsigned 64-bit, wrap-around): sizes, indexes. */
size_t *aclpy_size_array(PyObject *list, const char *qualname, const char *what, Py_ssize_t *count);
/* The same for pointers (addresses as ints, 0 for NULL). */
void **aclpy_ptr_array(PyObject *list, const char *qualname, const char *what, Py_ssize_t *count);
/* A list of dicts, each read by fill into a zeroed element of elem_size bytes (struct arrays). */
typedef void (*aclpy_fill_fn)(PyObject *dict, void *elem);
void *aclpy_struct_array(PyObject *list, const char *qualname, const char *what, size_t elem_size,
                         aclpy_fill_fn fill, Py_ssize_t *count);
/* ValueError unless two parallel lists have the same length (one C count serves both); 0 when
 * they match, -1 with the exception set. */
int aclpy_same_length(const char *qualname, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb);

/* ---- dict readers for structs in (the conventions of aclpy_prop_from_dict) ---- */

/* dict[key] as an unsigned 64-bit int (wrap-around); 0 (out untouched) when the key is missing or
 * the value is not an int. */
int aclpy_dict_int(PyObject *dict, const char *key, unsigned long long *out);
/* {"id", "type"} -> aclrtMemLocation (fields missing or not int stay as they are). */
void aclpy_location_from_dict(PyObject *dict, aclrtMemLocation *loc);
/* The same for dict[key], held by a strong reference while it is read. */
void aclpy_location_from_key(PyObject *dict, const char *key, aclrtMemLocation *loc);
PyObject *aclpy_location_to_dict(const aclrtMemLocation *loc);
/* dict["rsv"], a list of ints, into rsv[0..n) as bytes; missing, not a list or non-int items
 * leave the bytes zero. Lets a test pass a non-zero reserved byte to the C checks. */
void aclpy_rsv_from_dict(PyObject *dict, uint8_t *rsv, size_t n);

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

/* Method tables of acl.rt, one per family and file (acl_rt_<family>.c); aclpy_make_rt adds
 * them all (acl_module.c). */
extern PyMethodDef aclpy_rt_device_methods[];      /* devices, contexts, malloc, memcpy */
extern PyMethodDef aclpy_rt_device_info_methods[]; /* run mode, uuid, device id conversions */
extern PyMethodDef aclpy_rt_vmm_methods[];         /* pyACL's VMM and V1 sharing calls */
extern PyMethodDef aclpy_rt_ipc_methods[];         /* IPC memory by key */
extern PyMethodDef aclpy_rt_access_methods[];      /* access rights, no-access map, no-UC reserve */
extern PyMethodDef aclpy_rt_link_methods[];        /* links and P2P map */
extern PyMethodDef aclpy_rt_share_v2_methods[];    /* V2 shareable handles */
extern PyMethodDef aclpy_rt_host_methods[];        /* host memory registration */
extern PyMethodDef aclpy_rt_stream_methods[];      /* streams, timed sync, abort, value write/wait */
extern PyMethodDef aclpy_rt_copy_methods[];        /* async and batch copies */
extern PyMethodDef aclpy_rt_managed_methods[];     /* managed (unified) memory */

/* Method table of the top-level aclsys* calls (acl_sys.c), added to `acl` itself. */
extern PyMethodDef aclpy_sys_methods[];

#endif
