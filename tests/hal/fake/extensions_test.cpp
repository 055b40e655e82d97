// The fake library's extensions (fake_hal_ext.h): failure injection through the C function and
// ACLVMM_HAL_FAULTS, the window layout; and fork(): a child starts with no device opened and can
// always exit.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include "tests/hal/fake/fake_hal_test_util.h"

namespace fakehal_test {
namespace {

TEST(FakeHalExtensions, InjectionThroughTheCFunction) {
  // Found by dlsym, as a caller that does not link the library finds it.
  using Inject = int (*)(const char*, unsigned, unsigned, unsigned);
  auto inject = reinterpret_cast<Inject>(dlsym(RTLD_DEFAULT, "aclvmmFakeHalInject"));
  ASSERT_NE(inject, nullptr);
  EXPECT_EQ(inject("halNoSuchFunction", 0, 1, 3), -1);
  EXPECT_EQ(inject("halMapErrorCode", 0, 1, 3), -1);
  EXPECT_EQ(inject("halMemMapNoAccess", 0, 1, 3), -1);
  EXPECT_EQ(inject("halGetAPIVersion", 0, 1, 0), -1);
  EXPECT_EQ(inject(nullptr, 0, 1, 3), -1);
  // One pass, then two failures with the code, then normal again.
  int v = 0;
  ASSERT_EQ(inject("halGetAPIVersion", 1, 2, DRV_ERROR_BUS_DOWN), 0);
  EXPECT_EQ(halGetAPIVersion(&v), DRV_ERROR_NONE);
  EXPECT_EQ(halGetAPIVersion(&v), DRV_ERROR_BUS_DOWN);
  EXPECT_EQ(halGetAPIVersion(&v), DRV_ERROR_BUS_DOWN);
  EXPECT_EQ(halGetAPIVersion(&v), DRV_ERROR_NONE);
  // The call does nothing: the output stays as it was.
  uint32_t n = 77;
  ASSERT_EQ(inject("drvGetDevNum", 0, 0, DRV_ERROR_DEV_PROCESS_HANG), 0);  // every call
  for (int i = 0; i < 3; ++i) EXPECT_EQ(drvGetDevNum(&n), DRV_ERROR_DEV_PROCESS_HANG);
  EXPECT_EQ(n, 77u);
  aclvmmFakeHalClearInjections();
  EXPECT_EQ(drvGetDevNum(&n), DRV_ERROR_NONE);
  EXPECT_EQ(n, static_cast<uint32_t>(kDevices));
  // Functions of other return types fail their own way.
  ASSERT_EQ(inject("halSupportFeature", 0, 1, 1), 0);
  EXPECT_FALSE(halSupportFeature(0, FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR));
  EXPECT_TRUE(halSupportFeature(0, FEATURE_SVM_MEM_REGISTER_QUERY_AND_GET_ATTR));
  ASSERT_EQ(inject("drvDeviceGetBareTgid", 0, 1, 1), 0);
  EXPECT_EQ(drvDeviceGetBareTgid(), -1);
  EXPECT_GT(drvDeviceGetBareTgid(), 0);
  ASSERT_EQ(inject("drvMemDeviceOpen", 0, 1, DRV_ERROR_SEND_MESG), 0);
  EXPECT_EQ(drvMemDeviceOpen(0, 0), DRV_ERROR_SEND_MESG);
  // An injected open leaves the device closed: memory calls still refuse.
  ASSERT_EQ(inject("halDeviceOpen", 0, 1, DRV_ERROR_WAIT_TIMEOUT), 0);
  EXPECT_EQ(open_device(0), DRV_ERROR_WAIT_TIMEOUT);
  void* va = nullptr;
  EXPECT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_INVALID_HANDLE);
  aclvmmFakeHalClearInjections();
}

TEST(FakeHalExtensions, InjectionInTheMiddleOfWorkLeavesNoState) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  ASSERT_EQ(aclvmmFakeHalInject("halMemMap", 0, 1, DRV_ERROR_BUS_DOWN), 0);
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_BUS_DOWN);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_PARA_ERROR);  // nothing was mapped
  EXPECT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);  // one reference left, as created
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

TEST(FakeHalExtensions, InjectionFromTheEnvironment) {
  EXPECT_EQ(run_child({"--fake-hal-child=faults"},
                      {"ACLVMM_HAL_FAULTS=halGetAPIVersion@2=BUS_DOWN,drvGetDevNum*0=0x1b,"
                       "halMemCreate@2*2=DRV_ERROR_WAIT_TIMEOUT"}),
            0);
}

TEST(FakeHalExtensions, LayoutOfTheWindows) {
  uint64_t v[10] = {};
  ASSERT_EQ(aclvmmFakeHalLayout(v), 0);
  EXPECT_EQ(aclvmmFakeHalLayout(nullptr), -1);
  const Layout l = layout();
  for (const Window* w : {&l.host_pinned, &l.managed, &l.device, &l.device_general, &l.no_uc}) {
    EXPECT_NE(w->size, 0u);
    EXPECT_EQ(w->base % kGiB, 0u);
  }
  EXPECT_TRUE(l.device.contains(l.device_general.base, l.device_general.size));
  EXPECT_EQ(l.no_uc.base, 0x180000000000ull);
  // What the library hands out lies in them.
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  void* va = nullptr;
  void* host = nullptr;
  void* managed = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemAlloc(&host, 4096, 0x2100000000900800ull), DRV_ERROR_NONE);
  ASSERT_EQ(halMemAlloc(&managed, 2 * kMiB, 0x21C00ull), DRV_ERROR_NONE);
  EXPECT_TRUE(l.device_general.contains(ptr(va), 2 * kMiB));
  EXPECT_TRUE(l.host_pinned.contains(ptr(host), 4096));
  EXPECT_TRUE(l.managed.contains(ptr(managed), 2 * kMiB));
  EXPECT_EQ(halMemFree(host), DRV_ERROR_NONE);
  EXPECT_EQ(halMemFree(managed), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
  // The same layout after the opens.
  uint64_t again[10] = {};
  ASSERT_EQ(aclvmmFakeHalLayout(again), 0);
  EXPECT_EQ(std::memcmp(v, again, sizeof v), 0);
}

TEST(FakeHalExtensions, OutOfDeviceMemory) {
  EXPECT_EQ(run_child({"--fake-hal-child=oom"}, {"ACLVMM_DEVICE_MEMORY=64M"}), 0);
}

TEST(FakeHalFork, AChildStartsWithNoDeviceOpened) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const drv_mem_prop prop = device_prop(0);
  drv_mem_handle_t* h = nullptr;
  ASSERT_EQ(halMemCreate(&h, 2 * kMiB, &prop, 0), DRV_ERROR_NONE);
  void* va = nullptr;
  ASSERT_EQ(halMemAddressReserve(&va, 2 * kMiB, 0, nullptr, 0), DRV_ERROR_NONE);
  ASSERT_EQ(halMemMap(va, 2 * kMiB, 0, h, 0), DRV_ERROR_NONE);
  const pid_t child = fork();
  if (child == 0) {
    alarm(60);
    int failures = 0;
    DVattribute a{};
    // Nothing of the parent's: no device, no handle, no mapping.
    failures += drvMemGetAttribute(ptr(va), &a) != DRV_ERROR_INVALID_HANDLE;
    failures += close_device(0) != DRV_ERROR_UNINIT;
    failures += open_device(0) != DRV_ERROR_NONE;  // not REPEATED_INIT
    drv_mem_prop got{};
    failures += halMemGetAllocationPropertiesFromHandle(&got, h) != DRV_ERROR_INVALID_VALUE;
    failures += drvMemGetAttribute(ptr(va), &a) != DRV_ERROR_NOT_EXIST;
    // And everything works afresh, at the parent's addresses too.
    drv_mem_handle_t* mine = nullptr;
    void* at = nullptr;
    failures += halMemCreate(&mine, 2 * kMiB, &prop, 0) != DRV_ERROR_NONE;
    failures += halMemAddressReserve(&at, 2 * kMiB, 0, va, 0) != DRV_ERROR_NONE;
    failures += halMemMap(at, 2 * kMiB, 0, mine, 0) != DRV_ERROR_NONE;
    const std::vector<uint8_t> bytes = pattern(2 * kMiB, 71);
    std::vector<uint8_t> back(2 * kMiB);
    failures += drvMemcpy(ptr(at), 2 * kMiB, ptr(bytes.data()), 2 * kMiB) != DRV_ERROR_NONE;
    failures += drvMemcpy(ptr(back.data()), 2 * kMiB, ptr(at), 2 * kMiB) != DRV_ERROR_NONE;
    failures += back != bytes;
    failures += drvDeviceGetBareTgid() != getpid() && drvDeviceGetBareTgid() <= 0;
    _exit(failures);
  }
  EXPECT_EQ(wait_child(Child{child}), 0);
  // The parent's state is untouched.
  drv_mem_handle_t* r = nullptr;
  EXPECT_EQ(halMemRetainAllocationHandle(&r, va), DRV_ERROR_NONE);
  EXPECT_EQ(r, h);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemUnmap(va), DRV_ERROR_NONE);
  EXPECT_EQ(halMemRelease(h), DRV_ERROR_NONE);
  EXPECT_EQ(halMemAddressFree(va), DRV_ERROR_NONE);
}

TEST(FakeHalFork, AChildThatNeverCallsTheLibraryExits) {
  OpenDevices open({0});
  ASSERT_TRUE(open.ok());
  const pid_t child = fork();
  if (child == 0) {
    alarm(60);
    std::exit(0);  // static destructors and atexit handlers run
  }
  EXPECT_EQ(wait_child(Child{child}), 0);
  // A child forked while another thread is inside the library.
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    const drv_mem_prop prop = device_prop(0);
    while (!stop.load()) {
      drv_mem_handle_t* h = nullptr;
      if (halMemCreate(&h, 2 * kMiB, &prop, 0) == DRV_ERROR_NONE) (void)halMemRelease(h);
    }
  });
  for (int i = 0; i < 20; ++i) {
    const pid_t c = fork();
    if (c == 0) {
      alarm(60);
      _exit(open_device(0) == DRV_ERROR_NONE && close_device(0) == DRV_ERROR_NONE ? 0 : 1);
    }
    EXPECT_EQ(wait_child(Child{c}), 0);
  }
  stop.store(true);
  busy.join();
}

}  // namespace
}  // namespace fakehal_test
