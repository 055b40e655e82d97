/* acl.rt: what a device is and how it is numbered: run mode, UUID and the six device id
 * conversions (runtime-extra.md 4). pyACL has get_run_mode; the others follow its conventions. */
#include "acl_py.h"

/* ACL_HOST (1): the application runs on the host, next to the (emulated) devices. */
ACLPY_OUT_INT(get_run_mode, "acl.rt.get_run_mode", aclrtRunMode, aclrtGetRunMode)

/* User id = aclrtSetDevice's numbering, logical id = the driver's, physical id = the chip's. As in
 * the vendor stack the two "logic <-> phy" calls take / return user ids (runtime-extra.md 4). */
ACLPY_INT_TO_INT(get_logic_dev_id_by_user_dev_id, "acl.rt.get_logic_dev_id_by_user_dev_id",
                 aclrtGetLogicDevIdByUserDevId)
ACLPY_INT_TO_INT(get_user_dev_id_by_logic_dev_id, "acl.rt.get_user_dev_id_by_logic_dev_id",
                 aclrtGetUserDevIdByLogicDevId)
ACLPY_INT_TO_INT(get_logic_dev_id_by_phy_dev_id, "acl.rt.get_logic_dev_id_by_phy_dev_id",
                 aclrtGetLogicDevIdByPhyDevId)
ACLPY_INT_TO_INT(get_phy_dev_id_by_logic_dev_id, "acl.rt.get_phy_dev_id_by_logic_dev_id",
                 aclrtGetPhyDevIdByLogicDevId)
ACLPY_INT_TO_INT(get_user_dev_id_by_phy_dev_id, "acl.rt.get_user_dev_id_by_phy_dev_id",
                 aclrtGetUserDevIdByPhyDevId)
ACLPY_INT_TO_INT(get_phy_dev_id_by_user_dev_id, "acl.rt.get_phy_dev_id_by_user_dev_id",
                 aclrtGetPhyDevIdByUserDevId)

/* The 16 raw bytes of aclrtUuid as `bytes` (not a hex str: the struct holds bytes, and
 * uuid.UUID(bytes=...) or .hex() give the text forms); b"" on failure. */
static PyObject *device_get_uuid(PyObject *self, PyObject *args)
{
    (void)self;
    int device = 0;
    aclrtUuid uuid;
    aclError ret;
    ACLPY_PARSE(args, "i", "acl.rt.device_get_uuid", &device);
    memset(&uuid, 0, sizeof(uuid));
    ACLPY_CALL(ret, aclrtDeviceGetUuid(device, &uuid));
    return aclpy_bytes_ret(uuid.bytes, sizeof(uuid.bytes), ret);
}

PyMethodDef aclpy_rt_device_info_methods[] = {
    {"get_run_mode", get_run_mode, METH_VARARGS, "get_run_mode() -> (run_mode, ret)"},
    {"device_get_uuid", device_get_uuid, METH_VARARGS, "device_get_uuid(device_id) -> (uuid, ret)"},
    {"get_logic_dev_id_by_user_dev_id", get_logic_dev_id_by_user_dev_id, METH_VARARGS,
     "get_logic_dev_id_by_user_dev_id(user_dev_id) -> (logic_dev_id, ret)"},
    {"get_user_dev_id_by_logic_dev_id", get_user_dev_id_by_logic_dev_id, METH_VARARGS,
     "get_user_dev_id_by_logic_dev_id(logic_dev_id) -> (user_dev_id, ret)"},
    {"get_logic_dev_id_by_phy_dev_id", get_logic_dev_id_by_phy_dev_id, METH_VARARGS,
     "get_logic_dev_id_by_phy_dev_id(phy_dev_id) -> (logic_dev_id, ret)"},
    {"get_phy_dev_id_by_logic_dev_id", get_phy_dev_id_by_logic_dev_id, METH_VARARGS,
     "get_phy_dev_id_by_logic_dev_id(logic_dev_id) -> (phy_dev_id, ret)"},
    {"get_user_dev_id_by_phy_dev_id", get_user_dev_id_by_phy_dev_id, METH_VARARGS,
     "get_user_dev_id_by_phy_dev_id(phy_dev_id) -> (user_dev_id, ret)"},
    {"get_phy_dev_id_by_user_dev_id", get_phy_dev_id_by_user_dev_id, METH_VARARGS,
     "get_phy_dev_id_by_user_dev_id(user_dev_id) -> (phy_dev_id, ret)"},
    {NULL, NULL, 0, NULL},
};
