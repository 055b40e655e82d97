// Process facts from /proc (drivers/host/process_facts.h).
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "drivers/host/process_facts.h"

namespace aclvmm::dev::host {
namespace {

TEST(ProcessFactsTest, StartTimesOrderProcessesAndVanishWithThem) {
  const uint64_t mine = process_start_time(::getpid());
  EXPECT_GT(mine, 0u);
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  EXPECT_GE(process_start_time(child), mine) << "a child starts no earlier than its parent";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(process_start_time(child), 0u) << "reaped";
  EXPECT_EQ(process_start_time(0), 0u);
  EXPECT_EQ(process_start_time(-5), 0u);
}

TEST(ProcessFactsTest, BareTgidIsTheFirstNSpid) {
  std::ifstream status("/proc/self/status");
  std::string line;
  long first = ::getpid();
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) == 0) {
      first = std::stol(line.substr(6));
      break;
    }
  }
  EXPECT_EQ(bare_tgid(), first);
  EXPECT_NE(own_pid_namespace(), 0u);
}

TEST(ProcessFactsTest, SmallFilesReadWhole) {
  char buf[64];
  size_t len = 0;
  EXPECT_FALSE(read_small_file("/proc/self/no-such-entry", buf, sizeof buf, &len));
  ASSERT_TRUE(read_small_file("/proc/self/stat", buf, sizeof buf, &len));
  EXPECT_EQ(len, sizeof buf) << "at most cap bytes";
  EXPECT_EQ(std::stol(std::string(buf, len)), ::getpid());
}

}  // namespace
}  // namespace aclvmm::dev::host
