/* acl.rt: interconnect links of mappings (behavior.md 11) and the P2P map of device memory
 * (behavior.md 10, last paragraph). Not in pyACL; same conventions. Links are A3 (SIO, HCCS) and
 * 950 (UB paths): elsewhere the C API answers 207000 / 207021. */
#include "acl_py.h"

/* advice_link: an aclrtMemLinkType value (ACL_RT_MEM_ACCESS_LINK_SIO 0, _HCCS 1, UB paths 2, 3). */
static PyObject *mem_map_set_link(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long handle = 0;
    int link = 0;
    aclError ret;
    ACLPY_PARSE(args, "Ki", "acl.rt.mem_map_set_link", &handle, &link);
    ACLPY_CALL(ret, aclrtMemMapSetLink(aclpy_ptr(handle), (aclrtMemLinkType)link));
    return aclpy_ret(ret);
}

/* Maps what is mapped at vir_ptr_src again at vir_ptr_dst over link_idx (ACL_RT_MEM_LINK_IDX_*). */
static PyObject *mem_map_selected_link(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long dst = 0, size = 0, src = 0;
    unsigned int link_idx = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKKI", "acl.rt.mem_map_selected_link", &dst, &size, &src, &link_idx);
    ACLPY_CALL(ret, aclrtMemMapSelectedLink(aclpy_ptr(dst), (size_t)size, aclpy_ptr(src), (uint32_t)link_idx));
    return aclpy_ret(ret);
}

static PyObject *mem_p2p_map(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr = 0, size = 0, flags = 0;
    int dst_dev = 0;
    aclError ret;
    ACLPY_PARSE(args, "KKiK", "acl.rt.mem_p2p_map", &ptr, &size, &dst_dev, &flags);
    ACLPY_CALL(ret, aclrtMemP2PMap(aclpy_ptr(ptr), (size_t)size, dst_dev, flags));
    return aclpy_ret(ret);
}

PyMethodDef aclpy_rt_link_methods[] = {
    {"mem_map_set_link", mem_map_set_link, METH_VARARGS, "mem_map_set_link(handle, advice_link) -> ret"},
    {"mem_map_selected_link", mem_map_selected_link, METH_VARARGS,
     "mem_map_selected_link(vir_ptr_dst, size, vir_ptr_src, link_idx) -> ret"},
    {"mem_p2p_map", mem_p2p_map, METH_VARARGS, "mem_p2p_map(dev_ptr, size, dst_dev_id, flags) -> ret"},
    {NULL, NULL, 0, NULL},
};
