/*
 * kernels.c - the kernel library of 11_managed_kernel: the emulated kernel "axpy_u32".
 *
 * On an NPU the kernel would be Ascend C device code in the binary that aclrtBinaryLoadFromFile
 * loads. aclvmm runs kernels as CPU functions registered under the kernel's name
 * (aclvmmRegisterKernel, include/aclvmm/aclvmm.h). This library registers one from its
 * constructor. The runtime loads it when it starts, because the example runs with
 * ACLVMM_KERNEL_LIBS=<build>/examples/kernels/example_11_managed_kernel.so (examples/run.sh and
 * CTest set it). The program itself (main.c) never mentions the library.
 *
 * axpy_u32(x, y, z, n, a): z[i] = a * x[i] + y[i] for i < n, uint32 arithmetic (mod 2^32).
 * The parameter buffer holds the parameters in the order aclrtKernelArgsAppend appended them,
 * each at the next 8-byte-aligned offset: x at 0, y at 8, z at 16 (device pointers, 8 bytes
 * each), n at 24 (uint64_t), a at 32 (uint32_t): 36 bytes in all. The elements are split into
 * numBlocks equal slices, one per block, as an Ascend C kernel splits its work across AI cores.
 * Pointers are device addresses: the kernel reaches them only through aclvmmKernelRead /
 * aclvmmKernelWrite, with the rights of the device the stream runs on. For managed memory the
 * first access of the device to a page migrates it there.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <aclvmm/aclvmm.h>

#define ARG_X 0
#define ARG_Y 8
#define ARG_Z 16
#define ARG_N 24
#define ARG_A 32
#define ARGS_SIZE 36

static void axpy_u32(aclvmmKernelContext *ctx, uint32_t numBlocks, const void *args, size_t argsSize,
                     void *userData)
{
    (void)userData;
    if (argsSize != ARGS_SIZE) {
        fprintf(stderr, "axpy_u32: expected %d bytes of parameters, got %zu\n", ARGS_SIZE, argsSize);
        return; /* nothing written: the program's check of z fails */
    }
    const uint8_t *p = args;
    uint64_t x, y, z, n;
    uint32_t a;
    memcpy(&x, p + ARG_X, sizeof(x));
    memcpy(&y, p + ARG_Y, sizeof(y));
    memcpy(&z, p + ARG_Z, sizeof(z));
    memcpy(&n, p + ARG_N, sizeof(n));
    memcpy(&a, p + ARG_A, sizeof(a));

    const uint64_t perBlock = (n + numBlocks - 1) / numBlocks;
    uint32_t *xs = malloc(perBlock * sizeof(uint32_t));
    uint32_t *ys = malloc(perBlock * sizeof(uint32_t));
    if (xs == NULL || ys == NULL) {
        fprintf(stderr, "axpy_u32: out of host memory\n");
        free(xs);
        free(ys);
        return;
    }
    for (uint32_t block = 0; block < numBlocks; ++block) {
        const uint64_t first = (uint64_t)block * perBlock;
        if (first >= n) {
            break;
        }
        const uint64_t count = n - first < perBlock ? n - first : perBlock;
        const size_t bytes = (size_t)count * sizeof(uint32_t);
        const size_t offset = (size_t)first * sizeof(uint32_t);
        /* A failed access marks the kernel failed (aclrtSynchronizeStream reports it). */
        if (aclvmmKernelRead(ctx, xs, (const void *)(uintptr_t)(x + offset), bytes) != ACL_SUCCESS ||
            aclvmmKernelRead(ctx, ys, (const void *)(uintptr_t)(y + offset), bytes) != ACL_SUCCESS) {
            break;
        }
        for (uint64_t i = 0; i < count; ++i) {
            ys[i] = a * xs[i] + ys[i];
        }
        if (aclvmmKernelWrite(ctx, (void *)(uintptr_t)(z + offset), ys, bytes) != ACL_SUCCESS) {
            break;
        }
    }
    free(xs);
    free(ys);
}

/* Runs when the runtime loads the library (at its start), before main() uses any kernel. */
__attribute__((constructor)) static void register_kernels(void)
{
    aclError rc = aclvmmRegisterKernel("axpy_u32", axpy_u32, NULL);
    if (rc != ACL_SUCCESS) {
        fprintf(stderr, "kernel library of 11_managed_kernel: aclvmmRegisterKernel(\"axpy_u32\") returned %d\n",
                (int)rc);
    }
}
