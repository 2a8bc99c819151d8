#include "dispatch/variant_table.hpp"

#include <algorithm>

#include "families/family_rules.hpp"

namespace fajit {
namespace {

// Natural-log units: exp(10) = 22026 keeps unnormalized probabilities inside f16's range
// while sparing most rescales; a type that holds less (e4m3, which the tensor-core
// families round P to) gets the most it holds.
float default_rescale_margin(DType dtype) {
    return std::min(10.0f, largest_rounded_probability_margin(dtype).value_or(10.0f));
}

KernelSpec pinned(KernelSpec spec, const TilePin& pin) {
    if (pin.block_q) spec.block_q = *pin.block_q;
    if (pin.block_k) spec.block_k = *pin.block_k;
    if (pin.waves) spec.waves = *pin.waves;
    if (auto error = validate(spec); !error.empty())
        throw InvalidOption("FAJIT_TILE=" + to_string(pin) + " does not fit " + spec.family + ": " + error);
    return spec;
}

}  // namespace

KernelSpec variant_spec(const FamilyDescriptor& family, const ShapeClass& shape, std::string_view arch) {
    KernelSpec spec;
    spec.family = std::string(family.name);
    spec.arch = std::string(arch);
    spec.head_dim = shape.head_dim;
    spec.head_dim_v = shape.head_dim_v;
    spec.dtype = shape.dtype;
    spec.out_dtype = shape.out_dtype;
    spec.causal = shape.causal;
    spec.kv_layout = shape.kv_layout;
    spec.page_size = shape.page_size;
    spec.window = shape.window;
    spec.softcap = shape.softcap;
    spec.sinks = shape.sinks;
    spec.rescale_margin = default_rescale_margin(shape.dtype);
    const Tile tile = family.choose_tile(shape, arch);
    spec.block_q = tile.block_q;
    spec.block_k = tile.block_k;
    spec.waves = tile.waves;
    return spec;
}

KernelSpec fallback_spec(const ShapeClass& shape, std::string_view arch) {
    return variant_spec(fallback_family(), shape, arch);
}

bool is_fallback(const KernelSpec& spec) { return spec.family == fallback_family().name; }

Selection select_variant(std::string_view arch, const ShapeClass& shape, const Options& options) {
    const std::string fallback_name(fallback_family().name);
    if (options.force_fallback)
        return {fallback_spec(shape, arch), "FAJIT_FORCE_FALLBACK=1 asks for " + fallback_name, true};

    // FAJIT_FAMILY bypasses the arch classes: that is how an emulation runs (a family run
    // on a target its row is not offered on).
    std::string refusals;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        const bool candidate = options.family ? family.name == *options.family : row.offered_on(arch);
        if (!candidate) continue;
        KernelSpec spec = variant_spec(family, shape, arch);
        // A family made for other shapes (decode-split for prefill) is passed over without
        // counting as a fallback, unless FAJIT_FAMILY asked for it.
        if (const std::string reason = family.refuses_shape ? family.refuses_shape(spec, shape) : ""; !reason.empty()) {
            if (options.family) refusals = spec.family + " cannot run it (" + reason + ")";
            continue;
        }
        if (auto error = validate(spec); !error.empty()) {
            refusals += (refusals.empty() ? "" : "; ") + spec.family + " cannot run it (" + error + ")";
            continue;
        }
        // A specialized row that cannot take the shape yields to the next one without
        // complaint; only ending on the fallback is a fallback.
        const bool fell_back = &family == &fallback_family() && !refusals.empty();
        // Tiles are pinned on the variant that runs; a fallback keeps its own tiles.
        if (!options.tile.empty() && !fell_back) spec = pinned(std::move(spec), options.tile);
        return {std::move(spec), fell_back ? refusals : std::string(), false};
    }
    return {fallback_spec(shape, arch), refusals, false};
}

}  // namespace fajit
