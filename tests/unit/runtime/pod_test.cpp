// The super-pod configuration (runtime/pod.h, docs/fabric.md): the pod file's lines, and
// ACLVMM_SERVER_ID / ACLVMM_POD_FILE as load_config reads them.
#include "runtime/pod.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config.h"

namespace aclvmm {
namespace {

struct PodCase {
  const char* name;
  const char* text;
  int own;
  std::vector<PodMember> members;  // empty with `error` set: refused
  const char* error = nullptr;     // a part of the message
};

class ParsePod : public ::testing::TestWithParam<PodCase> {};

TEST_P(ParsePod, Table) {
  const PodCase& c = GetParam();
  auto pod = parse_pod(c.text, c.own);
  if (c.error != nullptr) {
    ASSERT_FALSE(pod.ok()) << c.name;
    EXPECT_EQ(pod.status().code(), kAclInvalidParam);
    EXPECT_NE(pod.status().message().find(c.error), std::string::npos) << pod.status().message();
    return;
  }
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  EXPECT_EQ(*pod, c.members);
}

INSTANTIATE_TEST_SUITE_P(
    Lines, ParsePod,
    ::testing::Values(
        PodCase{
            "two", "0 10.0.0.1\n1 10.0.0.2\n", 0, {{0, "10.0.0.1", 7017}, {1, "10.0.0.2", 7017}}},
        PodCase{"comments_blank_ports",
                "# pod\n\n  3   192.168.1.7:9000  # decode\n1022 [fd00::2]:1\n7 fd00::7\n",
                3,
                {{3, "192.168.1.7", 9000}, {1022, "fd00::2", 1}, {7, "fd00::7", 7017}}},
        PodCase{"own_missing", "1 10.0.0.2\n", 0, {}, "no line for this process's server 0"},
        PodCase{"empty", "", 0, {}, "no line for this process's server 0"},
        PodCase{"id_too_big", "1023 10.0.0.1\n", 0, {}, "line 1"},
        PodCase{"id_negative", "-1 10.0.0.1\n", 0, {}, "server id must be 0..1022"},
        PodCase{"id_not_a_number", "x 10.0.0.1\n", 0, {}, "server id must be 0..1022"},
        PodCase{"no_address", "0\n", 0, {}, "expected `server_id address`"},
        PodCase{"extra_word", "0 10.0.0.1 x\n", 0, {}, "unexpected \"x\""},
        PodCase{"host_name", "0 node1\n", 0, {}, "numeric IPv4 or IPv6"},
        PodCase{"bad_v4", "0 10.0.0.256\n", 0, {}, "numeric IPv4 or IPv6"},
        PodCase{"port_zero", "0 10.0.0.1:0\n", 0, {}, "numeric IPv4 or IPv6"},
        PodCase{"port_too_big", "0 10.0.0.1:65536\n", 0, {}, "numeric IPv4 or IPv6"},
        PodCase{"port_empty", "0 10.0.0.1:\n", 0, {}, "numeric IPv4 or IPv6"},
        PodCase{"v6_unclosed", "0 [fd00::1:7\n", 0, {}, "numeric IPv4 or IPv6"},
        PodCase{"twice", "0 10.0.0.1\n0 10.0.0.2\n", 0, {}, "line 2"}),
    [](const ::testing::TestParamInfo<PodCase>& info) { return std::string(info.param.name); });

// load_config with the two variables; every other variable unset meanwhile.
class PodConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"ACLVMM_SERVER_ID", "ACLVMM_POD_FILE"}) {
      const char* old = std::getenv(v);
      saved_.emplace_back(v, old ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(v);
    }
    char dir[] = "/tmp/aclvmm-pod-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
    (void)::unlink((dir_ + "/pod").c_str());
    (void)::rmdir(dir_.c_str());
  }
  std::string pod_file(const std::string& text) {
    const std::string path = dir_ + "/pod";
    std::ofstream(path) << text;
    return path;
  }
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
  std::string dir_;
};

TEST_F(PodConfig, DefaultIsServerZeroAlone) {
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server_id, 0);
  EXPECT_TRUE(c->pod.empty());
}

TEST_F(PodConfig, ServerIdAndPodFileAreRead) {
  ::setenv("ACLVMM_SERVER_ID", "2", 1);
  ::setenv("ACLVMM_POD_FILE", pod_file("1 10.1.0.1\n2 10.1.0.2:7100\n").c_str(), 1);
  auto c = load_config();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server_id, 2);
  EXPECT_EQ(c->pod, (std::vector<PodMember>{{1, "10.1.0.1", 7017}, {2, "10.1.0.2", 7100}}));
}

TEST_F(PodConfig, MalformedValuesFailNamingTheVariable) {
  struct Row {
    const char* server_id;
    const char* pod;  // file content; nullptr: no ACLVMM_POD_FILE; "!": a path that is no file
    const char* said;
  };
  const Row rows[] = {
      {"1023", nullptr, "ACLVMM_SERVER_ID=\"1023\""},
      {"-1", nullptr, "ACLVMM_SERVER_ID=\"-1\""},
      {"x", nullptr, "ACLVMM_SERVER_ID=\"x\""},
      {"0", "!", "ACLVMM_POD_FILE="},
      {"0", "0 not-an-address\n", "ACLVMM_POD_FILE line 1"},
      {"5", "0 10.0.0.1\n", "no line for this process's server 5"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.server_id) + " / " + (r.pod ? r.pod : "(none)"));
    ::setenv("ACLVMM_SERVER_ID", r.server_id, 1);
    if (r.pod == nullptr) {
      ::unsetenv("ACLVMM_POD_FILE");
    } else if (std::string(r.pod) == "!") {
      ::setenv("ACLVMM_POD_FILE", (dir_ + "/missing").c_str(), 1);
    } else {
      ::setenv("ACLVMM_POD_FILE", pod_file(r.pod).c_str(), 1);
    }
    auto c = load_config();
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), kAclInvalidParam);
    EXPECT_NE(c.status().message().find(r.said), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace aclvmm
