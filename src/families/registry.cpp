#include "families/registry.hpp"

#include <stdexcept>

#include "spec/arch.hpp"

namespace fajit {

// Each descriptor is defined in its own file of this folder.
extern const FamilyDescriptor wmma_gfx11_family;
extern const FamilyDescriptor mfma_gfx9_family;
extern const FamilyDescriptor wgmma_sm90_family;
extern const FamilyDescriptor mma_sm80_family;
extern const FamilyDescriptor scalar_family;
extern const FamilyDescriptor decode_split_family;
extern const FamilyDescriptor decode_mma_family;

namespace {

// The variant table, most preferred first, in the manner of composable-kernel and
// aotriton dispatch tables. The decode families take only decode shapes (their
// refuses_shape), so prefill passes on to the prefill rows; decode on NVIDIA sm_80+ runs
// on tensor cores, and head dims decode-mma lacks take decode-split. A row that cannot take a shape yields to the next
// (f32 on sm_90a runs scalar); ending on the last row is a fallback. wmma-gfx11 and mfma-gfx9 have no NVIDIA
// row: their emulations there are for tests, chosen with FAJIT_FAMILY.
constexpr VariantRow rows[] = {
    {"decode sm_80+", &decode_mma_family},
    {"decode (any)", &decode_split_family},
    {"gfx11", &wmma_gfx11_family, is_gfx11},
    {"gfx9 (CDNA)", &mfma_gfx9_family, is_cdna_mfma},
    {"sm_90a", &wgmma_sm90_family},
    {"sm_80+", &mma_sm80_family},
    {"any", &scalar_family},
};

}  // namespace

std::span<const VariantRow> variant_table() { return rows; }

const FamilyDescriptor& fallback_family() { return *rows[std::size(rows) - 1].family; }

const FamilyDescriptor* find_family(std::string_view name) {
    for (const VariantRow& row : rows)
        if (row.family->name == name) return row.family;
    return nullptr;
}

const FamilyDescriptor& family_of(const KernelSpec& spec) {
    if (const FamilyDescriptor* family = find_family(spec.family)) return *family;
    throw std::invalid_argument("family=" + spec.family + ": expected " + family_names());
}

std::string family_names(std::string_view last_separator) {
    // Table order puts the fallback last; names read better with it first.
    std::string names(fallback_family().name);
    for (std::size_t i = 0; i + 1 < std::size(rows); ++i)
        names += std::string(i + 2 == std::size(rows) ? last_separator : ", ") + std::string(rows[i].family->name);
    return names;
}

SharedLayout shared_layout(const KernelSpec& spec) { return family_of(spec).shared_layout(spec); }

LaunchShape launch_shape(const KernelSpec& spec, const AttentionArgs& args, int compute_units, int num_splits) {
    const FamilyDescriptor& family = family_of(spec);
    return family.launch_shape(spec, args, family.shared_layout(spec), compute_units, num_splits);
}

}  // namespace fajit
