// ShareService (src/vmm/share.*) over the fake backend's Sharing unit: two "processes" of one
// FakeWorld, each with its own service, handle table and fake. What is asserted is the core's
// part: the export record per handle, the import table (the same handle again for the same
// token and device), the ACL code and message for each Result the backend answers, the peer
// pair of an import onto another device, and the ipc counters kept across a shutdown.
#include "vmm/share.h"

#include <gtest/gtest.h>

#include <acl/error_codes/rt_error_codes.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "unit/testing/fake_device.h"

namespace aclvmm {
namespace {

using testing::FakeDevice;

constexpr uint64_t kExportSize = 2 * dev::kMiB;

// One fake "process" running the core's sharing records. The services are never destroyed: the
// first one attached is the one the process's fork handlers name (ShareService::attach).
struct Process {
  explicit Process(const dev::fake::FakeConfig& config, ShareService* service)
      : device(config), service(service) {
    service->attach(&table, &device);
    service->shutdown();  // the records of the previous test's process
  }
  ~Process() {
    service->shutdown();
    for (auto& [handle, phys] : table.snapshot()) table.remove(handle);
    device.expect_no_violations();
  }
  // A new handle of device memory on `dev_id`, filled with `value` through the fake.
  uint64_t new_handle(int dev_id, uint8_t value) {
    auto phys = device.make_allocation(dev::Location::device(dev_id), kExportSize);
    if (!phys) return 0;
    std::vector<uint8_t> bytes(kExportSize, value);
    EXPECT_TRUE(
        device.fake().write_physical(phys->device_memory.id(), 0, bytes.data(), kExportSize).ok());
    return table.insert(phys);
  }
  uint64_t export_of(uint64_t handle, bool disable_validation = false) {
    auto got = service->export_handle(handle, table.find(handle), disable_validation);
    EXPECT_TRUE(got.ok()) << got.status().message();
    return got.ok() ? *got : 0;
  }
  int32_t pid() const { return device.config().pid; }

  FakeDevice device;
  HandleTable<PhysicalAllocation> table{0x50};
  ShareService* service;
};

ShareService* exporter_service() {
  static ShareService* s = new ShareService();
  return s;
}
ShareService* importer_service() {
  static ShareService* s = new ShareService();
  return s;
}

class ShareFakeTest : public ::testing::Test {
 protected:
  ShareFakeTest() : pair_(testing::fake_process_pair()) {
    exporter_ = std::make_unique<Process>(pair_.first, exporter_service());
    importer_ = std::make_unique<Process>(pair_.second, importer_service());
  }
  ~ShareFakeTest() override {
    importer_.reset();
    exporter_.reset();
  }
  // An exported handle of the exporter on device 0 whose whitelist names the importer.
  uint64_t shared_token(uint8_t value) {
    const uint64_t token = exporter_->export_of(exporter_->new_handle(0, value));
    const int32_t pid = importer_->pid();
    EXPECT_TRUE(exporter_->service->set_pids(token, &pid, 1).ok());
    return token;
  }

  std::pair<dev::fake::FakeConfig, dev::fake::FakeConfig> pair_;
  std::unique_ptr<Process> exporter_;
  std::unique_ptr<Process> importer_;
};

TEST_F(ShareFakeTest, AnExportIsRecordedOncePerHandle) {
  const uint64_t handle = exporter_->new_handle(1, 0x11);
  auto phys = exporter_->table.find(handle);
  const uint64_t token = exporter_->export_of(handle);
  EXPECT_NE(token & 0xffffffffu, 0u) << "a share id";
  EXPECT_EQ((token >> 32) & 0xff, 1u) << "the exporter's device field";
  EXPECT_EQ(token >> 40, 0u);
  EXPECT_EQ(exporter_->service->live_exports(), 1u);

  auto again = exporter_->service->export_handle(handle, phys, false);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), ACL_ERROR_RT_DRV_INTERNAL_ERROR);
  char expected[64];
  std::snprintf(expected, sizeof expected, "already exported as 0x%llx",
                static_cast<unsigned long long>(token));
  EXPECT_NE(again.status().message().find(expected), std::string::npos)
      << again.status().message();
  EXPECT_EQ(exporter_->service->live_exports(), 1u);

  exporter_->service->forget_handle(handle);
  EXPECT_EQ(exporter_->service->live_exports(), 0u);
}

TEST_F(ShareFakeTest, AnImportGivesTheExportersBytesAndOneHandlePerTokenAndDevice) {
  const uint64_t token = shared_token(0x5a);
  auto first = importer_->service->import(token, 0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto phys = importer_->table.find(*first);
  ASSERT_TRUE(phys);
  EXPECT_TRUE(phys->imported);
  EXPECT_STREQ(phys->created_by, "aclrtMemImportFromShareableHandle");
  EXPECT_EQ(phys->side, Side::kDevice);
  EXPECT_EQ(phys->device, 0);
  EXPECT_EQ(phys->reported_device, 0);
  EXPECT_EQ(phys->size, kExportSize);
  EXPECT_EQ(phys->ref.load(), 1);
  std::vector<uint8_t> seen(kExportSize, 0);
  ASSERT_TRUE(importer_->device.fake()
                  .read_physical(phys->device_memory.id(), 0, seen.data(), kExportSize)
                  .ok());
  EXPECT_EQ(seen, std::vector<uint8_t>(kExportSize, 0x5a));

  auto second = importer_->service->import(token, 0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first) << "the same token on the same device: the same handle";
  EXPECT_EQ(phys->ref.load(), 2);
  EXPECT_EQ(importer_->service->live_imports(), 1u);
  EXPECT_TRUE(importer_->device.peer_pairs().empty()) << "same device as the exporter's";

  // Onto another device: a handle of its own, and the pair of devices recorded once.
  auto other = importer_->service->import(token, 1);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_NE(*other, *first);
  EXPECT_EQ(importer_->table.find(*other)->device, 1);
  EXPECT_EQ(importer_->table.find(*other)->reported_device, 0);
  EXPECT_EQ(importer_->service->live_imports(), 2u);
  EXPECT_EQ(importer_->device.peer_pairs(), (std::set<std::pair<int, int>>{{0, 1}}));

  // An imported handle is not exported again.
  auto re_export = importer_->service->export_handle(*first, phys, false);
  ASSERT_FALSE(re_export.ok());
  EXPECT_EQ(re_export.status().code(), ACL_ERROR_RT_DRV_INTERNAL_ERROR);
  EXPECT_NE(re_export.status().message().find("imported handle cannot be exported"),
            std::string::npos);

  // A forgotten import record: the next import is a new handle.
  importer_->service->forget_handle(*first);
  EXPECT_EQ(importer_->service->live_imports(), 1u);
  auto fresh = importer_->service->import(token, 0);
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(*fresh, *first);
}

TEST_F(ShareFakeTest, WithoutValidationAnyProcessImports) {
  const uint64_t token = exporter_->export_of(exporter_->new_handle(0, 0x22), true);
  auto got = importer_->service->import(token, 0);
  ASSERT_TRUE(got.ok()) << got.status().message();
  const int32_t pid = importer_->pid();
  const Status st = exporter_->service->set_pids(token, &pid, 1);
  EXPECT_EQ(st.code(), ACL_ERROR_RT_NO_PERMISSION);
  EXPECT_NE(st.message().find("DISABLE_PID_VALIDATION"), std::string::npos) << st.message();
}

// Every refusal the backend can answer, and the code and words the application gets for it.
TEST_F(ShareFakeTest, EachRefusalHasItsCodeAndMessage) {
  const uint64_t token = exporter_->export_of(exporter_->new_handle(0, 0x33));
  const uint64_t unknown = token + 0x1000;  // a share id nobody exported
  const int32_t importer_pid = importer_->pid();
  const int32_t zeros[2] = {0, 0};
  struct Case {
    const char* what;
    std::function<Status()> call;
    int code;
    const char* words;
  };
  const Case cases[] = {
      {"set_pids of an unknown token", [&] { return exporter_->service->set_pids(unknown, &importer_pid, 1); },
       ACL_ERROR_RT_INVALID_HANDLE, "is unknown or was released"},
      {"set_pids of all-zero pids", [&] { return exporter_->service->set_pids(token, zeros, 2); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "every pid in the list is 0"},
      {"set_pids by another process", [&] { return importer_->service->set_pids(token, &importer_pid, 1); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "only the exporting process"},
      {"import not whitelisted", [&] { return importer_->service->import(token, 0).status(); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "not on the handle's pid whitelist"},
      {"import of an unknown token", [&] { return importer_->service->import(unknown, 0).status(); },
       ACL_ERROR_RT_INVALID_HANDLE, "is unknown or was released"},
      {"own export onto the same device", [&] { return exporter_->service->import(token, 0).status(); },
       ACL_ERROR_RT_DRV_INTERNAL_ERROR, "cannot import its own export onto the same device"},
      {"a fabric blob that is none", [&] {
         const uint8_t blob[128] = {0x7f};
         return exporter_->service->token_of_fabric(blob).status();
       },
       ACL_ERROR_RT_INVALID_HANDLE, "not one aclvmm produced"},
  };
  for (const Case& c : cases) {
    const Status st = c.call();
    EXPECT_EQ(st.code(), c.code) << c.what << ": " << st.message();
    EXPECT_NE(st.message().find(c.words), std::string::npos) << c.what << ": " << st.message();
  }
  EXPECT_EQ(importer_->table.size(), 0u) << "no refused import left a handle";
  EXPECT_EQ(importer_->service->live_imports(), 0u);
  EXPECT_EQ(importer_->service->denied(), 1u) << "the one whitelist refusal, counted by the backend";
}

TEST_F(ShareFakeTest, AFabricExportWritesOnlyTheBackendsBytesAndNamesItsToken) {
  const uint64_t handle = exporter_->new_handle(1, 0x44);
  uint8_t blob[128];
  std::memset(blob, 0xab, sizeof blob);
  ASSERT_TRUE(exporter_->service->export_fabric(handle, exporter_->table.find(handle), false, blob).ok());
  for (size_t i = 20; i < sizeof blob; ++i) ASSERT_EQ(blob[i], 0xab) << "byte " << i;
  auto token = exporter_->service->token_of_fabric(blob);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ((*token >> 32) & 0xff, 1u);
  EXPECT_EQ(exporter_->service->live_exports(), 1u);
  const int32_t pid = importer_->pid();
  ASSERT_TRUE(exporter_->service->set_pids(*token, &pid, 1).ok());
  EXPECT_TRUE(importer_->service->import(*token, 1).ok());
}

TEST_F(ShareFakeTest, AnExporterGoneLeavesImportsTheirBytesAndRefusesNewOnes) {
  const uint64_t token = shared_token(0x66);
  auto held = importer_->service->import(token, 0);
  ASSERT_TRUE(held.ok());
  exporter_.reset();  // the exporting process exits
  auto late = importer_->service->import(token, 1);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), ACL_ERROR_RT_INVALID_HANDLE);
  auto phys = importer_->table.find(*held);
  uint8_t byte = 0;
  ASSERT_TRUE(importer_->device.fake()
                  .read_physical(phys->device_memory.id(), kExportSize - 1, &byte, 1)
                  .ok());
  EXPECT_EQ(byte, 0x66);
}

TEST_F(ShareFakeTest, TheIpcCountersOutliveTheBackend) {
  const uint64_t token = exporter_->export_of(exporter_->new_handle(0, 0x77));
  EXPECT_FALSE(importer_->service->import(token, 0).ok());
  EXPECT_FALSE(importer_->service->import(token, 0).ok());
  EXPECT_EQ(importer_->service->denied(), 2u);
  importer_->service->shutdown();  // aclFinalize: what the backend counted is kept
  importer_->device.exit_process();
  EXPECT_EQ(importer_->service->denied(), 2u);
  EXPECT_EQ(importer_->service->live_imports(), 0u);
  // And with no backend, every call says so.
  auto none = importer_->service->import(token, 0);
  EXPECT_EQ(none.status().code(), kAclInternalError);
  EXPECT_NE(none.status().message().find("no device backend"), std::string::npos);
}

}  // namespace
}  // namespace aclvmm
