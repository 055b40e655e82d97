// The managed-memory trace (src/observability/trace.*): each event written once as a Chrome trace
// instant with its page and device, nothing from before open() or from an earlier recording in
// the file, and a flush without a path writing nothing.
#include "observability/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace aclvmm {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class TraceTest : public ::testing::Test {
 protected:
  void TearDown() override {
    trace::open("");
    std::remove(path_.c_str());
  }
  const std::string path_ = ::testing::TempDir() + "aclvmm_trace_test." + std::to_string(getpid());
};

TEST_F(TraceTest, EventsAreWrittenOnceEachWithTheirPageAndDevice) {
  trace::open("");
  EXPECT_FALSE(trace::enabled());
  trace::event("before_open", 0x1000, 0);

  trace::open(path_);
  EXPECT_TRUE(trace::enabled());
  trace::event("to_device", 0x12c0000000, 3);
  trace::event("to_host", 0x12c0200000, -1);
  trace::flush();
  const std::string text = read_file(path_);
  EXPECT_EQ(text.rfind("{\"traceEvents\": [\n", 0), 0u) << text;
  EXPECT_EQ(count_of(text, "\"ph\": \"i\""), 2u) << text;
  EXPECT_EQ(count_of(text, "before_open"), 0u);
  EXPECT_EQ(count_of(text, "\"name\": \"to_device\""), 1u);
  EXPECT_NE(text.find("\"args\": {\"page\": \"0x12c0000000\", \"device\": 3}}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"args\": {\"page\": \"0x12c0200000\", \"device\": -1}}\n"),
            std::string::npos)
      << "the last event has no comma";
  EXPECT_NE(text.find("\"pid\": " + std::to_string(getpid())), std::string::npos);
  EXPECT_NE(text.find("\"otherData\": {\"dropped_events\": 0}}"), std::string::npos);

  // Flushing again writes the same recording; a new open() discards it.
  trace::flush();
  EXPECT_EQ(read_file(path_), text);
  trace::open(path_);
  trace::event("evicted", 0x12c0400000, 1);
  trace::flush();
  const std::string next = read_file(path_);
  EXPECT_EQ(count_of(next, "\"ph\": \"i\""), 1u) << next;
  EXPECT_EQ(count_of(next, "to_device"), 0u);
}

TEST_F(TraceTest, AFlushWithoutAPathWritesNothing) {
  trace::open("");
  trace::event("to_device", 0x1000, 0);
  trace::flush();
  std::ifstream in(path_);
  EXPECT_FALSE(in.good()) << "no file was written";
}

}  // namespace
}  // namespace aclvmm
