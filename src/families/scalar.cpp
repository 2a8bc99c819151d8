// scalar: plain arithmetic, no matrix units; the reference every faster family is
// tested against, and the fallback that runs any shape the spec allows.

#include "families/family_rules.hpp"
#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16, DType::f32, DType::e4m3};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};

std::string check(const KernelSpec& spec) {
    if (auto error = waves_error(spec); !error.empty()) return error;
    if (spec.block_q < spec.waves || spec.block_q % spec.waves != 0 || spec.block_q > 64)
        return field_error("bq", std::to_string(spec.block_q),
                           "family scalar needs a multiple of waves (" + std::to_string(spec.waves) + "), at most 64");
    const int lanes = wave_size(spec.arch);
    if (spec.block_k < lanes || spec.block_k % lanes != 0 || spec.block_k > 256)
        return field_error("bk", std::to_string(spec.block_k),
                           "family scalar needs a multiple of the wave size (" + std::to_string(lanes) + " on " +
                               spec.arch + "), at most 256");
    return {};
}

// One wave per query row. Decode gets one-wave blocks, so a single query row leaves no
// waves idle, and longer key steps, since its rows walk the whole cache.
Tile choose_tile(const ShapeClass& shape, std::string_view arch) {
    const int lanes = wave_size(arch);
    if (shape.query_length == QueryLength::decode) return {1, 4 * lanes, 1};
    return {4, 2 * lanes, 4};
}

// A static array: one staged query row (f32) per wave.
SharedLayout shared_layout(const KernelSpec& spec) {
    return {static_cast<unsigned>(4 * spec.waves * spec.head_dim), false, {}};
}

}  // namespace

extern const FamilyDescriptor scalar_family = {
    .name = "scalar",
    .template_file = "fa_scalar.h",
    .kernel = "fa_scalar",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "every AMD (gfx...) and NVIDIA (sm_...) target",
    .compiles_for = compiles_for_every_target,
    .check = check,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = static_shared_limit,
    .launch_shape = tiled_launch,
};

}  // namespace fajit
