// wgmma-sm90: Hopper's warpgroup MMA reading Q, K and V from swizzled shared memory,
// a producer warpgroup copying for the consumers, and persistent blocks.
#include <algorithm>

#include "families/family_rules.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h", "prelude_nvidia.h", "prelude_sm90.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16, DType::e4m3};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};
constexpr unsigned producer_threads = 128;  // one warpgroup (fa_wgmma_layout::threads)

int round_up(int value, int step) { return (value + step - 1) / step * step; }

// O's columns, the N of P V: V's head dim padded to a multiple of 64
// (fa_wgmma_layout::value_columns).
int output_columns(int head_dim_v) { return round_up(head_dim_v, 64); }

// Staged rows are whole 128-byte rows of the swizzle (64 16-bit or 128 e4m3 elements),
// so every head dim is padded to a multiple of one in shared memory
// (fa_wgmma_layout::staged_dim).
int staged_row_bytes(int head_dim, DType dtype) {
    return element_bytes(dtype) * round_up(head_dim, 128 / element_bytes(dtype));
}

// e4m3 inputs (fa_wgmma_layout's fp8 parts): wgmma takes 8-bit B operands K-major only,
// so the producer stages V's rows and writes them transposed, a row of bk keys per head
// dim in one 128-byte swizzle row: bk must be 128. Q K^T steps 32 head dims at a time,
// and the dense copies are the ones that carry it (one transpose path).
std::string e4m3_error(const KernelSpec& spec) {
    if (spec.kv_layout != KvLayout::dense)
        return field_error("kv", std::string(to_string(spec.kv_layout)), "family wgmma-sm90 takes e4m3 dense only");
    if (spec.head_dim % 32 != 0 || spec.head_dim > 128)
        return field_error("d", std::to_string(spec.head_dim),
                           "family wgmma-sm90 with e4m3 needs a multiple of 32 up to 128 (past 128, its 128-key "
                           "steps leave too few registers)");
    if (spec.head_dim_v != 0)
        return field_error("dv", std::to_string(spec.head_dim_v), "family wgmma-sm90 with e4m3 needs dv = d");
    if (spec.block_k != 128)
        return field_error("bk", std::to_string(spec.block_k), "family wgmma-sm90 with e4m3 needs 128");
    return {};
}

// wgmma is one of the architecture-specific features only sm_90a code may use.
bool sm90a(std::string_view arch) { return arch == "sm_90a"; }

std::string check(const KernelSpec& spec) {
    // A fourth consumer warpgroup would leave each 104 registers, too few to overlap
    // a step's P V with the next softmax at any head dim (ptxas serializes the wgmma).
    if (spec.waves != 4 && spec.waves != 8 && spec.waves != 12)
        return field_error("waves", std::to_string(spec.waves),
                           "family wgmma-sm90 needs 4, 8 or 12 (1 to 3 warpgroups)");
    if (spec.block_q != 16 * spec.waves)
        return field_error(
            "bq", std::to_string(spec.block_q),
            "family wgmma-sm90 needs 64 query rows per warpgroup (" + std::to_string(16 * spec.waves) + ")");
    if (spec.block_k != 64 && spec.block_k != 128)
        return field_error("bk", std::to_string(spec.block_k), "family wgmma-sm90 needs 64 or 128");
    if (spec.dtype == DType::e4m3)
        if (auto error = e4m3_error(spec); !error.empty()) return error;
    // While a step's P V runs, a consumer lane holds O (dv/2 f32 of the staged dv), the next step's S
    // (bk/2 f32) and P (bk/4 packed pairs, bk/8 packed quads of e4m3): d/2 + 3bk/4 registers
    // (d/2 + 5bk/8 with e4m3). The limits are the
    // largest such counts ptxas fits in what the consumers get (fa_wgmma_layout: 240,
    // 224 and 152 registers for 1 to 3 warpgroups) without spills or serialized wgmma;
    // tests/mma checks every candidate.
    const int groups = spec.waves / 4;
    const int register_limit = groups <= 2 ? 176 : 112;
    const int probability_registers = spec.block_k / (spec.dtype == DType::e4m3 ? 8 : 4);
    if (const int registers = output_columns(value_head_dim(spec)) / 2 + spec.block_k / 2 + probability_registers;
        registers > register_limit)
        return field_error("bk", std::to_string(spec.block_k),
                           "family wgmma-sm90 would hold " + std::to_string(registers) +
                               " accumulator registers per lane (at most " + std::to_string(register_limit) + " with " +
                               std::to_string(groups) + " warpgroups): use a smaller bk or fewer warpgroups");
    return rounded_probability_margin_error(spec);
}

// fa_wgmma_layout: Q plus `kv_stages` K, V buffers of unpadded swizzled rows, as many as
// fit (2 to 4) in sm_90a's 227 KiB beside Q, four 8-byte mbarriers a stage and one for
// Q, and 1024 bytes to align the start. e4m3 adds the two buffers V's rows land in before
// they are transposed, with their mbarriers. Under 2 stages validation refuses the bytes.
SharedLayout shared_layout(const KernelSpec& spec) {
    constexpr unsigned alignment = 1024, stage_barrier_bytes = 32, q_barrier_bytes = 8, most_stages = 4;
    const bool fp8 = spec.dtype == DType::e4m3;
    const unsigned keys = static_cast<unsigned>(spec.block_k);
    const unsigned row_bytes = static_cast<unsigned>(staged_row_bytes(spec.head_dim, spec.dtype));
    const unsigned value_row_bytes = static_cast<unsigned>(staged_row_bytes(value_head_dim(spec), spec.dtype));
    const unsigned q_bytes = row_bytes * static_cast<unsigned>(spec.block_q);
    // V transposed (e4m3): a row of bk keys for each of O's columns; else V's rows.
    const unsigned v_bytes =
        fp8 ? static_cast<unsigned>(output_columns(value_head_dim(spec))) * keys : value_row_bytes * keys;
    const unsigned stage_bytes = row_bytes * keys + v_bytes;
    // Two staging buffers, each with a full and a free mbarrier.
    const unsigned staging_bytes = fp8 ? 2u * (value_row_bytes * keys + 16u) : 0u;
    const unsigned room =
        227u * 1024u - alignment - most_stages * stage_barrier_bytes - q_barrier_bytes - q_bytes - staging_bytes;
    const unsigned stages = std::clamp(room / stage_bytes, 2u, most_stages);
    return {alignment + q_bytes + stages * (stage_bytes + stage_barrier_bytes) + q_barrier_bytes + staging_bytes,
            true,
            {{{"kv_stages", static_cast<int>(stages)}}}};
}

// Two warpgroups of 64 rows taking turns on the tensor cores, with 128-key steps; past
// a staged dv of 128 the registers allow 64-key steps only, and so does shared memory
// where two stages of 128 keys no longer fit beside Q (a d past 192 with a dv of 72 to
// 128). A window with V wider than Q and K past 128 (d <= 192, dv=256) spilled 32-56
// bytes with two warpgroups in every K/V layout, over ragged K/V whatever the producer
// kept (static, ptxas 13), so it takes one warpgroup, which has 240 registers.
// tools/tiles/wgmma_sm90.md records the candidates and timings. A warpgroup computes 64
// rows at once, so short query runs cost the same tile.
Tile choose_tile(const ShapeClass& shape, std::string_view arch) {
    const Tile long_steps = {128, 128, 8}, short_steps = {128, 64, 8}, one_warpgroup = {64, 64, 4};
    if (shape.dtype == DType::e4m3) return long_steps;
    const int staged_values = output_columns(value_head_dim(shape));
    if (staged_values > 128) {
        const bool values_wider = output_columns(shape.head_dim) < staged_values;
        return shape.window && values_wider ? one_warpgroup : short_steps;
    }
    return fits_nvidia_shared_memory(shape, long_steps, shared_layout, arch) ? long_steps : short_steps;
}

// Persistent: one block per multiprocessor, at most one per query tile, each walking
// tiles in turn (fa_wgmma_block_tile); a producer warpgroup joins the consumer waves.
LaunchShape persistent_launch(const KernelSpec& spec, const AttentionArgs& args, const SharedLayout& layout,
                              int compute_units, int num_splits) {
    LaunchShape shape = tiled_launch(spec, args, layout, compute_units, num_splits);
    const unsigned tiles = shape.grid[0] * shape.grid[1] * shape.grid[2];
    shape.grid[0] = compute_units > 0 ? std::min(tiles, static_cast<unsigned>(compute_units)) : tiles;
    shape.grid[1] = shape.grid[2] = 1;
    shape.block[0] += producer_threads;
    return shape;
}

}  // namespace

extern const FamilyDescriptor wgmma_sm90_family = {
    .name = "wgmma-sm90",
    .template_file = "fa_wgmma_sm90.h",
    .kernel = "fa_wgmma_sm90",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "the NVIDIA target sm_90a",
    .compiles_for = sm90a,
    .check = check,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = nvidia_shared_limit,
    .launch_shape = persistent_launch,
    .reads_tensor_maps = true,
};

}  // namespace fajit
