// main() of the fabric tests: without root, the tests run inside a user namespace of their own
// (`unshare -rnm`), where this user may create the network namespaces the tests need. Root (CI)
// runs them as they are.
//
// In the user namespace the process is root over namespaces it owns only: the veths, bridges and
// addresses exist nowhere else, and /run is a private tmpfs (where `ip netns` keeps its names),
// so nothing of the machine's is touched. When the kernel does not allow unprivileged user
// namespaces, the tests run here and skip, saying why (netns_pod.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr char kInside[] = "ACLVMM_FABRIC_TESTS_IN_USERNS";

bool listing(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--gtest_list_tests", 18) == 0) return true;
  }
  return false;
}

bool user_namespaces_work() {
  return std::system("unshare -rnm --propagation private true > /dev/null 2>&1") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (::geteuid() != 0 && std::getenv(kInside) == nullptr && !listing(argc, argv) &&
      user_namespaces_work()) {
    ::setenv(kInside, "1", 1);
    std::vector<std::string> args = {"unshare",
                                     "-rnm",
                                     "--propagation",
                                     "private",
                                     "sh",
                                     "-c",
                                     "mount -t tmpfs tmpfs /run && exec \"$0\" \"$@\""};
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
      self[n] = '\0';
      args.push_back(self);
      for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
      std::vector<char*> raw;
      for (auto& a : args) raw.push_back(&a[0]);
      raw.push_back(nullptr);
      ::execvp("unshare", raw.data());
    }
    // Could not re-execute: run here, where the tests skip and say why.
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
