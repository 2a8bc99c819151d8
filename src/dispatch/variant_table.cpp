#include "dispatch/variant_table.hpp"

#include <stdexcept>

#include "spec/arch.hpp"

namespace fajit {
namespace {

// Natural-log units: exp(10) = 22026 keeps unnormalized probabilities inside f16's range
// while sparing most rescales.
constexpr float default_rescale_margin = 10.0f;

bool runs_anywhere(std::string_view) { return true; }

// The tile rules are starting points, not yet tuned with tools/python/compare_sdpa.py;
// causal mode and dtype do not change them so far.

// One wave per query row. Decode gets one-wave blocks, so a single query row leaves no
// waves idle, and longer key steps, since its rows walk the whole cache.
Tile scalar_tile(const ShapeClass& shape, std::string_view arch) {
    const int lanes = wave_size(arch);
    if (shape.query_length == QueryLength::decode) return {1, 4 * lanes, 1};
    return {4, 2 * lanes, 4};
}

// 16 query rows per wave. Short query runs use fewer waves per block, so the tile wastes
// fewer rows; head dim 256 stages Q in LDS as well, which halves the key step.
Tile wmma_gfx11_tile(const ShapeClass& shape, std::string_view) {
    int waves = shape.head_dim > 128 ? 2 : 4;
    if (shape.query_length == QueryLength::decode)
        waves = 1;
    else if (shape.query_length == QueryLength::small)
        waves = 2;
    return {16 * waves, shape.head_dim > 128 ? 32 : 64, waves};
}

bool is_sm80_or_newer(std::string_view arch) { return sm_version(arch) >= 80; }
bool is_sm90a(std::string_view arch) { return arch == "sm_90a"; }

// The tensor-core families use their measured tables (tools/tiles/), whatever the query
// length: a warp computes 16 or more rows at once, so short query runs cost the same tile.
template <Family family>
Tile family_default_tile(const ShapeClass& shape, std::string_view arch) {
    KernelSpec spec;
    spec.family = family;
    spec.head_dim = shape.head_dim;
    spec.arch = std::string(arch);
    spec = with_family_defaults(spec);
    return {spec.block_q, spec.block_k, spec.waves};
}

constexpr VariantRow rows[] = {
    {"gfx11", is_gfx11, Family::wmma_gfx11, wmma_gfx11_tile},
    {"sm_90a", is_sm90a, Family::wgmma_sm90, family_default_tile<Family::wgmma_sm90>},
    {"sm_80+", is_sm80_or_newer, Family::mma_sm80, family_default_tile<Family::mma_sm80>},
    {"any", runs_anywhere, Family::scalar, scalar_tile},
};

const VariantRow& row_of(Family family) {
    for (const auto& row : rows)
        if (row.family == family) return row;
    throw std::logic_error("family " + std::string(to_string(family)) + " has no row in the variant table");
}

KernelSpec pinned(KernelSpec spec, const TilePin& pin) {
    if (pin.block_q) spec.block_q = *pin.block_q;
    if (pin.block_k) spec.block_k = *pin.block_k;
    if (pin.waves) spec.waves = *pin.waves;
    if (auto error = validate(spec); !error.empty())
        throw InvalidOption("FAJIT_TILE=" + to_string(pin) + " does not fit " + std::string(to_string(spec.family)) +
                            ": " + error);
    return spec;
}

}  // namespace

std::span<const VariantRow> variant_table() { return rows; }

KernelSpec variant_spec(const VariantRow& row, const ShapeClass& shape, std::string_view arch) {
    KernelSpec spec;
    spec.family = row.family;
    spec.arch = std::string(arch);
    spec.head_dim = shape.head_dim;
    spec.dtype = shape.dtype;
    spec.causal = shape.causal;
    spec.rescale_margin = default_rescale_margin;
    const Tile tile = row.choose_tile(shape, arch);
    spec.block_q = tile.block_q;
    spec.block_k = tile.block_k;
    spec.waves = tile.waves;
    return spec;
}

KernelSpec fallback_spec(const ShapeClass& shape, std::string_view arch) {
    return variant_spec(row_of(Family::scalar), shape, arch);
}

Selection select_variant(std::string_view arch, const ShapeClass& shape, const Options& options) {
    if (options.force_fallback) return {fallback_spec(shape, arch), "FAJIT_FORCE_FALLBACK=1 asks for scalar", true};

    // FAJIT_FAMILY bypasses the arch classes: that is how wmma-gfx11 runs in emulation on NVIDIA.
    std::string refusals;
    for (const auto& row : rows) {
        const bool candidate = options.family ? row.family == *options.family : row.runs_on(arch);
        if (!candidate) continue;
        KernelSpec spec = variant_spec(row, shape, arch);
        if (auto error = validate(spec); !error.empty()) {
            refusals +=
                (refusals.empty() ? "" : "; ") + std::string(to_string(row.family)) + " cannot run it (" + error + ")";
            continue;
        }
        // A specialized row that cannot take the shape yields to the next one (wgmma-sm90
        // to mma-sm80 at d=80, say) without complaint; only ending on scalar is a fallback.
        const bool fell_back = row.family == Family::scalar && !refusals.empty();
        // Tiles are pinned on the variant that runs; a fallback keeps its own tiles.
        if (!options.tile.empty() && !fell_back) spec = pinned(std::move(spec), options.tile);
        return {std::move(spec), fell_back ? refusals : std::string(), false};
    }
    if (options.family && refusals.empty())  // a forced family that has no table row yet
        refusals = "FAJIT_FAMILY=" + std::string(to_string(*options.family)) + " has no row in the variant table";
    return {fallback_spec(shape, arch), refusals, false};
}

}  // namespace fajit
