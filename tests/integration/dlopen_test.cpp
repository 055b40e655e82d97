// clients.md A21: applications dlopen("libascendcl.so") or link libacl_rt.so and resolve every
// entry with dlsym; both names must be one library with one runtime state.
#include <dlfcn.h>

#include <fstream>
#include <string>
#include <vector>

#include "integration/int_util.h"

#ifndef ACLVMM_SOURCE_DIR
#define ACLVMM_SOURCE_DIR "/work/main"
#endif

namespace {

using namespace aclvmm_itest;

std::string symbols_file() {
  if (const char* env = getenv("ACLVMM_SYMBOLS_FILE")) return env;
  return std::string(ACLVMM_SOURCE_DIR) + "/tests/abi/symbols.txt";
}

std::vector<std::string> required_symbols() {
  std::vector<std::string> names;
  std::ifstream in(symbols_file());
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_last_not_of(" \t\r");
    names.push_back(line.substr(b, e - b + 1));
  }
  return names;
}

// The directory of the libascendcl the test binary is linked against (no LD_LIBRARY_PATH here).
std::string library_dir() {
  void* sym = dlsym(RTLD_DEFAULT, "aclInit");
  Dl_info info{};
  if (sym && dladdr(sym, &info) && info.dli_fname) {
    std::string path = info.dli_fname;
    if (path.find("libascendcl") != std::string::npos || path.find("libacl_rt") != std::string::npos) {
      return path.substr(0, path.rfind('/'));
    }
  }
  // Fallback: the mapping of the library in /proc/self/maps.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t p = line.find('/');
    if (p != std::string::npos && line.find("libascendcl.so") != std::string::npos) {
      std::string path = line.substr(p);
      return path.substr(0, path.rfind('/'));
    }
  }
  return "";
}

class DlopenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = library_dir();
    ASSERT_FALSE(dir_.empty());
    names_ = required_symbols();
    ASSERT_GE(names_.size(), 60u) << "cannot read " << symbols_file();
  }
  std::string dir_;
  std::vector<std::string> names_;
};

TEST_F(DlopenTest, BothLibraryNamesExportEverySymbolFromOneLibrary) {
  const std::string ascendcl = dir_ + "/libascendcl.so", acl_rt = dir_ + "/libacl_rt.so";
  // fork camem / Famem: dlopen by bare name (the soname of the loaded library matches).
  void* bare = dlopen("libascendcl.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(bare, nullptr) << dlerror();
  void* a = dlopen(ascendcl.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(a, nullptr) << dlerror();
  void* r = dlopen(acl_rt.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(r, nullptr) << dlerror();
  // torch_npu resolves each entry with dlsym: all must be present under both names, at the same
  // address (one library, one runtime state), and be the function the test binary links to.
  size_t missing = 0;
  for (const std::string& name : names_) {
    SCOPED_TRACE(name);
    void* fa = dlsym(a, name.c_str());
    void* fr = dlsym(r, name.c_str());
    void* fb = dlsym(bare, name.c_str());
    EXPECT_NE(fa, nullptr);
    EXPECT_NE(fr, nullptr);
    missing += (fa == nullptr) + (fr == nullptr);
    EXPECT_EQ(fa, fr);
    EXPECT_EQ(fa, fb);
    EXPECT_EQ(fa, dlsym(RTLD_DEFAULT, name.c_str()));
  }
  EXPECT_EQ(missing, 0u);
  // The extensions too.
  EXPECT_NE(dlsym(r, "aclvmmStatsJson"), nullptr);
  EXPECT_EQ(dlsym(r, "aclvmmStatsJson"), dlsym(a, "aclvmmStatsJson"));
  EXPECT_EQ(dlclose(bare), 0);
  EXPECT_EQ(dlclose(a), 0);
  EXPECT_EQ(dlclose(r), 0);
}

TEST_F(DlopenTest, CallsThroughDlsymShareTheLinkedRuntime) {
  void* r = dlopen((dir_ + "/libacl_rt.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(r, nullptr) << dlerror();
  using InitFn = aclError (*)(const char*);
  using FinFn = aclError (*)();
  using SocFn = const char* (*)();
  using SetDevFn = aclError (*)(int32_t);
  using MallocPhysFn = aclError (*)(aclrtDrvMemHandle*, size_t, const aclrtPhysicalMemProp*, uint64_t);
  using FreePhysFn = aclError (*)(aclrtDrvMemHandle);
  auto init = reinterpret_cast<InitFn>(dlsym(r, "aclInit"));
  auto fin = reinterpret_cast<FinFn>(dlsym(r, "aclFinalize"));
  auto soc = reinterpret_cast<SocFn>(dlsym(r, "aclrtGetSocName"));
  auto set_dev = reinterpret_cast<SetDevFn>(dlsym(r, "aclrtSetDevice"));
  auto mphys = reinterpret_cast<MallocPhysFn>(dlsym(r, "aclrtMallocPhysical"));
  auto fphys = reinterpret_cast<FreePhysFn>(dlsym(r, "aclrtFreePhysical"));
  ASSERT_TRUE(init && fin && soc && set_dev && mphys && fphys);

  ASSERT_EQ(init(nullptr), ACL_SUCCESS);
  const char* name = soc();
  ASSERT_NE(name, nullptr);
  const char* env = getenv("ACLVMM_SOC");
  EXPECT_STREQ(name, env ? env : "Ascend910B1");
  EXPECT_STREQ(name, aclrtGetSocName());  // the linked entry answers the same
  // One runtime state: initialised through dlsym, seen by the linked entry points.
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  ASSERT_EQ(set_dev(0), ACL_SUCCESS);
  aclrtPhysicalMemProp p = device_prop();
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(mphys(&h, k2M, &p, 0), ACL_SUCCESS);
  EXPECT_EQ(live_count("physical_handles"), 1);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);  // freed through the linked name
  EXPECT_EQ(fphys(h), ACL_ERROR_RT_PARAM_INVALID);  // already gone for the dlsym'd one (§1)
  aclrtResetDeviceForce(0);
  EXPECT_EQ(fin(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(dlclose(r), 0);
}

}  // namespace
