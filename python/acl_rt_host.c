/* acl.rt: host memory registration (runtime-extra.md 5; pyACL's host_register family,
 * conventions.md 4.2). In aclvmm the device address of a registration is the host address. */
#include "acl_py.h"

ACLPY_PTR_TO_RET(host_unregister, "acl.rt.host_unregister", aclrtHostUnregister)

/* type: an aclrtHostRegisterType (ACL_HOST_REGISTER_MAPPED 0). -> (dev_ptr, ret). */
static PyObject *host_register(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0;
    int type = 0;
    void *dev = NULL;
    aclError ret;
    ACLPY_PARSE(args, "KKi", "acl.rt.host_register", &ptr, &size, &type);
    ACLPY_CALL(ret, aclrtHostRegister(aclpy_ptr(ptr), (uint64_t)size, (aclrtHostRegisterType)type, &dev));
    return aclpy_u64_ret(aclpy_int(dev), ret);
}

/* flag: ACL_HOST_REG_* bits (MAPPED 0x2, PINNED 0x10000000). */
static PyObject *host_register_v2(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0;
    unsigned int flag = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKI", "acl.rt.host_register_v2", &ptr, &size, &flag);
    ACLPY_CALL(ret, aclrtHostRegisterV2(aclpy_ptr(ptr), (uint64_t)size, (uint32_t)flag));
    return aclpy_ret(ret);
}

static PyObject *host_get_device_pointer(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long host = 0;
    unsigned int flag = 0;
    void *dev = NULL;
    aclError ret;
    ACLPY_PARSE(args, "KI", "acl.rt.host_get_device_pointer", &host, &flag);
    ACLPY_CALL(ret, aclrtHostGetDevicePointer(aclpy_ptr(host), &dev, (uint32_t)flag));
    return aclpy_u64_ret(aclpy_int(dev), ret);
}

PyMethodDef aclpy_rt_host_methods[] = {
    {"host_register", host_register, METH_VARARGS, "host_register(ptr, size, type) -> (dev_ptr, ret)"},
    {"host_unregister", host_unregister, METH_VARARGS, "host_unregister(ptr) -> ret"},
    {"host_register_v2", host_register_v2, METH_VARARGS, "host_register_v2(ptr, size, flag) -> ret"},
    {"host_get_device_pointer", host_get_device_pointer, METH_VARARGS,
     "host_get_device_pointer(host_ptr, flag) -> (dev_ptr, ret)"},
    {NULL, NULL, 0, NULL},
};
