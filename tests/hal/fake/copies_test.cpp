// Synchronous copies and fills (hal.md §3.11): byte-exact in every direction, across devices
// (the host bounce), across mappings, into managed memory; the argument checks and refusals.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

// A mapping of fresh device memory for one case.
struct DeviceRange {
  drv_mem_handle_t* handle = nullptr;
  void* va = nullptr;
  size_t size = 0;
  DeviceRange(uint32_t device, size_t bytes) : size(bytes) {
    const drv_mem_prop prop = device_prop(device);
    EXPECT_EQ(halMemCreate(&handle, bytes, &prop, 0), DRV_ERROR_NONE);
    EXPECT_EQ(halMemAddressReserve(&va, bytes, 0, nullptr, 0), DRV_ERROR_NONE);
    EXPECT_EQ(halMemMap(va, bytes, 0, handle, 0), DRV_ERROR_NONE);
  }
  ~DeviceRange() {
    EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
    EXPECT_EQ(halMemRelease(handle), DRV_ERROR_NONE);
    EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  }
  DVdeviceptr at(size_t offset = 0) const { return ptr(va) + offset; }
};

std::vector<uint8_t> read_back(DVdeviceptr src, size_t n) {
  std::vector<uint8_t> out(n);
  EXPECT_EQ(drvMemcpy(ptr(out.data()), n, src, n), DRV_ERROR_NONE);
  return out;
}

TEST(FakeHalCopies, HostDeviceAndBackByteExact) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  DeviceRange d(0, 8 * kMiB);
  const std::vector<uint8_t> bytes = pattern(8 * kMiB, 21);
  ASSERT_EQ(drvMemcpy(d.at(), d.size, ptr(bytes.data()), bytes.size()), DRV_ERROR_NONE);
  EXPECT_EQ(read_back(d.at(), d.size), bytes);
  // Unaligned pieces.
  const std::vector<uint8_t> piece = pattern(12345, 22);
  ASSERT_EQ(drvMemcpy(d.at(777), d.size - 777, ptr(piece.data()), piece.size()), DRV_ERROR_NONE);
  std::vector<uint8_t> expect = bytes;
  std::copy(piece.begin(), piece.end(), expect.begin() + 777);
  EXPECT_EQ(read_back(d.at(), d.size), expect);
  // halMemcpy serves device-to-host only (v2).
  std::vector<uint8_t> out(4096);
  memcpy_info info{DRV_MEMCPY_DEVICE_TO_HOST, 0, {0, 0}};
  EXPECT_EQ(halMemcpy(out.data(), out.size(), d.va, out.size(), &info), DRV_ERROR_NONE);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), expect.begin()));
  info.dir = DRV_MEMCPY_HOST_TO_DEVICE;
  EXPECT_EQ(halMemcpy(d.va, 4096, out.data(), 4096, &info), DRV_ERROR_NOT_SUPPORT);
  EXPECT_EQ(halMemcpy(out.data(), 4096, d.va, 4096, nullptr), DRV_ERROR_INVALID_VALUE);
  // Host to host.
  std::vector<uint8_t> a = pattern(5000, 23), b(5000);
  EXPECT_EQ(drvMemcpy(ptr(b.data()), b.size(), ptr(a.data()), a.size()), DRV_ERROR_NONE);
  EXPECT_EQ(a, b);
}

TEST(FakeHalCopies, DeviceToDeviceAcrossDevicesAndMappings) {
  OpenDevices open({0, 1});
  ASSERT_TRUE(open.ok());
  DeviceRange d0(0, 10 * kMiB), d1(1, 10 * kMiB);
  const std::vector<uint8_t> bytes = pattern(10 * kMiB, 31);
  ASSERT_EQ(drvMemcpy(d0.at(), d0.size, ptr(bytes.data()), bytes.size()), DRV_ERROR_NONE);
  // Another device's memory: through the host, in pieces larger than the bounce buffer.
  ASSERT_EQ(drvMemcpy(d1.at(), d1.size, d0.at(), d0.size), DRV_ERROR_NONE);
  EXPECT_EQ(read_back(d1.at(), d1.size), bytes);
  // Back from the other device, at offsets that are not aligned.
  ASSERT_EQ(drvMemcpy(d0.at(2 * kMiB), 8 * kMiB, d1.at(6 * kMiB + 5), kMiB), DRV_ERROR_NONE);
  std::vector<uint8_t> expect = bytes;
  std::copy(bytes.begin() + 6 * kMiB + 5, bytes.begin() + 7 * kMiB + 5, expect.begin() + 2 * kMiB);
  EXPECT_EQ(read_back(d0.at(), d0.size), expect);
  // aclrtMalloc blocks of two devices.
  void* b0 = nullptr;
  void* b1 = nullptr;
  ASSERT_EQ(halMemAlloc(&b0, 3 * kMiB, 0x2100000000924400ull), DRV_ERROR_NONE);
  ASSERT_EQ(halMemAlloc(&b1, 3 * kMiB, 0x2100000000924401ull), DRV_ERROR_NONE);
  ASSERT_EQ(drvMemcpy(ptr(b0), 3 * kMiB, d0.at(), 3 * kMiB), DRV_ERROR_NONE);
  ASSERT_EQ(drvMemcpy(ptr(b1), 3 * kMiB, ptr(b0), 3 * kMiB), DRV_ERROR_NONE);
  EXPECT_EQ(read_back(ptr(b1), 3 * kMiB),
            std::vector<uint8_t>(expect.begin(), expect.begin() + 3 * kMiB));
  EXPECT_EQ(halMemFree(b0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemFree(b1), DRV_ERROR_NONE);
}

TEST(FakeHalCopies, ACopyRunsAcrossTwoMappingsOfOneReservation) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h[2] = {};
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 4 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(halMemCreate(&h[i], 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
    ASSERT_EQ(halMemMap(static_cast<char*>(va) + i * 2 * kMiB, 2 * kMiB, 0, h[i], 0),
              DRV_ERROR_NONE);
  }
  const std::vector<uint8_t> bytes = pattern(4 * kMiB, 41);
  ASSERT_EQ(drvMemcpy(ptr(va), 4 * kMiB, ptr(bytes.data()), bytes.size()), DRV_ERROR_NONE);
  EXPECT_EQ(read_back(ptr(va) + kMiB, 2 * kMiB),
            std::vector<uint8_t>(bytes.begin() + kMiB, bytes.begin() + 3 * kMiB));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(halMemUnmap(static_cast<char*>(va) + i * 2 * kMiB), DRV_ERROR_NONE);
    EXPECT_EQ(halMemRelease(h[i]), DRV_ERROR_NONE);
  }
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

TEST(FakeHalCopies, Fills) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  DeviceRange d(0, 4 * kMiB);
  ASSERT_EQ(drvMemsetD8(d.at(), d.size, 0xC3, d.size), DRV_ERROR_NONE);
  ASSERT_EQ(drvMemsetD8(d.at(100), d.size - 100, 0x00, 1000), DRV_ERROR_NONE);
  std::vector<uint8_t> expect(d.size, 0xC3);
  std::fill(expect.begin() + 100, expect.begin() + 1100, 0);
  EXPECT_EQ(read_back(d.at(), d.size), expect);
  std::vector<uint8_t> host(3000, 1);
  EXPECT_EQ(drvMemsetD8(ptr(host.data()), host.size(), 7, host.size()), DRV_ERROR_NONE);
  EXPECT_EQ(host, std::vector<uint8_t>(3000, 7));  // host memory is set on the host
  EXPECT_EQ(drvMemsetD8(0, 16, 1, 16), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemsetD8(d.at(), 16, 1, 17), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemsetD8(d.at(), 16, 1, 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemsetD8(d.at(d.size - 16), 64, 1, 64), DRV_ERROR_PARA_ERROR);  // past the end
}

TEST(FakeHalCopies, ManagedMemory) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  void* m = nullptr;
  ASSERT_EQ(halMemAlloc(&m, 4 * kMiB, 0x21C00ull), DRV_ERROR_NONE);
  DeviceRange d(0, 4 * kMiB);
  const std::vector<uint8_t> bytes = pattern(4 * kMiB, 51);
  ASSERT_EQ(drvMemcpy(ptr(m), 4 * kMiB, ptr(bytes.data()), bytes.size()), DRV_ERROR_NONE);
  ASSERT_EQ(drvMemcpy(d.at(), d.size, ptr(m), 4 * kMiB), DRV_ERROR_NONE);  // device 0 reads it
  EXPECT_EQ(read_back(d.at(), d.size), bytes);
  ASSERT_EQ(drvMemsetD8(ptr(m), 4 * kMiB, 0x11, kMiB), DRV_ERROR_NONE);
  EXPECT_EQ(static_cast<uint8_t*>(m)[kMiB - 1], 0x11);  // the CPU sees it
  EXPECT_EQ(static_cast<uint8_t*>(m)[kMiB], bytes[kMiB]);
  EXPECT_EQ(halMemFree(m), DRV_ERROR_NONE);
}

TEST(FakeHalCopies, Refusals) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  DeviceRange d(0, 2 * kMiB);
  std::vector<uint8_t> host(4096);
  EXPECT_EQ(drvMemcpy(0, 16, ptr(host.data()), 16), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemcpy(d.at(), 16, 0, 16), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemcpy(d.at(), 0, ptr(host.data()), 0), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemcpy(d.at(), 15, ptr(host.data()), 16), DRV_ERROR_INVALID_VALUE);
  EXPECT_EQ(drvMemcpy(d.at(), 16, ptr(host.data()), 0), DRV_ERROR_NONE);
  // Device memory not (fully) mapped; a host pointer the CPU cannot reach.
  EXPECT_EQ(drvMemcpy(ptr(host.data()), 4096, d.at(2 * kMiB), 4096), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(drvMemcpy(ptr(host.data()), 4096, d.at(2 * kMiB - 100), 4096), DRV_ERROR_PARA_ERROR);
  void* hole = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  EXPECT_EQ(drvMemcpy(d.at(), 4096, ptr(hole), 4096), DRV_ERROR_PARA_ERROR);
  EXPECT_EQ(drvMemcpy(ptr(hole), 4096, d.at(), 4096), DRV_ERROR_PARA_ERROR);
  munmap(hole, 4096);
}

}  // namespace
}  // namespace fakehal_test
