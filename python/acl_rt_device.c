/* acl.rt: devices, contexts, plain allocations and copies (pyACL names and return shapes). */
#include "acl_py.h"

ACLPY_INT_TO_RET(set_device, "acl.rt.set_device", aclrtSetDevice)
ACLPY_INT_TO_RET(reset_device, "acl.rt.reset_device", aclrtResetDevice)
ACLPY_INT_TO_RET(reset_device_force, "acl.rt.reset_device_force", aclrtResetDeviceForce)
/* Milliseconds, -1 for no limit; 507046 on expiry, the queued work keeps running. */
ACLPY_INT_TO_RET(synchronize_device_with_timeout, "acl.rt.synchronize_device_with_timeout",
                 aclrtSynchronizeDeviceWithTimeout)
ACLPY_INT_TO_RET(device_disable_peer_access, "acl.rt.device_disable_peer_access",
                 aclrtDeviceDisablePeerAccess)
ACLPY_PTR_TO_RET(destroy_context, "acl.rt.destroy_context", aclrtDestroyContext)
ACLPY_PTR_TO_RET(set_context, "acl.rt.set_context", aclrtSetCurrentContext)
ACLPY_PTR_TO_RET(rt_free, "acl.rt.free", aclrtFree)
ACLPY_PTR_TO_RET(free_host, "acl.rt.free_host", aclrtFreeHost)
ACLPY_OUT_INT(get_device, "acl.rt.get_device", int32_t, aclrtGetDevice)
ACLPY_OUT_INT(get_device_count, "acl.rt.get_device_count", uint32_t, aclrtGetDeviceCount)
/* The pid an importer hands to the exporter for mem_set_pid_to_shareable_handle. */
ACLPY_OUT_INT(device_get_bare_tgid, "acl.rt.device_get_bare_tgid", int32_t, aclrtDeviceGetBareTgid)

static PyObject *synchronize_device(PyObject *self, PyObject *args)
{
    (void)self;
    aclError ret;
    ACLPY_PARSE(args, "", "acl.rt.synchronize_device", NULL);
    ACLPY_CALL(ret, aclrtSynchronizeDevice());
    return aclpy_ret(ret);
}

static PyObject *device_can_access_peer(PyObject *self, PyObject *args)
{
    (void)self;
    int device = 0, peer = 0;
    int32_t can = 0;
    aclError ret;
    ACLPY_PARSE(args, "ii", "acl.rt.device_can_access_peer", &device, &peer);
    ACLPY_CALL(ret, aclrtDeviceCanAccessPeer(&can, device, peer));
    return aclpy_i64_ret(can, ret);
}

static PyObject *device_enable_peer_access(PyObject *self, PyObject *args)
{
    (void)self;
    int peer = 0;
    unsigned int flags = 0;
    aclError ret;
    ACLPY_PARSE(args, "iI", "acl.rt.device_enable_peer_access", &peer, &flags);
    ACLPY_CALL(ret, aclrtDeviceEnablePeerAccess(peer, flags));
    return aclpy_ret(ret);
}

static PyObject *create_context(PyObject *self, PyObject *args)
{
    (void)self;
    int device = 0;
    aclrtContext ctx = NULL;
    aclError ret;
    ACLPY_PARSE(args, "i", "acl.rt.create_context", &device);
    ACLPY_CALL(ret, aclrtCreateContext(&ctx, device));
    return aclpy_u64_ret(aclpy_int(ctx), ret);
}

static PyObject *get_context(PyObject *self, PyObject *args)
{
    (void)self;
    aclrtContext ctx = NULL;
    aclError ret;
    ACLPY_PARSE(args, "", "acl.rt.get_context", NULL);
    ACLPY_CALL(ret, aclrtGetCurrentContext(&ctx));
    return aclpy_u64_ret(aclpy_int(ctx), ret);
}

static PyObject *rt_malloc(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0;
    int policy = 0;
    void *ptr = NULL;
    aclError ret;
    ACLPY_PARSE(args, "Ki", "acl.rt.malloc", &size, &policy);
    ACLPY_CALL(ret, aclrtMalloc(&ptr, (size_t)size, (aclrtMemMallocPolicy)policy));
    return aclpy_u64_ret(aclpy_int(ptr), ret);
}

/* Like malloc, but the size is only rounded up to 32 bytes, without the 32 bytes of padding. */
static PyObject *malloc_align32(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0;
    int policy = 0;
    void *ptr = NULL;
    aclError ret;
    ACLPY_PARSE(args, "Ki", "acl.rt.malloc_align32", &size, &policy);
    ACLPY_CALL(ret, aclrtMallocAlign32(&ptr, (size_t)size, (aclrtMemMallocPolicy)policy));
    return aclpy_u64_ret(aclpy_int(ptr), ret);
}

static PyObject *malloc_host(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0;
    void *ptr = NULL;
    aclError ret;
    ACLPY_PARSE(args, "K", "acl.rt.malloc_host", &size);
    ACLPY_CALL(ret, aclrtMallocHost(&ptr, (size_t)size));
    return aclpy_u64_ret(aclpy_int(ptr), ret);
}

static PyObject *rt_memcpy(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long dst = 0, dest_max = 0, src = 0, count = 0;
    int kind = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKKKi", "acl.rt.memcpy", &dst, &dest_max, &src, &count, &kind);
    ACLPY_CALL(ret, aclrtMemcpy(aclpy_ptr(dst), (size_t)dest_max, aclpy_ptr(src), (size_t)count,
                                (aclrtMemcpyKind)kind));
    return aclpy_ret(ret);
}

static PyObject *rt_memset(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, max_count = 0, count = 0;
    int value = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKiK", "acl.rt.memset", &ptr, &max_count, &value, &count);
    ACLPY_CALL(ret, aclrtMemset(aclpy_ptr(ptr), (size_t)max_count, value, (size_t)count));
    return aclpy_ret(ret);
}

/* (free, total, ret): pyACL's one call with two outputs. */
static PyObject *get_mem_info(PyObject *self, PyObject *args)
{
    (void)self;
    int attr = 0;
    size_t free_bytes = 0, total = 0;
    aclError ret;
    ACLPY_PARSE(args, "i", "acl.rt.get_mem_info", &attr);
    ACLPY_CALL(ret, aclrtGetMemInfo((aclrtMemAttr)attr, &free_bytes, &total));
    return Py_BuildValue("(KKi)", (unsigned long long)free_bytes, (unsigned long long)total, (int)ret);
}

PyMethodDef aclpy_rt_device_methods[] = {
    {"set_device", set_device, METH_VARARGS, "set_device(device_id) -> ret"},
    {"reset_device", reset_device, METH_VARARGS, "reset_device(device_id) -> ret"},
    {"reset_device_force", reset_device_force, METH_VARARGS, "reset_device_force(device_id) -> ret"},
    {"get_device", get_device, METH_VARARGS, "get_device() -> (device_id, ret)"},
    {"get_device_count", get_device_count, METH_VARARGS, "get_device_count() -> (count, ret)"},
    {"synchronize_device", synchronize_device, METH_VARARGS, "synchronize_device() -> ret"},
    {"synchronize_device_with_timeout", synchronize_device_with_timeout, METH_VARARGS,
     "synchronize_device_with_timeout(timeout) -> ret"},
    {"device_get_bare_tgid", device_get_bare_tgid, METH_VARARGS, "device_get_bare_tgid() -> (pid, ret)"},
    {"device_can_access_peer", device_can_access_peer, METH_VARARGS,
     "device_can_access_peer(device_id, peer_device_id) -> (can_access, ret)"},
    {"device_enable_peer_access", device_enable_peer_access, METH_VARARGS,
     "device_enable_peer_access(peer_device_id, flags) -> ret"},
    {"device_disable_peer_access", device_disable_peer_access, METH_VARARGS,
     "device_disable_peer_access(peer_device_id) -> ret"},
    {"create_context", create_context, METH_VARARGS, "create_context(device_id) -> (context, ret)"},
    {"destroy_context", destroy_context, METH_VARARGS, "destroy_context(context) -> ret"},
    {"set_context", set_context, METH_VARARGS, "set_context(context) -> ret"},
    {"get_context", get_context, METH_VARARGS, "get_context() -> (context, ret)"},
    {"malloc", rt_malloc, METH_VARARGS, "malloc(size, policy) -> (dev_ptr, ret)"},
    {"malloc_align32", malloc_align32, METH_VARARGS, "malloc_align32(size, policy) -> (dev_ptr, ret)"},
    {"free", rt_free, METH_VARARGS, "free(dev_ptr) -> ret"},
    {"malloc_host", malloc_host, METH_VARARGS, "malloc_host(size) -> (host_ptr, ret)"},
    {"free_host", free_host, METH_VARARGS, "free_host(host_ptr) -> ret"},
    {"memcpy", rt_memcpy, METH_VARARGS, "memcpy(dst, dest_max, src, count, kind) -> ret"},
    {"memset", rt_memset, METH_VARARGS, "memset(dev_ptr, max_count, value, count) -> ret"},
    {"get_mem_info", get_mem_info, METH_VARARGS, "get_mem_info(attr) -> (free, total, ret)"},
    {NULL, NULL, 0, NULL},
};
