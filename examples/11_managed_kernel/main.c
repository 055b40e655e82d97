/*
 * 11_managed_kernel - managed memory processed by a kernel that is launched by name.
 *
 *   aclrtMemAllocManaged x, y, z (4 MiB each) -> the CPU writes x and y through the pointers
 *   -> aclrtBinaryLoadFromFile -> aclrtBinaryGetFunction("axpy_u32")
 *   -> aclrtKernelArgsInit / Append(x, y, z, n, a = 3) / Finalize
 *   -> aclrtLaunchKernelWithConfig(8 blocks)                 z = 3 * x + y
 *   -> aclrtKernelArgsInit / Append(x, z, z, n, a = 5) / Finalize (while the first one may run)
 *   -> aclrtLaunchKernelWithConfig(8 blocks)                 z = 5 * x + z, in stream order
 *   -> aclrtSynchronizeStream -> the CPU reads z = 8 * x + y through the pointer
 *   -> aclrtBinaryUnLoad, aclrtFree, aclFinalize.
 *
 * This is the flow of the vendor sample 3_memory_advanced/managed_memory/0_uvm_allocate, and the
 * program is plain ACL code: it calls no aclvmm extension and does not know where its kernel
 * comes from. On an NPU, "axpy_u32" would be device code in the binary it loads. On aclvmm the
 * binary file is read but not parsed, and the kernel is a CPU function that the kernel library
 * kernels.c registers by name when the runtime loads it from ACLVMM_KERNEL_LIBS. The binary
 * file here is that same library: <directory of this program>/kernels/example_11_managed_kernel.so,
 * or the path given as the only argument.
 *
 * Managed memory exists on A2 products only; another ACLVMM_SOC is replaced for this run.
 */
#include "example_util.h" /* CHECK, expect, select_a2_product, MIB */

#include <limits.h>

#define ELEMENTS ((size_t)(4 * MIB / sizeof(uint32_t))) /* 1 Mi uint32 values: 4 MiB per array */
#define BLOCKS 8                                        /* like the vendor sample's blockDim */
#define KERNEL_NAME "axpy_u32"
#define KERNEL_FILE "kernels/example_11_managed_kernel.so" /* next to this program */

static uint32_t x_value(size_t i) { return (uint32_t)(i * 2654435761u); }
static uint32_t y_value(size_t i) { return (uint32_t)(i * 40503u + 7u); }

/* The binary to load: argv[1], else KERNEL_FILE in this program's directory. */
static void binary_path(char *out, size_t n, int argc, char **argv)
{
    if (argc > 1) {
        snprintf(out, n, "%s", argv[1]);
        return;
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        expect(0, "readlink /proc/self/exe: %s", strerror(errno));
    }
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(out, n, "%s/%s", self, KERNEL_FILE);
}

/* Appends one parameter to the kernel's parameter buffer (copied now). */
static void append(aclrtArgsHandle args, void *param, size_t size)
{
    aclrtParamHandle handle = NULL;
    CHECK(aclrtKernelArgsAppend(args, param, size, &handle));
}

/* Builds axpy_u32's parameters (x, y, z, n, a) and queues the kernel on the stream. */
static void launch_axpy(aclrtFuncHandle fn, aclrtStream stream, uint32_t *x, uint32_t *y, uint32_t *z, uint32_t a)
{
    aclrtArgsHandle args = NULL;
    CHECK(aclrtKernelArgsInit(fn, &args)); /* one buffer per thread: this empties it */
    uint64_t n = ELEMENTS;
    append(args, &x, sizeof(x));
    append(args, &y, sizeof(y));
    append(args, &z, sizeof(z));
    append(args, &n, sizeof(n));
    append(args, &a, sizeof(a));
    CHECK(aclrtKernelArgsFinalize(args));
    CHECK(aclrtLaunchKernelWithConfig(fn, BLOCKS, stream, NULL, args, NULL));
}

static void print_values(const char *what, const uint32_t *v)
{
    printf("       %s: %u %u %u %u ...\n", what, v[0], v[1], v[2], v[3]);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    select_a2_product(); /* managed memory needs an A2 SoC */
    char binary[PATH_MAX + 64];
    binary_path(binary, sizeof(binary), argc, argv);

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    /* Managed memory: one pointer for the CPU and the devices. */
    uint32_t *x = NULL, *y = NULL, *z = NULL;
    CHECK(aclrtMemAllocManaged((void **)&x, ELEMENTS * sizeof(uint32_t), ACL_RT_MEM_ATTACH_GLOBAL));
    CHECK(aclrtMemAllocManaged((void **)&y, ELEMENTS * sizeof(uint32_t), ACL_RT_MEM_ATTACH_GLOBAL));
    CHECK(aclrtMemAllocManaged((void **)&z, ELEMENTS * sizeof(uint32_t), ACL_RT_MEM_ATTACH_GLOBAL));
    for (size_t i = 0; i < ELEMENTS; ++i) { /* no aclrtMemcpy: the CPU writes through the pointers */
        x[i] = x_value(i);
        y[i] = y_value(i);
        z[i] = 0xFFFFFFFFu;
    }
    expect(1, "aclrtMemAllocManaged: x, y, z of %zu uint32 each; the CPU wrote x and y", ELEMENTS);
    print_values("x", x);
    print_values("y", y);

    /* Load the binary and find the kernel by name. */
    aclrtBinHandle bin = NULL;
    CHECK(aclrtBinaryLoadFromFile(binary, NULL, &bin));
    expect(1, "aclrtBinaryLoadFromFile(%s)", binary);
    aclrtFuncHandle fn = NULL;
    aclError rc = aclrtBinaryGetFunction(bin, KERNEL_NAME, &fn);
    if (rc != ACL_SUCCESS) {
        expect(0, "aclrtBinaryGetFunction(\"%s\") returned %d: %s\n"
                  "       (on aclvmm the kernel comes from the kernel library: run this example through "
                  "examples/run.sh, or with ACLVMM_KERNEL_LIBS=%s)",
               KERNEL_NAME, (int)rc, recent_msg(), binary);
    }
    expect(1, "aclrtBinaryGetFunction(\"%s\") found the kernel", KERNEL_NAME);

    /* Two launches on one stream. The parameters are copied at each launch, so the second buffer
       is built while the first kernel may still run; the stream runs them in order. */
    launch_axpy(fn, stream, x, y, z, 3);
    launch_axpy(fn, stream, x, z, z, 5);
    expect(1, "launched %s twice with %d blocks: z = 3*x + y, then z = 5*x + z", KERNEL_NAME, BLOCKS);
    CHECK(aclrtSynchronizeStream(stream));

    /* The CPU reads the result through the same pointers. */
    size_t bad = 0;
    for (size_t i = 0; i < ELEMENTS; ++i) {
        uint32_t want = 8u * x_value(i) + y_value(i);
        if ((z[i] != want || x[i] != x_value(i) || y[i] != y_value(i)) && bad++ == 0) {
            fprintf(stderr, "first mismatch at element %zu: z %u (expected %u), x %u, y %u\n", i, z[i], want, x[i],
                    y[i]);
        }
    }
    expect(bad == 0, "the CPU reads z = 8*x + y in all %zu elements, x and y unchanged", ELEMENTS);
    print_values("z", z);

    CHECK(aclrtBinaryUnLoad(bin));
    CHECK(aclrtFree(z));
    CHECK(aclrtFree(y));
    CHECK(aclrtFree(x));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    expect(1, "aclFinalize done");
    return 0;
}
