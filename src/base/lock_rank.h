// Lock ranks: every lock of the library, in the one order in which a thread may take them, and the
// debug checker that enforces that order.
//
// The rule: a thread takes locks in strictly increasing rank. A lock whose rank is not above every
// rank the thread already holds is a lock-order violation (two threads taking two such locks in
// opposite orders deadlock), and so is taking a lock the thread already holds (none of the
// library's locks is recursive). Two locks of the same rank are never held together. A try_lock
// cannot wait, so it may be taken out of order; it must not be of a lock the thread holds, and
// once it succeeds the lock counts as held like any other.
//
// Checking (ACLVMM_LOCK_RANK_CHECK=1, a CMake option: on in Debug and in tests/run.sh's asan
// and tsan trees, off for the installed and benchmarked library): every ranked lock records
// itself on a small per-thread stack; a violation prints both locks, their ranks and every lock
// the thread holds, and aborts, before the thread would block. Unchecked, the wrappers are the plain locks: the
// same size, and lock/unlock inline to the same calls.
//
// The per-thread stack is plain thread-local data (no allocation, no lock, no destructor), so it
// is fork-safe: the child's only thread is a copy of the forking one, and its stack holds exactly
// what that thread held, e.g. the locks the pthread_atfork prepare handlers took, which the child
// handlers then release in the child. Locks other threads held at fork are on their own stacks,
// which do not exist in the child.
//
// In the style of jemalloc's witness (a rank per lock, a per-thread list of what is owned) and of
// NVIDIA UVM's uvm_lock.h (one documented order for the whole driver, a mode per record, trylock
// allowed out of order). Standard library only.
//
// The backends' locks (drivers/) are not ranked objects: drivers/ includes nothing of src/ but
// base/status.h (tests/layout/check_layers.sh), so the checker does not see them. Their place in
// the order is fixed by how the layers call each other, and written here:
// - The core calls into a backend while it holds its own locks (a region's mappings, the managed
//   ranges, the runtime's lock at start and teardown), so a backend's lock ranks above every
//   core lock up to and including kDeviceHandle (and kKernelRegistry, which is never held
//   around a backend call nor taken under a backend's lock).
// - While a backend holds one of its locks it calls nothing of the core but its BackendListener
//   (drivers/backend_listener.h: it never blocks and never calls back into the backend), whose
//   log and injection calls take only the leaf locks kInjection..kLogClock. So a backend's lock
//   ranks below those: the band between kKernelRegistry and kInjection.
// - Within the band a backend takes one lock at a time (none of today's nests another); so no
//   cycle can go through two of them.
// - The one exception is host/stats_segment.cpp's SegmentRegistry::mu: its fork prepare handler
//   (installed at load, so run last) holds it across fork() after every lock of this list; it
//   is taken with nothing but a list operation under it, so it ranks above all, a true leaf.
// Today's driver locks: emu UffdFaultTracker::start_mu_ (userfaultfd start/stop, taken under the
// managed-memory locks), emu MemfdMemory::view_mu_ (one allocation's CPU view, taken under the
// managed ranges' lock when a migration copies), emu guarded_copy g_install_mu (the copy guard's
// signal handlers), emu EmuPhysicalAllocator::held_mu_ (the list of handles not yet released:
// an insert or an erase under it), fake FakeMachine::mu_ and its published names' mu (the fake device's state;
// usage_changed is reported under it), emu fabric PodService::mu_ (the pod's endpoint, peers and
// relayed connections; never held while the sharing unit is asked, nor taken under its lock) and
// RmaEndpoint's op_mu / mr_mu (one operation / one registration; only libfabric under them),
// host SegmentRegistry::mu (above). A driver lock that
// must nest another of the drivers', or call the core other than through the listener, needs a
// rank of its own: then the drivers get a rank header of theirs and this paragraph points to it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#if defined(ACLVMM_LOCK_RANK_CHECK) && ACLVMM_LOCK_RANK_CHECK
#define ACLVMM_LOCK_RANK_CHECKING 1
#else
#define ACLVMM_LOCK_RANK_CHECKING 0
#endif

namespace aclvmm {

inline constexpr bool kLockRankCheck = ACLVMM_LOCK_RANK_CHECKING != 0;

// Outermost first. A new lock gets a rank here, with what it protects and why it sits where it
// does: above every lock held when it is taken, below every lock taken while it is held.
enum class LockRank : uint8_t {
  // Runtime::mu_ (src/runtime/runtime.h): the runtime's lifetime (start, teardown, the aclInit
  // count), its devices and contexts. Outermost: start and teardown reach every other part (the
  // sharing service, managed memory, the address space, the tables, the pools, the log). Never
  // held while a stream's worker is joined (a task may be waiting for it).
  kRuntimeLifetime = 1,
  // Stream::control_mu_ (src/runtime/stream.h): one stream's queue against being cancelled
  // (aclrtStreamAbort, which waits for the running command) and destroyed at once. Taken under
  // the runtime's lock (a stream that cannot be entered in its table is destroyed there); held
  // while the queue's dropped commands complete, which take the stream's own lock.
  kStreamControl,
  // ShareService::mu_ (src/vmm/share.h): the export and import records. Taken under the
  // runtime's teardown (shutdown); takes the physical-handle table (an import enters its
  // handle); never held across a call of the backend's Sharing unit. The first lock the fork
  // prepare handlers take (ShareService registered its handler last); the backend's own
  // sharing lock follows in DeviceBackend::prepare_fork.
  kShareService,
  // IpcKeys::mu_ (src/vmm/ipc_keys.h): the process's IPC keys and imports by key. Taken under the
  // runtime's lock (a device's last reset, teardown) and with nothing held by the API calls;
  // takes the region tree (an import's region) and the backend's local sharing steps; never held
  // across a backend call that may wait on another process (import, a foreign key's probe).
  kIpcKeys,
  // ManagedMemory::change_mu_ (src/vmm/managed.h): an allocation or free of managed memory across
  // the backend's UnifiedMemory call and the change of the core's records. Taken under the
  // runtime's teardown; takes the records' lock (and the backend's unit, whose locks are its own).
  kManagedLifetime,
  // ManagedMemory::mu_: the core's records of the managed ranges (residency, the LRU and the fault
  // thread are the backend's since step 6). Takes nothing.
  kManagedRanges,
  // HostRegistrations::mu_ (src/vmm/host_registrations.h): the host memory registered for each
  // device. Taken under the runtime's lock (a device's last reset, teardown) and with nothing
  // held by the API calls, pointer queries and kernels; held across the backend's register_host
  // and unregister_host (their injection and log steps).
  kHostRegistrations,
  // AddressSpace::mu_ (src/vmm/address_space.h): the region tree and the copy of the windows'
  // layout. Exclusive to add or remove a region (and so around every reserve and release of the
  // backend's windows, D9), shared for every lookup. Taken under the runtime's start (attaching
  // the backend) and teardown (clear); takes a region's lock and the backend's window steps
  // (emu's windows lock, injection, log).
  kRegionTree,
  // Region::mu: one region's mappings and its binding. Taken under the region tree's lock (a
  // thread holds one region at a time); takes the backend's mapping steps (injection, log).
  kRegionMappings,
  // KernelBinary::mu (src/runtime/kernels.h): one loaded binary's kernel names. Taken with
  // nothing held (aclrtBinaryGetFunction); takes the function table's lock to enter a new name.
  kKernelBinary,
  // HandleTable<T>::mu_ (src/base/handle_table.h), one per table: physical handles, contexts,
  // streams. Membership and the reference counts kept in the objects. Taken under the runtime's
  // lock (contexts, streams, teardown) and the sharing service's (imports); never two tables at
  // once, never with an address-space lock (map and unmap drop it before the address space).
  kHandleTable,
  // HandleAliases::mu_ (src/vmm/handle_aliases.h): which core token each driver handle handed to
  // the application stands for (beside the vendor runtime). Taken by the API layer with nothing
  // held; takes nothing.
  kHandleAliases,
  // Stream::mu_ (src/runtime/stream.h): one stream's queue, its first error and its worker's
  // state; its condition variables wait on it. Taken under the runtime's lock (a stream that
  // cannot be entered in its table is aborted there); takes nothing.
  kStreamQueue,
  // Runtime::pools_mu_: which capacity pool belongs to which device. Taken under the runtime's
  // lock (start, teardown) and by migrating threads under the managed ranges' lock: its own lock,
  // so that a teardown joining those threads under the runtime's lock cannot deadlock.
  kDevicePools,
  // Runtime::device_mu_: which device backend the runtime holds (device_). Taken to replace it
  // (start and teardown, under the runtime's lock) and by the fork prepare handler, which keeps
  // the backend whose locks it takes alive across fork (a teardown on another thread may drop
  // the runtime's reference meanwhile); takes nothing.
  kDeviceHandle,
  // KernelRegistry::mu_ (src/runtime/kernel_registry.h): the process's named kernels and the
  // kernel libraries it loaded. Taken with nothing held by the API calls and by a stream running
  // a named kernel, and under the runtime's lock by the constructors of the ACLVMM_KERNEL_LIBS
  // libraries the runtime's start loads (dlopen runs with this lock released). Takes nothing: a
  // kernel runs after its entry was copied out.
  kKernelRegistry,
  // The leaf locks. Each is taken under any of the above (a backend step of any caller checks
  // its failure injection; anyone may log) and takes nothing but the next ones. The fork prepare
  // handlers take them all, in this order, after the device backend's locks, so they are
  // strictly ranked among themselves.
  // injection.cpp g_mu: the armed failure-injection rules.
  kInjection,
  // trace.cpp g_mu: the recorded trace events and the trace file's name.
  kTrace,
  // log.cpp g_mu: the logger object (created on the first line, dropped on reconfiguration).
  kLog,
  // log.cpp g_clock_mu: localtime_r, whose glibc lock fork does not reset. Taken under the log's
  // lock when the logger names its file, never around it. The last rank: after it, the fork
  // prepare handlers take only the backends' leaves (above).
  kLogClock,
};

constexpr const char* lock_rank_name(LockRank rank) {
  switch (rank) {
    case LockRank::kRuntimeLifetime: return "Runtime::mu_ (runtime lifetime)";
    case LockRank::kStreamControl: return "Stream::control_mu_ (a stream's cancel and destroy)";
    case LockRank::kShareService: return "ShareService::mu_ (sharing)";
    case LockRank::kIpcKeys: return "IpcKeys::mu_ (IPC memory by key)";
    case LockRank::kManagedLifetime: return "ManagedMemory::change_mu_ (managed allocations)";
    case LockRank::kManagedRanges: return "ManagedMemory::mu_ (managed ranges)";
    case LockRank::kHostRegistrations: return "HostRegistrations::mu_ (host registrations)";
    case LockRank::kRegionTree: return "AddressSpace::mu_ (region tree)";
    case LockRank::kRegionMappings: return "Region::mu (a region's mappings)";
    case LockRank::kKernelBinary: return "KernelBinary::mu (a binary's kernels)";
    case LockRank::kHandleTable: return "HandleTable::mu_ (a handle table)";
    case LockRank::kHandleAliases:
      return "HandleAliases::mu_ (driver handles beside the vendor)";
    case LockRank::kStreamQueue: return "Stream::mu_ (a stream's queue)";
    case LockRank::kDevicePools: return "Runtime::pools_mu_ (device pools)";
    case LockRank::kDeviceHandle: return "Runtime::device_mu_ (the device backend held)";
    case LockRank::kKernelRegistry: return "KernelRegistry::mu_ (named kernels)";
    case LockRank::kInjection: return "failure injection rules";
    case LockRank::kTrace: return "trace";
    case LockRank::kLog: return "log";
    case LockRank::kLogClock: return "log clock";
  }
  return "unknown rank";
}

namespace lock_rank {

enum class Mode : uint8_t { kExclusive, kShared };

// The deepest nesting in the library is the fork prepare handlers' seven locks.
inline constexpr size_t kMaxHeld = 16;

struct Held {
  const void* lock;
  LockRank rank;
  Mode mode;
};

// Zero-initialised, trivially destructible: no TLS constructor or destructor, nothing a fork or
// a thread exit could leave half-done.
struct ThreadLocks {
  size_t depth;
  Held held[kMaxHeld];
};
inline thread_local ThreadLocks t_locks;

inline const char* mode_name(Mode m) { return m == Mode::kShared ? "shared" : "exclusive"; }

inline constexpr size_t kMessageSize = 2048;

// Appends to a message buffer of kMessageSize bytes, dropping what does not fit.
__attribute__((format(printf, 3, 4))) inline void append(char* text, size_t* n, const char* fmt, ...) {
  if (*n >= kMessageSize) return;
  va_list args;
  va_start(args, fmt);
  const int w = std::vsnprintf(text + *n, kMessageSize - *n, fmt, args);
  va_end(args);
  if (w > 0) *n += static_cast<size_t>(w);
}

// Prints the violation, both locks and everything the thread holds, then aborts. No allocation:
// the message is composed in a stack buffer.
[[noreturn]] inline void fail(const char* what, const void* lock, LockRank rank, Mode mode,
                              const Held* other) {
  char text[kMessageSize];
  size_t n = 0;
  append(text, &n, "aclvmm: lock rank violation: this thread %s: %s [rank %d, %p, %s]", what,
         lock_rank_name(rank), static_cast<int>(rank), lock, mode_name(mode));
  if (other) {
    append(text, &n, " while holding %s [rank %d, %p, %s]", lock_rank_name(other->rank),
           static_cast<int>(other->rank), other->lock, mode_name(other->mode));
  }
  append(text, &n, "\n  locks held by this thread, oldest first:%s\n", t_locks.depth ? "" : " none");
  for (size_t i = 0; i < t_locks.depth; ++i) {
    const Held& h = t_locks.held[i];
    append(text, &n, "    %s [rank %d, %p, %s]\n", lock_rank_name(h.rank), static_cast<int>(h.rank),
           h.lock, mode_name(h.mode));
  }
  append(text, &n, "%s", "  (src/base/lock_rank.h: strictly increasing ranks, no lock taken twice)\n");
  std::fputs(text, stderr);
  std::fflush(stderr);
  std::abort();
}

inline const Held* find(const void* lock) {
  for (size_t i = t_locks.depth; i > 0; --i) {
    if (t_locks.held[i - 1].lock == lock) return &t_locks.held[i - 1];
  }
  return nullptr;
}

// Before a blocking acquisition: the lock is not held yet and ranks above everything held.
inline void check_lock(const void* lock, LockRank rank, Mode mode) {
  if (const Held* same = find(lock)) fail("takes a lock it already holds", lock, rank, mode, same);
  const Held* highest = nullptr;
  for (size_t i = 0; i < t_locks.depth; ++i) {
    if (!highest || t_locks.held[i].rank > highest->rank) highest = &t_locks.held[i];
  }
  if (highest && highest->rank >= rank) {
    fail(highest->rank == rank ? "takes a second lock of the same rank" : "takes a lock out of order",
         lock, rank, mode, highest);
  }
}

// Before a try_lock: only the recursion check (a try_lock cannot wait, so order does not matter).
inline void check_try_lock(const void* lock, LockRank rank, Mode mode) {
  if (const Held* same = find(lock)) fail("tries a lock it already holds", lock, rank, mode, same);
}

inline void record(const void* lock, LockRank rank, Mode mode) {
  if (t_locks.depth == kMaxHeld) fail("holds too many locks to record", lock, rank, mode, nullptr);
  t_locks.held[t_locks.depth++] = Held{lock, rank, mode};
}

inline void erase(const void* lock, LockRank rank, Mode mode) {
  for (size_t i = t_locks.depth; i > 0; --i) {
    if (t_locks.held[i - 1].lock != lock) continue;
    if (t_locks.held[i - 1].mode != mode) {
      fail("releases a lock in another mode than it took it", lock, rank, mode, &t_locks.held[i - 1]);
    }
    for (size_t j = i; j < t_locks.depth; ++j) t_locks.held[j - 1] = t_locks.held[j];
    --t_locks.depth;
    return;
  }
  fail("releases a lock it does not hold", lock, rank, mode, nullptr);
}

// How many ranked locks the calling thread holds (0 when checking is off).
inline size_t held_count() { return kLockRankCheck ? t_locks.depth : 0; }

}  // namespace lock_rank

// A lock of rank R around `Lockable` (std::mutex, ReadMostlyMutex, ...): Lockable's interface
// (BasicLockable, Lockable and, when Lockable has them, the shared operations), so it works with
// std::lock_guard, std::unique_lock, std::shared_lock and ConditionVariable below.
template <typename Lockable, LockRank R>
class RankedLock {
 public:
  static constexpr LockRank kRank = R;

  void lock() {
    if constexpr (kLockRankCheck) lock_rank::check_lock(this, R, lock_rank::Mode::kExclusive);
    mu_.lock();
    if constexpr (kLockRankCheck) lock_rank::record(this, R, lock_rank::Mode::kExclusive);
  }
  bool try_lock() {
    if constexpr (kLockRankCheck) lock_rank::check_try_lock(this, R, lock_rank::Mode::kExclusive);
    if (!mu_.try_lock()) return false;
    if constexpr (kLockRankCheck) lock_rank::record(this, R, lock_rank::Mode::kExclusive);
    return true;
  }
  void unlock() {
    if constexpr (kLockRankCheck) lock_rank::erase(this, R, lock_rank::Mode::kExclusive);
    mu_.unlock();
  }

  void lock_shared() {
    if constexpr (kLockRankCheck) lock_rank::check_lock(this, R, lock_rank::Mode::kShared);
    mu_.lock_shared();
    if constexpr (kLockRankCheck) lock_rank::record(this, R, lock_rank::Mode::kShared);
  }
  bool try_lock_shared() {
    if constexpr (kLockRankCheck) lock_rank::check_try_lock(this, R, lock_rank::Mode::kShared);
    if (!mu_.try_lock_shared()) return false;
    if constexpr (kLockRankCheck) lock_rank::record(this, R, lock_rank::Mode::kShared);
    return true;
  }
  void unlock_shared() {
    if constexpr (kLockRankCheck) lock_rank::erase(this, R, lock_rank::Mode::kShared);
    mu_.unlock_shared();
  }

  // Aborts (when checking) unless the calling thread holds this lock: the contract of the
  // `_locked` functions.
  void assert_held() const {
    if constexpr (kLockRankCheck) {
      if (!lock_rank::find(this)) {
        lock_rank::fail("requires a lock it does not hold", this, R, lock_rank::Mode::kExclusive,
                        nullptr);
      }
    }
  }

  // The lock itself, for what must name the plain type (std::condition_variable).
  Lockable& native() { return mu_; }

 private:
  Lockable mu_;
};

template <LockRank R>
using RankedMutex = RankedLock<std::mutex, R>;

static_assert(sizeof(RankedMutex<LockRank::kLog>) == sizeof(std::mutex),
              "a ranked mutex has the layout of the plain one");

// std::condition_variable for a RankedMutex: it waits on the plain mutex inside, so it costs what
// std::condition_variable costs (std::condition_variable_any would add a lock and an allocation).
// While the thread waits, the checker still counts the mutex as held: the thread takes nothing
// meanwhile, and owns the mutex again when the wait returns.
class ConditionVariable {
 public:
  template <LockRank R, typename Predicate>
  void wait(std::unique_lock<RankedMutex<R>>& lock, Predicate ready) {
    std::unique_lock<std::mutex> inner(lock.mutex()->native(), std::adopt_lock);
    struct GiveBack {  // the outer lock keeps ownership, also when the predicate throws
      std::unique_lock<std::mutex>& inner;
      ~GiveBack() { inner.release(); }
    } give_back{inner};
    cv_.wait(inner, ready);
  }
  // As wait(), until `deadline` at the latest: returns ready()'s last value.
  template <LockRank R, typename Clock, typename Duration, typename Predicate>
  bool wait_until(std::unique_lock<RankedMutex<R>>& lock,
                  const std::chrono::time_point<Clock, Duration>& deadline, Predicate ready) {
    std::unique_lock<std::mutex> inner(lock.mutex()->native(), std::adopt_lock);
    struct GiveBack {
      std::unique_lock<std::mutex>& inner;
      ~GiveBack() { inner.release(); }
    } give_back{inner};
    return cv_.wait_until(inner, deadline, ready);
  }
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace aclvmm
