#pragma once
// Rules and shapes several family descriptors share.
#include <array>
#include <string>

#include "families/family_descriptor.hpp"

namespace fajit {

// Every head dim the spec allows: 16..256 in steps of 8 (families with no instruction shape to fit).
inline constexpr auto every_head_dim = [] {
    std::array<int, 31> dims{};
    for (int i = 0; i < 31; ++i) dims[i] = 16 + 8 * i;
    return dims;
}();

// Empty when waves is 1, 2, 4 or 8; else the error naming the field.
std::string waves_error(const KernelSpec&);

// The tensor-core families round P to the input type for the P.V product, and
// unnormalized P reaches exp(margin): f16 overflows past exp(11.09).
std::string rounded_probability_margin_error(const KernelSpec&);

// Opt-in shared memory per block of an NVIDIA target.
unsigned nvidia_shared_limit(std::string_view arch);

// One block per (query tile, head, batch) of waves * wave-size threads, with the
// layout's bytes as dynamic shared memory when it is dynamic.
LaunchShape tiled_launch(const KernelSpec&, const AttentionArgs&, const SharedLayout&, int compute_units,
                         int num_splits);

}  // namespace fajit
