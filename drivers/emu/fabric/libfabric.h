// libfabric, loaded when the first cross-host operation needs it (docs/fabric.md §3).
//
// Why at run time: libfabric.so.1 pulls in the RDMA stack (verbs, rdmacm, psm2, EFA and their
// own dependencies), which every process linking libascendcl.so would otherwise load at start,
// pod or not. Most of libfabric's interface is inline functions over the objects' operation
// tables; only the five functions below are symbols of the library, so they are all this loader
// resolves. Code that includes <rdma/*.h> calls these instead of the symbols (fi_allocinfo() is
// dupinfo(nullptr)).
//
// Contract: libfabric() loads the library once per process (thread-safe) and returns the table,
// or nullptr with `why` saying what is missing; the table lives until the process ends (the
// library is never unloaded: providers keep threads and handlers of their own).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <string>

namespace aclvmm::dev::emu::fabric {

struct LibFabric {
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;
  decltype(&::fi_fabric) open_fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
};

const LibFabric* libfabric(std::string* why);

}  // namespace aclvmm::dev::emu::fabric
