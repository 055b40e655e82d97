/* Argument-failure and struct <-> dict conversions shared by every acl.* function (acl_py.h). */
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

/* Reads dict[key] as an int truncated to the field's width; false (field untouched) when the
 * key is missing or the value is not an int. Negative values wrap, so -1 reaches the C API as
 * 0xFFFFFFFF and is rejected there with the C API's own code. */
static int int_item(PyObject *dict, const char *key, unsigned long long *out)
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
    if (int_item(dict, "handleType", &v)) prop->handleType = (aclrtMemHandleType)(uint32_t)v;
    if (int_item(dict, "allocationType", &v)) prop->allocationType = (aclrtMemAllocationType)(uint32_t)v;
    if (int_item(dict, "memAttr", &v)) prop->memAttr = (aclrtMemAttr)(uint32_t)v;
    if (int_item(dict, "reserve", &v)) prop->reserve = (uint64_t)v;
    PyObject *loc = PyDict_GetItemString(dict, "location");
    if (loc != NULL && PyDict_Check(loc)) {
        if (int_item(loc, "id", &v)) prop->location.id = (uint32_t)v;
        if (int_item(loc, "type", &v)) prop->location.type = (aclrtMemLocationType)(uint32_t)v;
    }
}

static PyObject *location_dict(const aclrtMemLocation *loc)
{
    return Py_BuildValue("{s:I,s:i}", "id", (unsigned)loc->id, "type", (int)loc->type);
}

PyObject *aclpy_prop_to_dict(const aclrtPhysicalMemProp *prop)
{
    PyObject *loc = location_dict(&prop->location);
    if (loc == NULL) {
        return NULL;
    }
    return Py_BuildValue("{s:i,s:i,s:i,s:N,s:K}", "handleType", (int)prop->handleType, "allocationType",
                         (int)prop->allocationType, "memAttr", (int)prop->memAttr, "location", loc, "reserve",
                         (unsigned long long)prop->reserve);
}

PyObject *aclpy_attrs_to_dict(const aclrtPtrAttributes *attrs)
{
    PyObject *loc = location_dict(&attrs->location);
    if (loc == NULL) {
        return NULL;
    }
    return Py_BuildValue("{s:N,s:I,s:[IIII]}", "location", loc, "page_size", (unsigned)attrs->pageSize, "rsv",
                         (unsigned)attrs->rsv[0], (unsigned)attrs->rsv[1], (unsigned)attrs->rsv[2],
                         (unsigned)attrs->rsv[3]);
}
