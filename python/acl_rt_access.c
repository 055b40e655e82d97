/* acl.rt: access rights on mappings (behavior.md 8), the mapping that starts without access
 * (behavior.md 3) and the no-UC reservation (behavior.md 2). Not in pyACL (conventions.md 4.2);
 * named and shaped like its VMM calls. */
#include "acl_py.h"

/* aclrtMemAccessDesc <- {"flags": int, "location": {"id", "type"}, "rsv": [12 ints]}. */
static void access_desc_from_dict(PyObject *dict, void *elem)
{
    aclrtMemAccessDesc *desc = elem;
    unsigned long long v = 0;
    if (aclpy_dict_int(dict, "flags", &v)) desc->flags = (aclrtMemAccessFlags)(uint32_t)v;
    aclpy_location_from_key(dict, "location", &desc->location);
    aclpy_rsv_from_dict(dict, desc->rsv, sizeof(desc->rsv));
}

/* desc_list: a list of aclrtMemAccessDesc dicts; the C `count` is len(desc_list), so an empty list
 * reaches the C API as count 0 (its 107000). */
static PyObject *mem_set_access(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *name = "acl.rt.mem_set_access";
    unsigned long long va = 0, size = 0;
    PyObject *list = NULL;
    Py_ssize_t n = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKO", name, &va, &size, &list);
    aclrtMemAccessDesc *desc = aclpy_struct_array(list, name, "desc_list", sizeof(*desc), access_desc_from_dict, &n);
    if (desc == NULL) {
        return NULL;
    }
    ACLPY_CALL(ret, aclrtMemSetAccess(aclpy_ptr(va), (size_t)size, desc, (size_t)n));
    PyMem_Free(desc);
    return aclpy_ret(ret);
}

/* location: an aclrtMemLocation dict; returns the aclrtMemAccessFlags value (0 on failure). */
static PyObject *mem_get_access(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long va = 0;
    PyObject *dict = NULL;
    aclrtMemLocation loc;
    uint64_t flags = 0;
    aclError ret;
    ACLPY_PARSE(args, "KO!", "acl.rt.mem_get_access", &va, &PyDict_Type, &dict);
    memset(&loc, 0, sizeof(loc));
    aclpy_location_from_dict(dict, &loc);
    ACLPY_CALL(ret, aclrtMemGetAccess(aclpy_ptr(va), &loc, &flags));
    return aclpy_u64_ret(ret == ACL_SUCCESS ? flags : 0, ret);
}

static PyObject *mem_map_no_access(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long va = 0, size = 0, offset = 0, handle = 0, flags = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKKKK", "acl.rt.mem_map_no_access", &va, &size, &offset, &handle, &flags);
    ACLPY_CALL(ret, aclrtMemMapNoAccess(aclpy_ptr(va), (size_t)size, (size_t)offset, aclpy_ptr(handle), flags));
    return aclpy_ret(ret);
}

/* A3 only; expect_ptr is required there (a fixed, 1 GiB-aligned address). */
static PyObject *reserve_mem_address_no_uc_memory(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long size = 0, alignment = 0, expect = 0, flags = 0;
    void *va = NULL;
    aclError ret;
    ACLPY_PARSE(args, "KKKK", "acl.rt.reserve_mem_address_no_uc_memory", &size, &alignment, &expect, &flags);
    ACLPY_CALL(ret, aclrtReserveMemAddressNoUCMemory(&va, (size_t)size, (size_t)alignment, aclpy_ptr(expect),
                                                     flags));
    return aclpy_u64_ret(aclpy_int(va), ret);
}

PyMethodDef aclpy_rt_access_methods[] = {
    {"mem_set_access", mem_set_access, METH_VARARGS, "mem_set_access(vir_ptr, size, desc_list) -> ret"},
    {"mem_get_access", mem_get_access, METH_VARARGS, "mem_get_access(vir_ptr, location) -> (flags, ret)"},
    {"mem_map_no_access", mem_map_no_access, METH_VARARGS,
     "mem_map_no_access(vir_ptr, size, offset, handle, flags) -> ret"},
    {"reserve_mem_address_no_uc_memory", reserve_mem_address_no_uc_memory, METH_VARARGS,
     "reserve_mem_address_no_uc_memory(size, alignment, expect_ptr, flags) -> (vir_ptr, ret)"},
    {NULL, NULL, 0, NULL},
};
