// The raw baseline of the cross-server benchmarks: fi_read / fi_write with nothing around them,
// between two processes of this binary in two network namespaces. The same provider, hints and
// progress model as aclvmm's endpoint (drivers/emu/fabric/rma_endpoint.cpp): a target whose
// thread sleeps in fi_cq_sread, a reader that polls its completion queue.
#pragma once

#include <cstdint>

namespace bench {
// CLOCK_MONOTONIC in nanoseconds: what every helper process times its operations with.
uint64_t now_ns();
// --bench-raw-target ADDRESS SIZE: registers SIZE bytes, prints "<name hex> <key> <base>", serves
// until its input ends.
int run_raw_target(const char* address, long size);
// --bench-raw-reader ADDRESS NAME KEY BASE: answers "read N" / "write N" with "<rc> <ns>".
int run_raw_reader(const char* address, const char* name_hex, const char* key, const char* base);
}  // namespace bench
