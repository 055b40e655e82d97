/* acl.rt: asynchronous and batch copies (pyACL's memcpy_async / memset_async; runtime-extra.md 7
 * for the batches). An asynchronous copy reads its source when the stream reaches it: a source
 * from acl.util.bytes_to_ptr must stay alive until the stream is synchronised. */
#include "acl_py.h"

static PyObject *memcpy_async(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long dst = 0, dest_max = 0, src = 0, count = 0, stream = 0;
    int kind = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKKKiK", "acl.rt.memcpy_async", &dst, &dest_max, &src, &count, &kind, &stream);
    ACLPY_CALL(ret, aclrtMemcpyAsync(aclpy_ptr(dst), (size_t)dest_max, aclpy_ptr(src), (size_t)count,
                                     (aclrtMemcpyKind)kind, aclpy_ptr(stream)));
    return aclpy_ret(ret);
}

static PyObject *memset_async(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, max_count = 0, count = 0, stream = 0;
    int value = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKiKK", "acl.rt.memset_async", &ptr, &max_count, &value, &count, &stream);
    ACLPY_CALL(ret, aclrtMemsetAsync(aclpy_ptr(ptr), (size_t)max_count, value, (size_t)count, aclpy_ptr(stream)));
    return aclpy_ret(ret);
}

/* aclrtMemcpyBatchAttr <- {"dstLoc": {"id", "type"}, "srcLoc": {"id", "type"}, "rsv": [16 ints]}. */
static void batch_attr_from_dict(PyObject *dict, void *elem)
{
    aclrtMemcpyBatchAttr *attr = elem;
    aclpy_location_from_key(dict, "dstLoc", &attr->dstLoc);
    aclpy_location_from_key(dict, "srcLoc", &attr->srcLoc);
    aclpy_rsv_from_dict(dict, attr->rsv, sizeof(attr->rsv));
}

/* Both batch calls: (dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes[, stream]). numBatches is
 * the common length of the first four lists, numAttrs that of the last two (ValueError when
 * parallel lists differ). -> (fail_index, ret): the C call's *failIndex, which the binding
 * initialises to SIZE_MAX (2**64 - 1, "no entry") so that it has a defined value whatever the
 * call does. */
static PyObject *batch(PyObject *args, const char *name, int async)
{
    PyObject *l_dsts, *l_maxs, *l_srcs, *l_sizes, *l_attrs, *l_idx;
    unsigned long long stream = 0;
    void **dsts = NULL, **srcs = NULL;
    size_t *maxs = NULL, *sizes = NULL, *idx = NULL;
    aclrtMemcpyBatchAttr *attrs = NULL;
    Py_ssize_t n_dsts = 0, n_maxs = 0, n_srcs = 0, n_sizes = 0, n_attrs = 0, n_idx = 0;
    size_t fail_index = SIZE_MAX;
    PyObject *result = NULL;
    aclError ret;
    if (async) {
        ACLPY_PARSE(args, "OOOOOOK", name, &l_dsts, &l_maxs, &l_srcs, &l_sizes, &l_attrs, &l_idx, &stream);
    } else {
        ACLPY_PARSE(args, "OOOOOO", name, &l_dsts, &l_maxs, &l_srcs, &l_sizes, &l_attrs, &l_idx);
    }
    if ((dsts = aclpy_ptr_array(l_dsts, name, "dsts", &n_dsts)) == NULL ||
        (maxs = aclpy_size_array(l_maxs, name, "dest_maxs", &n_maxs)) == NULL ||
        (srcs = aclpy_ptr_array(l_srcs, name, "srcs", &n_srcs)) == NULL ||
        (sizes = aclpy_size_array(l_sizes, name, "sizes", &n_sizes)) == NULL ||
        (attrs = aclpy_struct_array(l_attrs, name, "attrs", sizeof(*attrs), batch_attr_from_dict, &n_attrs)) ==
            NULL ||
        (idx = aclpy_size_array(l_idx, name, "attrs_indexes", &n_idx)) == NULL) {
        goto done;
    }
    if (aclpy_same_length(name, "dsts", n_dsts, "sizes", n_sizes) < 0 ||
        aclpy_same_length(name, "dest_maxs", n_maxs, "sizes", n_sizes) < 0 ||
        aclpy_same_length(name, "srcs", n_srcs, "sizes", n_sizes) < 0 ||
        aclpy_same_length(name, "attrs", n_attrs, "attrs_indexes", n_idx) < 0) {
        goto done;
    }
    if (async) {
        ACLPY_CALL(ret, aclrtMemcpyBatchAsync(dsts, maxs, srcs, sizes, (size_t)n_sizes, attrs, idx, (size_t)n_attrs,
                                              &fail_index, aclpy_ptr(stream)));
    } else {
        ACLPY_CALL(ret, aclrtMemcpyBatch(dsts, maxs, srcs, sizes, (size_t)n_sizes, attrs, idx, (size_t)n_attrs,
                                         &fail_index));
    }
    result = aclpy_u64_ret((unsigned long long)fail_index, ret);
done:
    PyMem_Free(dsts);
    PyMem_Free(maxs);
    PyMem_Free(srcs);
    PyMem_Free(sizes);
    PyMem_Free(attrs);
    PyMem_Free(idx);
    return result;
}

static PyObject *memcpy_batch(PyObject *self, PyObject *args)
{
    (void)self;
    return batch(args, "acl.rt.memcpy_batch", 0);
}

static PyObject *memcpy_batch_async(PyObject *self, PyObject *args)
{
    (void)self;
    return batch(args, "acl.rt.memcpy_batch_async", 1);
}

PyMethodDef aclpy_rt_copy_methods[] = {
    {"memcpy_async", memcpy_async, METH_VARARGS, "memcpy_async(dst, dest_max, src, count, kind, stream) -> ret"},
    {"memset_async", memset_async, METH_VARARGS, "memset_async(dev_ptr, max_count, value, count, stream) -> ret"},
    {"memcpy_batch", memcpy_batch, METH_VARARGS,
     "memcpy_batch(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes) -> (fail_index, ret)"},
    {"memcpy_batch_async", memcpy_batch_async, METH_VARARGS,
     "memcpy_batch_async(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream) -> (fail_index, ret)"},
    {NULL, NULL, 0, NULL},
};
