// Sharing (hal.md §3.5, behavior.md §7): export, whitelist and import between two real
// processes (this binary run again as an importer, children.cpp "import"), NO_WLIST, refusals,
// the import table's deduplication, token layouts, FABRIC on an A3 part.
#include <gtest/gtest.h>

#include <cinttypes>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

// Memory of `device` (or the host) filled with pattern(seed), mapped, for one export.
struct SharedMemory {
  drv_mem_handle_t* handle = nullptr;
  void* va = nullptr;
  size_t size;
  SharedMemory(bool host, size_t bytes, uint32_t seed) : size(bytes) {
    const drv_mem_prop prop = host ? host_prop() : device_prop(0);
    EXPECT_EQ(halMemCreate(&handle, bytes, &prop, 0), DRV_ERROR_NONE);
    EXPECT_EQ(halMemAddressReserve(&va, bytes, 0, nullptr, 0), DRV_ERROR_NONE);
    EXPECT_EQ(halMemMap(va, bytes, 0, handle, 0), DRV_ERROR_NONE);
    const std::vector<uint8_t> bytes_in = pattern(bytes, seed);
    EXPECT_EQ(drvMemcpy(ptr(va), bytes, ptr(bytes_in.data()), bytes), DRV_ERROR_NONE);
  }
  ~SharedMemory() {
    EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
    EXPECT_EQ(halMemRelease(handle), DRV_ERROR_NONE);
    EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  }
};

enum class Listing { kWhitelist, kNotListed, kNoWhitelist };

// Runs the importer child: it reports its bare tgid, the parent lists it (or not), sends the
// token, and the child imports expecting `expect`. The child's exit status.
int import_in_child(uint64_t token, Listing listing, drvError_t expect, uint32_t seed,
                    size_t size, bool host) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return -10;
  const Child c = spawn({"--fake-hal-child=import", std::to_string(to_child[0]),
                         std::to_string(from_child[1]), "1", std::to_string(expect),
                         std::to_string(seed), std::to_string(size), host ? "1" : "0"});
  close(to_child[0]);
  close(from_child[1]);
  std::string line;
  int result = 0;
  if (!read_line(from_child[0], &line) || line.rfind("tgid ", 0) != 0) {
    result = -11;
  } else {
    int pid = std::atoi(line.c_str() + 5);
    // The child started before it is listed: the whitelist's pid-reuse check admits it.
    if (listing == Listing::kWhitelist &&
        halMemSetPidToShareableHandle(token, &pid, 1) != DRV_ERROR_NONE) {
      result = -12;
    }
    char hex[32];
    std::snprintf(hex, sizeof hex, "%" PRIx64, token);
    if (result == 0 && !write_line(to_child[1], std::string("token ") + hex)) result = -13;
    if (result == 0 && (!read_line(from_child[0], &line) || line != "done")) result = -14;
  }
  close(to_child[1]);
  close(from_child[0]);
  const int status = wait_child(c);
  return result != 0 ? result : status;
}

TEST(FakeHalSharing, AWhitelistedProcessImportsTheBytes) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  SharedMemory m(false, 4 * kMiB, 61);
  uint64_t token = 0;
  ASSERT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_NONE, 0, &token),
            DRV_ERROR_NONE);
  EXPECT_EQ((token >> 32) & 0xFF, 0u);  // the exporting device
  EXPECT_EQ(token >> 40, 0u);
  EXPECT_NE(token & 0xFFFFFFFFu, 0u);
  ShareHandleGetInfo info{};
  EXPECT_EQ(halMemShareHandleInfoGet(token, &info), DRV_ERROR_NONE);
  EXPECT_EQ(info.phyDevid, 0u);
  ShareHandleAttr attr{9, {}};
  EXPECT_EQ(halMemShareHandleGetAttribute(token, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, &attr),
            DRV_ERROR_NONE);
  EXPECT_EQ(attr.enableFlag, static_cast<unsigned>(SHR_HANDLE_WLIST_ENABLE));
  EXPECT_EQ(import_in_child(token, Listing::kWhitelist, DRV_ERROR_NONE, 61, m.size, false), 0);
  // A process nobody listed is refused (EACCES -> IOCRL_FAIL).
  EXPECT_EQ(import_in_child(token, Listing::kNotListed, DRV_ERROR_IOCRL_FAIL, 61, m.size, false),
            0);
  // Whitelisted pids stay: NO_WLIST can no longer be set.
  EXPECT_EQ(halMemShareHandleSetAttribute(token, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER,
                                          {SHR_HANDLE_NO_WLIST_ENABLE, {}}),
            DRV_ERROR_OPER_NOT_PERMITTED);
}

TEST(FakeHalSharing, WithoutWhitelistAnyProcessImports) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  SharedMemory m(false, 2 * kMiB, 62);
  uint64_t token = 0;
  ASSERT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_NONE, 0, &token),
            DRV_ERROR_NONE);
  EXPECT_EQ(halMemShareHandleSetAttribute(token, SHR_HANDLE_ATTR_TYPE_MAX, {1, {}}),
            DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemShareHandleSetAttribute(token, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, {2, {}}),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemShareHandleSetAttribute(token, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER,
                                          {SHR_HANDLE_NO_WLIST_ENABLE, {}}),
            DRV_ERROR_NONE);
  ShareHandleAttr attr{};
  EXPECT_EQ(halMemShareHandleGetAttribute(token, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, &attr),
            DRV_ERROR_NONE);
  EXPECT_EQ(attr.enableFlag, static_cast<unsigned>(SHR_HANDLE_NO_WLIST_ENABLE));
  int pid = getpid();
  EXPECT_EQ(halMemSetPidToShareableHandle(token, &pid, 1), DRV_ERROR_OPER_NOT_PERMITTED);
  EXPECT_EQ(import_in_child(token, Listing::kNoWhitelist, DRV_ERROR_NONE, 62, m.size, false), 0);
}

TEST(FakeHalSharing, HostMemoryTokensCarryTheHostId) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  SharedMemory m(true, 2 * kMiB, 63);
  uint64_t token = 0;
  ASSERT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_NONE, 0, &token),
            DRV_ERROR_NONE);
  EXPECT_EQ((token >> 32) & 0xFF, 65u);
  ShareHandleGetInfo info{};
  EXPECT_EQ(halMemShareHandleInfoGet(token, &info), DRV_ERROR_NONE);
  EXPECT_EQ(info.phyDevid, 65u);
  EXPECT_EQ(import_in_child(token, Listing::kWhitelist, DRV_ERROR_NONE, 63, m.size, true), 0);
  // The exporter's own import of host memory: refused on every device.
  drv_mem_handle_t* h = nullptr;
  EXPECT_EQ(halMemImportFromShareableHandle(token, 0, &h), DRV_ERROR_IOCRL_FAIL);
}

TEST(FakeHalSharing, ImportsInTheExportingProcess) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  SharedMemory m(false, 2 * kMiB, 64);
  uint64_t token = 0;
  ASSERT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_NONE, 0, &token),
            DRV_ERROR_NONE);
  uint64_t again = 0;
  EXPECT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_NONE, 0, &again),
            DRV_ERROR_PARA_ERROR);  // exported already: the kernel's EINVAL
  drv_mem_handle_t* h = nullptr;
  drv_mem_handle_t* h2 = nullptr;
  EXPECT_EQ(halMemImportFromShareableHandle(token, 0, &h), DRV_ERROR_IOCRL_FAIL);  // same device
  ASSERT_EQ(halMemImportFromShareableHandle(token, 1, &h), DRV_ERROR_NONE);  // another: allowed
  ASSERT_EQ(halMemImportFromShareableHandle(token, 1, &h2), DRV_ERROR_NONE);
  EXPECT_EQ(h2, h);  // the import table: the same handle, one more reference
  drv_mem_prop prop{};
  ASSERT_EQ(halMemGetAllocationPropertiesFromHandle(&prop, h), DRV_ERROR_NONE);
  EXPECT_EQ(prop.side, static_cast<uint32_t>(MEM_DEV_SIDE));
  EXPECT_EQ(prop.devid, 0u);  // the exporter's device
  EXPECT_EQ(prop.pg_type, static_cast<uint32_t>(MEM_HUGE_PAGE_TYPE));
  EXPECT_EQ(halMemExportToShareableHandle(h, MEM_HANDLE_TYPE_NONE, 0, &again),
            DRV_ERROR_PARA_ERROR);  // an import cannot be exported
  // Mapped on device 1: device 1's reservation, the exporter's bytes.
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  DVattribute a{};
  EXPECT_EQ(drvMemGetAttribute(ptr(va), &a), DRV_ERROR_NONE);
  EXPECT_EQ(a.devId, 1u);
  std::vector<uint8_t> back(2 * kMiB);
  EXPECT_EQ(drvMemcpy(ptr(back.data()), back.size(), ptr(va), back.size()), DRV_ERROR_NONE);
  EXPECT_EQ(back, pattern(2 * kMiB, 64));
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  ASSERT_EQ(halMemImportFromShareableHandle(token, 1, &h2), DRV_ERROR_NONE);
  EXPECT_EQ(h2, h);  // still held once: the table still has it
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_INVALID_VALUE);
  // Refusals.
  EXPECT_EQ(halMemImportFromShareableHandle(token, 66, &h), DRV_ERROR_INVALID_DEVICE);
  EXPECT_EQ(halMemImportFromShareableHandle(token, 5, &h), DRV_ERROR_INVALID_DEVICE);  // not open
  EXPECT_EQ(halMemImportFromShareableHandle(token, 1, nullptr), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemImportFromShareableHandle((70ull << 32) | 1, 1, &h), DRV_ERROR_INVALID_HANDLE);
  EXPECT_EQ(halMemImportFromShareableHandle(0x3FFFFull, 1, &h), DRV_ERROR_INVALID_HANDLE);
  EXPECT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_FABRIC, 0, &again),
            DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemExportToShareableHandle(m.handle, MEM_HANDLE_TYPE_NONE, 0, nullptr),
            DRV_ERROR_INVALID_VALUE);
  MemShareHandle blob{};
  EXPECT_EQ(halMemExportToShareableHandleV2(m.handle, MEM_HANDLE_TYPE_FABRIC, 0, &blob),
            DRV_ERROR_NOT_SUPPORT);  // no FABRIC on A2
  EXPECT_EQ(halMemExportToShareableHandleV2(m.handle, MEM_HANDLE_TYPE_NONE, 1, &blob),
            DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemExportToShareableHandleV2(m.handle, MEM_HANDLE_TYPE_MAX, 0, &blob),
            DRV_ERROR_NOT_SUPPORT);
}

TEST(FakeHalSharing, WhitelistRefusals) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  SharedMemory m(false, 2 * kMiB, 65);
  uint64_t token = 0;
  ASSERT_EQ(halMemExportToShareableHandleV2(m.handle, MEM_HANDLE_TYPE_NONE, 0,
                                            reinterpret_cast<MemShareHandle*>(&token)),
            DRV_ERROR_NONE);  // V2 DEFAULT: the V1 token at the pointer
  EXPECT_NE(token, 0u);
  int pids[] = {0, 0};
  int pid = getpid();
  EXPECT_EQ(halMemSetPidToShareableHandle(token, nullptr, 1), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemSetPidToShareableHandle(token, &pid, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemSetPidToShareableHandle(token, &pid, 65536), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemSetPidToShareableHandle((70ull << 32) | 1, &pid, 1), DRV_ERROR_INVALID_HANDLE);
  EXPECT_EQ(halMemSetPidToShareableHandle(token, pids, 2), DRV_ERROR_PARA_ERROR);  // all zero
  EXPECT_EQ(halMemSetPidToShareableHandle(token, &pid, 1), DRV_ERROR_NONE);
  EXPECT_EQ(halMemSetPidToShareableHandle(token, &pid, 1), DRV_ERROR_NONE);  // a refresh
  EXPECT_EQ(halMemSetPidToShareableHandle(0x3FFFFull, &pid, 1), DRV_ERROR_INVALID_HANDLE);
  ShareHandleAttr attr{};
  EXPECT_EQ(halMemShareHandleGetAttribute(0x3FFFFull, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, &attr),
            DRV_ERROR_INVALID_HANDLE);  // not an export of this process
  EXPECT_EQ(halMemShareHandleGetAttribute(token, SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER, nullptr),
            DRV_ERROR_INVALID_VALUE);
  ShareHandleGetInfo info{};
  EXPECT_EQ(halMemShareHandleInfoGet((70ull << 32) | 1, &info), DRV_ERROR_INVALID_HANDLE);
  EXPECT_EQ(halMemShareHandleInfoGet(token, nullptr), DRV_ERROR_INVALID_VALUE);
  // FABRIC's conversion of a blob that is none.
  MemShareHandle blob{};
  uint32_t server = 0;
  uint64_t t64 = 0;
  EXPECT_EQ(halMemTransShareableHandle(MEM_HANDLE_TYPE_FABRIC, &blob, &server, &t64),
            DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(halMemTransShareableHandle(MEM_HANDLE_TYPE_FABRIC, nullptr, &server, &t64),
            DRV_ERROR_INVALID_VALUE);
}

TEST(FakeHalSharing, TheExportEndsWithTheHandle) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  uint64_t token = 0;
  ASSERT_EQ(halMemExportToShareableHandle(h, MEM_HANDLE_TYPE_NONE, 0, &token), DRV_ERROR_NONE);
  ASSERT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  drv_mem_handle_t* imp = nullptr;
  EXPECT_EQ(halMemImportFromShareableHandle(token, 1, &imp), DRV_ERROR_INVALID_HANDLE);
  int pid = getpid();
  EXPECT_EQ(halMemSetPidToShareableHandle(token, &pid, 1), DRV_ERROR_INVALID_HANDLE);
}

TEST(FakeHalSharing, FabricOnASuperPodPart) {
  EXPECT_EQ(run_child({"--fake-hal-child=fabric"},
                      {"ACLVMM_SOC=Ascend910_9391", "ACLVMM_SERVER_ID=5"}),
            0);
}

}  // namespace
}  // namespace fakehal_test
