// Memory of another server through aclvmm (a FABRIC export imported across network namespaces)
// against raw libfabric RMA of the same sizes between the same namespaces, in the same run.
//
// Each side is a process of this binary (a role, below) started in its namespace with
// `ip netns exec`; the benchmark process asks the importer or the raw reader for one operation at
// a time and records the time that process measured around it (manual time), so the pipe to it
// does not count.
#include "bench_fabric.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "bench_fabric_raw.h"
#include "bench_util.h"
#include "fabric/netns_pod.h"

extern char** environ;

namespace bench {
namespace {

constexpr char kExporterRole[] = "--bench-fabric-exporter";
constexpr char kImporterRole[] = "--bench-fabric-importer";
constexpr char kRawTargetRole[] = "--bench-raw-target";
constexpr char kRawReaderRole[] = "--bench-raw-reader";
constexpr long kExportSize = 64l << 20;  // the largest operation of the benchmarks

// ---- the aclvmm roles ---------------------------------------------------------------------------

// Device memory of kExportSize mapped at *va on the current device.
bool mapped_device_memory(void** va, aclrtDrvMemHandle* h) {
  aclrtPhysicalMemProp p = device_prop();
  return aclrtMallocPhysical(h, kExportSize, &p, 0) == ACL_SUCCESS &&
         aclrtReserveMemAddress(va, kExportSize, 0, nullptr, 0) == ACL_SUCCESS &&
         aclrtMapMem(*va, kExportSize, 0, *h, 0) == ACL_SUCCESS;
}

int run_exporter() {
  void* va = nullptr;
  aclrtDrvMemHandle h = nullptr;
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
      !mapped_device_memory(&va, &h) ||
      aclrtMemset(va, kExportSize, 0x5A, kExportSize) != ACL_SUCCESS) {
    return 1;
  }
  uint8_t blob[128] = {};
  if (aclrtMemExportToShareableHandleV2(h, ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
                                        ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, blob) != ACL_SUCCESS) {
    return 1;
  }
  for (uint8_t b : blob) std::printf("%02x", b);
  std::printf("\n");
  std::fflush(stdout);
  char b;
  while (read(STDIN_FILENO, &b, 1) > 0) {
  }
  return 0;  // exit-time cleanup ends the export
}

// Answers "d2d N" (remote -> local device), "h2d N" (host -> remote), "d2h N" (remote -> host)
// with "<rc> <ns>".
int run_importer(const char* handle_hex) {
  uint8_t blob[128] = {};
  for (size_t i = 0; i < sizeof blob && handle_hex[2 * i] && handle_hex[2 * i + 1]; ++i) {
    blob[i] =
        static_cast<uint8_t>(std::strtoul(std::string(handle_hex + 2 * i, 2).c_str(), nullptr, 16));
  }
  aclrtDrvMemHandle remote = nullptr, local = nullptr;
  void* remote_va = nullptr;
  void* local_va = nullptr;
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
      aclrtMemImportFromShareableHandleV2(blob, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &remote) !=
          ACL_SUCCESS ||
      aclrtReserveMemAddress(&remote_va, kExportSize, 0, nullptr, 0) != ACL_SUCCESS ||
      aclrtMapMem(remote_va, kExportSize, 0, remote, 0) != ACL_SUCCESS ||
      !mapped_device_memory(&local_va, &local)) {
    return 1;
  }
  std::vector<uint8_t> host(kExportSize, 1);
  std::string op;
  size_t n = 0;
  while (std::cin >> op >> n) {
    if (n == 0 || n > static_cast<size_t>(kExportSize)) return 1;
    const uint64_t t0 = now_ns();
    aclError rc = ACL_SUCCESS;
    if (op == "d2d") {
      rc = aclrtMemcpy(local_va, n, remote_va, n, ACL_MEMCPY_DEVICE_TO_DEVICE);
    } else if (op == "h2d") {
      rc = aclrtMemcpy(remote_va, n, host.data(), n, ACL_MEMCPY_HOST_TO_DEVICE);
    } else {
      rc = aclrtMemcpy(host.data(), n, remote_va, n, ACL_MEMCPY_DEVICE_TO_HOST);
    }
    std::printf("%d %llu\n", rc, static_cast<unsigned long long>(now_ns() - t0));
    std::fflush(stdout);
  }
  return 0;
}

// ---- the rig
// --------------------------------------------------------------------------------------

// A role of this binary in a namespace, spoken to line by line.
class Helper {
 public:
  Helper(const std::string& ns, const std::vector<std::string>& role,
         const std::vector<std::string>& env) {
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return;
    self[len] = '\0';
    std::vector<std::string> args = {"/usr/sbin/ip", "netns", "exec", ns, self};
    args.insert(args.end(), role.begin(), role.end());
    std::vector<std::string> vars = env;
    for (char** e = environ; *e; ++e) vars.push_back(*e);  // the first of a name wins
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    for (auto& v : vars) envp.push_back(&v[0]);
    envp.push_back(nullptr);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Helper() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      for (int i = 0; i < 500 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(10000);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;

  // One line from the helper ("" after 30 s or at its end).
  std::string line() {
    size_t nl;
    while ((nl = buf_.find('\n')) == std::string::npos) {
      pollfd p{from_, POLLIN, 0};
      char b[4096];
      if (from_ < 0 || poll(&p, 1, 30000) <= 0) return "";
      const ssize_t n = read(from_, b, sizeof b);
      if (n <= 0) return "";
      buf_.append(b, static_cast<size_t>(n));
    }
    std::string l = buf_.substr(0, nl);
    buf_.erase(0, nl + 1);
    return l;
  }
  // One operation: the nanoseconds the helper measured, or -1.
  double timed(const std::string& op, size_t n) {
    const std::string l = op + " " + std::to_string(n) + "\n";
    if (write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return -1;
    std::istringstream in(line());
    int rc = -1;
    double ns = -1;
    in >> rc >> ns;
    return rc == 0 ? ns : -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

struct Rig {
  std::unique_ptr<aclvmm_test::NetnsPod> pod;
  std::string dir, pod_file;
  std::unique_ptr<Helper> exporter, importer, target, reader;
  std::string why;  // empty when every helper is up

  Rig() {
    if (!aclvmm_test::NetnsPod::available(&why)) return;
    pod = std::make_unique<aclvmm_test::NetnsPod>(2);
    char d[] = "/tmp/aclvmm-bench-pod-XXXXXX";
    if (!pod->ok() || mkdtemp(d) == nullptr) {
      why = "the namespaces could not be set up";
      return;
    }
    dir = d;
    pod_file = dir + "/pod";
    std::ofstream(pod_file) << "0 " << aclvmm_test::NetnsPod::address(0) << "\n1 "
                            << aclvmm_test::NetnsPod::address(1) << "\n";
    const std::vector<std::string> soc = {"ACLVMM_SOC=Ascend910_9391",
                                          "ACLVMM_POD_FILE=" + pod_file};
    auto env = [&](int server) {
      std::vector<std::string> e = soc;
      e.push_back("ACLVMM_SERVER_ID=" + std::to_string(server));
      return e;
    };
    exporter =
        std::make_unique<Helper>(pod->host_ns(0), std::vector<std::string>{kExporterRole}, env(0));
    const std::string handle = exporter->line();
    if (handle.size() != 256) {
      why = "the aclvmm exporter did not start";
      return;
    }
    importer = std::make_unique<Helper>(pod->host_ns(1),
                                        std::vector<std::string>{kImporterRole, handle}, env(1));
    target = std::make_unique<Helper>(
        pod->host_ns(0),
        std::vector<std::string>{kRawTargetRole, aclvmm_test::NetnsPod::address(0),
                                 std::to_string(kExportSize)},
        std::vector<std::string>{});
    std::istringstream offer(target->line());
    std::string name, key, base;
    if (!(offer >> name >> key >> base)) {
      why = "the raw libfabric target did not start";
      return;
    }
    reader = std::make_unique<Helper>(
        pod->host_ns(1),
        std::vector<std::string>{kRawReaderRole, aclvmm_test::NetnsPod::address(1), name, key,
                                 base},
        std::vector<std::string>{});
  }
  ~Rig() {
    reader.reset();
    target.reset();
    importer.reset();
    exporter.reset();
    pod.reset();
    if (!pod_file.empty()) std::remove(pod_file.c_str());
    if (!dir.empty()) rmdir(dir.c_str());
  }
};

std::unique_ptr<Rig>& rig_slot() {
  static std::unique_ptr<Rig> rig;
  return rig;
}

Rig* rig(benchmark::State& state) {
  auto& r = rig_slot();
  if (!r) r = std::make_unique<Rig>();
  if (!r->why.empty()) {
    state.SkipWithError(("cross-server benchmarks need " + r->why).c_str());
    return nullptr;
  }
  return r.get();
}

void measure(benchmark::State& state, std::unique_ptr<Helper> Rig::*who, const char* op) {
  Rig* r = rig(state);
  if (r == nullptr) return;
  const size_t n = static_cast<size_t>(state.range(0));
  Helper& h = *(r->*who);
  // The first operation makes the connections; it is not measured.
  if (h.timed(op, n) < 0) return state.SkipWithError((std::string(op) + " failed").c_str());
  for (auto _ : state) {
    const double ns = h.timed(op, n);
    if (ns < 0) return state.SkipWithError((std::string(op) + " failed").c_str());
    state.SetIterationTime(ns / 1e9);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void Acl_FabricD2D(benchmark::State& s) { measure(s, &Rig::importer, "d2d"); }
void Acl_FabricH2D(benchmark::State& s) { measure(s, &Rig::importer, "h2d"); }
void Acl_FabricD2H(benchmark::State& s) { measure(s, &Rig::importer, "d2h"); }
void Raw_FabricRead(benchmark::State& s) { measure(s, &Rig::reader, "read"); }
void Raw_FabricWrite(benchmark::State& s) { measure(s, &Rig::reader, "write"); }

BENCHMARK(Acl_FabricD2D)->Arg(1 << 20)->UseManualTime();
BENCHMARK(Raw_FabricRead)->Arg(8)->Arg(1 << 20)->UseManualTime();
BENCHMARK(Acl_FabricD2H)->Arg(8)->Arg(1 << 20)->UseManualTime();
BENCHMARK(Acl_FabricH2D)->Arg(1 << 20)->UseManualTime();
BENCHMARK(Raw_FabricWrite)->Arg(1 << 20)->UseManualTime();

}  // namespace

bool fabric_role(int argc, char** argv, int* status) {
  if (argc < 2) return false;
  const std::string role = argv[1];
  if (role == kExporterRole) {
    *status = run_exporter();
  } else if (role == kImporterRole && argc >= 3) {
    *status = run_importer(argv[2]);
  } else if (role == kRawTargetRole && argc >= 4) {
    *status = run_raw_target(argv[2], std::atol(argv[3]));
  } else if (role == kRawReaderRole && argc >= 6) {
    *status = run_raw_reader(argv[2], argv[3], argv[4], argv[5]);
  } else {
    return false;
  }
  return true;
}

void release_fabric_rig() { rig_slot().reset(); }

}  // namespace bench
