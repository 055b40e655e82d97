/* acl.rt: managed (unified) memory (behavior.md 10, docs/managed-memory.md). Not in pyACL
 * (conventions.md 4.2); named and shaped like its calls: a location is a dict keyed by the members
 * of aclrtMemManagedLocation, C arrays are lists, attribute values come back as lists of int32.
 * Managed memory is freed with acl.rt.free. */
#include "acl_py.h"

/* The binding's buffer for one attribute's values: 1024 int32, far more than ACCESSED_BY can list
 * (the host and 64 devices). A larger data_size is refused with 100000 before the call, as
 * ipc_mem_get_export_key does with its key_len. */
#define ACLPY_MANAGED_ATTR_BYTES 4096

/* mem_managed_get_attrs passes its int32 array of attributes as the C enum array. */
_Static_assert(sizeof(aclrtMemManagedRangeAttribute) == sizeof(int32_t), "an enum is an int32");

/* aclrtMemManagedLocation <- {"type": int, "id": int} (type first, as in the struct). */
static void managed_location_from_dict(PyObject *dict, void *elem)
{
    aclrtMemManagedLocation *loc = elem;
    unsigned long long v = 0;
    if (aclpy_dict_int(dict, "type", &v)) loc->type = (aclrtMemManagedLocationType)(uint32_t)v;
    if (aclpy_dict_int(dict, "id", &v)) loc->id = (int32_t)(uint32_t)v;
}

/* flag: ACL_RT_MEM_ATTACH_GLOBAL (1), the only one accepted. -> (ptr, ret). */
static PyObject *mem_alloc_managed(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0;
    unsigned int flag = 0;
    void *ptr = NULL;
    aclError ret;
    ACLPY_PARSE(args, "KI", "acl.rt.mem_alloc_managed", &size, &flag);
    ACLPY_CALL(ret, aclrtMemAllocManaged(&ptr, (uint64_t)size, (uint32_t)flag));
    return aclpy_u64_ret(aclpy_int(ptr), ret);
}

static PyObject *mem_managed_advise(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0;
    int advise = 0;
    PyObject *dict = NULL;
    aclrtMemManagedLocation loc;
    aclError ret;
    ACLPY_PARSE(args, "KKiO!", "acl.rt.mem_managed_advise", &ptr, &size, &advise, &PyDict_Type, &dict);
    memset(&loc, 0, sizeof(loc));
    managed_location_from_dict(dict, &loc);
    ACLPY_CALL(ret, aclrtMemManagedAdvise(aclpy_ptr(ptr), (uint64_t)size, (aclrtMemManagedAdviseType)advise, loc));
    return aclpy_ret(ret);
}

/* The int32 values an attribute call wrote: data_size / 4 of them, [] on failure. */
static PyObject *int32_list(const int32_t *values, size_t data_size, aclError ret)
{
    const Py_ssize_t n = ret == ACL_SUCCESS ? (Py_ssize_t)(data_size / sizeof(int32_t)) : 0;
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list != NULL && i < n; ++i) {
        PyObject *v = PyLong_FromLong(values[i]);
        if (v == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

/* (attribute, ptr, size, data_size) -> (values: list of int32, ret). data_size is the C call's
 * dataSize in bytes: 4 for one value, a multiple of 4 for ACCESSED_BY's list. */
static PyObject *mem_managed_get_attr(PyObject *self, PyObject *args)
{
    (void)self;
    int attribute = 0;
    unsigned long long ptr = 0, size = 0, data_size = 0;
    int32_t data[ACLPY_MANAGED_ATTR_BYTES / sizeof(int32_t)];
    aclError ret;
    ACLPY_PARSE(args, "iKKK", "acl.rt.mem_managed_get_attr", &attribute, &ptr, &size, &data_size);
    memset(data, 0, sizeof(data));
    if (data_size > sizeof(data)) {
        ret = ACL_ERROR_INVALID_PARAM;
    } else {
        ACLPY_CALL(ret, aclrtMemManagedGetAttr((aclrtMemManagedRangeAttribute)attribute, aclpy_ptr(ptr), (size_t)size,
                                               data, (size_t)data_size));
    }
    PyObject *list = int32_list(data, (size_t)data_size, ret);
    return list == NULL ? NULL : Py_BuildValue("(Ni)", list, (int)ret);
}

/* (attributes, ptr, size, data_sizes) -> (values: one list of int32 per attribute, ret). The two
 * lists are parallel (numAttributes is their length); every data_size is limited as above. */
static PyObject *mem_managed_get_attrs(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.mem_managed_get_attrs";
    PyObject *l_attrs = NULL, *l_sizes = NULL, *result = NULL, *values = NULL;
    unsigned long long ptr = 0, size = 0;
    int32_t *attrs = NULL;
    size_t *sizes = NULL;
    int32_t *blocks = NULL;
    void **data = NULL;
    Py_ssize_t n = 0, n_sizes = 0;
    const size_t per = ACLPY_MANAGED_ATTR_BYTES / sizeof(int32_t); /* int32 slots per attribute */
    aclError ret = ACL_SUCCESS;
    ACLPY_PARSE(args, "OKKO", name, &l_attrs, &ptr, &size, &l_sizes);
    if ((attrs = aclpy_int32_array(l_attrs, name, "attributes", &n)) == NULL ||
        (sizes = aclpy_size_array(l_sizes, name, "data_sizes", &n_sizes)) == NULL ||
        aclpy_same_length(name, "attributes", n, "data_sizes", n_sizes) < 0) {
        goto done;
    }
    blocks = PyMem_Calloc((size_t)(n > 0 ? n : 1) * per, sizeof(int32_t));
    data = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(void *));
    if (blocks == NULL || data == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        data[i] = blocks + (size_t)i * per;
        if (sizes[i] > ACLPY_MANAGED_ATTR_BYTES) {
            ret = ACL_ERROR_INVALID_PARAM;
        }
    }
    if (ret == ACL_SUCCESS) {
        ACLPY_CALL(ret, aclrtMemManagedGetAttrs((aclrtMemManagedRangeAttribute *)attrs, (size_t)n, aclpy_ptr(ptr),
                                                (size_t)size, data, sizes));
    }
    /* On failure the list of lists is [] (the C call may have filled some entries). */
    values = PyList_New(ret == ACL_SUCCESS ? n : 0);
    for (Py_ssize_t i = 0; values != NULL && ret == ACL_SUCCESS && i < n; ++i) {
        PyObject *one = int32_list(data[i], sizes[i], ret);
        if (one == NULL) {
            Py_CLEAR(values);
            break;
        }
        PyList_SET_ITEM(values, i, one);
    }
    if (values != NULL) {
        result = Py_BuildValue("(Ni)", values, (int)ret);
    }
done:
    PyMem_Free(attrs);
    PyMem_Free(sizes);
    PyMem_Free(blocks);
    PyMem_Free(data);
    return result;
}

static PyObject *mem_managed_prefetch_async(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0, stream = 0;
    PyObject *dict = NULL;
    unsigned int flags = 0;
    aclrtMemManagedLocation loc;
    aclError ret;
    ACLPY_PARSE(args, "KKO!IK", "acl.rt.mem_managed_prefetch_async", &ptr, &size, &PyDict_Type, &dict, &flags,
                &stream);
    memset(&loc, 0, sizeof(loc));
    managed_location_from_dict(dict, &loc);
    ACLPY_CALL(ret, aclrtMemManagedPrefetchAsync(aclpy_ptr(ptr), (size_t)size, loc, (uint32_t)flags,
                                                 aclpy_ptr(stream)));
    return aclpy_ret(ret);
}

/* (ptrs, sizes, prefetch_locs, prefetch_loc_idxs, flags, stream): count is the common length of
 * ptrs and sizes, numPrefetchLocs that of prefetch_locs and prefetch_loc_idxs; prefetch_locs[k]
 * applies to ptrs[prefetch_loc_idxs[k]] up to the next index. */
static PyObject *mem_managed_prefetch_batch_async(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.mem_managed_prefetch_batch_async";
    PyObject *l_ptrs, *l_sizes, *l_locs, *l_idx;
    unsigned long long flags = 0, stream = 0;
    void **ptrs = NULL;
    size_t *sizes = NULL, *idx = NULL;
    aclrtMemManagedLocation *locs = NULL;
    Py_ssize_t n_ptrs = 0, n_sizes = 0, n_locs = 0, n_idx = 0;
    PyObject *result = NULL;
    aclError ret;
    ACLPY_PARSE(args, "OOOOKK", name, &l_ptrs, &l_sizes, &l_locs, &l_idx, &flags, &stream);
    if ((ptrs = aclpy_ptr_array(l_ptrs, name, "ptrs", &n_ptrs)) == NULL ||
        (sizes = aclpy_size_array(l_sizes, name, "sizes", &n_sizes)) == NULL ||
        (locs = aclpy_struct_array(l_locs, name, "prefetch_locs", sizeof(*locs), managed_location_from_dict,
                                   &n_locs)) == NULL ||
        (idx = aclpy_size_array(l_idx, name, "prefetch_loc_idxs", &n_idx)) == NULL ||
        aclpy_same_length(name, "ptrs", n_ptrs, "sizes", n_sizes) < 0 ||
        aclpy_same_length(name, "prefetch_locs", n_locs, "prefetch_loc_idxs", n_idx) < 0) {
        goto done;
    }
    ACLPY_CALL(ret, aclrtMemManagedPrefetchBatchAsync((const void **)ptrs, sizes, (size_t)n_ptrs, locs, idx,
                                                      (size_t)n_locs, (uint64_t)flags, aclpy_ptr(stream)));
    result = aclpy_ret(ret);
done:
    PyMem_Free(ptrs);
    PyMem_Free(sizes);
    PyMem_Free(locs);
    PyMem_Free(idx);
    return result;
}

PyMethodDef aclpy_rt_managed_methods[] = {
    {"mem_alloc_managed", mem_alloc_managed, METH_VARARGS, "mem_alloc_managed(size, flag) -> (ptr, ret)"},
    {"mem_managed_advise", mem_managed_advise, METH_VARARGS, "mem_managed_advise(ptr, size, advise, location) -> ret"},
    {"mem_managed_get_attr", mem_managed_get_attr, METH_VARARGS,
     "mem_managed_get_attr(attribute, ptr, size, data_size) -> (values, ret)"},
    {"mem_managed_get_attrs", mem_managed_get_attrs, METH_VARARGS,
     "mem_managed_get_attrs(attributes, ptr, size, data_sizes) -> (values, ret)"},
    {"mem_managed_prefetch_async", mem_managed_prefetch_async, METH_VARARGS,
     "mem_managed_prefetch_async(ptr, size, location, flags, stream) -> ret"},
    {"mem_managed_prefetch_batch_async", mem_managed_prefetch_batch_async, METH_VARARGS,
     "mem_managed_prefetch_batch_async(ptrs, sizes, prefetch_locs, prefetch_loc_idxs, flags, stream) -> ret"},
    {NULL, NULL, 0, NULL},
};
