/*
 * The coexistence test (tests/hal/coexist/README.md): an application beside aclvmm and the
 * stand-in vendor runtime, with ACLVMM_DRIVER=hal and the fake driver library.
 *
 * It checks that aclvmm forwards what the vendor owns (init, devices, contexts, streams and their
 * copies, pointer attributes, vendor memory, host registration, IPC keys) with the vendor's codes
 * and messages, serves the virtual-memory calls itself on the devices the vendor opened, and
 * never opens a device or touches the driver's windows. Prints one line per check; exit status
 * 0 when all pass.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "tests/hal/coexist/standin.h"

static int g_failures;

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (cond) {                                          \
            printf("ok   %s\n", #cond);                      \
        } else {                                             \
            printf("FAIL %s: ", #cond);                      \
            printf(__VA_ARGS__);                             \
            printf("\n");                                    \
            ++g_failures;                                    \
        }                                                    \
    } while (0)

#define CALLS(name, n) CHECK(standinCalls(name) == (n), "%s reached the stand-in %d times", name, standinCalls(name))

static const char* recent(void) {
    const char* m = aclGetRecentErrMsg();
    return m != NULL ? m : "";
}

int main(void) {
    const size_t kMiB = 1u << 20;

    /* Both runtimes start. */
    CHECK(aclInit(NULL) == ACL_SUCCESS, "aclInit: %s", recent());
    CALLS("aclInit", 1);

    /* No device yet: the vendor's answer, with its message. */
    int32_t device = -1;
    aclError e = aclrtGetDevice(&device);
    CHECK(e == ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice without a device gave %d", e);
    const char* message = recent();
    CHECK(strstr(message, "stand-in: no current device") != NULL, "message \"%s\"", message);

    /* The vendor opens device 0; aclvmm opened none before it, else the vendor's open fails. */
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice: %s", recent());
    CALLS("aclrtSetDevice", 1);
    CHECK(standinOpenDevices() == 1, "the stand-in holds %d devices open", standinOpenDevices());
    CHECK(aclrtGetDevice(&device) == ACL_SUCCESS && device == 0, "device %d", device);
    CALLS("aclrtGetDevice", 2);
    uint32_t devices = 0;
    CHECK(aclrtGetDeviceCount(&devices) == ACL_SUCCESS && devices >= 1, "count %u", devices);
    CALLS("aclrtGetDeviceCount", 1);

    /* aclvmm serves the virtual-memory calls on the vendor's device. */
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granularity = 0;
    CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
                                           &granularity) == ACL_SUCCESS && granularity == 2 * kMiB,
          "granularity %zu: %s", granularity, recent());
    const size_t size = 2 * kMiB;
    aclrtDrvMemHandle handle = NULL;
    CHECK(aclrtMallocPhysical(&handle, size, &prop, 0) == ACL_SUCCESS, "%s", recent());
    /* The handle is the driver's own: the vendor's calls on it work (hal.md §6.2 rule 4). */
    CHECK(standinHandleDevice(handle) == 0, "the driver answers %d for the handle",
          standinHandleDevice(handle));
    void* va = NULL;
    CHECK(aclrtReserveMemAddress(&va, size, 0, NULL, 0) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtMapMem(va, size, 0, handle, 0) == ACL_SUCCESS, "%s", recent());
    aclrtMemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
    access.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    CHECK(aclrtMemSetAccess(va, size, &access, 1) == ACL_SUCCESS, "%s", recent());
    aclrtDrvMemHandle retained = NULL;
    CHECK(aclrtMemRetainAllocationHandle(va, &retained) == ACL_SUCCESS && retained == handle,
          "retained %p, made %p: %s", retained, handle, recent());
    CHECK(aclrtFreePhysical(retained) == ACL_SUCCESS, "%s", recent());
    aclrtPhysicalMemProp got;
    memset(&got, 0, sizeof got);
    CHECK(aclrtMemGetAllocationPropertiesFromHandle(handle, &got) == ACL_SUCCESS &&
              got.location.id == 0 && got.memAttr == ACL_HBM_MEM_HUGE, "%s", recent());

    /* The vendor's stream copies into memory aclvmm mapped (one driver, raw addresses); aclvmm's
     * synchronous copy reads the bytes back. */
    static unsigned char out[4096], back[4096];
    for (size_t i = 0; i < sizeof out; ++i) out[i] = (unsigned char)(i * 7 + 3);
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS && stream != NULL, "%s", recent());
    CHECK(aclrtMemcpyAsync(va, size, out, sizeof out, ACL_MEMCPY_HOST_TO_DEVICE, stream) ==
              ACL_SUCCESS, "%s", recent());
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtMemcpy(back, sizeof back, va, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS,
          "%s", recent());
    CHECK(memcmp(out, back, sizeof out) == 0, "the bytes differ");
    CHECK(aclrtMemsetAsync(va, size, 0x5a, 64, stream) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtMemcpy(back, 64, va, 64, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS, "%s", recent());
    CHECK(back[0] == 0x5a && back[63] == 0x5a, "bytes %02x %02x", back[0], back[63]);
    CALLS("aclrtCreateStream", 1);
    CALLS("aclrtMemcpyAsync", 1);
    CALLS("aclrtMemsetAsync", 1);
    CALLS("aclrtSynchronizeStream", 1);

    /* A failure of a forwarded call keeps the vendor's code and message. */
    e = aclrtDestroyStream((aclrtStream)&granularity);
    CHECK(e == ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyStream of a non-stream gave %d", e);
    message = recent();
    CHECK(strstr(message, "is not a stream") != NULL, "message \"%s\"", message);
    CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "%s", recent());
    CALLS("aclrtDestroyStream", 2);

    /* Pointer attributes are the vendor's answer (hal.md §6.2 rule 7). */
    aclrtPtrAttributes attributes;
    memset(&attributes, 0, sizeof attributes);
    CHECK(aclrtPointerGetAttributes(va, &attributes) == ACL_SUCCESS && attributes.pageSize == 12345,
          "page size %u", attributes.pageSize);
    CALLS("aclrtPointerGetAttributes", 1);

    /* aclrtMalloc is aclvmm's, and so is the free of its block; the free of the vendor's own
     * memory goes to the vendor. */
    void* block = NULL;
    CHECK(aclrtMalloc(&block, kMiB, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtMemset(block, kMiB, 1, kMiB) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtFree(block) == ACL_SUCCESS, "%s", recent());
    CALLS("aclrtFree", 0);
    void* vendor_block = NULL;
    CHECK(standinMalloc(&vendor_block, 2 * kMiB) == 0 && vendor_block != NULL, "halMemAlloc");
    CHECK(aclrtFree(vendor_block) == ACL_SUCCESS, "%s", recent());
    CALLS("aclrtFree", 1);

    /* Host registration and IPC keys are the vendor's. */
    void* mapped = NULL;
    CHECK(aclrtHostRegister(out, sizeof out, ACL_HOST_REGISTER_MAPPED, &mapped) == ACL_SUCCESS &&
              mapped == out, "%s", recent());
    CALLS("aclrtHostRegister", 1);
    char key[65] = {0};
    CHECK(aclrtIpcMemGetExportKey(va, size, key, sizeof key, 0) == ACL_SUCCESS &&
              strcmp(key, "standin-key") == 0, "key \"%s\": %s", key, recent());
    CALLS("aclrtIpcMemGetExportKey", 1);

    /* A context of the vendor's makes its device current for aclvmm too. */
    aclrtContext context = NULL;
    CHECK(aclrtCreateContext(&context, 0) == ACL_SUCCESS, "%s", recent());
    aclrtContext current = NULL;
    CHECK(aclrtGetCurrentContext(&current) == ACL_SUCCESS && current == context, "%p", current);
    size_t free_bytes = 0, total_bytes = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total_bytes) == ACL_SUCCESS && total_bytes > 0,
          "%s", recent());
    CHECK(aclrtDestroyContext(context) == ACL_SUCCESS, "%s", recent());
    CALLS("aclrtCreateContext", 1);
    CALLS("aclrtGetCurrentContext", 1);
    CALLS("aclrtDestroyContext", 1);

    CHECK(aclrtUnmapMem(va) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtReleaseMemAddress(va) == ACL_SUCCESS, "%s", recent());
    CHECK(aclrtFreePhysical(handle) == ACL_SUCCESS, "%s", recent());

    /* None of the calls aclvmm serves reached the vendor. */
    static const char* const kServed[] = {
        "aclrtMemGetAllocationGranularity", "aclrtMallocPhysical", "aclrtFreePhysical",
        "aclrtReserveMemAddress", "aclrtReleaseMemAddress", "aclrtMapMem", "aclrtUnmapMem",
        "aclrtMemSetAccess", "aclrtMemcpy", "aclrtMemset", "aclrtMalloc", "aclrtGetMemInfo",
        "aclrtMemRetainAllocationHandle", "aclrtMemGetAllocationPropertiesFromHandle"};
    for (size_t i = 0; i < sizeof kServed / sizeof kServed[0]; ++i) CALLS(kServed[i], 0);

    /* The vendor closes the device at the last reset, and finalises after aclvmm. */
    CHECK(aclrtResetDevice(0) == ACL_SUCCESS, "%s", recent());
    CALLS("aclrtResetDevice", 1);
    CHECK(standinOpenDevices() == 0, "the stand-in holds %d devices open", standinOpenDevices());
    CHECK(aclFinalize() == ACL_SUCCESS, "%s", recent());
    CALLS("aclFinalize", 1);

    /* aclvmm never opened or closed a device, and never touched the driver's windows. */
    char first[160] = {0};
    const int foreign = standinForeignDriverCalls(first, sizeof first);
    CHECK(foreign == 0, "%d open/close calls by someone else, the first %s", foreign, first);
    const int touches = standinWindowTouches(first, sizeof first);
    if (touches < 0) {
        printf("skip the window watch: a sanitizer's interceptors hide the callers\n");
    } else {
        CHECK(touches == 0, "%d calls from aclvmm met the windows, the first %s", touches, first);
    }

    printf("%s: %d failure(s)\n", g_failures == 0 ? "PASS" : "FAIL", g_failures);
    return g_failures == 0 ? 0 : 1;
}
