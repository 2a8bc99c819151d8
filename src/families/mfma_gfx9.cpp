// mfma-gfx9: fa_matrix_core.h on CDNA's MFMA (16x16x16, wave64) for MI300 (gfx942) and
// MI200 (gfx90a), with O kept and rescaled in the accumulators; any head dim the spec
// allows. On NVIDIA the same template runs through the tile part's lane-faithful
// emulation, a wave64 played by a pair of warps.
#include <algorithm>

#include "families/family_rules.hpp"
#include "spec/arch.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h", "prelude_mfma_tile.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};

bool cdna_or_emulated(std::string_view arch) { return is_cdna_mfma(arch) || vendor_of(arch) == Vendor::nvidia; }

// Q always stays in registers: a lane holds a quarter of a 16-dim run (2 VGPRs), so even
// head dim 256 takes 32 VGPRs, beside O's 64.
constexpr bool q_in_lds = false;

// 16 query rows per wave, fewer waves for short query runs, as wmma-gfx11. The key step
// is 64 where K and V^T fit in 64 KiB of LDS (padded head dims up to 224), else 32.
Tile choose_tile(const ShapeClass& shape, std::string_view arch) {
    int waves = 4;
    if (shape.query_length == QueryLength::decode)
        waves = 1;
    else if (shape.query_length == QueryLength::small)
        waves = 2;
    KernelSpec wide;
    wide.arch = std::string(arch);
    wide.head_dim = shape.head_dim;
    wide.head_dim_v = shape.head_dim_v;
    wide.block_k = 64;
    wide.waves = waves;
    const bool fits = matrix_core_layout(wide, q_in_lds).shared_bytes <= matrix_core_lds_limit(arch);
    return {16 * waves, fits ? 64 : 32, waves};
}

SharedLayout shared_layout(const KernelSpec& spec) { return matrix_core_layout(spec, q_in_lds); }

// A wave is 64 lanes on every target: on NVIDIA, two warps.
LaunchShape wave64_launch(const KernelSpec& spec, const AttentionArgs& args, const SharedLayout& layout,
                          int compute_units, int num_splits) {
    LaunchShape shape = tiled_launch(spec, args, layout, compute_units, num_splits);
    shape.block[0] = static_cast<unsigned>(spec.waves * 64);
    return shape;
}

}  // namespace

extern const FamilyDescriptor mfma_gfx9_family = {
    .name = "mfma-gfx9",
    .template_file = "fa_matrix_core.h",
    .kernel = "fa_matrix_core",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "gfx90a, gfx940, gfx941 and gfx942 natively and NVIDIA (sm_*) through its emulation",
    .compiles_for = cdna_or_emulated,
    .check = matrix_core_tile_error,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = matrix_core_lds_limit,
    .launch_shape = wave64_launch,
};

}  // namespace fajit
