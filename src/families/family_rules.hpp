#pragma once
// Rules and shapes several family descriptors share.
#include <array>
#include <optional>
#include <string>

#include "families/family_descriptor.hpp"

namespace fajit {

// Every head dim the spec allows: 16..256 in steps of 8 (families with no instruction shape to fit).
inline constexpr auto every_head_dim = [] {
    std::array<int, 31> dims{};
    for (int i = 0; i < 31; ++i) dims[i] = 16 + 8 * i;
    return dims;
}();

// The head dim the tensor-core kernels with 16-wide k steps (mma.sync m16n8k16, WMMA
// 16x16x16) compute over: rounded up to 16, the padding zeros in shared memory.
constexpr int padded_head_dim(int head_dim) { return (head_dim + 15) / 16 * 16; }

// Bytes of a staged row of the sm_80 kernels (fa_sm80_rows): the padded head dim's
// 16-byte chunks plus one chunk of padding.
constexpr unsigned sm80_row_bytes(int head_dim) {
    return 16u * (static_cast<unsigned>(padded_head_dim(head_dim)) / 8u + 1u);
}

// The families of fa_matrix_core.h (wmma-gfx11, mfma-gfx9): 16 query rows per wave, key
// steps a multiple of 16 up to 128, and the rounded-probability margin: empty, or the
// error naming the field.
std::string matrix_core_tile_error(const KernelSpec&);

// fa_matrix_core_layout: K rows and transposed V rows (of the head dims padded to 16)
// padded by 8 elements, plus Q's rows where q_in_lds. dynamic on NVIDIA (the emulations),
// where more than 48 KiB must be; the template reads q_in_lds from the spec.
SharedLayout matrix_core_layout(const KernelSpec&, bool q_in_lds);

// Empty when waves is 1, 2, 4 or 8; else the error naming the field.
std::string waves_error(const KernelSpec&);

// The tensor-core families round P to the input type for the P.V product, and
// unnormalized P reaches exp(margin): the largest margin whose exp(margin) the type holds
// (f16: 11, exp(11.09) overflows; e4m3: 6, exp(6) = 403 < 448), none for the other types.
std::optional<float> largest_rounded_probability_margin(DType);

// Empty when the spec's margin is within largest_rounded_probability_margin; else the
// error naming the field.
std::string rounded_probability_margin_error(const KernelSpec&);

// Target rules: every target (plain-arithmetic families), NVIDIA sm_80 or later (mma.sync).
bool compiles_for_every_target(std::string_view arch);
bool sm80_or_newer(std::string_view arch);

// The LDS a block may use on the AMD targets with matrix cores (gfx9 CDNA, gfx11): 64 KiB.
unsigned matrix_core_lds_limit(std::string_view arch);

// The static shared memory (LDS) a block may declare on every target: 48 KiB.
unsigned static_shared_limit(std::string_view arch);

// Opt-in shared memory per block of an NVIDIA target.
unsigned nvidia_shared_limit(std::string_view arch);

// Whether `tile` keeps a shape's shared memory, as the family's `layout` computes it from
// the head dims and dtype, within an NVIDIA target's opt-in limit: how a family's
// choose_tile tells a tile that fits from one validation would refuse.
bool fits_nvidia_shared_memory(const ShapeClass& shape, const Tile& tile, SharedLayout (*layout)(const KernelSpec&),
                               std::string_view arch);

// One block per (query tile, head, batch) of waves * wave-size threads, with the
// layout's bytes as dynamic shared memory when it is dynamic.
LaunchShape tiled_launch(const KernelSpec&, const AttentionArgs&, const SharedLayout&, int compute_units,
                         int num_splits);

// Split-KV decode families take only decode shapes, up to their tile's rows (query rows x
// query heads per KV head): the refusal, or empty.
std::string refuses_all_but_decode(const KernelSpec&, const ShapeClass&);

// Split-KV decode families: one block per (split, KV head, sequence) of waves *
// wave-size threads, with the layout's bytes as dynamic shared memory when it is dynamic.
LaunchShape split_launch(const KernelSpec&, const AttentionArgs&, const SharedLayout&, int compute_units,
                         int num_splits);

// The split plan of a split-KV decode family: `requested` splits when positive, else as
// many as fit in one wave of `blocks_per_compute_unit` resident blocks per compute unit,
// never splits shorter than `min_keys_per_split` and never more than `max_splits`.
struct SplitRule {
    int blocks_per_compute_unit;  // resident at once
    int min_keys_per_split;
    int max_splits;
};
SplitPlan plan_key_splits(const KernelSpec&, const AttentionArgs&, int compute_units, int requested, SplitRule);

}  // namespace fajit
