// Security of sharing between processes (behavior.md section 7, docs/sharing.md): tokens cannot be
// guessed or bent into other tokens, unlisted processes never import, an imported handle reaches
// exactly its own bytes, and the exporter's endpoint shrugs off malformed, spoofed and slow
// clients without leaking descriptors or delaying legitimate importers.
//
// Related tests elsewhere: a reused pid is refused in ShareWhitelist.PidListedBeforeTheImporter-
// StartedIsRefused, an unlisted process in ShareWhitelist.ListedImporterSucceedsOthersAreRefused,
// one to three silent clients in ShareRobust.*SilentClient*.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <set>

#include "integration/share_peer/peer_client.h"
#include "integration/share_peer/raw_endpoint.h"

namespace {

using namespace share_test;
using ShareSecurity = AclTest;

constexpr uint64_t kLow40 = (uint64_t(1) << 40) - 1;

uint64_t seed_from_env(const char* name) {
  if (const char* v = getenv(name)) {
    if (*v) return std::strtoull(v, nullptr, 0);
  }
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// ---- the exporting peer and its descriptors

// The peer exports one 2 MiB device-0 handle per entry of `flags` (its export flags); handle k
// sits in slot k, mapped, holding peer_pattern(seed0 + k).
std::vector<uint64_t> export_in_peer(Peer& e, unsigned seed0, const std::vector<int>& flags) {
  std::vector<uint64_t> tokens;
  for (size_t k = 0; k < flags.size(); ++k) {
    EXPECT_EQ(e.rc(line("alloc", k, 0, k2M)), kOk);
    EXPECT_EQ(e.rc(line("map", k, k2M)), kOk);
    EXPECT_EQ(e.rc(line("write", k, 0, k2M, seed0 + k)), kOk);
    tokens.push_back(e.export_token(static_cast<int>(k), flags[k]));
  }
  // A failed call opens the peer's log file now, so that the first refusal it logs later is not
  // mistaken for a leaked descriptor.
  EXPECT_EQ(e.rc("free 31"), kParam);
  return tokens;
}

int open_fds_of(Peer& p) {
  const auto r = p.cmd("counts");
  return r.size() == 3 ? std::atoi(r[1].c_str()) : -1;
}

// The exporter's descriptor count goes back to `base` (the listener closes what it is done with
// within its wake-up; a silent client is dropped after 2 s).
void expect_fds_settle(Peer& e, int base, const std::string& after, int within_ms = 3000) {
  int now = open_fds_of(e);
  for (int waited = 0; now != base && waited < within_ms; waited += 50) {
    usleep(50 * 1000);
    now = open_fds_of(e);
  }
  EXPECT_EQ(now, base) << "exporter descriptors after " << after;
}

// A legitimate importer in another process gets the token at once, with the right bytes.
void expect_prompt_import(Peer& im, uint64_t token, unsigned seed, const std::string& after) {
  const double t0 = now_s();
  EXPECT_EQ(Peer::code_of(im.cmd(line("import 7", hex(token), 0))), kOk) << "import after " << after;
  EXPECT_LT(now_s() - t0, 1.0) << "import after " << after;
  EXPECT_EQ(im.rc(line("map 7", k2M)), kOk);
  EXPECT_EQ(im.cmd(line("check 7 0", k2M, seed)), (std::vector<std::string>{"0", "1"})) << after;
  EXPECT_EQ(im.rc("unmap 7"), kOk);
  EXPECT_EQ(im.rc("free 7"), kOk);
}

// This process imports `token` and checks all its bytes; the handle is returned, mapped at *va.
aclrtDrvMemHandle import_and_check(uint64_t token, unsigned seed, void** va) {
  aclrtDrvMemHandle h = nullptr;
  EXPECT_EQ(aclrtMemImportFromShareableHandle(token, 0, &h), kOk) << hex(token);
  *va = reserve(k2M);
  EXPECT_EQ(aclrtMapMem(*va, k2M, 0, h, 0), kOk);
  EXPECT_TRUE(get(*va, k2M) == share_peer::peer_pattern(k2M, seed)) << hex(token);
  return h;
}
void unmap_and_free(aclrtDrvMemHandle h, void* va) {
  EXPECT_EQ(aclrtUnmapMem(va), kOk);
  EXPECT_EQ(aclrtReleaseMemAddress(va), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
}

// ---- forged tokens

// Imports every value of `forged` (none is a token anyone exported) and returns how many did not
// give exactly 107017 (behavior.md §7: unknown token → EFAULT → 107017), describing the first few.
long import_all(const std::vector<uint64_t>& forged, std::string* first) {
  long wrong = 0;
  for (uint64_t v : forged) {
    aclrtDrvMemHandle h = nullptr;
    const aclError rc = aclrtMemImportFromShareableHandle(v, 0, &h);
    if (rc == kBadHandle) continue;
    if (++wrong <= 5) *first += hex(v) + " → " + std::to_string(rc) + "; ";
    if (rc == kOk) aclrtFreePhysical(h);
  }
  return wrong;
}

// Tokens one step away from a real one: every single-bit flip, every other device field, the
// neighbouring share ids.
std::vector<uint64_t> near_misses(uint64_t token) {
  std::vector<uint64_t> out;
  for (int bit = 0; bit < 64; ++bit) out.push_back(token ^ (uint64_t(1) << bit));
  for (uint64_t d = 0; d < 256; ++d) {
    if (d != device_of(token)) out.push_back((token & 0xffffffffull) | (d << 32));
  }
  for (uint32_t delta : {1u, 2u, 0x10000u, 0x80000000u, 0xffffffffu}) {
    const uint32_t id = share_id_of(token) + delta;
    if (id != 0) out.push_back((token & ~0xffffffffull) | id);
  }
  out.push_back(token & ~0xffffffffull);  // share id 0
  return out;
}

// 10 000 random values (half any 64 bits, half of the token's shape: bits 40-63 clear), and every
// near miss of four live tokens, never import; the live tokens do, before and after, also while
// this process holds their imports (which must not make near misses of them resolve locally).
TEST_F(ShareSecurity, ForgedTokensNeverImport) {
  Peer e;
  // Two open exports and two that list this process: every real token is importable here.
  const std::vector<uint64_t> real = export_in_peer(e, 300, {1, 0, 1, 0});
  const int32_t me = getpid();
  EXPECT_EQ(e.rc(line("setpid", hex(real[1]), me)), kOk);
  EXPECT_EQ(e.rc(line("setpid", hex(real[3]), me)), kOk);
  {
    // The exporter keeps this process's connection after its first import (two descriptors,
    // docs/sharing.md §5): counted from then on, it is part of the baseline.
    void* va = nullptr;
    aclrtDrvMemHandle h = import_and_check(real[0], 300, &va);
    unmap_and_free(h, va);
  }
  const int fds0 = open_fds_of(e);
  const long long denied0 = stat_int(e.stats(), "ipc.imports_denied");
  const LiveCounts live0 = live_counts();

  const uint64_t seed = seed_from_env("ACLVMM_FORGE_SEED");
  std::printf("forged tokens: seed %llu (ACLVMM_FORGE_SEED reproduces it)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::set<uint64_t> live(real.begin(), real.end());
  std::vector<uint64_t> random_tokens;
  while (random_tokens.size() < 10000) {
    uint64_t v = rng();
    if (random_tokens.size() % 2) v &= kLow40;
    if (!live.count(v)) random_tokens.push_back(v);
  }
  std::vector<uint64_t> misses;
  for (uint64_t t : real) {
    for (uint64_t v : near_misses(t)) {
      if (!live.count(v)) misses.push_back(v);
    }
  }

  std::string first;
  const double t0 = now_s();
  EXPECT_EQ(import_all(random_tokens, &first), 0) << "seed " << seed << ": " << first;
  // The near misses, first with no import of the real tokens held here, then with all four held.
  EXPECT_EQ(import_all(misses, &first), 0) << first;
  aclrtDrvMemHandle held[4];
  void* held_va[4];
  for (size_t k = 0; k < real.size(); ++k) held[k] = import_and_check(real[k], 300 + k, &held_va[k]);
  EXPECT_EQ(import_all(misses, &first), 0) << "while this process holds the real imports: " << first;
  // The exporter-only call says "unknown" for every near miss too, never "someone else's".
  long setpid_wrong = 0;
  for (uint64_t v : misses) {
    int32_t pid = me;
    const aclError rc = aclrtMemSetPidToShareableHandle(v, &pid, 1);
    if (rc != kBadHandle && ++setpid_wrong <= 5) first += "setpid " + hex(v) + " → " + std::to_string(rc) + "; ";
  }
  EXPECT_EQ(setpid_wrong, 0) << first;
  std::printf("forged tokens: %zu random and %zu near misses (x2 imports, x1 set-pid) in %.1f s\n",
              random_tokens.size(), misses.size(), now_s() - t0);
  for (size_t k = 0; k < real.size(); ++k) unmap_and_free(held[k], held_va[k]);

  // The real tokens still work; the storm left nothing behind on either side and refused nobody.
  for (size_t k = 0; k < real.size(); ++k) {
    void* va = nullptr;
    aclrtDrvMemHandle h = import_and_check(real[k], 300 + k, &va);
    unmap_and_free(h, va);
  }
  EXPECT_EQ(live_counts(), live0);
  EXPECT_EQ(stat_int(e.stats(), "ipc.imports_denied"), denied0);
  expect_fds_settle(e, fds0, "the forged imports");
  EXPECT_EQ(e.finish(), 0);
}

// ---- who may import

// Variants of "not on the whitelist" that the whitelist tests do not cover: listed for another
// token of the same exporter, a forked child of a listed process, and entries that are no process
// (-1, a pid nobody has); in every case the listed process itself gets in.
TEST_F(ShareSecurity, UnlistedProcessesNeverImport) {
  LocalExport a = export_local(311);
  LocalExport b = export_local(312);
  Peer p, stranger;
  const int32_t ppid = p.tgid();
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(a.token, const_cast<int32_t*>(&ppid), 1), kOk);
  int32_t nobody[] = {-1, 0x3fffffff, stranger.tgid() + 100000};
  ASSERT_EQ(aclrtMemSetPidToShareableHandle(b.token, nobody, 3), kOk);
  const long long denied0 = stat_int(stats(), "ipc.imports_denied");
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Peer::code_of(p.cmd(line("import 1", hex(b.token), 0))), kDrv) << "listed for A only";
    EXPECT_EQ(Peer::code_of(stranger.cmd(line("import 1", hex(b.token), 0))), kDrv);
    EXPECT_EQ(Peer::code_of(stranger.cmd(line("import 1", hex(a.token), 0))), kDrv);
  }
  EXPECT_EQ(stat_int(stats(), "ipc.imports_denied") - denied0, 30);
  ASSERT_EQ(Peer::code_of(p.cmd(line("import 0", hex(a.token), 0))), kOk);
  ASSERT_EQ(p.rc(line("map 0", k2M)), kOk);
  EXPECT_EQ(p.cmd(line("check 0 0", k2M, 311)), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(p.finish(), 0);
  EXPECT_EQ(stranger.finish(), 0);
  a.release();
  b.release();

  // This process is listed by a peer exporter; a child it forks has its own pid and is refused
  // (it inherits no device: docs/architecture.md, "fork").
  Peer e;
  const std::vector<uint64_t> t = export_in_peer(e, 313, {0});
  const int32_t me = getpid();
  ASSERT_EQ(e.rc(line("setpid", hex(t[0]), me)), kOk);
  EXPECT_CHILD_OK(run_in_child([&] {
                    if (aclrtSetDevice(0) != kOk) return 2;
                    aclrtDrvMemHandle h = nullptr;
                    return aclrtMemImportFromShareableHandle(t[0], 0, &h) == kDrv ? 0 : 1;
                  }),
                  "the forked child was not refused");
  void* va = nullptr;
  aclrtDrvMemHandle h = import_and_check(t[0], 313, &va);
  unmap_and_free(h, va);
  EXPECT_EQ(stat_int(e.stats(), "ipc.imports_denied"), 1);
  EXPECT_EQ(e.finish(), 0);
}

// Having imported A, nothing reaches past A's bytes: not a larger mapping, not an offset, not a
// copy that runs past the mapping; the exporter's neighbouring export B stays out of reach (its
// bytes never show up in any buffer).
TEST_F(ShareSecurity, ImportedHandleReachesOnlyItsOwnBytes) {
  Peer e;
  const std::vector<uint64_t> t = export_in_peer(e, 320, {1, 1});
  const std::string a_bytes = share_peer::peer_pattern(k2M, 320);
  const std::string b_bytes = share_peer::peer_pattern(k2M, 321);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMemImportFromShareableHandle(t[0], 0, &h), kOk);
  void* r = reserve(3 * k2M);
  EXPECT_EQ(aclrtMapMem(r, 2 * k2M, 0, h, 0), kNoMemory) << "behavior.md §3: size larger than the handle";
  EXPECT_EQ(aclrtMapMem(r, k2M, k2M, h, 0), kRtParam) << "§3: offset must be 0";
  void* a = at(r, k2M);  // A in the middle, unmapped reservation on both sides
  ASSERT_EQ(aclrtMapMem(a, k2M, 0, h, 0), kOk);
  EXPECT_TRUE(get(a, k2M) == a_bytes);

  struct Probe {
    const char* what;
    size_t offset;  // from the start of A's mapping (may be negative by wrapping)
    size_t length;
  };
  const Probe probes[] = {
      {"past the end", k2M, 4096},
      {"straddling the end", k2M - 2048, 4096},
      {"A and everything after", 0, 2 * k2M},
      {"one byte past", 0, k2M + 1},
      {"straddling the start", static_cast<size_t>(-2048), 4096},
      {"before the start", static_cast<size_t>(-static_cast<ptrdiff_t>(k2M)), 4096},
  };
  for (const Probe& p : probes) {
    SCOPED_TRACE(p.what);
    std::string buf(p.length, '\x5a');
    const aclError rc = aclrtMemcpy(&buf[0], p.length, at(a, p.offset), p.length, ACL_MEMCPY_DEVICE_TO_HOST);
    EXPECT_EQ(rc, kDrv);
    EXPECT_TRUE(all_bytes(buf, '\x5a')) << "a failed copy filled the buffer";
    EXPECT_EQ(buf.find(b_bytes.substr(0, 64)), std::string::npos);
    // And the other direction: nothing is written outside A either.
    const std::string junk(p.length, '\x66');
    EXPECT_EQ(aclrtMemcpy(at(a, p.offset), p.length, junk.data(), p.length, ACL_MEMCPY_HOST_TO_DEVICE), kDrv);
  }
  EXPECT_TRUE(get(a, k2M) == a_bytes) << "a refused write changed A";
  void* base = nullptr;
  size_t size = 0;
  ASSERT_EQ(aclrtMemGetAddressRange(at(a, 4096), &base, &size), kOk);
  EXPECT_EQ(base, a);
  EXPECT_EQ(size, k2M);
  EXPECT_EQ(aclrtUnmapMem(a), kOk);
  EXPECT_EQ(aclrtFreePhysical(h), kOk);
  EXPECT_EQ(aclrtMapMem(a, k2M, 0, h, 0), kRtParam) << "the freed handle is gone";
  EXPECT_EQ(aclrtReleaseMemAddress(r), kOk);
  // B was there all along, for whoever has its token.
  void* vb = nullptr;
  aclrtDrvMemHandle hb = import_and_check(t[1], 321, &vb);
  unmap_and_free(hb, vb);
  EXPECT_EQ(e.finish(), 0);
}

// ---- the exporter's endpoint, spoken to directly

// Every kind of malformed, spoofed or interrupted request. After each one the exporter is still
// there for a legitimate importer in another process, at once, and holds no more descriptors than
// before; only the well-formed requests are answered, a spoofed one is refused.
TEST_F(ShareSecurity, ListenerRejectsMalformedRequests) {
  Peer e, im;
  const std::vector<uint64_t> t = export_in_peer(e, 330, {0, 0});
  const uint64_t mine = t[0], theirs = t[1];  // mine lists this process and im, theirs only im
  const int32_t me = getpid(), other = im.tgid();
  ASSERT_EQ(e.rc(line("setpid", hex(mine), me, other)), kOk);
  ASSERT_EQ(e.rc(line("setpid", hex(theirs), other)), kOk);
  // im's connection, kept after its first import, is part of the baseline (docs/sharing.md §5).
  expect_prompt_import(im, mine, 330, "nothing");
  const int fds0 = open_fds_of(e);
  const long long denied0 = stat_int(e.stats(), "ipc.imports_denied");
  const std::string good = request(mine);
  std::string garbage(24, '\0');
  std::mt19937 rng(330);
  for (char& c : garbage) c = static_cast<char>(rng());
  garbage[0] = '\x01';  // not the magic

  enum Expect { kServed, kRefused, kUnknown, kProbed, kDropped, kUnobserved };
  struct Case {
    const char* what;
    std::vector<std::string> messages;
    int pass;  // descriptors attached to the first message
    Expect expect;
  };
  WireRequest swapped{__builtin_bswap32(kWireMagic), kWireImport, mine, 0, 0};
  const Case cases[] = {
      {"a well-formed request (control)", {good}, 0, kServed},
      {"a zero-length message", {""}, 0, kDropped},
      {"one byte", {"A"}, 0, kDropped},
      {"one byte short", {good.substr(0, 23)}, 0, kDropped},
      {"one byte long", {good + "x"}, 0, kDropped},
      {"an oversized message", {good + std::string(65536, 'x')}, 0, kDropped},
      {"garbage", {garbage}, 0, kDropped},
      {"a wrong magic", {request(mine, kWireImport, kWireMagic + 1)}, 0, kDropped},
      {"a byte-swapped magic", {std::string(reinterpret_cast<char*>(&swapped), 24)}, 0, kDropped},
      {"request kind 0", {request(mine, 0)}, 0, kDropped},
      {"request kind 3", {request(mine, 3)}, 0, kDropped},
      {"request kind 0xffffffff", {request(mine, 0xffffffffu)}, 0, kDropped},
      {"the byte-by-byte request", {"A", "V", "M", "M"}, 0, kDropped},
      {"another process's pid in the request", {request(theirs, kWireImport, kWireMagic, other)}, 0, kRefused},
      {"a probe of a token not listing this process", {request(theirs, kWireProbe)}, 0, kProbed},
      {"the token with another device field", {request(mine | (uint64_t(5) << 32))}, 0, kUnknown},
      {"another share id on this endpoint", {request(mine ^ 1)}, 0, kUnknown},
      {"a request with a descriptor attached", {good}, 1, kServed},
      {"a request with 16 descriptors attached", {good}, 16, kDropped},
      {"two requests in a row", {good, good}, 0, kServed},
      {"a hang-up right after the request", {good}, 0, kUnobserved},
      {"a hang-up without a request", {}, 0, kUnobserved},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const int s = connect_endpoint(mine);
    ASSERT_GE(s, 0);
    for (size_t i = 0; i < c.messages.size(); ++i) {
      // Later pieces may find the connection already dropped; only the first must go out.
      const bool sent = send_message(s, c.messages[i], i == 0 ? c.pass : 0);
      if (i == 0) {
        EXPECT_TRUE(sent);
      }
    }
    if (c.expect != kUnobserved) {
      Answer a;
      await(s, 1500, &a);
      if (c.expect == kDropped) {
        EXPECT_EQ(a.kind, Answer::kHangUp) << "the exporter answered or kept the connection";
      }
      if (c.expect != kDropped) {
        ASSERT_EQ(a.kind, Answer::kReply);
        EXPECT_EQ(a.reply.magic, kWireMagic);
        const aclError want = c.expect == kServed || c.expect == kProbed ? kOk : c.expect == kRefused ? kDrv : kBadHandle;
        EXPECT_EQ(a.reply.code, want);
        EXPECT_EQ(a.fd >= 0, c.expect == kServed) << "memory goes with a served import only";
        if (a.fd >= 0) {
          // The control: the descriptor holds exactly the exported bytes.
          struct stat st{};
          ASSERT_EQ(fstat(a.fd, &st), 0);
          EXPECT_EQ(static_cast<size_t>(st.st_size), k2M);
          void* m = mmap(nullptr, k2M, PROT_READ, MAP_SHARED, a.fd, 0);
          ASSERT_NE(m, MAP_FAILED);
          EXPECT_EQ(std::memcmp(m, share_peer::peer_pattern(k2M, 330).data(), k2M), 0);
          munmap(m, k2M);
        }
        if (c.expect == kRefused || c.expect == kUnknown) {
          Answer more;  // a refusal ends the connection, whatever else was sent
          await(s, 1500, &more);
          EXPECT_EQ(more.kind, Answer::kHangUp);
          close(s);
          expect_prompt_import(im, mine, 330, c.what);
          expect_fds_settle(e, fds0, c.what);
          continue;
        }
        // After a grant the connection is kept for the importer's next request (docs/sharing.md
        // §5): what else was sent is answered in turn, and one more well-formed request is
        // served.
        for (size_t i = 1; i < c.messages.size(); ++i) {
          Answer next;
          await(s, 1500, &next);
          ASSERT_EQ(next.kind, Answer::kReply) << "message " << i;
          EXPECT_EQ(next.reply.code, kOk) << "message " << i;
        }
        ASSERT_TRUE(send_message(s, good, 0));
        Answer more;
        await(s, 1500, &more);
        ASSERT_EQ(more.kind, Answer::kReply) << "the connection was not kept";
        EXPECT_EQ(more.reply.code, kOk);
        EXPECT_GE(more.fd, 0);
      }
    }
    close(s);
    expect_prompt_import(im, mine, 330, c.what);
    expect_fds_settle(e, fds0, c.what);
  }
  EXPECT_EQ(stat_int(e.stats(), "ipc.imports_denied") - denied0, 1) << "only the spoofed request was a refusal";
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

// Many clients that connect and say nothing, and some that send one byte at a time, hold no
// legitimate importer up (the listener waits for each one's request on its own deadline, 2 s),
// and every one of them is disconnected within that deadline, descriptors and all.
TEST_F(ShareSecurity, SilentAndSlowClientsDoNotDelayImports) {
  Peer e, im;
  const std::vector<uint64_t> t = export_in_peer(e, 340, {1});
  // im's connection, kept after its first import, is part of the baseline (docs/sharing.md §5).
  expect_prompt_import(im, t[0], 340, "nothing");
  const int fds0 = open_fds_of(e);
  std::vector<int> silent, slow;
  for (int i = 0; i < 100; ++i) silent.push_back(connect_endpoint(t[0]));
  for (int i = 0; i < 10; ++i) slow.push_back(connect_endpoint(t[0]));
  for (int s : silent) ASSERT_GE(s, 0);
  for (int s : slow) ASSERT_GE(s, 0);
  const double t0 = now_s();
  for (int round = 0; round < 3; ++round) {
    for (int s : slow) send_message(s, std::string(1, "AVMM"[round]));
    expect_prompt_import(im, t[0], 340, "100 silent and 10 slow clients, round " + std::to_string(round));
  }
  // The exporter hangs up on each of them by its deadline (2 s after it accepted them).
  for (int s : silent) {
    Answer a;
    await(s, static_cast<int>(std::max(0.0, t0 + 3.5 - now_s()) * 1000), &a);
    EXPECT_EQ(a.kind, Answer::kHangUp) << "a silent client is still connected " << now_s() - t0 << " s later";
    close(s);
  }
  for (int s : slow) {
    Answer a;
    await(s, 1000, &a);
    EXPECT_EQ(a.kind, Answer::kHangUp);
    close(s);
  }
  expect_fds_settle(e, fds0, "the silent and slow clients", 1000);
  EXPECT_EQ(im.finish(), 0);
  EXPECT_EQ(e.finish(), 0);
}

}  // namespace
