/*
 * Shared by the small C programs of tests/install and tests/dropin, which are built outside the
 * test framework (some by external build systems): a call check that prints the failing call and
 * returns 1 from main, and the physical-memory description they all map (2 MiB-page HBM on a
 * device).
 */
#ifndef ACLVMM_TESTS_CONSUMER_UTIL_H
#define ACLVMM_TESTS_CONSUMER_UTIL_H

#include <string.h>

#include "acl/acl.h"

#ifndef CONSUMER_TAG
#error "define CONSUMER_TAG (the program's name in its output) before including consumer_util.h"
#endif

/* In main only: on failure print "<CONSUMER_TAG>: <call> failed with <code>" and return 1. */
#define CHECK(call)                                                            \
    do {                                                                       \
        aclError rc_ = (call);                                                 \
        if (rc_ != ACL_SUCCESS) {                                              \
            printf("%s: %s failed with %d\n", CONSUMER_TAG, #call, (int)rc_); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

static inline aclrtPhysicalMemProp consumer_hbm_prop(int32_t device)
{
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (uint32_t)device;
    return prop;
}

#endif /* ACLVMM_TESTS_CONSUMER_UTIL_H */
