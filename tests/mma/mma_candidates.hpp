#pragma once
// Specs the suites of the NVIDIA tensor-core families (mma-sm80, wgmma-sm90) share: the
// families a target runs, a family's default variant for a shape, and the tile
// candidates the benchmark times (tools/tiles/ records the results).
#include <string>
#include <vector>

#include "dispatch/variant_table.hpp"
#include "fajit/kernel_spec.hpp"
#include "support/head_dim_sample.hpp"

namespace fajit::testing {

// The dispatcher's own arch gates decide which of the two families a target runs.
inline std::vector<std::string> tensor_core_families(const std::string& arch) {
    std::vector<std::string> families;
    for (const VariantRow& row : variant_table())
        if ((row.family->name == "mma-sm80" || row.family->name == "wgmma-sm90") && row.offered_on(arch))
            families.emplace_back(row.family->name);
    return families;
}

inline KernelSpec family_spec(const std::string& family, const std::string& arch, int head_dim, DType dtype,
                              CausalMode causal, float margin) {
    KernelSpec spec;
    spec.family = family;
    spec.arch = arch;
    spec.head_dim = head_dim;
    spec = with_family_defaults(spec);
    spec.dtype = dtype;
    spec.causal = causal;
    spec.rescale_margin = margin;
    return spec;
}

struct Tiles {
    int waves;
    int block_q;
    int block_k;
};

// mma-sm80: rows per warp (16 or 32), warps and key step around the defaults.
// wgmma-sm90: one to three warpgroups, 64- or 128-key steps.
inline std::vector<Tiles> tile_candidates(const std::string& family, int head_dim) {
    if (family == "wgmma-sm90") {
        if (head_dim > 128) return {{8, 128, 64}, {4, 64, 64}};
        if (head_dim > 64) return {{8, 128, 128}, {8, 128, 64}, {12, 192, 64}, {4, 64, 128}, {4, 64, 64}};
        return {{8, 128, 64}, {8, 128, 128}, {12, 192, 64}, {4, 64, 64}};
    }
    if (head_dim > 128) return {{4, 64, 32}, {4, 64, 64}, {8, 128, 32}, {8, 128, 64}};
    if (head_dim > 64)
        return {{4, 128, 32}, {8, 128, 64}, {8, 128, 96}, {8, 128, 128}, {4, 64, 64}, {4, 64, 128}, {2, 64, 32}};
    return {{4, 128, 64}, {4, 128, 32}, {8, 128, 64}, {8, 128, 128}, {4, 64, 128}};
}

inline KernelSpec with_tiles(KernelSpec spec, const Tiles& tiles) {
    spec.waves = tiles.waves;
    spec.block_q = tiles.block_q;
    spec.block_k = tiles.block_k;
    return spec;
}

}  // namespace fajit::testing
