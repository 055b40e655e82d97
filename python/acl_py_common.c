/* Argument-failure, return-shape, list and struct <-> dict conversions shared by every acl.*
 * function (acl_py.h). */
#include "acl_py.h"

PyObject *aclpy_parse_failed(const char *qualname)
{
    /* PyArg_ParseTuple's own message (which argument, which type) is replaced: pyACL callers
     * match on "args parse failed", and the type stays TypeError either way. */
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s args parse failed", qualname);
    return NULL;
}

PyObject *aclpy_ret(aclError ret) { return PyLong_FromLong((long)ret); }

PyObject *aclpy_u64_ret(unsigned long long value, aclError ret)
{
    return Py_BuildValue("(Ki)", value, (int)ret);
}

PyObject *aclpy_i64_ret(long long value, aclError ret)
{
    return Py_BuildValue("(Li)", value, (int)ret);
}

PyObject *aclpy_bytes_ret(const void *data, size_t len, aclError ret)
{
    if (ret != ACL_SUCCESS) {
        len = 0;
    }
    return Py_BuildValue("(y#i)", len == 0 ? "" : (const char *)data, (Py_ssize_t)len, (int)ret);
}

/* Reads dict[key] as an int, which the caller truncates to the field's width; false (field
 * untouched) when the key is missing or the value is not an int. Negative values wrap, so -1
 * reaches the C API as 0xFFFFFFFF and is rejected there with the C API's own code. */
int aclpy_dict_int(PyObject *dict, const char *key, unsigned long long *out)
{
    PyObject *v = PyDict_GetItemString(dict, key); /* borrowed; NULL when missing */
    if (v == NULL || !PyLong_Check(v)) {
        return 0;
    }
    *out = PyLong_AsUnsignedLongLongMask(v);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

void aclpy_prop_from_dict(PyObject *dict, aclrtPhysicalMemProp *prop)
{
    unsigned long long v = 0;
    memset(prop, 0, sizeof(*prop));
    if (dict == NULL || !PyDict_Check(dict)) {
        return;
    }
    if (aclpy_dict_int(dict, "handleType", &v)) prop->handleType = (aclrtMemHandleType)(uint32_t)v;
    if (aclpy_dict_int(dict, "allocationType", &v)) prop->allocationType = (aclrtMemAllocationType)(uint32_t)v;
    if (aclpy_dict_int(dict, "memAttr", &v)) prop->memAttr = (aclrtMemAttr)(uint32_t)v;
    if (aclpy_dict_int(dict, "reserve", &v)) prop->reserve = (uint64_t)v;
    aclpy_location_from_key(dict, "location", &prop->location);
}

/* The nested dict is held by a strong reference while it is read: a lookup in it can run a key's
 * __eq__, which could delete it from the outer dict. */
void aclpy_location_from_key(PyObject *dict, const char *key, aclrtMemLocation *loc)
{
    PyObject *inner = PyDict_GetItemString(dict, key); /* borrowed */
    Py_XINCREF(inner);
    aclpy_location_from_dict(inner, loc);
    Py_XDECREF(inner);
}

void aclpy_location_from_dict(PyObject *dict, aclrtMemLocation *loc)
{
    unsigned long long v = 0;
    if (dict == NULL || !PyDict_Check(dict)) {
        return;
    }
    if (aclpy_dict_int(dict, "id", &v)) loc->id = (uint32_t)v;
    if (aclpy_dict_int(dict, "type", &v)) loc->type = (aclrtMemLocationType)(uint32_t)v;
}

PyObject *aclpy_location_to_dict(const aclrtMemLocation *loc)
{
    return Py_BuildValue("{s:I,s:i}", "id", (unsigned)loc->id, "type", (int)loc->type);
}

void aclpy_rsv_from_dict(PyObject *dict, uint8_t *rsv, size_t n)
{
    PyObject *list = PyDict_GetItemString(dict, "rsv");
    if (list == NULL || !PyList_Check(list)) {
        return;
    }
    Py_INCREF(list); /* reading ints runs no Python code, but the list must outlive the loop */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list) && (size_t)i < n; ++i) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (PyLong_Check(item)) {
            rsv[i] = (uint8_t)PyLong_AsUnsignedLongLongMask(item); /* cannot fail for an int */
        }
    }
    Py_DECREF(list);
}

PyObject *aclpy_prop_to_dict(const aclrtPhysicalMemProp *prop)
{
    PyObject *loc = aclpy_location_to_dict(&prop->location);
    if (loc == NULL) {
        return NULL;
    }
    return Py_BuildValue("{s:i,s:i,s:i,s:N,s:K}", "handleType", (int)prop->handleType, "allocationType",
                         (int)prop->allocationType, "memAttr", (int)prop->memAttr, "location", loc, "reserve",
                         (unsigned long long)prop->reserve);
}

PyObject *aclpy_attrs_to_dict(const aclrtPtrAttributes *attrs)
{
    PyObject *loc = aclpy_location_to_dict(&attrs->location);
    if (loc == NULL) {
        return NULL;
    }
    return Py_BuildValue("{s:N,s:I,s:[IIII]}", "location", loc, "page_size", (unsigned)attrs->pageSize, "rsv",
                         (unsigned)attrs->rsv[0], (unsigned)attrs->rsv[1], (unsigned)attrs->rsv[2],
                         (unsigned)attrs->rsv[3]);
}

/* ---- Python lists -> C arrays ---- */

static int not_a_list(PyObject *list, const char *qualname, const char *what)
{
    if (PyList_Check(list)) {
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: %s must be a list", qualname, what);
    return 1;
}

/* n elements of size bytes, zeroed; at least one, so an empty list still gives a valid pointer. */
static void *zeroed(Py_ssize_t n, size_t size)
{
    void *p = PyMem_Calloc((size_t)(n > 0 ? n : 1), size);
    if (p == NULL) {
        PyErr_NoMemory();
    }
    return p;
}

static void *bad_item(void *array, const char *qualname, const char *what, Py_ssize_t i, const char *expected)
{
    PyMem_Free(array);
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: %s[%zd] is not %s", qualname, what, i, expected);
    return NULL;
}

int32_t *aclpy_int32_array(PyObject *list, const char *qualname, const char *what, Py_ssize_t *count)
{
    if (not_a_list(list, qualname, what)) {
        return NULL;
    }
    const Py_ssize_t n = PyList_GET_SIZE(list);
    int32_t *out = zeroed(n, sizeof(*out));
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = PyList_GET_ITEM(list, i);
        long v = PyLong_Check(item) ? PyLong_AsLong(item) : -1;
        if (!PyLong_Check(item) || (v == -1 && PyErr_Occurred()) || v < INT32_MIN || v > INT32_MAX) {
            return bad_item(out, qualname, what, i, "an int32");
        }
        out[i] = (int32_t)v;
    }
    *count = n;
    return out;
}

/* Reads every item as an unsigned 64-bit int (wrap-around, as the "K" format); store(out, i, v)
 * writes it into the array of the caller's element type. */
static void *u64_array(PyObject *list, const char *qualname, const char *what, size_t elem_size,
                       void (*store)(void *, Py_ssize_t, unsigned long long), Py_ssize_t *count)
{
    if (not_a_list(list, qualname, what)) {
        return NULL;
    }
    const Py_ssize_t n = PyList_GET_SIZE(list);
    void *out = zeroed(n, elem_size);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyLong_Check(item)) {
            return bad_item(out, qualname, what, i, "an int");
        }
        store(out, i, PyLong_AsUnsignedLongLongMask(item));
    }
    *count = n;
    return out;
}

static void store_size(void *a, Py_ssize_t i, unsigned long long v) { ((size_t *)a)[i] = (size_t)v; }
static void store_ptr(void *a, Py_ssize_t i, unsigned long long v) { ((void **)a)[i] = aclpy_ptr(v); }

size_t *aclpy_size_array(PyObject *list, const char *qualname, const char *what, Py_ssize_t *count)
{
    return u64_array(list, qualname, what, sizeof(size_t), store_size, count);
}

void **aclpy_ptr_array(PyObject *list, const char *qualname, const char *what, Py_ssize_t *count)
{
    return u64_array(list, qualname, what, sizeof(void *), store_ptr, count);
}

void *aclpy_struct_array(PyObject *list, const char *qualname, const char *what, size_t elem_size,
                         aclpy_fill_fn fill, Py_ssize_t *count)
{
    if (not_a_list(list, qualname, what)) {
        return NULL;
    }
    /* A snapshot with strong references: a dict lookup in fill() can run a key's __eq__, which
     * could change the list under a loop over borrowed items. */
    PyObject *items = PyList_AsTuple(list);
    if (items == NULL) {
        return NULL;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(items);
    char *out = zeroed(n, elem_size);
    for (Py_ssize_t i = 0; out != NULL && i < n; ++i) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        /* A struct is a dict, as for malloc_physical's prop; its keys follow the usual rules. */
        if (!PyDict_Check(item)) {
            out = bad_item(out, qualname, what, i, "a dict");
            break;
        }
        fill(item, out + (size_t)i * elem_size);
    }
    Py_DECREF(items);
    if (out != NULL) {
        *count = n;
    }
    return out;
}

int aclpy_same_length(const char *qualname, const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb)
{
    if (na == nb) {
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "%s: %s and %s must have the same length (%zd != %zd)", qualname, a, b, na,
                 nb);
    return -1;
}
