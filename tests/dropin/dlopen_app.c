/*
 * dlopen_app <symbols.txt> <library name>
 *
 * The torch_npu way of using ACL: the program is linked against no ACL library at all; it
 * dlopen()s the library by bare name (found through LD_LIBRARY_PATH), resolves every name of
 * tests/abi/symbols.txt through the handle, and calls through the resolved pointers only.
 * (tests/integration/dlopen_test.cpp checks the same names from a process that already links
 * libascendcl.so, where dlopen only returns the loaded library; this one finds it cold.)
 *
 * Prints "dlopen: resolved <n> of <m> from <file>" and, after aclInit / aclrtGetSocName /
 * aclrtSetDevice / aclrtGetDeviceCount / aclrtResetDevice / aclFinalize through the handle,
 * "dlopen: calls ok soc=<name> devices=<n>". Exits 0 only if everything resolved and worked.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int (*init_fn)(const char *);
typedef int (*void_fn)(void);
typedef int (*dev_fn)(int32_t);
typedef int (*count_fn)(uint32_t *);
typedef const char *(*soc_fn)(void);

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s <symbols.txt> <library name>\n", argv[0]);
        return 2;
    }
    FILE *list = fopen(argv[1], "r");
    if (!list) {
        printf("dlopen: cannot read %s\n", argv[1]);
        return 1;
    }
    void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen: %s\n", dlerror());
        fclose(list);
        return 1;
    }

    char line[256];
    int wanted = 0, found = 0;
    while (fgets(line, sizeof line, list)) {
        char name[256];
        if (sscanf(line, " %255s", name) != 1 || name[0] == '#') continue;
        ++wanted;
        if (dlsym(lib, name)) {
            ++found;
        } else {
            printf("dlopen: missing %s\n", name);
        }
    }
    fclose(list);

    Dl_info info;
    memset(&info, 0, sizeof info);
    void *init_sym = dlsym(lib, "aclInit");
    dladdr(init_sym, &info);
    printf("dlopen: resolved %d of %d from %s\n", found, wanted, info.dli_fname ? info.dli_fname : "?");

    init_fn init = (init_fn)init_sym;
    void_fn fin = (void_fn)dlsym(lib, "aclFinalize");
    soc_fn soc = (soc_fn)dlsym(lib, "aclrtGetSocName");
    dev_fn set_dev = (dev_fn)dlsym(lib, "aclrtSetDevice");
    dev_fn reset_dev = (dev_fn)dlsym(lib, "aclrtResetDevice");
    count_fn count = (count_fn)dlsym(lib, "aclrtGetDeviceCount");
    if (!init || !fin || !soc || !set_dev || !reset_dev || !count) return 1;
    uint32_t devices = 0;
    const char *name = NULL;
    int rc[5];
    rc[0] = init(NULL);
    name = soc();
    rc[1] = count(&devices);
    rc[2] = set_dev(0);
    rc[3] = reset_dev(0);
    rc[4] = fin();
    for (int i = 0; i < 5; ++i) {
        if (rc[i] != 0) {
            printf("dlopen: call %d returned %d\n", i, rc[i]);
            return 1;
        }
    }
    printf("dlopen: calls ok soc=%s devices=%u\n", name ? name : "(null)", devices);
    return (found == wanted && wanted > 0 && name && devices > 0 && dlclose(lib) == 0) ? 0 : 1;
}
