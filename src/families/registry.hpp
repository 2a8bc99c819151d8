#pragma once
// The kernel families the library has: the variant table's rows, in the dispatcher's
// order of preference, are the only list of them. Everything that asks which families
// exist, or what one of them does, asks here.
#include <span>
#include <string>
#include <string_view>

#include "families/family_descriptor.hpp"

namespace fajit {

struct VariantRow {
    std::string_view arch_class;  // for messages and tests, e.g. "gfx11"
    const FamilyDescriptor* family;
    // Where the dispatcher offers the row when narrower than where the family compiles.
    bool (*only_on)(std::string_view arch) = nullptr;

    bool offered_on(std::string_view arch) const { return only_on ? only_on(arch) : family->compiles_for(arch); }
};

// The rows in order of preference, one per family; the last runs on every arch and is
// the fallback.
std::span<const VariantRow> variant_table();
const FamilyDescriptor& fallback_family();

// Null when no family has that name.
const FamilyDescriptor* find_family(std::string_view name);
// The family of a spec; throws std::invalid_argument for a name no family has.
const FamilyDescriptor& family_of(const KernelSpec&);
// Every family's name, the fallback first, for help texts and errors.
std::string family_names(std::string_view last_separator = " or ");

SharedLayout shared_layout(const KernelSpec&);
// Grid, block and dynamic shared memory of a launch. compute_units: the device's
// multiprocessors (CUs), which size a persistent grid; 0 when unknown gives one block
// per query tile.
// num_splits: the split plan's count for a family that splits the key range, else 1.
LaunchShape launch_shape(const KernelSpec&, const AttentionArgs&, int compute_units, int num_splits = 1);

}  // namespace fajit
