/*
 * smi_child: the process that test_smi.py watches with aclvmm-smi.
 *
 * It allocates known amounts of device memory and then obeys one-word commands on stdin,
 * answering each on stdout with the HBM bytes it holds on devices 0 and 1 as aclrtGetMemInfo
 * reports them (the numbers aclvmm-smi must show):
 *   start             device 0: 3 x 2 MiB aclrtMallocPhysical; device 1: 1 x 2 MiB
 *                     aclrtMallocPhysical + aclrtMalloc(1 MiB)     -> "ready <used0> <used1>"
 *   free              frees one handle on device 0 and the aclrtMalloc block on device 1
 *                                                                  -> "freed <used0> <used1>"
 *   finalize          frees the rest, resets both devices, aclFinalize -> "finalized"
 *   init              (after finalize) aclInit, 1 x 2 MiB on device 0  -> "again <used0> <used1>"
 *   quit (or EOF)     exits 0 (without aclFinalize unless done: the exit handler tears down)
 * Any failing call prints "error <call> <code>" and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>

#define MIB ((size_t)1 << 20)

static void check(aclError rc, const char* what)
{
    if (rc != ACL_SUCCESS) {
        printf("error %s %d\n", what, (int)rc);
        fflush(stdout);
        exit(1);
    }
}

static aclrtDrvMemHandle alloc_physical(int device, size_t size)
{
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.id = (uint32_t)device;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    aclrtDrvMemHandle h = NULL;
    check(aclrtMallocPhysical(&h, size, &prop, 0), "aclrtMallocPhysical");
    return h;
}

static size_t used_on(int device)
{
    size_t free_bytes = 0, total = 0;
    check(aclrtSetDevice(device), "aclrtSetDevice");
    check(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), "aclrtGetMemInfo");
    check(aclrtResetDevice(device), "aclrtResetDevice"); /* balances the SetDevice above */
    return total - free_bytes;
}

static void report(const char* word)
{
    printf("%s %zu %zu\n", word, used_on(0), used_on(1));
    fflush(stdout);
}

int main(void)
{
    check(aclInit(NULL), "aclInit");
    check(aclrtSetDevice(0), "aclrtSetDevice");
    check(aclrtSetDevice(1), "aclrtSetDevice");
    aclrtDrvMemHandle dev0[3];
    for (int i = 0; i < 3; ++i) dev0[i] = alloc_physical(0, 2 * MIB);
    aclrtDrvMemHandle dev1 = alloc_physical(1, 2 * MIB);
    void* block = NULL; /* aclrtMalloc allocates on the current device: 1 */
    check(aclrtMalloc(&block, MIB, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    report("ready");

    char line[64];
    int freed = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "free") == 0 && !freed) {
            check(aclrtFreePhysical(dev0[2]), "aclrtFreePhysical");
            check(aclrtFree(block), "aclrtFree");
            freed = 1;
            report("freed");
        } else if (strcmp(line, "finalize") == 0) {
            for (int i = 0; i < (freed ? 2 : 3); ++i) check(aclrtFreePhysical(dev0[i]), "aclrtFreePhysical");
            check(aclrtFreePhysical(dev1), "aclrtFreePhysical");
            if (!freed) check(aclrtFree(block), "aclrtFree");
            check(aclrtResetDevice(1), "aclrtResetDevice");
            check(aclrtResetDevice(0), "aclrtResetDevice");
            check(aclFinalize(), "aclFinalize");
            printf("finalized\n");
            fflush(stdout);
        } else if (strcmp(line, "init") == 0) {
            check(aclInit(NULL), "aclInit");
            check(aclrtSetDevice(0), "aclrtSetDevice");
            (void)alloc_physical(0, 2 * MIB); /* held until exit */
            report("again");
        } else if (strcmp(line, "quit") == 0) {
            return 0;
        } else {
            printf("error unknown-command %s\n", line);
            fflush(stdout);
        }
    }
    return 0;
}
