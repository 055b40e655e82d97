// Shared pieces of the fuzz harness: argument decoding (args.cpp), result checking and the
// operations (ops_*.cpp). The input format is documented in fuzz_api.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "check.h"
#include "input.h"
#include "model.h"
#include "stats.h"

namespace fuzz {

// ---- arguments (args.cpp) ----
uint64_t size_arg(Input& in);
// An int: most bytes give 0..range-1 (a few values past the valid ones), 0xF0.. a raw 32-bit value.
int int_arg(Input& in, int range);
uint64_t flags_arg(Input& in);
uint64_t pick_handle(Input& in);
uint64_t pick_stream(Input& in);
uint64_t pick_token(Input& in);
enum class Want { kReservation, kMapping, kAllocation, kPinned, kManaged, kData, kAny };
uint64_t pick_addr(Input& in, Want want);
// A data range: an object, an offset into it (mostly inside the tracked bytes) and a length.
void pick_data(Input& in, uint64_t* addr, uint64_t* len);
uint64_t forged_addr(Input& in);

// ---- checking ----
// The snapshot before the current step (the state the model describes).
extern Snapshot g_before;
// Checks rc against the expectation: a failure must be allowed, a predicted failure must leave the
// snapshot unchanged, an allowed resource failure must leave the live counts unchanged.
// Returns true when the call succeeded.
bool verify(const char* api, const Expect& e, int rc);
// After a successful write of `src` (nullptr: `value`) to the pieces, the model's bytes follow;
// source bytes the model does not know make the written ones unknown.
void write_pieces(const std::vector<Piece>& pieces, const uint8_t* src, const std::vector<bool>* known,
                  int value = 0);
// The model's bytes of the pieces, and which of them it knows.
void read_pieces(const std::vector<Piece>& pieces, std::vector<uint8_t>* out, std::vector<bool>* known);
bool pieces_alias(const std::vector<Piece>& a, const std::vector<Piece>& b);

// ---- operations ----
void op_malloc_physical(Input& in);
void op_free_physical(Input& in);
void op_reserve(Input& in);
void op_reserve_no_uc(Input& in);
void op_release(Input& in);
void op_map(Input& in);
void op_unmap(Input& in);
void op_set_access(Input& in);
void op_get_access(Input& in);
void op_retain(Input& in);
void op_properties(Input& in);
void op_address_range(Input& in);
void op_pointer_attributes(Input& in);
void op_malloc(Input& in);
void op_free(Input& in);
void op_malloc_host(Input& in);
void op_free_host(Input& in);
void op_memcpy(Input& in);
void op_memset(Input& in);
void op_read_check(Input& in);
void op_alloc_managed(Input& in);
void op_managed_advise(Input& in);
void op_managed_prefetch(Input& in);
void op_managed_get_attr(Input& in);
void op_create_stream(Input& in);
void op_destroy_stream(Input& in);
void op_synchronize_stream(Input& in);
void op_export(Input& in);
void op_set_pid(Input& in);
void op_import(Input& in);
void op_set_device(Input& in);
void op_peer_access(Input& in);

}  // namespace fuzz
