/* acl.rt: streams (pyACL's create_stream / destroy_stream / synchronize_stream) and their
 * neighbours from runtime-extra.md 1, 2 and 8: flags at creation, timed synchronisation, abort,
 * stream value write / wait. A stream is an int, 0 for the current context's default stream. */
#include "acl_py.h"

ACLPY_PTR_TO_RET(destroy_stream, "acl.rt.destroy_stream", aclrtDestroyStream)
/* Discards the work that has not run yet. */
ACLPY_PTR_TO_RET(destroy_stream_force, "acl.rt.destroy_stream_force", aclrtDestroyStreamForce)
ACLPY_PTR_TO_RET(synchronize_stream, "acl.rt.synchronize_stream", aclrtSynchronizeStream)
ACLPY_PTR_TO_RET(stream_abort, "acl.rt.stream_abort", aclrtStreamAbort)

static PyObject *create_stream(PyObject *self, PyObject *args)
{
    (void)self;
    aclrtStream stream = NULL;
    aclError ret;
    ACLPY_PARSE(args, "", "acl.rt.create_stream", NULL);
    ACLPY_CALL(ret, aclrtCreateStream(&stream));
    return aclpy_u64_ret(aclpy_int(stream), ret);
}

/* flag: ACL_STREAM_* bits; priority is reserved (accepted, no effect). */
static PyObject *create_stream_with_config(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned int priority = 0, flag = 0;
    aclrtStream stream = NULL;
    aclError ret;
    ACLPY_PARSE(args, "II", "acl.rt.create_stream_with_config", &priority, &flag);
    ACLPY_CALL(ret, aclrtCreateStreamWithConfig(&stream, (uint32_t)priority, (uint32_t)flag));
    return aclpy_u64_ret(aclpy_int(stream), ret);
}

/* timeout: milliseconds, -1 for no limit; 507046 on expiry (the work keeps running). The GIL is
 * released, so other Python threads run while this one waits. */
static PyObject *synchronize_stream_with_timeout(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long stream = 0;
    int timeout = 0;
    aclError ret;
    ACLPY_PARSE(args, "Ki", "acl.rt.synchronize_stream_with_timeout", &stream, &timeout);
    ACLPY_CALL(ret, aclrtSynchronizeStreamWithTimeout(aclpy_ptr(stream), timeout));
    return aclpy_ret(ret);
}

/* Queues a store of the 64-bit value at dev_addr (8-byte aligned device memory); flag must be 0. */
static PyObject *value_write(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long addr = 0, value = 0, stream = 0;
    unsigned int flag = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKIK", "acl.rt.value_write", &addr, &value, &flag, &stream);
    ACLPY_CALL(ret, aclrtValueWrite(aclpy_ptr(addr), (uint64_t)value, (uint32_t)flag, aclpy_ptr(stream)));
    return aclpy_ret(ret);
}

/* Blocks the stream (not the caller) until the word at dev_addr meets ACL_STREAM_WAIT_VALUE_* flag. */
static PyObject *value_wait(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long addr = 0, value = 0, stream = 0;
    unsigned int flag = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKIK", "acl.rt.value_wait", &addr, &value, &flag, &stream);
    ACLPY_CALL(ret, aclrtValueWait(aclpy_ptr(addr), (uint64_t)value, (uint32_t)flag, aclpy_ptr(stream)));
    return aclpy_ret(ret);
}

PyMethodDef aclpy_rt_stream_methods[] = {
    {"create_stream", create_stream, METH_VARARGS, "create_stream() -> (stream, ret)"},
    {"create_stream_with_config", create_stream_with_config, METH_VARARGS,
     "create_stream_with_config(priority, flag) -> (stream, ret)"},
    {"destroy_stream", destroy_stream, METH_VARARGS, "destroy_stream(stream) -> ret"},
    {"destroy_stream_force", destroy_stream_force, METH_VARARGS, "destroy_stream_force(stream) -> ret"},
    {"synchronize_stream", synchronize_stream, METH_VARARGS, "synchronize_stream(stream) -> ret"},
    {"synchronize_stream_with_timeout", synchronize_stream_with_timeout, METH_VARARGS,
     "synchronize_stream_with_timeout(stream, timeout) -> ret"},
    {"stream_abort", stream_abort, METH_VARARGS, "stream_abort(stream) -> ret"},
    {"value_write", value_write, METH_VARARGS, "value_write(dev_addr, value, flag, stream) -> ret"},
    {"value_wait", value_wait, METH_VARARGS, "value_wait(dev_addr, value, flag, stream) -> ret"},
    {NULL, NULL, 0, NULL},
};
