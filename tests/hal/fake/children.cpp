// The second processes of the fake driver library's tests: this binary run again with
// --fake-hal-child=<role> (fake_hal_test_util.h: spawn). Each role checks what it is given and
// exits 0, or prints the failed check and exits 1. Roles:
//   import IN OUT DEVICE EXPECT SEED SIZE HOST  the importer of sharing_test.cpp: writes
//        "tgid <bare tgid>" on OUT, reads "token <hex>" on IN, imports it onto DEVICE expecting
//        EXPECT; on success maps it and compares SIZE bytes with pattern(SEED), and checks the
//        handle's stored properties (HOST 1: host memory, devid 65); writes "done".
//   config COUNT SOC SERVER MEMORY  what the library reports under the environment it was given
//        (SERVER -1: NOT_SUPPORT; COUNT 0: a malformed configuration).
//   faults   ACLVMM_HAL_FAULTS as injection_test.cpp sets it.
//   fabric   FABRIC export, trans and import on an A3 SoC (sharing_test.cpp).
//   oom      64 MiB devices (ACLVMM_DEVICE_MEMORY=64M).
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

#define FAKEHAL_CHILD_CHECK(cond)                                                          \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "child check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

// Reserves `size` bytes, maps `h` there and copies the bytes out; *va gets the address.
bool read_mapped(drv_mem_handle_t* h, size_t size, void** va, std::vector<uint8_t>* out) {
  if (halMemAddressReserve(va, size, 0, nullptr, 0) != DRV_ERROR_NONE) return false;
  if (halMemMap(*va, size, 0, h, 0) != DRV_ERROR_NONE) return false;
  out->assign(size, 0);
  return drvMemcpy(ptr(out->data()), size, ptr(*va), size) == DRV_ERROR_NONE;
}

int child_import(int argc, char** argv) {
  FAKEHAL_CHILD_CHECK(argc == 9);
  const int in = std::atoi(argv[2]), out = std::atoi(argv[3]);
  const auto device = static_cast<uint32_t>(std::atoi(argv[4]));
  const int expect = std::atoi(argv[5]);
  const auto seed = static_cast<uint32_t>(std::atoi(argv[6]));
  const size_t size = std::strtoull(argv[7], nullptr, 10);
  const bool host = std::atoi(argv[8]) != 0;
  FAKEHAL_CHILD_CHECK(write_line(out, "tgid " + std::to_string(drvDeviceGetBareTgid())));
  std::string line;
  FAKEHAL_CHILD_CHECK(read_line(in, &line) && line.rfind("token ", 0) == 0);
  const uint64_t token = std::strtoull(line.c_str() + 6, nullptr, 16);
  FAKEHAL_CHILD_CHECK(open_device(device) == DRV_ERROR_NONE);
  drv_mem_handle_t* h = nullptr;
  const drvError_t r = halMemImportFromShareableHandle(token, device, &h);
  if (static_cast<int>(r) != expect) {
    std::fprintf(stderr, "import returned %d, expected %d\n", static_cast<int>(r), expect);
    return 1;
  }
  if (r == DRV_ERROR_NONE) {
    drv_mem_prop prop{};
    FAKEHAL_CHILD_CHECK(halMemGetAllocationPropertiesFromHandle(&prop, h) == DRV_ERROR_NONE);
    FAKEHAL_CHILD_CHECK(prop.side == (host ? MEM_HOST_SIDE : MEM_DEV_SIDE));
    FAKEHAL_CHILD_CHECK(prop.devid == (host ? 65u : 0u));  // the exporter's, not ours
    FAKEHAL_CHILD_CHECK(prop.pg_type == MEM_HUGE_PAGE_TYPE);
    void* va = nullptr;
    std::vector<uint8_t> bytes;
    FAKEHAL_CHILD_CHECK(read_mapped(h, size, &va, &bytes));
    FAKEHAL_CHILD_CHECK(bytes == pattern(size, seed));
    // The same token again: the same handle, one more reference.
    drv_mem_handle_t* again = nullptr;
    FAKEHAL_CHILD_CHECK(halMemImportFromShareableHandle(token, device, &again) == DRV_ERROR_NONE);
    FAKEHAL_CHILD_CHECK(again == h);
    FAKEHAL_CHILD_CHECK(halMemRelease(h) == DRV_ERROR_NONE);
    FAKEHAL_CHILD_CHECK(halMemUnmap(va) == DRV_ERROR_NONE);
    FAKEHAL_CHILD_CHECK(halMemRelease(h) == DRV_ERROR_NONE);
    FAKEHAL_CHILD_CHECK(halMemAddressFree(va) == DRV_ERROR_NONE);
  }
  FAKEHAL_CHILD_CHECK(close_device(device) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(write_line(out, "done"));
  return 0;
}

int child_config(int argc, char** argv) {
  FAKEHAL_CHILD_CHECK(argc == 6);
  const auto count = static_cast<uint32_t>(std::atoi(argv[2]));
  const std::string soc = argv[3];
  const int server = std::atoi(argv[4]);
  const uint64_t memory = std::strtoull(argv[5], nullptr, 10);
  uint32_t n = 0xFFFFFFFF;
  FAKEHAL_CHILD_CHECK(drvGetDevNum(&n) == DRV_ERROR_NONE && n == count);
  if (count == 0) {
    FAKEHAL_CHILD_CHECK(open_device(0) == DRV_ERROR_INVALID_DEVICE);
    uint64_t l[10];
    FAKEHAL_CHILD_CHECK(aclvmmFakeHalLayout(l) == -1);
    return 0;
  }
  char name[64] = {};
  FAKEHAL_CHILD_CHECK(halGetSocVersion(0, name, sizeof name) == DRV_ERROR_NONE && soc == name);
  FAKEHAL_CHILD_CHECK(open_device(count) == DRV_ERROR_INVALID_DEVICE);
  int64_t value = -1;
  const drvError_t r = halGetDeviceInfo(0, MODULE_TYPE_SYSTEM, INFO_TYPE_SERVER_ID, &value);
  if (server < 0) {
    FAKEHAL_CHILD_CHECK(r == DRV_ERROR_NOT_SUPPORT);
  } else {
    FAKEHAL_CHILD_CHECK(r == DRV_ERROR_NONE && value == server);
  }
  FAKEHAL_CHILD_CHECK(open_device(count - 1) == DRV_ERROR_NONE);
  MemInfo info{};
  FAKEHAL_CHILD_CHECK(halMemGetInfo(count - 1, MEM_INFO_TYPE_HBM_SIZE, &info) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(info.phy_info.huge_total == memory && info.phy_info.huge_free == memory);
  FAKEHAL_CHILD_CHECK(close_device(count - 1) == DRV_ERROR_NONE);
  return 0;
}

// ACLVMM_HAL_FAULTS="halGetAPIVersion@2=BUS_DOWN,drvGetDevNum*0=0x1b,
//                   halMemCreate@2*2=DRV_ERROR_WAIT_TIMEOUT"
int child_faults() {
  int v = 0;
  FAKEHAL_CHILD_CHECK(halGetAPIVersion(&v) == DRV_ERROR_NONE && v == 0x072418);
  FAKEHAL_CHILD_CHECK(halGetAPIVersion(&v) == DRV_ERROR_BUS_DOWN);
  FAKEHAL_CHILD_CHECK(halGetAPIVersion(&v) == DRV_ERROR_NONE);
  uint32_t n = 0;
  for (int i = 0; i < 3; ++i) FAKEHAL_CHILD_CHECK(drvGetDevNum(&n) == DRV_ERROR_SEND_MESG);
  FAKEHAL_CHILD_CHECK(open_device(0) == DRV_ERROR_NONE);
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h[2] = {};
  FAKEHAL_CHILD_CHECK(halMemCreate(&h[0], 2 * kMiB, &prop, 0) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemCreate(&h[1], 2 * kMiB, &prop, 0) == DRV_ERROR_WAIT_TIMEOUT);
  FAKEHAL_CHILD_CHECK(halMemCreate(&h[1], 2 * kMiB, &prop, 0) == DRV_ERROR_WAIT_TIMEOUT);
  FAKEHAL_CHILD_CHECK(halMemCreate(&h[1], 2 * kMiB, &prop, 0) == DRV_ERROR_NONE);
  for (drv_mem_handle_t* x : h) FAKEHAL_CHILD_CHECK(halMemRelease(x) == DRV_ERROR_NONE);
  aclvmmFakeHalClearInjections();
  FAKEHAL_CHILD_CHECK(drvGetDevNum(&n) == DRV_ERROR_NONE && n == 8);
  FAKEHAL_CHILD_CHECK(close_device(0) == DRV_ERROR_NONE);
  return 0;
}

// ACLVMM_SOC=Ascend910_9391 ACLVMM_SERVER_ID=5.
int child_fabric() {
  FAKEHAL_CHILD_CHECK(open_device(0) == DRV_ERROR_NONE && open_device(1) == DRV_ERROR_NONE);
  const size_t size = 4 * kMiB;
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  void* va = nullptr;
  FAKEHAL_CHILD_CHECK(halMemCreate(&h, size, &prop, 0) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemAddressReserve(&va, size, 0, nullptr, 0) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemMap(va, size, 0, h, 0) == DRV_ERROR_NONE);
  const std::vector<uint8_t> bytes = pattern(size, 9);
  FAKEHAL_CHILD_CHECK(drvMemcpy(ptr(va), size, ptr(bytes.data()), size) == DRV_ERROR_NONE);
  MemShareHandle blob;
  std::memset(blob.share_info, 0xAB, sizeof blob.share_info);
  FAKEHAL_CHILD_CHECK(halMemExportToShareableHandleV2(h, MEM_HANDLE_TYPE_FABRIC, 0, &blob) ==
                      DRV_ERROR_NONE);
  uint32_t w[5];
  std::memcpy(w, blob.share_info, sizeof w);
  // SDID: server 5 in bits 22-31, device 0 in bits 0-15.
  FAKEHAL_CHILD_CHECK(w[0] == 1 && w[1] == (5u << 22) && w[2] == 0 && w[3] == 0 && w[4] != 0);
  for (size_t i = 20; i < sizeof blob.share_info; ++i) {
    FAKEHAL_CHILD_CHECK(blob.share_info[i] == 0xAB);  // the rest is left as given
  }
  uint32_t server = 0;
  uint64_t token = 0;
  FAKEHAL_CHILD_CHECK(halMemTransShareableHandle(MEM_HANDLE_TYPE_FABRIC, &blob, &server,
                                                 &token) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(server == 5 && token == w[4]);
  FAKEHAL_CHILD_CHECK(halMemTransShareableHandle(MEM_HANDLE_TYPE_NONE, &blob, &server, &token) ==
                      DRV_ERROR_INVALID_VALUE);
  int64_t sid = -1;
  FAKEHAL_CHILD_CHECK(halGetDeviceInfo(0, 0, INFO_TYPE_SERVER_ID, &sid) == DRV_ERROR_NONE &&
                      sid == 5);
  // Imported onto the other device of the exporting process: allowed, deduplicated.
  drv_mem_handle_t* imp = nullptr;
  drv_mem_handle_t* again = nullptr;
  FAKEHAL_CHILD_CHECK(halMemImportFromShareableHandleV2(MEM_HANDLE_TYPE_FABRIC, &blob, 1, &imp) ==
                      DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemImportFromShareableHandleV2(MEM_HANDLE_TYPE_FABRIC, &blob, 1,
                                                        &again) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(again == imp && imp != h);
  FAKEHAL_CHILD_CHECK(halMemImportFromShareableHandleV2(MEM_HANDLE_TYPE_FABRIC, &blob, 0, &again) ==
                      DRV_ERROR_IOCRL_FAIL);  // onto the exporting device: EACCES
  void* va2 = nullptr;
  std::vector<uint8_t> seen;
  FAKEHAL_CHILD_CHECK(read_mapped(imp, size, &va2, &seen));
  FAKEHAL_CHILD_CHECK(seen == bytes);
  FAKEHAL_CHILD_CHECK(halMemUnmap(va2) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemRelease(imp) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemRelease(imp) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemRelease(imp) == DRV_ERROR_INVALID_VALUE);
  FAKEHAL_CHILD_CHECK(halMemUnmap(va) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemRelease(h) == DRV_ERROR_NONE);
  // The export ended with the handle.
  FAKEHAL_CHILD_CHECK(halMemImportFromShareableHandleV2(MEM_HANDLE_TYPE_FABRIC, &blob, 1, &imp) ==
                      DRV_ERROR_INVALID_HANDLE);
  FAKEHAL_CHILD_CHECK(halMemAddressFree(va) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemAddressFree(va2) == DRV_ERROR_NONE);
  // A3 offers the SIO and HCCS routes, not UB.
  drv_mem_handle_t* r = nullptr;
  FAKEHAL_CHILD_CHECK(halMemCreate(&r, 2 * kMiB, &prop, 0) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemHandleSetAttribute(r, HANDLE_ATTR_MEM_MAP_ROUTE, {MEM_MAP_EXBUS, {}}) ==
                      DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemHandleSetAttribute(r, HANDLE_ATTR_MEM_MAP_ROUTE,
                                               {MEM_MAP_UB_ONE_PORT_PATH, {}}) ==
                      DRV_ERROR_NOT_EXIST);
  HandleAttr attr{};
  FAKEHAL_CHILD_CHECK(halMemHandleGetAttribute(r, HANDLE_ATTR_MEM_MAP_ROUTE, &attr) ==
                          DRV_ERROR_NONE &&
                      attr.mem_map_route == MEM_MAP_EXBUS);
  FAKEHAL_CHILD_CHECK(halMemRelease(r) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(close_device(0) == DRV_ERROR_NONE && close_device(1) == DRV_ERROR_NONE);
  return 0;
}

// ACLVMM_DEVICE_MEMORY=64M: device memory runs out.
int child_oom() {
  FAKEHAL_CHILD_CHECK(open_device(0) == DRV_ERROR_NONE);
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  drv_mem_handle_t* more = nullptr;
  FAKEHAL_CHILD_CHECK(halMemCreate(&h, 128 * kMiB, &prop, 0) == DRV_ERROR_OUT_OF_MEMORY);
  FAKEHAL_CHILD_CHECK(halMemCreate(&h, 64 * kMiB, &prop, 0) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemCreate(&more, 2 * kMiB, &prop, 0) == DRV_ERROR_OUT_OF_MEMORY);
  void* p = nullptr;
  FAKEHAL_CHILD_CHECK(halMemAlloc(&p, 2 * kMiB, 0x2100000000924400ull) ==
                      DRV_ERROR_OUT_OF_MEMORY);
  MemInfo info{};
  FAKEHAL_CHILD_CHECK(halMemGetInfo(0, MEM_INFO_TYPE_HBM_SIZE, &info) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(info.phy_info.huge_total == 64 * kMiB && info.phy_info.huge_free == 0);
  FAKEHAL_CHILD_CHECK(halMemRelease(h) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemAlloc(&p, 2 * kMiB, 0x2100000000924400ull) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemFree(p) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(halMemGetInfo(0, MEM_INFO_TYPE_HBM_SIZE, &info) == DRV_ERROR_NONE);
  FAKEHAL_CHILD_CHECK(info.phy_info.huge_free == 64 * kMiB);
  FAKEHAL_CHILD_CHECK(close_device(0) == DRV_ERROR_NONE);
  return 0;
}

#undef FAKEHAL_CHILD_CHECK

}  // namespace
}  // namespace fakehal_test

int fakehal_test_child_main(int argc, char** argv) {
  alarm(120);  // a child that hangs ends; its parent reports the signal
  const std::string role = argv[1] + 17;
  if (role == "import") return fakehal_test::child_import(argc, argv);
  if (role == "config") return fakehal_test::child_config(argc, argv);
  if (role == "faults") return fakehal_test::child_faults();
  if (role == "fabric") return fakehal_test::child_fabric();
  if (role == "oom") return fakehal_test::child_oom();
  std::fprintf(stderr, "unknown child role %s\n", role.c_str());
  return 2;
}
