#include "families/family_rules.hpp"

#include <algorithm>

#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {

std::string waves_error(const KernelSpec& spec) {
    if (spec.waves != 1 && spec.waves != 2 && spec.waves != 4 && spec.waves != 8)
        return field_error("waves", std::to_string(spec.waves), "must be 1, 2, 4 or 8");
    return {};
}

std::optional<float> largest_rounded_probability_margin(DType dtype) {
    if (dtype == DType::f16) return 11.0f;
    if (dtype == DType::e4m3) return 6.0f;
    return std::nullopt;
}

std::string rounded_probability_margin_error(const KernelSpec& spec) {
    const auto largest = largest_rounded_probability_margin(spec.dtype);
    if (!largest || spec.rescale_margin <= *largest) return {};
    const std::string dtype(to_string(spec.dtype));
    return field_error("margin", format_float(spec.rescale_margin),
                       "with dtype " + dtype + " the margin must be at most " + format_float(*largest) +
                           " so exp(margin) fits in " + dtype);
}

std::string matrix_core_tile_error(const KernelSpec& spec) {
    if (auto error = waves_error(spec); !error.empty()) return error;
    if (spec.block_q != 16 * spec.waves)
        return field_error(
            "bq", std::to_string(spec.block_q),
            "family " + spec.family + " needs 16 query rows per wave (" + std::to_string(16 * spec.waves) + ")");
    if (spec.block_k < 16 || spec.block_k % 16 != 0 || spec.block_k > 128)
        return field_error("bk", std::to_string(spec.block_k),
                           "family " + spec.family + " needs a multiple of 16, at most 128");
    return rounded_probability_margin_error(spec);
}

SharedLayout matrix_core_layout(const KernelSpec& spec, bool q_in_lds) {
    const unsigned d = static_cast<unsigned>(padded_head_dim(spec.head_dim));
    const unsigned dv = static_cast<unsigned>(padded_head_dim(value_head_dim(spec)));
    const unsigned k = static_cast<unsigned>(spec.block_k);
    const unsigned q_rows = q_in_lds ? 16u * static_cast<unsigned>(spec.waves) : 0u;
    return {2u * (k * (d + 8) + dv * (k + 8) + q_rows * (d + 8)),
            vendor_of(spec.arch) == Vendor::nvidia,
            {LayoutConstant{"q_in_lds", q_in_lds ? 1 : 0}}};
}

bool compiles_for_every_target(std::string_view) { return true; }

bool sm80_or_newer(std::string_view arch) { return sm_version(arch) >= 80; }

unsigned matrix_core_lds_limit(std::string_view) { return 64u * 1024u; }

unsigned static_shared_limit(std::string_view) { return 48u * 1024u; }

// CUDA programming guide, compute capabilities: the data-center parts (8.0, 8.7, 9.0,
// 10.x) have far more than the consumer ones.
unsigned nvidia_shared_limit(std::string_view arch) {
    const int sm = sm_version(arch);
    if (sm == 80 || sm == 87) return 163u * 1024u;
    if (sm >= 90 && sm < 120) return 227u * 1024u;
    return 99u * 1024u;
}

bool fits_nvidia_shared_memory(const ShapeClass& shape, const Tile& tile, SharedLayout (*layout)(const KernelSpec&),
                               std::string_view arch) {
    KernelSpec spec;
    spec.head_dim = shape.head_dim;
    spec.head_dim_v = shape.head_dim_v;
    spec.dtype = shape.dtype;
    spec.block_q = tile.block_q;
    spec.block_k = tile.block_k;
    spec.waves = tile.waves;
    return layout(spec).shared_bytes <= nvidia_shared_limit(arch);
}

LaunchShape tiled_launch(const KernelSpec& spec, const AttentionArgs& args, const SharedLayout& layout, int, int) {
    LaunchShape shape;
    shape.grid[0] = static_cast<unsigned>((args.len_q + spec.block_q - 1) / spec.block_q);
    shape.grid[1] = static_cast<unsigned>(args.heads_q);
    shape.grid[2] = static_cast<unsigned>(args.batch);
    shape.block[0] = static_cast<unsigned>(spec.waves * wave_size(spec.arch));
    if (layout.dynamic) shape.shared_bytes = layout.shared_bytes;
    return shape;
}

std::string refuses_all_but_decode(const KernelSpec& spec, const ShapeClass& shape) {
    if (shape.decode_rows == 0 || shape.decode_rows > spec.block_q)
        return "more query rows x query heads per KV head than its " + std::to_string(spec.block_q) + " rows";
    return {};
}

LaunchShape split_launch(const KernelSpec& spec, const AttentionArgs& args, const SharedLayout& layout, int,
                         int num_splits) {
    LaunchShape shape;
    shape.grid[0] = static_cast<unsigned>(num_splits);
    shape.grid[1] = static_cast<unsigned>(args.heads_kv);
    shape.grid[2] = static_cast<unsigned>(args.batch);
    shape.block[0] = static_cast<unsigned>(spec.waves * wave_size(spec.arch));
    if (layout.dynamic) shape.shared_bytes = layout.shared_bytes;
    return shape;
}

namespace {

// Past 4 splits a split's start, drain and merge are no longer small beside a block's keys
// at the lengths where the last wave matters (no more were timed).
constexpr int max_wave_splits = 4;
// The last wave is split for only while the unsplit blocks make fewer than three waves:
// the costs were timed there (a fifth of a second wave 8%, of a third 2-5%), and the more
// waves come before it, the smaller the share of a call it is.
constexpr long long max_waves_split_for_last = 3;

// Where the unsplit blocks already overflow one wave of `slots`: the fewest splits, up to
// `most`, whose last wave is empty or at least a third full, else those with the fullest
// last wave. Decode blocks are alike, so a thin last wave runs alone after the rest with
// most of the device idle; shorter blocks shorten it. H100, d=128, 32K keys: 160
// (sequence, KV head) pairs on 132 SMs (a fifth of a second wave) ran 8% faster in 2 or 3
// splits than unsplit, while 192 pairs (nearly half) and 1,024 (three quarters) ran as fast
// or faster unsplit: each split adds its start, drain and merge (tools/tiles/decode_mma.md,
// step 32).
int splits_for_last_wave(long long pairs, long long slots, int most) {
    const auto last_wave = [&](int splits) { return pairs * splits % slots; };
    int fullest = 1;
    for (int splits = 1; splits <= most; ++splits) {
        const long long blocks = last_wave(splits);
        if (blocks == 0 || 3 * blocks >= slots) return splits;
        if (blocks > last_wave(fullest)) fullest = splits;
    }
    return fullest;
}

}  // namespace

SplitPlan plan_key_splits(const KernelSpec& spec, const AttentionArgs& args, int compute_units, int requested,
                          SplitRule rule) {
    const long long pairs = static_cast<long long>(args.batch) * args.heads_kv;
    int splits = requested;
    if (splits <= 0) {
        // Where the pairs leave resident slots free, split only as far as one wave: decode
        // blocks are all alike, so a second, partial wave would run at a fraction of the
        // device and cost as long as the first. Where they overflow one wave but not three,
        // split for the last. Never split below a useful length either.
        const long long slots = static_cast<long long>(std::max(compute_units, 1)) * rule.blocks_per_compute_unit;
        const long long useful = std::clamp<long long>(args.len_k / rule.min_keys_per_split, 1, rule.max_splits);
        splits = static_cast<int>(std::max<long long>(std::min(slots / pairs, useful), 1));
        if (pairs > slots && pairs < max_waves_split_for_last * slots)
            splits = splits_for_last_wave(pairs, slots, static_cast<int>(std::min<long long>(useful, max_wave_splits)));
    }
    SplitPlan plan;
    plan.num_splits = splits;
    if (splits > 1) {
        plan.partial_floats = static_cast<std::size_t>(pairs) * splits * spec.block_q * (value_head_dim(spec) + 2);
        plan.arrival_counters = static_cast<std::size_t>(pairs);
    }
    return plan;
}

}  // namespace fajit
