#pragma once
// Specs the mma-sm80 suites share: the family's default variant for a shape, and the
// tile candidates the benchmark times (tools/tiles/mma_sm80.md records the results).
#include <string>
#include <vector>

#include "fajit/kernel_spec.hpp"

namespace fajit::testing {

inline KernelSpec mma_spec(const std::string& arch, int head_dim, DType dtype, CausalMode causal, float margin) {
    KernelSpec spec;
    spec.family = Family::mma_sm80;
    spec.arch = arch;
    spec.head_dim = head_dim;
    spec = with_family_defaults(spec);
    spec.dtype = dtype;
    spec.causal = causal;
    spec.rescale_margin = margin;
    return spec;
}

struct MmaTiles {
    int waves;
    int block_q;
    int block_k;
};

// Variations of rows per warp (16 or 32), warps and key step around the defaults.
inline std::vector<MmaTiles> mma_tile_candidates(int head_dim) {
    if (head_dim > 128) return {{4, 64, 32}, {4, 64, 64}, {8, 128, 32}, {8, 128, 64}};
    if (head_dim > 64)
        return {{4, 128, 32}, {8, 128, 64}, {8, 128, 96}, {8, 128, 128}, {4, 64, 64}, {4, 64, 128}, {2, 64, 32}};
    return {{4, 128, 64}, {4, 128, 32}, {8, 128, 64}, {8, 128, 128}, {4, 64, 128}};
}

}  // namespace fajit::testing
