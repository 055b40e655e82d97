/* acl: the aclsys* version queries, at the top level like acl.get_version (C `aclsysGetVersionStr`
 * -> `acl.sys_get_version_str`: the `acl` prefix dropped, the rest in snake_case). pyACL has only
 * get_version; these follow its conventions. */
#include "acl_py.h"

/* pkg_name: "cann", "runtime", ... (None is NULL, the C API's 100000). -> (version, ret), "" on
 * failure. The C prototypes take char * but only read the name. */
static PyObject *sys_get_version_str(PyObject *self, PyObject *args)
{
    (void)self;
    const char *pkg = NULL;
    char version[ACL_PKG_VERSION_MAX_SIZE];
    aclError ret;
    ACLPY_PARSE(args, "z", "acl.sys_get_version_str", &pkg);
    memset(version, 0, sizeof(version));
    ACLPY_CALL(ret, aclsysGetVersionStr((char *)pkg, version));
    version[sizeof(version) - 1] = '\0';
    return Py_BuildValue("(si)", ret == ACL_SUCCESS ? version : "", (int)ret);
}

static PyObject *sys_get_version_num(PyObject *self, PyObject *args)
{
    (void)self;
    const char *pkg = NULL;
    int32_t num = 0;
    aclError ret;
    ACLPY_PARSE(args, "z", "acl.sys_get_version_num", &pkg);
    ACLPY_CALL(ret, aclsysGetVersionNum((char *)pkg, &num));
    return aclpy_i64_ret(num, ret);
}

/* name: an aclCANNPackageName. -> (dict keyed by the members of aclCANNPackageVersion, each a str,
 * "" on failure, ret). Deprecated in the C headers, bound because clients still call it. */
static PyObject *sys_get_cann_version(PyObject *self, PyObject *args)
{
    (void)self;
    int name = 0;
    aclCANNPackageVersion v;
    aclError ret;
    ACLPY_PARSE(args, "i", "acl.sys_get_cann_version", &name);
    memset(&v, 0, sizeof(v));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    ACLPY_CALL(ret, aclsysGetCANNVersion((aclCANNPackageName)name, &v));
#pragma GCC diagnostic pop
    if (ret != ACL_SUCCESS) {
        memset(&v, 0, sizeof(v));
    }
    /* Every array is NUL-terminated here whatever the library wrote. */
    v.version[sizeof(v.version) - 1] = v.majorVersion[sizeof(v.majorVersion) - 1] = '\0';
    v.minorVersion[sizeof(v.minorVersion) - 1] = v.releaseVersion[sizeof(v.releaseVersion) - 1] = '\0';
    v.patchVersion[sizeof(v.patchVersion) - 1] = v.reserved[sizeof(v.reserved) - 1] = '\0';
    return Py_BuildValue("({s:s,s:s,s:s,s:s,s:s,s:s}i)", "version", v.version, "majorVersion", v.majorVersion,
                         "minorVersion", v.minorVersion, "releaseVersion", v.releaseVersion, "patchVersion",
                         v.patchVersion, "reserved", v.reserved, (int)ret);
}

PyMethodDef aclpy_sys_methods[] = {
    {"sys_get_version_str", sys_get_version_str, METH_VARARGS, "sys_get_version_str(pkg_name) -> (version, ret)"},
    {"sys_get_version_num", sys_get_version_num, METH_VARARGS,
     "sys_get_version_num(pkg_name) -> (version_num, ret)"},
    {"sys_get_cann_version", sys_get_cann_version, METH_VARARGS, "sys_get_cann_version(name) -> (version, ret)"},
    {NULL, NULL, 0, NULL},
};
