// Unit tests of the environment configuration (emulation.md section 7): the parsers and
// load_config with real environment variables (restored after each test).
#include "runtime/config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "runtime/product.h"

namespace aclvmm {
namespace {

constexpr uint64_t kTiB = 1ull << 40;

// ---------------------------------------------------------------------------------------------
// parse_size

struct SizeCase {
  const char* text;
  bool ok;
  uint64_t value;
};

class ParseSize : public ::testing::TestWithParam<SizeCase> {};

TEST_P(ParseSize, Table) {
  const SizeCase& c = GetParam();
  const uint64_t sentinel = 0x5a5a5a5a5a5a5a5aull;
  uint64_t out = sentinel;
  EXPECT_EQ(parse_size(c.text, &out), c.ok) << '"' << c.text << '"';
  if (c.ok) {
    EXPECT_EQ(out, c.value) << '"' << c.text << '"';
  } else {
    EXPECT_EQ(out, sentinel) << "a rejected value must not be stored: \"" << c.text << '"';
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseSize,
    ::testing::Values(SizeCase{"1024", true, 1024}, SizeCase{"1", true, 1},
                      SizeCase{"2K", true, 2 * kKiB}, SizeCase{"512M", true, 512 * kMiB},
                      SizeCase{"64G", true, 64 * kGiB}, SizeCase{"1T", true, 1 * kTiB},
                      SizeCase{"24000000000", true, 24000000000ull},
                      SizeCase{"16777215T", true, 16777215ull * kTiB},
                      SizeCase{"18446744073709551615", true, UINT64_MAX},
                      SizeCase{"0", false, 0}, SizeCase{"0G", false, 0},
                      SizeCase{"12X", false, 0}, SizeCase{"", false, 0},
                      SizeCase{"K", false, 0}, SizeCase{"G", false, 0},
                      SizeCase{"-1", false, 0}, SizeCase{"1.5G", false, 0},
                      SizeCase{" 64G", false, 0}, SizeCase{"64G ", false, 0},
                      SizeCase{"64GB", false, 0}, SizeCase{"0x10", false, 0},
                      SizeCase{"1 K", false, 0}, SizeCase{"abc", false, 0},
                      // overflow
                      SizeCase{"18446744073709551616", false, 0},
                      SizeCase{"99999999999999999999", false, 0},
                      SizeCase{"999999999999999999999999", false, 0},
                      SizeCase{"16777216T", false, 0},
                      SizeCase{"17179869184G", false, 0},
                      SizeCase{"18014398509481984K", false, 0}));

// ---------------------------------------------------------------------------------------------
// parse_injections

struct InjectionsGood {
  const char* text;
  std::vector<InjectionRule> rules;
};

class ParseInjectionsGood : public ::testing::TestWithParam<InjectionsGood> {};

TEST_P(ParseInjectionsGood, Table) {
  const InjectionsGood& c = GetParam();
  auto r = parse_injections(c.text);
  ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
  ASSERT_EQ(r->size(), c.rules.size()) << c.text;
  for (size_t i = 0; i < c.rules.size(); ++i) {
    EXPECT_EQ((*r)[i].api, c.rules[i].api) << c.text << " rule " << i;
    EXPECT_EQ((*r)[i].nth, c.rules[i].nth) << c.text << " rule " << i;
    EXPECT_EQ((*r)[i].code, c.rules[i].code) << c.text << " rule " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseInjectionsGood,
    ::testing::Values(
        InjectionsGood{"aclrtMallocPhysical:1:207001", {{"aclrtMallocPhysical", 1, 207001}}},
        InjectionsGood{"aclrtMapMem:3:507899,aclrtMemcpy:1:100000",
                   {{"aclrtMapMem", 3, 507899}, {"aclrtMemcpy", 1, 100000}}},
        InjectionsGood{"a:4294967295:2147483647", {{"a", 4294967295u, 2147483647}}},
        InjectionsGood{"x:2:1,x:5:7,y:1:9", {{"x", 2, 1}, {"x", 5, 7}, {"y", 1, 9}}}));

class ParseInjectionsBad : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseInjectionsBad, RejectedNamingTheVariable) {
  auto r = parse_injections(GetParam());
  ASSERT_FALSE(r.ok()) << GetParam();
  EXPECT_NE(r.status().code(), 0);
  EXPECT_NE(r.status().message().find("ACLVMM_FAULTS"), std::string::npos)
      << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(Table, ParseInjectionsBad,
                         ::testing::Values("aclrtMalloc", "aclrtMalloc:1", ":1:207001",
                                           "aclrtMalloc:0:207001", "aclrtMalloc:1:0",
                                           "aclrtMalloc::207001", "aclrtMalloc:1:",
                                           "aclrtMalloc:x:207001", "aclrtMalloc:1:abc",
                                           "aclrtMalloc:-1:207001", "aclrtMalloc:1:-5",
                                           "aclrtMalloc:1:2:3", "aclrtMalloc:4294967296:1",
                                           "aclrtMalloc:1:2147483648",
                                           "a:1:2,,b:1:2", "a:1:2,b", ","));

// ---------------------------------------------------------------------------------------------
// parse_visible_devices (conventions.md: CANN rules)

struct VisibleCase {
  const char* text;
  int count;
  std::vector<int> ids;  // expected result when no error
  bool error;
  bool empty_on_error;   // assert the result is empty as well
};

class ParseVisible : public ::testing::TestWithParam<VisibleCase> {};

TEST_P(ParseVisible, Table) {
  const VisibleCase& c = GetParam();
  std::string error;
  std::vector<int> ids = parse_visible_devices(c.text, c.count, &error);
  if (c.error) {
    EXPECT_FALSE(error.empty()) << '"' << c.text << '"';
    EXPECT_NE(error.find("ASCEND_RT_VISIBLE_DEVICES"), std::string::npos) << error;
    if (c.empty_on_error) {
      EXPECT_TRUE(ids.empty()) << '"' << c.text << '"';
    }
  } else {
    EXPECT_TRUE(error.empty()) << '"' << c.text << "\": " << error;
    EXPECT_EQ(ids, c.ids) << '"' << c.text << '"';
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseVisible,
    ::testing::Values(VisibleCase{"1,2,3", 8, {1, 2, 3}, false, false},
                      VisibleCase{"0", 8, {0}, false, false},
                      VisibleCase{"7", 8, {7}, false, false},
                      VisibleCase{"0,1,2,3,4,5,6,7", 8, {0, 1, 2, 3, 4, 5, 6, 7}, false, false},
                      VisibleCase{"0,5,63", 64, {0, 5, 63}, false, false},
                      // parsing stops at the first non-digit token
                      VisibleCase{"1, 2,3", 8, {1}, false, false},
                      VisibleCase{"2,x,3", 8, {2}, false, false},
                      VisibleCase{"2,", 8, {2}, false, false},
                      // ... and at the first out-of-range id
                      VisibleCase{"1,9,2", 8, {1}, false, false},
                      VisibleCase{"0,1,8", 8, {0, 1}, false, false},
                      // descending / repeated / empty result
                      VisibleCase{"3,1", 8, {}, true, false},
                      VisibleCase{"1,1", 8, {}, true, false},
                      VisibleCase{"0,2,2", 8, {}, true, false},
                      VisibleCase{"9", 8, {}, true, true},
                      VisibleCase{"8", 8, {}, true, true},
                      VisibleCase{"", 8, {}, true, true},
                      VisibleCase{"abc", 8, {}, true, true},
                      VisibleCase{" 1", 8, {}, true, true},
                      VisibleCase{"-1", 8, {}, true, true},
                      VisibleCase{",1", 8, {}, true, true}));

// ---------------------------------------------------------------------------------------------
// load_config

const char* const kVars[] = {"ACLVMM_SOC",          "ACLVMM_DEVICE_COUNT", "ACLVMM_DEVICE_MEMORY",
                             "ACLVMM_HOST_ACCESS",  "ACLVMM_QUIRKS",       "ACLVMM_FAULTS",
                             "ACLVMM_STATS_FILE",   "ACLVMM_DRIVER",       "ASCEND_RT_VISIBLE_DEVICES",
                             "ACLVMM_INTERCONNECT", "ACLVMM_HOST_NUMA",    "ACLVMM_HAL_LIBRARY",
                             "ACLVMM_HAL_HIDE"};

// Saves every variable load_config reads, clears them for the test, restores them afterwards.
class LoadConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      const char* cur = std::getenv(v);
      saved_.push_back(cur ? std::optional<std::string>(cur) : std::nullopt);
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i]) {
        setenv(kVars[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kVars[i]);
      }
    }
  }
  static void set(const char* name, const char* value) { ASSERT_EQ(setenv(name, value, 1), 0); }

  std::vector<std::optional<std::string>> saved_;
};

TEST_F(LoadConfig, Defaults) {
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->product.soc, "Ascend910B1");
  EXPECT_EQ(c->product.family, Family::kA2);
  EXPECT_EQ(c->device_count, 8);
  EXPECT_EQ(c->device_memory, 64 * kGiB);
  EXPECT_FALSE(c->host_access_open);
  EXPECT_FALSE(c->quirks_vendor);
  EXPECT_EQ(c->interconnect, Interconnect::kHccs);
  EXPECT_TRUE(c->host_numa);
  EXPECT_TRUE(c->injections.empty());
  EXPECT_EQ(c->stats_file, "");
  EXPECT_EQ(c->driver, "emu");
  EXPECT_EQ(c->visible, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(c->visible_error.empty());
}

TEST_F(LoadConfig, SocSelectsProductAndDefaultMemory) {
  set("ACLVMM_SOC", "Ascend910B4");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->product.soc, "Ascend910B4");
  EXPECT_EQ(c->product.family, Family::kA2);
  EXPECT_EQ(c->device_memory, 32 * kGiB);

  set("ACLVMM_SOC", "Ascend310P3");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->product.family, Family::kInf);
  EXPECT_EQ(c->device_memory, 24000000000ull);

  set("ACLVMM_SOC", "Ascend950DT_9591");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->product.family, Family::k950);
  EXPECT_EQ(c->device_memory, 144 * kGiB);
}

TEST_F(LoadConfig, UnknownSocIsAnError) {
  set("ACLVMM_SOC", "Ascend999");
  auto c = load_config();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), kAclInvalidParam);
  EXPECT_NE(c.status().message().find("ACLVMM_SOC"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("Ascend999"), std::string::npos) << c.status().message();
}

struct EnvErrorCase {
  const char* var;
  const char* value;
};

class LoadConfigBadValue : public LoadConfig, public ::testing::WithParamInterface<EnvErrorCase> {};

TEST_P(LoadConfigBadValue, ErrorNamesTheVariable) {
  const EnvErrorCase& c = GetParam();
  set(c.var, c.value);
  auto r = load_config();
  ASSERT_FALSE(r.ok()) << c.var << "=" << c.value;
  EXPECT_NE(r.status().code(), 0);
  EXPECT_NE(r.status().message().find(c.var), std::string::npos)
      << c.var << "=" << c.value << ": " << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, LoadConfigBadValue,
    ::testing::Values(EnvErrorCase{"ACLVMM_DEVICE_COUNT", "0"},
                      EnvErrorCase{"ACLVMM_DEVICE_COUNT", "65"},
                      EnvErrorCase{"ACLVMM_DEVICE_COUNT", "abc"},
                      EnvErrorCase{"ACLVMM_DEVICE_COUNT", "-1"},
                      EnvErrorCase{"ACLVMM_DEVICE_COUNT", "8x"},
                      EnvErrorCase{"ACLVMM_DEVICE_COUNT", "99999999999999999999999"},
                      EnvErrorCase{"ACLVMM_DEVICE_MEMORY", "abc"},
                      EnvErrorCase{"ACLVMM_DEVICE_MEMORY", "0"},
                      EnvErrorCase{"ACLVMM_DEVICE_MEMORY", "12X"},
                      EnvErrorCase{"ACLVMM_DEVICE_MEMORY", "99999999999T"},
                      EnvErrorCase{"ACLVMM_HOST_ACCESS", "yes"},
                      EnvErrorCase{"ACLVMM_HOST_ACCESS", "1"},
                      EnvErrorCase{"ACLVMM_QUIRKS", "all"},
                      EnvErrorCase{"ACLVMM_QUIRKS", "1"},
                      EnvErrorCase{"ACLVMM_FAULTS", "aclrtMalloc:0:1"},
                      EnvErrorCase{"ACLVMM_FAULTS", "garbage"},
                      EnvErrorCase{"ACLVMM_INTERCONNECT", "PCIe"},
                      EnvErrorCase{"ACLVMM_INTERCONNECT", "nvlink"},
                      EnvErrorCase{"ACLVMM_INTERCONNECT", "hccs "},
                      EnvErrorCase{"ACLVMM_HOST_NUMA", "0"},
                      EnvErrorCase{"ACLVMM_HOST_NUMA", "disabled"},
                      EnvErrorCase{"ACLVMM_DRIVER", "cuda"},
                      EnvErrorCase{"ACLVMM_DRIVER", "none"},
                      EnvErrorCase{"ACLVMM_DRIVER", "HAL"}));

TEST_F(LoadConfig, DeviceCountBounds) {
  for (const char* v : {"1", "64", "8", "3"}) {
    set("ACLVMM_DEVICE_COUNT", v);
    auto c = load_config();
    ASSERT_TRUE(c.ok()) << v << ": " << c.status().message();
    EXPECT_EQ(c->device_count, std::atoi(v));
    EXPECT_EQ(c->visible.size(), static_cast<size_t>(std::atoi(v)));
  }
}

TEST_F(LoadConfig, DeviceMemoryOverridesProductSize) {
  set("ACLVMM_DEVICE_MEMORY", "16G");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->device_memory, 16 * kGiB);
  EXPECT_EQ(c->product.memory_bytes, 64 * kGiB);  // the product itself is unchanged

  set("ACLVMM_DEVICE_MEMORY", "536870912");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->device_memory, 512 * kMiB);
}

struct ChoiceCase {
  const char* var;
  const char* value;
  bool host_open;
  bool quirks;
};

class LoadConfigChoice : public LoadConfig, public ::testing::WithParamInterface<ChoiceCase> {};

TEST_P(LoadConfigChoice, Table) {
  const ChoiceCase& c = GetParam();
  set(c.var, c.value);
  auto r = load_config();
  ASSERT_TRUE(r.ok()) << c.var << "=" << c.value << ": " << r.status().message();
  EXPECT_EQ(r->host_access_open, c.host_open) << c.var << "=" << c.value;
  EXPECT_EQ(r->quirks_vendor, c.quirks) << c.var << "=" << c.value;
}

INSTANTIATE_TEST_SUITE_P(Table, LoadConfigChoice,
                         ::testing::Values(ChoiceCase{"ACLVMM_HOST_ACCESS", "strict", false, false},
                                           ChoiceCase{"ACLVMM_HOST_ACCESS", "open", true, false},
                                           ChoiceCase{"ACLVMM_QUIRKS", "none", false, false},
                                           ChoiceCase{"ACLVMM_QUIRKS", "vendor", false, true}));

// ACLVMM_INTERCONNECT and ACLVMM_HOST_NUMA: each accepted value, and a malformed one whose
// message lists exactly what is accepted (configuration.md: like every other variable).
TEST_F(LoadConfig, InterconnectValues) {
  set("ACLVMM_INTERCONNECT", "pcie");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->interconnect, Interconnect::kPcie);
  EXPECT_STREQ(interconnect_name(c->interconnect), "pcie");
  set("ACLVMM_INTERCONNECT", "hccs");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->interconnect, Interconnect::kHccs);
  EXPECT_STREQ(interconnect_name(c->interconnect), "hccs");
  set("ACLVMM_INTERCONNECT", "");  // empty means the default
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->interconnect, Interconnect::kHccs);
  set("ACLVMM_INTERCONNECT", "ub");
  c = load_config();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), kAclInvalidParam);
  EXPECT_EQ(c.status().message(),
            "environment variable ACLVMM_INTERCONNECT=\"ub\" is invalid; accepted values: hccs, pcie");
}

TEST_F(LoadConfig, HostNumaValues) {
  set("ACLVMM_HOST_NUMA", "off");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->host_numa);
  set("ACLVMM_HOST_NUMA", "on");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->host_numa);
  set("ACLVMM_HOST_NUMA", "OFF");
  c = load_config();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), kAclInvalidParam);
  EXPECT_EQ(c.status().message(),
            "environment variable ACLVMM_HOST_NUMA=\"OFF\" is invalid; accepted values: on, off");
}

TEST_F(LoadConfig, DriverEmuAccepted) {
  set("ACLVMM_DRIVER", "emu");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->driver, "emu");
}

TEST_F(LoadConfig, DriverHalTakesItsLibraryAndHiddenFunctions) {
  set("ACLVMM_DRIVER", "hal");
  set("ACLVMM_HAL_LIBRARY", "/opt/fake-hal/libascend_hal.so");
  set("ACLVMM_HAL_HIDE", "halMemCreate,halMemMap");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->driver, "hal");
  EXPECT_EQ(c->hal_library, "/opt/fake-hal/libascend_hal.so");
  EXPECT_EQ(c->hal_hide, "halMemCreate,halMemMap");
}

// hal.md §1.5: with a driver that reports the machine, ACLVMM_DEVICE_COUNT and ACLVMM_SOC give
// way to what it reports; an explicit ACLVMM_DEVICE_MEMORY stays.
TEST_F(LoadConfig, TheDriversMachineReplacesTheEmulatedOne) {
  set("ACLVMM_DEVICE_COUNT", "8");
  set("ASCEND_RT_VISIBLE_DEVICES", "1,3");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  Config cfg = *c;
  ASSERT_TRUE(adopt_driver_machine(cfg, 2, "Ascend910_9391").ok());
  EXPECT_EQ(cfg.device_count, 2);
  EXPECT_EQ(cfg.product.soc, "Ascend910_9391");
  EXPECT_EQ(cfg.device_memory, cfg.product.memory_bytes);
  // Device 3 does not exist on a two-device machine: the list stops there (CANN's rule).
  EXPECT_EQ(cfg.visible, std::vector<int>({1}));

  set("ACLVMM_DEVICE_MEMORY", "4G");
  c = load_config();
  ASSERT_TRUE(c.ok());
  cfg = *c;
  ASSERT_TRUE(adopt_driver_machine(cfg, 4, "Ascend910B2").ok());
  EXPECT_EQ(cfg.device_memory, 4ull << 30);
  EXPECT_EQ(cfg.product.soc, "Ascend910B2");

  const Status unknown = adopt_driver_machine(cfg, 4, "Ascend999Z");
  EXPECT_EQ(unknown.code(), kAclInternalError);
  EXPECT_NE(unknown.message().find("Ascend999Z"), std::string::npos);
}

TEST_F(LoadConfig, InjectionsAndStatsFile) {
  set("ACLVMM_FAULTS", "aclrtMapMem:2:507899,aclrtMallocPhysical:1:207001");
  set("ACLVMM_STATS_FILE", "/tmp/aclvmm-stats.json");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->injections.size(), 2u);
  EXPECT_EQ(c->injections[0].api, "aclrtMapMem");
  EXPECT_EQ(c->injections[0].nth, 2u);
  EXPECT_EQ(c->injections[0].code, 507899);
  EXPECT_EQ(c->injections[1].api, "aclrtMallocPhysical");
  EXPECT_EQ(c->injections[1].nth, 1u);
  EXPECT_EQ(c->injections[1].code, 207001);
  EXPECT_EQ(c->stats_file, "/tmp/aclvmm-stats.json");
}

TEST_F(LoadConfig, VisibleDevicesUseTheConfiguredCount) {
  set("ACLVMM_DEVICE_COUNT", "4");
  set("ASCEND_RT_VISIBLE_DEVICES", "1,3");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->visible, (std::vector<int>{1, 3}));
  EXPECT_TRUE(c->visible_error.empty());

  // 5 is out of range with 4 devices: start-up still succeeds, the error is kept for the
  // device queries.
  set("ASCEND_RT_VISIBLE_DEVICES", "5");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->visible.empty());
  EXPECT_NE(c->visible_error.find("ASCEND_RT_VISIBLE_DEVICES"), std::string::npos);

  set("ASCEND_RT_VISIBLE_DEVICES", "3,1");
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->visible_error.empty());
}

// ---------------------------------------------------------------------------------------------
// parse_kernel_libs and ACLVMM_KERNEL_LIBS (runtime-extra.md §9.8: a ':'-separated list of
// shared-library paths; an empty item is malformed)

struct KernelLibsGood {
  const char* text;
  std::vector<std::string> paths;
};

void PrintTo(const KernelLibsGood& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class ParseKernelLibsGood : public ::testing::TestWithParam<KernelLibsGood> {};

TEST_P(ParseKernelLibsGood, SplitsAtEveryColonKeepingItemsVerbatim) {
  const KernelLibsGood& c = GetParam();
  auto r = parse_kernel_libs(c.text);
  ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
  EXPECT_EQ(*r, c.paths) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseKernelLibsGood,
    ::testing::Values(
        KernelLibsGood{"/opt/k/libadd.so", {"/opt/k/libadd.so"}},
        KernelLibsGood{"libadd.so", {"libadd.so"}},
        KernelLibsGood{"./out/libadd.so", {"./out/libadd.so"}},
        KernelLibsGood{"/a/liba.so:/b/libb.so", {"/a/liba.so", "/b/libb.so"}},
        KernelLibsGood{"a:b:c", {"a", "b", "c"}},
        KernelLibsGood{"a:a", {"a", "a"}},  // a repeat is not an error (loaded once)
        KernelLibsGood{" a : b ", {" a ", " b "}},  // no trimming: paths may hold spaces
        KernelLibsGood{"/dir with space/lib.so", {"/dir with space/lib.so"}},
        KernelLibsGood{"a,b", {"a,b"}},  // ',' is no separator
        KernelLibsGood{"x", {"x"}}));

class ParseKernelLibsBad : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseKernelLibsBad, AnEmptyItemIsRejectedNamingTheVariable) {
  auto r = parse_kernel_libs(GetParam());
  ASSERT_FALSE(r.ok()) << '"' << GetParam() << '"';
  EXPECT_EQ(r.status().code(), kAclInvalidParam);
  EXPECT_NE(r.status().message().find("ACLVMM_KERNEL_LIBS"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(std::string("\"") + GetParam() + "\""), std::string::npos)
      << "the message quotes the value: " << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(Table, ParseKernelLibsBad,
                         ::testing::Values("", ":", "::", "a::b", ":a", "a:", "a:b:", ":a:b",
                                           "/x/liba.so::/y/libb.so"));

// LoadConfig, plus ACLVMM_KERNEL_LIBS saved, cleared and restored.
class LoadConfigKernelLibs : public LoadConfig {
 protected:
  void SetUp() override {
    LoadConfig::SetUp();
    const char* cur = std::getenv("ACLVMM_KERNEL_LIBS");
    saved_libs_ = cur ? std::optional<std::string>(cur) : std::nullopt;
    unsetenv("ACLVMM_KERNEL_LIBS");
  }
  void TearDown() override {
    if (saved_libs_) {
      setenv("ACLVMM_KERNEL_LIBS", saved_libs_->c_str(), 1);
    } else {
      unsetenv("ACLVMM_KERNEL_LIBS");
    }
    LoadConfig::TearDown();
  }
  std::optional<std::string> saved_libs_;
};

TEST_F(LoadConfigKernelLibs, UnsetOrEmptyMeansNoLibrary) {
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->kernel_libs.empty());
  set("ACLVMM_KERNEL_LIBS", "");  // like every variable: empty is unset
  c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->kernel_libs.empty());
}

TEST_F(LoadConfigKernelLibs, TheListIsKeptInOrder) {
  set("ACLVMM_KERNEL_LIBS", "/k/libb.so:/k/liba.so:libc.so");
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->kernel_libs, (std::vector<std::string>{"/k/libb.so", "/k/liba.so", "libc.so"}));
}

TEST_F(LoadConfigKernelLibs, AnEmptyItemFailsNamingTheVariable) {
  for (const char* v : {"a::b", ":a", "a:", ":"}) {
    SCOPED_TRACE(v);
    set("ACLVMM_KERNEL_LIBS", v);
    auto c = load_config();
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), kAclInvalidParam);
    EXPECT_NE(c.status().message().find("ACLVMM_KERNEL_LIBS"), std::string::npos)
        << c.status().message();
  }
}

}  // namespace
}  // namespace aclvmm
