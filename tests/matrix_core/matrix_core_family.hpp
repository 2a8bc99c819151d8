#pragma once
// Which family of fa_matrix_core.h a build of these tests checks (MATRIX_CORE_FAMILY, one
// test binary per family: CMakeLists.txt), and the facts in which the families differ.
#include <string>
#include <vector>

#ifndef MATRIX_CORE_FAMILY
#error "build with MATRIX_CORE_FAMILY set to wmma-gfx11 or mfma-gfx9"
#endif

namespace fajit::testing {

struct MatrixCoreTiles {
    int waves;
    int block_k;
};

struct MatrixCoreFamily {
    std::string name;
    std::vector<std::string> native_archs;  // compiled through HIPRTC, with the ISA checks
    int wave_size;
    // CDNA's VGPRs and AGPRs share one file of 512 per lane per SIMD: two waves per SIMD
    // need both together within 256.
    bool unified_agprs;
    // Two tilings per head dim, within the family's 64 KiB of LDS.
    std::vector<MatrixCoreTiles> (*tile_configs)(int head_dim);
    // A head dim and tiles whose layout passes 48 KiB (dynamic shared memory on NVIDIA).
    int large_layout_head_dim;
    MatrixCoreTiles large_layout_tiles;
};

inline const MatrixCoreFamily& tested_family() {
    // wmma-gfx11 stages Q in LDS past padded head dim 128, which halves the key step.
    static const MatrixCoreFamily wmma = {"wmma-gfx11",
                                          {"gfx1151", "gfx1100"},
                                          32,
                                          false,
                                          [](int head_dim) {
                                              if ((head_dim + 15) / 16 * 16 > 128)
                                                  return std::vector<MatrixCoreTiles>{{2, 32}, {4, 16}};
                                              return std::vector<MatrixCoreTiles>{{4, 64}, {2, 32}};
                                          },
                                          256,
                                          {2, 32}};
    static const MatrixCoreFamily mfma = {"mfma-gfx9",
                                          {"gfx942:sramecc+:xnack-", "gfx90a:sramecc+:xnack-"},
                                          64,
                                          true,
                                          [](int head_dim) {
                                              if ((head_dim + 15) / 16 * 16 > 128)
                                                  return std::vector<MatrixCoreTiles>{{4, 32}, {2, 16}};
                                              return std::vector<MatrixCoreTiles>{{4, 64}, {2, 32}};
                                          },
                                          224,
                                          {2, 64}};
    return std::string(MATRIX_CORE_FAMILY) == "mfma-gfx9" ? mfma : wmma;
}

}  // namespace fajit::testing
