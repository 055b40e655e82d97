// aclvmm-smi: what npu-smi info shows, for the emulated devices: every process that uses aclvmm
// and the device memory it holds, read from the processes' statistics segments (docs/smi.md).
// It does not load libascendcl: it reads the files the library publishes.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "observability/smi_layout.h"
#include "render.h"
#include "snapshot.h"

namespace {

void usage(FILE* to) {
  std::fprintf(to,
               "usage: aclvmm-smi [info] [--json] [--dir DIR] [--keep-stale]\n"
               "  info          the device and process tables (the default)\n"
               "  --json        the same as JSON, for scripts\n"
               "  --dir DIR     where the segments are (default: $%s, else %s)\n"
               "  --keep-stale  do not delete segments of processes that are gone\n",
               aclvmm::smi::kDirEnv, aclvmm::smi::kDefaultDir);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  bool remove_stale = true;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "info" && i == 1) {
      continue;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--keep-stale") {
      remove_stale = false;
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "aclvmm-smi: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (dir.empty()) {
    const char* env = std::getenv(aclvmm::smi::kDirEnv);
    dir = env && *env ? env : aclvmm::smi::kDefaultDir;
  }
  if (dir == "none") {
    std::fprintf(stderr, "aclvmm-smi: %s=none: processes publish no statistics\n",
                 aclvmm::smi::kDirEnv);
    return 1;
  }
  aclvmm::smi_tool::Snapshot snap;
  if (int rc = aclvmm::smi_tool::take_snapshot(dir, remove_stale, &snap)) {
    std::fprintf(stderr, "aclvmm-smi: cannot read %s: %s\n", dir.c_str(), std::strerror(-rc));
    return 1;
  }
  const std::string version = ACLVMM_VERSION;
  const std::string text = json ? aclvmm::smi_tool::render_json(snap, version)
                                : aclvmm::smi_tool::render_table(snap, version);
  std::fputs(text.c_str(), stdout);
  return 0;
}
