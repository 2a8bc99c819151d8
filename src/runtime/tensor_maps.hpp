#pragma once
// Tensor maps (Hopper's TMA descriptors) of a dense call's Q, K and V, for families that
// copy through them (FamilyDescriptor::reads_tensor_maps). Each map describes one tensor
// [batch, heads, rows, head dim] and the box of one 128-byte swizzle row of head dims (64
// 16-bit or 128 e4m3 elements) by a tile's rows that one copy moves; a kernel copies a
// wider row as one box per swizzle row.
#include <array>
#include <string>

#include "backend/backend.hpp"
#include "fajit/attention.hpp"
#include "fajit/kernel_spec.hpp"
#include "runtime/kernel_arguments.hpp"

namespace fajit {

// The maps of Q, K and V (in that order) for spec's tiles: empty on success, else why TMA
// cannot address the call (a batched layout, an address or stride off 16 bytes, a
// broadcast stride), which leaves the kernel's own copies to it.
std::string plan_tensor_maps(const KernelSpec&, const AttentionArgs&, std::array<TensorMapRequest, 3>& maps);

// Encodes the maps into arguments and sets tensor_maps_ready when the call allows them and
// the backend encodes all three; otherwise leaves tensor_maps_ready 0.
void fill_tensor_maps(const KernelSpec&, const AttentionArgs&, const Backend&, KernelArguments& arguments);

}  // namespace fajit
