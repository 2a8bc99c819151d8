// wmma-gfx11: fa_matrix_core.h on gfx11's WMMA (16x16x16, wave32) with O kept and
// rescaled in registers, any head dim the spec allows (padded to 16 inside the kernel);
// on NVIDIA the same template runs through the tile part's lane-faithful emulation.
#include <algorithm>
#include <optional>

#include "families/family_rules.hpp"
#include "spec/arch.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h", "prelude_wmma_tile.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};

bool gfx11_or_emulated(std::string_view arch) { return is_gfx11(arch) || vendor_of(arch) == Vendor::nvidia; }

bool any_feature(const ShapeClass& shape) { return shape.window || shape.softcap || shape.sinks; }

// Spec::q_in_lds: Q is staged in LDS past head dim 128, or where Q's and O's registers
// together pass those of d = dv = 128, unless Q is at most 64 dims (32 VGPRs).
// Measured, gfx1151 static ISA: d=96 with dv=200 spilled 24 VGPRs with Q in registers and
// none staged; d=64 with dv=256 spilled 8-12 staged and none (236 VGPRs) in registers.
bool stages_q(int head_dim, int head_dim_v) {
    const int q = padded_head_dim(head_dim);
    return q > 128 || (q > 64 && q + padded_head_dim(head_dim_v) > 256);
}

// Where a variant passed 256 VGPRs and spilled at its key step, that step halves. Each
// clause is one measured case (gfx1151, f16 and bf16, static ISA, every head dim; the
// sweeps are in tools/tiles/wmma_gfx11.md). `wider` is the wider padded head dim of Q's
// and O's.
bool spills_at_full_step(const ShapeClass& shape, int wider) {
    const bool step_sized_pages = shape.kv_layout == KvLayout::paged && shape.page_size == 64;
    // 64 keys spilled 77-85 VGPRs with all three features; 32 keys need 206.
    if (wider == 80 && any_feature(shape)) return true;
    // 32 keys spilled 1-5 with a window; 16 keys need 219.
    if (wider == 112 && shape.window) return true;
    // A soft-cap with paged K/V (pages of 16 to 256 keys): 32 keys spilled 1 at d=112 in bf16
    // under either causal mask (256 VGPRs; ragged and dense reached 254-256 without a spill);
    // 16 keys need 213-220 at d=104 and 112 in every layout. Found by `fa-jit warm --isa`.
    if (wider == 112 && shape.softcap && shape.kv_layout == KvLayout::paged) return true;
    // Sinks and no window: 32 keys spilled 1 at d=160; 16 keys need 205. (With all three
    // features, 16 keys spilled 1-2 at d=200 and 208 and 32 none, hence "no window".)
    if (wider > 128 && shape.sinks && !shape.window) return true;
    // A soft-cap and no window: 32 keys spilled 1 in bf16 (the fixed frame's code); 16 keys
    // need 209. Elsewhere over 128 a soft-cap alone spills at neither step, and 16 keys
    // took more VGPRs at some dims (252 against 192 at d=200), so the rule stays at 160.
    if (wider == 160 && shape.softcap && !shape.window) return true;
    // A window over ragged K/V: 64 keys spilled 6 at padded 64 under a causal mask (256
    // VGPRs, 243 without one), 32 keys need 180-183. At padded 208, 32 keys spilled 2 at d=208
    // (256 at d=200), 16 keys need 254-255; with a soft-cap too, 32 keys need 186-188 and 16
    // spilled 2, hence "no soft-cap". Found by the exhaustive features suite.
    const bool window_over_ragged = shape.window && shape.kv_layout == KvLayout::ragged;
    if (window_over_ragged && wider == 64) return true;
    if (window_over_ragged && wider == 208 && !shape.softcap) return true;
    // Pages holding exactly a 64-key step: 256 VGPRs and 5 spilled under a causal mask
    // (247-253 at every other page size and ragged, 214 with a soft-cap); 32 keys need 179.
    // Found by the exhaustive batched sweep.
    return wider == 64 && step_sized_pages && !shape.softcap;
}

// The key step of a V head dim of its own, where spills_at_full_step's clauses (measured at
// d = dv) do not hold: gfx1151 static ISA, both dtypes and causal modes, dense, ragged and
// 1-, 16- and 64-key pages, plain, each feature alone and all three (tools/tiles/wmma_gfx11.md).
// Near 256 VGPRs a shorter step does not always need fewer (d=96 with dv=160 spilled 4-6 at
// 16 keys and none at 32), so each measured pair names its step. Other pairs, MLA's 192/128
// among them, take the step the wider head dim gives.
std::optional<int> value_dim_key_step(const ShapeClass& shape, int full_step) {
    if (shape.head_dim_v == 0) return std::nullopt;
    const int q = padded_head_dim(shape.head_dim), v = padded_head_dim(shape.head_dim_v);
    const bool paged = shape.kv_layout == KvLayout::paged, ragged = shape.kv_layout == KvLayout::ragged;
    // Q in registers, 64-key steps: 32 keys spill none.
    if (q == 64 && v == 96) return 32;                         // 15-72 VGPRs spilled, every layout
    if (q == 64 && v == 128 && any_feature(shape)) return 32;  // 32-97 with every feature, dense and ragged
    if ((q == 96 && v == 64) || (q == 128 && v == 96)) return any_feature(shape) ? 32 : full_step;  // 1-7
    // Q of 96 with O of 128: 64 and 32 keys both spilled 2-7, in every layout; 16 keys none.
    if (q == 96 && v == 128) return 16;
    // Q of 96 with O of 160 (in registers, 32-key steps): spills 4-6 at 16 keys, none at 32.
    if (q == 96 && v == 160) return full_step;
    // Q staged, 32-key steps.
    if (q == 128 && v == 160) return 16;                                             // 1-5 at 32
    if (q == 128 && v == 192) return paged && !any_feature(shape) ? 16 : full_step;  // 5-7 at 32
    if (q == 128 && v == 208) return paged && shape.page_size == 1 && !any_feature(shape) ? 16 : full_step;  // 6
    // d=96 with dv=200: 32 keys spilled 1-6 over pages and with a soft-cap and no window; 16 keys
    // spilled 1 with every feature over dense and ragged K/V.
    if (q == 96 && v == 208) return paged || (shape.softcap && !shape.window) ? 16 : full_step;
    if (q == 160 && v == 128 && any_feature(shape) && ragged) return 16;  // 1 at 32
    return std::nullopt;
}

// 16 query rows per wave. Short query runs use fewer waves per block, so the tile wastes
// fewer rows; head dims over 128 stage Q in LDS as well, which halves the key step
// (64-key steps of 4 waves would need 102 KiB at 256). Head dims padded to 112 take
// 32-key steps too: with 64 the bottom-right variants reach 256 VGPRs and spill one
// (gfx1151 and gfx1100, static ISA), where 128 needs 229. With a V head dim of its own,
// the wider of Q's and O's takes the key step.
Tile choose_tile(const ShapeClass& shape, std::string_view) {
    const bool q_in_lds = stages_q(shape.head_dim, value_head_dim(shape));
    const int wider = std::max(padded_head_dim(shape.head_dim), padded_head_dim(value_head_dim(shape)));
    int waves = q_in_lds ? 2 : 4;
    if (shape.query_length == QueryLength::decode)
        waves = 1;
    else if (shape.query_length == QueryLength::small)
        waves = 2;
    const int full_step = q_in_lds || wider == 112 || wider > 128 ? 32 : 64;
    const std::optional<int> measured = value_dim_key_step(shape, full_step);
    const int block_k = measured ? *measured : spills_at_full_step(shape, wider) ? full_step / 2 : full_step;
    return {16 * waves, block_k, waves};
}

SharedLayout shared_layout(const KernelSpec& spec) {
    return matrix_core_layout(spec, stages_q(spec.head_dim, value_head_dim(spec)));
}

}  // namespace

extern const FamilyDescriptor wmma_gfx11_family = {
    .name = "wmma-gfx11",
    .template_file = "fa_matrix_core.h",
    .kernel = "fa_matrix_core",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "gfx11 natively and NVIDIA (sm_*) through its emulation",
    .compiles_for = gfx11_or_emulated,
    .check = matrix_core_tile_error,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = matrix_core_lds_limit,
    .launch_shape = tiled_launch,
};

}  // namespace fajit
