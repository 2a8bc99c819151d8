#pragma once
// Which variant runs a call: an ordered table of (arch class, family, tile rule) rows,
// most preferred first, in the manner of composable-kernel and aotriton dispatch tables.
// Selection is pure host code: it needs the target name, not a device.
#include <span>
#include <string>
#include <string_view>

#include "dispatch/shape_class.hpp"
#include "fajit/kernel_spec.hpp"
#include "fajit/options.hpp"

namespace fajit {

struct Tile {
    int block_q = 0;
    int block_k = 0;
    int waves = 0;
};

struct VariantRow {
    std::string_view arch_class;             // for messages and tests, e.g. "gfx11"
    bool (*runs_on)(std::string_view arch);  // whether the table offers this row on arch
    Family family;
    Tile (*choose_tile)(const ShapeClass&, std::string_view arch);
};

// The rows in order of preference; the last is scalar and runs on every arch.
std::span<const VariantRow> variant_table();

// The spec a row gives for a shape on arch, before validation.
KernelSpec variant_spec(const VariantRow&, const ShapeClass&, std::string_view arch);
// The scalar variant: what runs when nothing better can.
KernelSpec fallback_spec(const ShapeClass&, std::string_view arch);

struct Selection {
    KernelSpec spec;
    // Why spec is scalar rather than the variant the table or FAJIT_FAMILY preferred;
    // empty when spec is that variant.
    std::string fallback_reason;
    bool forced = false;  // FAJIT_FORCE_FALLBACK chose scalar: asked for, so not a failure
};

// Applies options.force_fallback, options.family and options.tile to the table. Throws
// InvalidOption naming FAJIT_TILE when the pinned tiles are invalid for the variant.
Selection select_variant(std::string_view arch, const ShapeClass&, const Options&);

}  // namespace fajit
