// decode-split: decode and short chunks (up to 16 query rows x query heads per KV head),
// split over the key range when batch x KV heads cannot fill the device; flash-decoding.
// Plain arithmetic on any wave size, so it runs on gfx11 (wave32), gfx9 (wave64) and
// NVIDIA alike; a KV head's whole GQA group shares each read of K and V.
#include <algorithm>

#include "families/family_rules.hpp"
#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h", "prelude_split_kv.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};
// Each lane keeps block_q rows x dv / wave-size output values in registers.
constexpr int max_output_registers = 64;
// Its rows are a power of two up to this many.
constexpr int max_rows = 16;
// Four resident blocks per compute unit; a split shorter than 256 keys spends more on its
// partial and the merge than on keys.
constexpr SplitRule split_rule = {.blocks_per_compute_unit = 4, .min_keys_per_split = 256, .max_splits = 64};

std::string check(const KernelSpec& spec) {
    if (auto error = waves_error(spec); !error.empty()) return error;
    const int rows = spec.block_q;
    if (rows < 1 || rows > max_rows || (rows & (rows - 1)) != 0)
        return field_error("bq", std::to_string(rows),
                           "family decode-split takes 1, 2, 4, 8 or 16 rows (query rows x query heads per KV head)");
    const int lanes = wave_size(spec.arch);
    if (spec.block_k != lanes)
        return field_error("bk", std::to_string(spec.block_k),
                           "family decode-split scores one key per lane: bk must be the wave size (" +
                               std::to_string(lanes) + " on " + spec.arch + ")");
    const int value_dim = value_head_dim(spec);
    if (rows * ((value_dim + lanes - 1) / lanes) > max_output_registers)
        return field_error("bq", std::to_string(rows),
                           "family decode-split keeps bq x dv / wave-size outputs per lane, at most " +
                               std::to_string(max_output_registers) + ": at dv=" + std::to_string(value_dim) +
                               " choose a smaller bq");
    return {};
}

// The tile is the shape's rows; spec text without bq gets the most rows.
Tile choose_tile(const ShapeClass& shape, std::string_view arch) {
    return {shape.decode_rows ? std::min(shape.decode_rows, max_rows) : max_rows, wave_size(arch), 4};
}

SharedLayout shared_layout(const KernelSpec& spec) {
    // query and merged rows, the waves' frames, the block's frame and sum, and a bool.
    const unsigned floats =
        static_cast<unsigned>(spec.block_q) * (spec.head_dim + value_head_dim(spec)) + (spec.waves + 2u) * spec.block_q;
    return {4u * floats + 1u, false, {}};
}

SplitPlan plan_splits(const KernelSpec& spec, const AttentionArgs& args, int compute_units, int requested) {
    return plan_key_splits(spec, args, compute_units, requested, split_rule);
}

}  // namespace

extern const FamilyDescriptor decode_split_family = {
    .name = "decode-split",
    .template_file = "fa_decode_split.h",
    .kernel = "fa_decode_split",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "every AMD (gfx...) and NVIDIA (sm_...) target",
    .compiles_for = compiles_for_every_target,
    .check = check,
    .refuses_shape = refuses_all_but_decode,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = static_shared_limit,
    .launch_shape = split_launch,
    .plan_splits = plan_splits,
};

}  // namespace fajit
