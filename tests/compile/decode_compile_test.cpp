// The split-KV decode families compile for every arch kind they serve (decode-split: gfx11
// wave32, gfx9 wave64, sm_80, sm_90a; decode-mma: sm_80, sm_90a, with one and two row
// tiles) over dtype, head dims at the edges and between (every one the family takes with
// FAJIT_TEST_EXHAUSTIVE=1), tile rows and K/V layouts, and over every tile each family
// accepts; AMD code objects are checked for spills and scratch, NVIDIA ones through
// ptxas -v. No GPU is needed; a backend whose compiler library is absent is skipped with
// its reason.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "support/batched_sample.hpp"
#include "support/compile_support.hpp"
#include "support/head_dim_sample.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

std::vector<KernelSpec> decode_specs(const std::string& family, const std::string& arch) {
    std::vector<KernelSpec> specs;
    int index = 0;
    // A covering sample: every dtype x head dim x rows and layout, causal taking turns.
    const auto& all_dims = find_family(family)->head_dims;
    const std::vector<int> head_dims =
        exhaustive_sweeps() ? std::vector<int>(all_dims.begin(), all_dims.end()) : std::vector<int>{16, 72, 128, 256};
    for (const DType dtype : {DType::f16, DType::bf16})
        for (const int head_dim : head_dims)
            for (const auto& [rows, layout, page_size] : {std::tuple{1, KvLayout::dense, 0},
                                                          {4, KvLayout::paged, 16},
                                                          {16, KvLayout::ragged, 0},
                                                          {32, KvLayout::paged, 64}}) {
                if (family == "decode-split" && rows > 16) continue;  // decode-mma's two row tiles only
                const CausalMode causal = index++ % 2 ? CausalMode::bottom_right : CausalMode::none;
                const KernelSpec spec = decode_spec(family, arch, rows, head_dim, dtype, causal, layout, page_size);
                if (validate(spec).empty()) specs.push_back(spec);
            }
    return specs;
}

// Every tile a decode family accepts: decode-mma's waves x keys per warp step x row tiles
// on sm_90a, and each family's waves on its other targets. A tile the family's check
// refuses is skipped; one it accepts must compile (waves=1 once failed a static assertion
// on its shared memory). Only the chosen tiles must not spill (the test above): a tile set
// by hand (FAJIT_TILE, a manifest) may, and `fa-jit warm --isa` lists those that do.
std::vector<KernelSpec> tile_specs(const std::string& family, const std::string& arch) {
    return decode_tile_specs(family, arch, family == "decode-mma" && arch == "sm_90a");
}

}  // namespace

TEST_CASE("the decode families compile on gfx1151, gfx942, sm_80 and sm_90a without spills") {
    // 24 each, less the rows x head dims decode-split refuses (too many outputs per lane).
    const Target targets[] = {{"decode-split", "gfx1151"}, {"decode-split", "gfx942:sramecc+:xnack-"},
                              {"decode-split", "sm_80"},   {"decode-split", "sm_90a"},
                              {"decode-mma", "sm_80"},     {"decode-mma", "sm_90a"}};
    const int compiled = compile_targets(targets, decode_specs, 20, Spills::fail);
    std::printf("decode families: %d variants compiled\n", compiled);
}

TEST_CASE("every tile the decode families accept compiles") {
    // Each wave count at least.
    const Target targets[] = {
        {"decode-mma", "sm_90a"}, {"decode-mma", "sm_80"}, {"decode-split", "sm_90a"}, {"decode-split", "gfx1151"}};
    const int compiled = compile_targets(targets, tile_specs, 4, Spills::are_printed);
    std::printf("decode tiles: %d variants compiled\n", compiled);
}
