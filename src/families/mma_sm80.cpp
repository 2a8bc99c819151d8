// mma-sm80: FlashAttention-2 style mma.sync m16n8k16 with ldmatrix and a cp.async
// pipeline, for NVIDIA sm_80 and later; any head dim the spec allows, padded to 16 inside
// the kernel.
#include <algorithm>

#include "families/family_rules.hpp"
#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h", "prelude_nvidia.h", "prelude_sm80.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};

std::string check(const KernelSpec& spec) {
    if (auto error = waves_error(spec); !error.empty()) return error;
    if (spec.block_q != 16 * spec.waves && spec.block_q != 32 * spec.waves)
        return field_error("bq", std::to_string(spec.block_q),
                           "family mma-sm80 needs 16 or 32 query rows per warp (" + std::to_string(16 * spec.waves) +
                               " or " + std::to_string(32 * spec.waves) + ")");
    if (spec.block_k < 16 || spec.block_k % 16 != 0 || spec.block_k > 128)
        return field_error("bk", std::to_string(spec.block_k), "family mma-sm80 needs a multiple of 16, at most 128");
    // Each lane holds rows/warp * (dv + bk) / 32 f32 accumulators (O and S). At 192
    // (32 rows, d=128, bk=64) ptxas already spills; 160 compiles clean at every head dim
    // (tools/tiles/mma_sm80.md lists the register counts).
    const int accumulators = spec.block_q / spec.waves * (padded_head_dim(value_head_dim(spec)) + spec.block_k) / 32;
    if (accumulators > 160)
        return field_error("bk", std::to_string(spec.block_k),
                           "family mma-sm80 would hold " + std::to_string(accumulators) +
                               " accumulators per lane (at most 160): use fewer rows per warp or a smaller bk");
    return rounded_probability_margin_error(spec);
}

// fa_mma_layout: Q plus `kv_stages` K and V buffers; rows of the padded head dim's
// (V: of dv's) 16-byte chunks plus one chunk of padding. Head dim 64 tiles are small enough for a
// third buffer at two blocks per SM.
SharedLayout shared_layout(const KernelSpec& spec) {
    const int stages = std::max(padded_head_dim(spec.head_dim), padded_head_dim(value_head_dim(spec))) <= 64 ? 3 : 2;
    const unsigned q_and_k_rows = static_cast<unsigned>(spec.block_q + stages * spec.block_k);
    const unsigned v_rows = static_cast<unsigned>(stages * spec.block_k);
    return {sm80_row_bytes(spec.head_dim) * q_and_k_rows + sm80_row_bytes(value_head_dim(spec)) * v_rows,
            true,
            {{{"kv_stages", stages}}}};
}

// The measured table; tools/tiles/mma_sm80.md records the candidates and timings. Up to
// d=96, 4 warps of 32 rows with 64-key steps. From d=128 the registers allow 32 rows
// only with 32-key steps, and on the H200 8 warps of 16 rows with long key steps (fewer
// barriers and softmax passes per key) measured faster; they need an sm_90-class part's
// 227 KiB of shared memory, so other targets (sm_80 included) keep the narrow tiles.
// A warp computes 16 or more rows at once, so short query runs cost the same tile.
// Head dims between those measured take the tiles of the next one up, whose accumulators
// they do not exceed (32 rows per warp hold d + bk of them: up to d=96 with 64-key steps,
// and up to 128 with 32-key steps).
// With a V head dim of its own, the wider of the two picks the tiles.
Tile choose_tile(const ShapeClass& shape, std::string_view arch) {
    const int padded = std::max(padded_head_dim(shape.head_dim), padded_head_dim(value_head_dim(shape)));
    // A window's second mask edge or a soft-cap's per-score tanh adds registers: with two
    // 16-row tiles per warp past head dim 96 they spilled (sm_80, d=128: 36 to 48 bytes),
    // so those kernels keep one tile per warp. A window over ragged K/V (per-sequence key
    // offsets besides) spilled at padded 96 already (sm_80 and sm_90a, every causal mode,
    // 254-255 registers and 12-20 bytes stored; one tile per warp needs 181-186, 32-key
    // steps 220-228). Found by the exhaustive features compile suite.
    const bool featured = shape.window || shape.softcap;
    const bool window_over_ragged = shape.window && shape.kv_layout == KvLayout::ragged;
    const bool one_tile_per_warp = padded > 128 || (featured && padded > 96) || (window_over_ragged && padded == 96);
    const Tile narrow = {one_tile_per_warp ? 64 : 128, padded > 96 ? 32 : 64, 4};
    if (padded < 128) return narrow;
    const Tile wide = {128, padded > 128 ? 64 : 128, 8};
    return fits_nvidia_shared_memory(shape, wide, shared_layout, arch) ? wide : narrow;
}

}  // namespace

extern const FamilyDescriptor mma_sm80_family = {
    .name = "mma-sm80",
    .template_file = "fa_mma_sm80.h",
    .kernel = "fa_mma_sm80",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "NVIDIA targets sm_80 or later",
    .compiles_for = sm80_or_newer,
    .check = check,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = nvidia_shared_limit,
    .launch_shape = tiled_launch,
};

}  // namespace fajit
