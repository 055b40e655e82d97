// Room for the descriptors that device memory holds, outside the application's own range.
//
// Every physical allocation of emu is a memory file whose descriptor lives as long as the
// allocation; an importer holds one per import; an exporter one listening socket per 256
// exports. A process with 10 000 handles therefore holds 10 000 descriptors that on hardware
// would be device memory, not files. Left where the kernel puts them (the lowest free numbers),
// they would fill the application's soft RLIMIT_NOFILE (often 1 024) and its select() range.
//
// The contract: the first kLowBudget held descriptors stay where the kernel puts them (a process
// with a few handles pays nothing); every further one is placed at or above the soft limit the
// process had when it was made, whenever the hard limit leaves room there, and the soft limit is
// the application's again when the call returns. For that window the soft limit is raised to the
// hard limit (the kernel refuses F_DUPFD at or above the soft limit), which only ever lets other
// threads open more, never fewer; it costs about five system calls. The application's range
// [0, soft) then holds at most kLowBudget of ours: 10 000 exports fit beside its own files.
//
// Things the caller must know:
// - A descriptor counted in the budget (*budgeted set) must be given back with
//   release_budgeted() when it is closed.
// - Where the hard limit equals the soft limit (no room above), or with ACLVMM_HIGH_DESCRIPTORS=0,
//   descriptors stay where the kernel put them and the soft limit is never touched.
// - A thread of the application that changes RLIMIT_NOFILE itself while another thread is inside
//   the window may see its new soft limit replaced by the one the window saved; the window is a
//   few system calls long and serialised among our own callers.
// - Descriptors above the soft limit work everywhere except select(2) (FD_SETSIZE); emu waits
//   with poll and epoll only. They are close-on-exec, like every descriptor emu makes.
// - fork(): a child forked while another thread was inside the window starts with the window's
//   lock released (pthread_atfork) and the raised soft limit, which it keeps.
#pragma once

#include <functional>

namespace aclvmm::dev::emu::os {

// Held descriptors that may stay in the application's range.
inline constexpr int kLowBudget = 32;

// Runs `open` (a new descriptor or -errno) and returns its descriptor, or open's -errno. With
// `budgeted` non-null the descriptor may take a place of the budget (then *budgeted is true);
// otherwise, or with the budget spent, open runs inside the window and its descriptor is moved at
// or above the soft limit when there is room. Never fails for want of room above: the descriptor
// then stays where it was made.
int open_held(const std::function<int()>& open, bool* budgeted);

// The same for an existing descriptor (received from another process, say): returns the
// descriptor to use from now on (`fd` itself when it stays; the old number is closed when it
// moves). With `above`, tells whether that descriptor is at or above the soft limit (out of the
// application's range), as the window's lock saw it.
int place_held(int fd, bool* budgeted, bool* above = nullptr);

// A budgeted descriptor was closed: its place is free again.
void release_budgeted();

// Whether placement is on (ACLVMM_HIGH_DESCRIPTORS is not 0), read once.
bool placement_enabled();

}  // namespace aclvmm::dev::emu::os
