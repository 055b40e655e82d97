// The cross-server benchmarks (docs/performance.md, "FABRIC across servers"): an aclvmm exporter
// and importer, and a raw libfabric target and reader, each a process of this binary in a
// network namespace of its own pod (tests/fabric/netns_pod.h). Built when libfabric is found;
// they skip, saying why, where namespaces cannot be made (not root).
#pragma once

namespace bench {
// When argv names one of the helper roles: runs it and returns true with its exit status.
bool fabric_role(int argc, char** argv, int* status);
// Ends the helper processes and the namespaces (after the benchmarks ran).
void release_fabric_rig();
}  // namespace bench
