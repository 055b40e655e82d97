// No exception leaves an exported function (src/api/api_guard.h): for every function the library
// exports — the list is read from the loaded library itself, so a new export is covered at once —
// and for every kind of exception, a throwing injection rule makes the function's barrier throw,
// and the call must return the code of the one table (bad_alloc / length_error → 207001,
// system_error → 207005, anything else → 500000; the documented failure value for a function that
// returns no aclError), leave a message naming the function, and not abort the process.
// tests/abi/check_api_guard.sh proves the same shape statically.
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <set>

#include "api/api_guard_util.h"

namespace aclvmm_test {
namespace {

// The exported functions of the library that defines aclInit, as its dynamic symbol table says.
std::vector<std::string> exported_functions() {
  std::vector<std::string> names;
  Dl_info info{};
  void* sym = dlsym(RTLD_DEFAULT, "aclInit");
  if (!sym || !dladdr(sym, &info) || !info.dli_fname) return names;
  const std::string command = std::string("nm -D --defined-only '") + info.dli_fname + "'";
  FILE* p = popen(command.c_str(), "r");
  if (!p) return names;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    char value[64] = {0}, type[8] = {0}, name[256] = {0};
    if (sscanf(line, "%63s %7s %255s", value, type, name) != 3) continue;
    if (std::strcmp(type, "T") != 0 && std::strcmp(type, "W") != 0 && std::strcmp(type, "i") != 0) continue;
    std::string n = name;
    n = n.substr(0, n.find('@'));
    names.push_back(n);
  }
  pclose(p);
  return names;
}

// What a function answers on failure when it does not return aclError.
enum class Returns { kCode, kNullPointer, kZero, kMinusOne };
Returns returns_of(const std::string& name) {
  static const std::map<std::string, Returns> kNotCodes = {
      {"aclGetRecentErrMsg", Returns::kNullPointer},
      {"aclrtGetSocName", Returns::kNullPointer},
      {"aclvmmStatsJson", Returns::kNullPointer},
      {"aclvmmFaultRemaining", Returns::kZero},
      {"aclvmmKernelDeviceId", Returns::kMinusOne},
  };
  auto it = kNotCodes.find(name);
  return it == kNotCodes.end() ? Returns::kCode : it->second;
}

struct ThrowKind {
  int rule;
  const char* what;  // in the message
  aclError code;
};
const ThrowKind kKinds[] = {
    {ACLVMM_FAULT_THROW_BAD_ALLOC, "std::bad_alloc", kNoMemory},
    {ACLVMM_FAULT_THROW_LENGTH_ERROR, "std::length_error", kNoMemory},
    {ACLVMM_FAULT_THROW_SYSTEM_ERROR, "std::system_error", ACL_ERROR_RT_RESOURCE_ALLOC_FAIL},
    {ACLVMM_FAULT_THROW_RUNTIME_ERROR, "C++ exception", ACL_ERROR_INTERNAL_ERROR},
    {ACLVMM_FAULT_THROW_NON_STANDARD, "not a std::exception", ACL_ERROR_INTERNAL_ERROR},
};

// Every exported function takes at most 8 integer or pointer arguments; called with all of them 0
// (the x86-64 and AArch64 calling conventions pass them in registers, and a callee ignores those
// it does not take). The barrier throws before the body reads any of them; a function without a
// barrier would run its body on zeros and answer something else.
using AnyFunction = uint64_t (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                                 uint64_t, uint64_t);

// In the child: every kind in turn against `name`; returns how many checks failed, printing each.
int throw_at_every_kind(const std::string& name) {
  auto fn = reinterpret_cast<AnyFunction>(dlsym(RTLD_DEFAULT, name.c_str()));
  if (!fn) {
    fprintf(stderr, "%s: dlsym found nothing\n", name.c_str());
    return 1;
  }
  int failures = 0;
  for (const ThrowKind& k : kKinds) {
    if (aclvmmInjectFault(name.c_str(), 1, k.rule) != kOk) {
      fprintf(stderr, "%s: aclvmmInjectFault(%d) failed\n", name.c_str(), k.rule);
      ++failures;
      continue;
    }
    const uint64_t raw = fn(0, 0, 0, 0, 0, 0, 0, 0);
    bool ok = false;
    switch (returns_of(name)) {
      case Returns::kCode: ok = static_cast<int32_t>(raw) == k.code; break;
      case Returns::kNullPointer: ok = raw == 0; break;
      case Returns::kZero: ok = static_cast<uint32_t>(raw) == 0; break;
      case Returns::kMinusOne: ok = static_cast<int32_t>(raw) == -1; break;
    }
    if (!ok) {
      fprintf(stderr, "%s with %s: returned %lld (as int32 %d), expected %d or the failure value\n",
              name.c_str(), k.what, static_cast<long long>(raw), static_cast<int32_t>(raw), k.code);
      ++failures;
    }
    if (aclvmmFaultRemaining(name.c_str()) != 0) {
      fprintf(stderr, "%s with %s: the rule did not fire\n", name.c_str(), k.what);
      ++failures;
      aclvmmInjectFault(name.c_str(), 0, 0);
    }
    const char* m = aclGetRecentErrMsg();
    const std::string msg = m ? m : "";
    const std::string code = "(result " + std::to_string(k.code) + ")";
    if (msg.find(name + ":") == std::string::npos || msg.find(k.what) == std::string::npos ||
        msg.find(code) == std::string::npos) {
      fprintf(stderr, "%s with %s: message \"%s\" does not name the function, the exception and %s\n",
              name.c_str(), k.what, msg.c_str(), code.c_str());
      ++failures;
    }
  }
  return failures;
}

TEST(ApiGuardTest, EveryExportedFunctionTurnsEveryExceptionIntoACode) {
  const std::vector<std::string> names = exported_functions();
  // The 67 names of tests/abi/symbols.txt, aclrtMallocAlign32 and the 7 aclvmm* extensions.
  ASSERT_GE(names.size(), 75u) << "nm -D found too few exports";
  const std::set<std::string> unique(names.begin(), names.end());
  for (const char* must : {"aclInit", "aclrtMemSetAccess", "aclGetRecentErrMsg", "aclvmmInjectFault",
                           "aclrtMallocAlign32", "aclvmmKernelDeviceId"}) {
    EXPECT_TRUE(unique.count(must)) << must;
  }
  int checked = 0;
  for (const std::string& name : unique) {
    // One child per function: an escape aborts only that child, and the failure names it.
    const TimedChildResult r = run_in_child_for(30000, [&] {
      try {
        return throw_at_every_kind(name);
      } catch (...) {
        fprintf(stderr, "%s: a C++ exception crossed the C API\n", name.c_str());
        return kThrewExit;  // never back into gtest in the child
      }
    });
    EXPECT_FALSE(r.hung) << name;
    EXPECT_EQ(r.signal, 0) << name << " died of a signal (SIGABRT: an exception escaped)";
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.exit_code << " check(s) failed (see stderr)";
    ++checked;
  }
  EXPECT_EQ(checked * static_cast<int>(std::size(kKinds)), static_cast<int>(unique.size() * 5));
  printf("barrier thrown at: %d exported functions x %zu exception kinds\n", checked, std::size(kKinds));
}

// A throwing rule counts calls like any rule: the nth call throws, the earlier ones run normally,
// and a throwing rule does not fire on the runtime's own (code) check or the other way round.
TEST(ApiGuardTest, ThrowingRulesCountCallsAndCoexistWithCodeRules) {
  const CallOutcome o = call_in_child(30000, [] {
    if (aclvmmInjectFault("aclrtGetRunMode", 2, ACLVMM_FAULT_THROW_BAD_ALLOC) != kOk) return -1LL;
    aclrtRunMode mode;
    if (aclrtGetRunMode(&mode) != kOk) return -2LL;          // the 1st call runs
    if (aclvmmFaultRemaining("aclrtGetRunMode") != 1) return -3LL;
    if (aclrtGetRunMode(&mode) != kNoMemory) return -4LL;    // the 2nd throws
    if (aclrtGetRunMode(&mode) != kOk) return -5LL;          // and the rule is gone
    // A code rule on an entry that starts the runtime is still counted by the runtime's check.
    if (aclvmmInjectFault("aclrtSetDevice", 1, 507033) != kOk) return -6LL;
    if (aclrtSetDevice(0) != 507033) return -7LL;
    if (aclrtSetDevice(0) != kOk) return -8LL;
    (void)aclGetRecentErrMsg();
    // Negative codes other than the kinds, and throwing rules for backend steps, are refused.
    if (aclvmmInjectFault("aclrtSetDevice", 1, -6) != kParam) return -9LL;
    // Every level of step below the core (drivers/injection_steps.h) counts as a backend step.
    const char* const backend_steps[] = {"drv.map_cpu", "dev.phys.create", "emu.memfd.create",
                                         "host.shm.segment", "fake.any", "hal.any"};
    for (const char* step : backend_steps) {
      if (aclvmmInjectFault(step, 1, ACLVMM_FAULT_THROW_BAD_ALLOC) != kParam) return -10LL;
    }
    aclrtResetDevice(0);
    return 0LL;
  });
  EXPECT_RETURNS_CODE(o, 0);
}

}  // namespace
}  // namespace aclvmm_test
