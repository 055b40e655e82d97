/*
 * aclvmm - common ACL definitions.
 *
 * Pulls in the basic runtime definitions and the runtime error codes, and
 * fixes the version of the ACL API this header set describes.
 */
#ifndef ACLVMM_INC_ACL_ACL_BASE_H
#define ACLVMM_INC_ACL_ACL_BASE_H

#include <stdint.h>
#include <stddef.h>

#include "acl_base_rt.h"
#include "error_codes/rt_error_codes.h"

#ifndef ACL_FUNC_VISIBILITY
#ifdef FUNC_VISIBILITY
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#else
#define ACL_FUNC_VISIBILITY
#endif
#endif

/* Version of the ACL API described here (reported by aclrtGetVersion). */
#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 17
#define ACL_PATCH_VERSION 0

#endif /* ACLVMM_INC_ACL_ACL_BASE_H */
