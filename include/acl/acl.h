/*
 * aclvmm - umbrella header for the ACL runtime API subset.
 *
 * Applications include <acl/acl.h>; it brings in the runtime API together
 * with all base types, status codes and macros.
 */
#ifndef ACLVMM_INC_ACL_ACL_H
#define ACLVMM_INC_ACL_ACL_H

#include "acl_rt.h"

#endif /* ACLVMM_INC_ACL_ACL_H */
