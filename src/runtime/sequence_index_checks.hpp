#pragma once
// The device-side indices of a batched call (cu_seqlens, kv_lens, block table), read back
// and checked before a launch so a bad one is an error naming the sequence and slot, not
// a wrong or wild read on the device.
#include <string>

#include "backend/backend.hpp"
#include "fajit/attention.hpp"

namespace fajit {

// args must have passed check_arguments. Waits for the work queued on stream, which may
// be what writes the indices. Empty when they are consistent; else a message naming the
// first bad entry.
std::string check_sequence_indices(const AttentionArgs& args, const Backend& backend, void* stream);

}  // namespace fajit
