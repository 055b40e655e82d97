/* acl.rt: virtual memory management and sharing (pyACL's rt_memory family, conventions.md 4.2),
 * plus the VMM queries pyACL lacks, named and shaped the same way. */
#include "acl_py.h"

ACLPY_PTR_TO_RET(release_mem_address, "acl.rt.release_mem_address", aclrtReleaseMemAddress)
ACLPY_PTR_TO_RET(free_physical, "acl.rt.free_physical", aclrtFreePhysical)
ACLPY_PTR_TO_RET(unmap_mem, "acl.rt.unmap_mem", aclrtUnmapMem)

static PyObject *reserve_mem_address(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0, alignment = 0, expect = 0, flags = 0;
    void *va = NULL;
    aclError ret;
    ACLPY_PARSE(args, "KKKK", "acl.rt.reserve_mem_address", &size, &alignment, &expect, &flags);
    ACLPY_CALL(ret, aclrtReserveMemAddress(&va, (size_t)size, (size_t)alignment, aclpy_ptr(expect), flags));
    return aclpy_u64_ret(aclpy_int(va), ret);
}

static PyObject *malloc_physical(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0, flags = 0;
    PyObject *dict = NULL;
    aclrtPhysicalMemProp prop;
    aclrtDrvMemHandle handle = NULL;
    aclError ret;
    ACLPY_PARSE(args, "KO!K", "acl.rt.malloc_physical", &size, &PyDict_Type, &dict, &flags);
    aclpy_prop_from_dict(dict, &prop);
    ACLPY_CALL(ret, aclrtMallocPhysical(&handle, (size_t)size, &prop, flags));
    return aclpy_u64_ret(aclpy_int(handle), ret);
}

static PyObject *map_mem(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long va = 0, size = 0, offset = 0, handle = 0, flags = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKKKK", "acl.rt.map_mem", &va, &size, &offset, &handle, &flags);
    ACLPY_CALL(ret, aclrtMapMem(aclpy_ptr(va), (size_t)size, (size_t)offset, aclpy_ptr(handle), flags));
    return aclpy_ret(ret);
}

static PyObject *mem_get_allocation_granularity(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dict = NULL;
    int option = 0;
    aclrtPhysicalMemProp prop;
    size_t granularity = 0;
    aclError ret;
    ACLPY_PARSE(args, "O!i", "acl.rt.mem_get_allocation_granularity", &PyDict_Type, &dict, &option);
    aclpy_prop_from_dict(dict, &prop);
    ACLPY_CALL(ret, aclrtMemGetAllocationGranularity(&prop, (aclrtMemGranularityOptions)option, &granularity));
    return aclpy_u64_ret(granularity, ret);
}

static PyObject *pointer_get_attributes(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0;
    aclrtPtrAttributes attrs;
    aclError ret;
    ACLPY_PARSE(args, "K", "acl.rt.pointer_get_attributes", &ptr);
    memset(&attrs, 0, sizeof(attrs));
    ACLPY_CALL(ret, aclrtPointerGetAttributes(aclpy_ptr(ptr), &attrs));
    /* The dict comes back on failure too (zeros), so callers can unpack unconditionally. */
    return Py_BuildValue("(Ni)", aclpy_attrs_to_dict(&attrs), (int)ret);
}

static PyObject *mem_export_to_shareable_handle(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long handle = 0, flags = 0;
    int type = 0;
    uint64_t shareable = 0;
    aclError ret;
    ACLPY_PARSE(args, "KiK", "acl.rt.mem_export_to_shareable_handle", &handle, &type, &flags);
    ACLPY_CALL(ret, aclrtMemExportToShareableHandle(aclpy_ptr(handle), (aclrtMemHandleType)type, flags, &shareable));
    return aclpy_u64_ret(shareable, ret);
}

static PyObject *mem_set_pid_to_shareable_handle(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.mem_set_pid_to_shareable_handle";
    unsigned long long shareable = 0;
    PyObject *list = NULL;
    Py_ssize_t n = 0;
    aclError ret;
    ACLPY_PARSE(args, "KO", name, &shareable, &list);
    int32_t *pids = aclpy_int32_array(list, name, "pid_list", &n);
    if (pids == NULL) {
        return NULL;
    }
    ACLPY_CALL(ret, aclrtMemSetPidToShareableHandle(shareable, pids, (size_t)n));
    PyMem_Free(pids);
    return aclpy_ret(ret);
}

static PyObject *mem_import_from_shareable_handle(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long shareable = 0;
    int device = 0;
    aclrtDrvMemHandle handle = NULL;
    aclError ret;
    ACLPY_PARSE(args, "Ki", "acl.rt.mem_import_from_shareable_handle", &shareable, &device);
    ACLPY_CALL(ret, aclrtMemImportFromShareableHandle(shareable, device, &handle));
    return aclpy_u64_ret(aclpy_int(handle), ret);
}

/* ---- not in pyACL: same conventions ---- */

static PyObject *mem_retain_allocation_handle(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long va = 0;
    aclrtDrvMemHandle handle = NULL;
    aclError ret;
    ACLPY_PARSE(args, "K", "acl.rt.mem_retain_allocation_handle", &va);
    ACLPY_CALL(ret, aclrtMemRetainAllocationHandle(aclpy_ptr(va), &handle));
    return aclpy_u64_ret(aclpy_int(handle), ret);
}

static PyObject *mem_get_allocation_properties_from_handle(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long handle = 0;
    aclrtPhysicalMemProp prop;
    aclError ret;
    ACLPY_PARSE(args, "K", "acl.rt.mem_get_allocation_properties_from_handle", &handle);
    memset(&prop, 0, sizeof(prop));
    ACLPY_CALL(ret, aclrtMemGetAllocationPropertiesFromHandle(aclpy_ptr(handle), &prop));
    return Py_BuildValue("(Ni)", aclpy_prop_to_dict(&prop), (int)ret);
}

static PyObject *mem_get_address_range(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0;
    void *base = NULL;
    size_t size = 0;
    aclError ret;
    ACLPY_PARSE(args, "K", "acl.rt.mem_get_address_range", &ptr);
    ACLPY_CALL(ret, aclrtMemGetAddressRange(aclpy_ptr(ptr), &base, &size));
    return Py_BuildValue("(KKi)", aclpy_int(base), (unsigned long long)size, (int)ret);
}

PyMethodDef aclpy_rt_vmm_methods[] = {
    {"reserve_mem_address", reserve_mem_address, METH_VARARGS,
     "reserve_mem_address(size, alignment, expect_ptr, flags) -> (vir_ptr, ret)"},
    {"release_mem_address", release_mem_address, METH_VARARGS, "release_mem_address(vir_ptr) -> ret"},
    {"malloc_physical", malloc_physical, METH_VARARGS, "malloc_physical(size, prop, flags) -> (handle, ret)"},
    {"free_physical", free_physical, METH_VARARGS, "free_physical(handle) -> ret"},
    {"map_mem", map_mem, METH_VARARGS, "map_mem(vir_ptr, size, offset, handle, flags) -> ret"},
    {"unmap_mem", unmap_mem, METH_VARARGS, "unmap_mem(vir_ptr) -> ret"},
    {"mem_get_allocation_granularity", mem_get_allocation_granularity, METH_VARARGS,
     "mem_get_allocation_granularity(prop, option) -> (granularity, ret)"},
    {"pointer_get_attributes", pointer_get_attributes, METH_VARARGS,
     "pointer_get_attributes(ptr) -> ({'location': {'id', 'type'}, 'page_size', 'rsv'}, ret)"},
    {"mem_export_to_shareable_handle", mem_export_to_shareable_handle, METH_VARARGS,
     "mem_export_to_shareable_handle(handle, handle_type, flags) -> (shareable_handle, ret)"},
    {"mem_set_pid_to_shareable_handle", mem_set_pid_to_shareable_handle, METH_VARARGS,
     "mem_set_pid_to_shareable_handle(shareable_handle, pid_list) -> ret"},
    {"mem_import_from_shareable_handle", mem_import_from_shareable_handle, METH_VARARGS,
     "mem_import_from_shareable_handle(shareable_handle, device_id) -> (handle, ret)"},
    {"mem_retain_allocation_handle", mem_retain_allocation_handle, METH_VARARGS,
     "mem_retain_allocation_handle(vir_ptr) -> (handle, ret)"},
    {"mem_get_allocation_properties_from_handle", mem_get_allocation_properties_from_handle, METH_VARARGS,
     "mem_get_allocation_properties_from_handle(handle) -> (prop, ret)"},
    {"mem_get_address_range", mem_get_address_range, METH_VARARGS,
     "mem_get_address_range(ptr) -> (base, size, ret)"},
    {NULL, NULL, 0, NULL},
};
