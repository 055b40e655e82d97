// Conformance of the backend as a whole (device_backend.h): the statistics every backend must
// report, and a message for every failed result.
#include <cerrno>
#include <map>
#include <set>
#include <string>

#include "conformance/harness.h"

namespace aclvmm::conformance {
namespace {

class StatisticsRecorder final : public dev::StatisticsVisitor {
 public:
  void counter(const char* group, const char* name, uint64_t) override { add(group, name); }
  void flag(const char* group, const char* name, bool) override { add(group, name); }
  std::map<std::string, int> seen;  // "group.name" -> times reported

 private:
  void add(const char* group, const char* name) { ++seen[std::string(group) + "." + name]; }
};

class BackendConformance : public BackendTest {};

TEST_P(BackendConformance, RequiredStatisticsAreReportedOnce) {
  StatisticsRecorder recorder;
  be().visit_statistics(recorder);
  const std::set<std::string> required = {
      "ipc.imports_denied",       "managed.fault_tracking",  "managed.cpu_write_tracking",
      "managed.host_faults",      "managed.device_faults",   "managed.bytes_to_device",
      "managed.bytes_to_host",    "managed.evictions",       "managed.prefetch_bytes",
      "managed.read_copy_invalidations",
  };
  for (const std::string& name : required) EXPECT_EQ(recorder.seen[name], 1) << name;
}

TEST_P(BackendConformance, EveryFailureHasAMessage) {
  EXPECT_STRNE(be().name(), "");
  for (int e : {EINVAL, ENOMEM, EFAULT, EOPNOTSUPP, EBUSY, EXDEV, 4095}) {
    const std::string text = be().describe(dev::Result::from_errno(e));
    EXPECT_FALSE(text.empty()) << e;
    EXPECT_NE(text.find(std::to_string(e)), std::string::npos) << text;
  }
}

ACLVMM_CONFORMANCE_SUITE(BackendConformance);

}  // namespace
}  // namespace aclvmm::conformance
