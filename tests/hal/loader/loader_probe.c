/*
 * Starts the runtime with whatever ACLVMM_DRIVER / ACLVMM_HAL_LIBRARY the test set and checks the
 * codes: `loader_probe <aclInit code> [<aclrtSetDevice(0) code>]`. Exit 0 when they match; the
 * message of a refused start is printed either way (the tests show it on failure).
 */
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <aclInit code> [<aclrtSetDevice(0) code>]\n", argv[0]);
        return 2;
    }
    const int want_init = atoi(argv[1]);
    const aclError init = aclInit(NULL);
    printf("aclInit: %d (%s)\n", init, aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");
    if (init != want_init) return 1;
    if (argc > 2) {
        const int want_set = atoi(argv[2]);
        const aclError set = aclrtSetDevice(0);
        printf("aclrtSetDevice(0): %d (%s)\n", set,
               aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");
        if (set != want_set) return 1;
        if (set == 0) (void)aclrtResetDevice(0);
    }
    if (init == 0) (void)aclFinalize();
    return 0;
}
