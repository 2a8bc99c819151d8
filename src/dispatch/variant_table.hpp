#pragma once
// Which variant runs a call: the first row of the variant table (families/registry.hpp)
// that is offered on the arch and takes the shape. Selection is pure host code: it needs
// the target name, not a device.
#include <string>
#include <string_view>

#include "fajit/kernel_spec.hpp"
#include "fajit/options.hpp"
#include "families/registry.hpp"
#include "spec/shape_class.hpp"

namespace fajit {

// The spec a family gives for a shape on arch, before validation.
KernelSpec variant_spec(const FamilyDescriptor&, const ShapeClass&, std::string_view arch);
// The fallback variant: what runs when nothing better can.
KernelSpec fallback_spec(const ShapeClass&, std::string_view arch);
bool is_fallback(const KernelSpec&);

struct Selection {
    KernelSpec spec;
    // Why spec is the fallback rather than the variant the table or FAJIT_FAMILY
    // preferred; empty when spec is that variant.
    std::string fallback_reason;
    bool forced = false;  // FAJIT_FORCE_FALLBACK chose the fallback: asked for, so not a failure
};

// Applies options.force_fallback, options.family and options.tile to the table. Throws
// InvalidOption naming FAJIT_TILE when the pinned tiles are invalid for the variant.
Selection select_variant(std::string_view arch, const ShapeClass&, const Options&);

}  // namespace fajit
